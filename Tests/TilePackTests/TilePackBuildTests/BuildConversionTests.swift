import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackCodec
@testable import TilePackArchive
@testable import TilePackBuild
import TilePackTestSupport

/// `convert`: MBTiles ⇄ PMTiles with the elevation as a Terrarium sibling.
@Suite(.tags(.concurrent)) struct BuildConversionTests {
    /// An MBTiles archive of z0…2 (two contents) with a 16 × 16 elevation grid per tile,
    /// one sample of each no data.
    static func archive(_ dir: TemporaryDirectory) throws -> (path: String, grids: [TileID: ElevationTile]) {
        let path = dir.file("in.mbtiles")
        let writer = try MBTilesWriter(path: path, metadata: ArchiveFixture.metadata())
        var grids: [TileID: ElevationTile] = [:]
        for z in 0...2 {
            for x in 0..<(1 << z) {
                for y in 0..<(1 << z) {
                    let id = TileID(z: z, x: x, y: y)!
                    try writer.write(x == 0 ? [1, 2, 3] : [UInt8(z), UInt8(y)], for: id)
                    var values = (0..<256).map { Float(1000 * z + 10 * x + y) + Float($0) / 7 - 30 }
                    values[5] = .nan
                    let grid = ElevationTile(width: 16, height: 16, values: values)
                    try writer.writeElevation(grid, for: id)
                    grids[id] = grid
                }
            }
        }
        try writer.finish()
        return (path, grids)
    }

    @Test func roundTripKeepsTilesAndElevationWithinATerrariumStep() throws {
        let dir = TemporaryDirectory()
        let (input, grids) = try Self.archive(dir)
        let pm = dir.file("out.pmtiles")
        let report = try ArchiveConversion.convert(input: input, output: pm)
        #expect(report.tiles == 21 && report.elevationTiles == 21)
        #expect(report.terrainOutput == dir.file("out.terrain.pmtiles"))
        let reader = try PMTilesReader(path: pm)
        #expect(reader.summary.hasElevation)
        #expect(reader.summary.name == "Test region")
        #expect(reader.header.tileContents < 21)  // deduplicated
        let source = try MBTilesReader(path: input)
        for (id, grid) in grids {
            #expect(try reader.tileBytes(id) == source.tile(id))
            let back = try #require(try reader.elevation(id))
            #expect(back.width == 16 && back.height == 16)
            for (a, b) in zip(grid.values, back.values) {
                #expect(a.isNaN ? b.isNaN : abs(a - b) <= 1 / 256 + 1e-4)
            }
        }
        // Admission sees the PNG's size before anything is decoded.
        #expect(throws: ArchiveError.self) {
            try reader.elevation(TileID(z: 1, x: 1, y: 1)!) { w, h throws(ArchiveError) in
                throw ArchiveError(path: "budget", code: .invalidArgument, detail: "\(w)×\(h) refused")
            }
        }
        let mb = dir.file("back.mbtiles")
        let again = try ArchiveConversion.convert(input: pm, output: mb)
        #expect(again.tiles == 21 && again.elevationTiles == 21)
        let out = try MBTilesReader(path: mb)
        for (id, _) in grids {
            #expect(try out.tile(id) == source.tile(id))
            #expect(try out.elevation(id) == reader.elevation(id))
        }
        #expect(out.metadata["tilepack:note"] == "x")
    }

    @Test func refusesAnExistingOutputUnlessForcedAndASameKindConversion() throws {
        let dir = TemporaryDirectory()
        let (input, _) = try Self.archive(dir)
        let pm = dir.file("out.pmtiles")
        _ = try ArchiveConversion.convert(input: input, output: pm)
        let exists = #expect(throws: ConversionError.self) { try ArchiveConversion.convert(input: input, output: pm) }
        #expect(exists?.code == .outputExists)
        #expect(exists?.category == .invalidArgument)
        _ = try ArchiveConversion.convert(input: input, output: pm, overwrite: true)
        let same = #expect(throws: ConversionError.self) {
            try ArchiveConversion.convert(input: input, output: dir.file("x.mbtiles"))
        }
        #expect(same?.code == .nothingToConvert)
    }
}
