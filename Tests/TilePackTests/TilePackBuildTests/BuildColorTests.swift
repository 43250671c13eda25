import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
import TilePackTestSupport

@Suite struct BuildColorTests {
    static func hills(_ c: Int, _ r: Int) -> Float {
        Float(800 + 300 * sin(Double(c) / 37) * cos(Double(r) / 23) + 2 * Double(c))
    }

    /// Tiles built one by one must equal one big render of the same 2×2 area: no seams.
    @Test func hillshadeHasNoSeamsAtTileBorders() throws {
        let w = 650, h = 700
        let source = FunctionSource(width: w, height: h, nodata: -32768) { c, r, _ in Self.hills(c, r) }
        let georef = PlateCarree(west: 7.0, north: 46.5, dx: 0.0003, dy: 0.0002, width: w, height: h)
        let z = 13
        let first = WebMercator.tile(lon: 7.05, lat: 46.45, zoom: z)!.tile
        var options = BuildOptions()
        options.minZoom = z; options.maxZoom = z; options.approximationError = 0; options.elevationRange = 0...1500
        let sink = MemorySink()
        let report = try TileBuilder(source: source, georeference: georef, options: options, codec: RawCodec()).run(
            sink: sink)
        #expect(report.perZoom[z] == sink.writes.count)
        #expect(sink.elevations.count == sink.writes.count)

        let colorizer = try Colorizer(source: source, mode: .elevation, elevationRange: 0...1500)
        let grid = MapFrame(zoom: z, originX: first.x * 256 - 1, originY: first.y * 256 - 1, width: 514, height: 514)
        let ws = ResampleWorkspace()
        let resampler = Resampler(
            source: source, mapper: CoordinateMapper(georeference: georef, maxError: 0), method: .bilinear)
        _ = try resampler.resample(grid, tile: first, into: ws)
        var big = [UInt8](repeating: 0, count: 512 * 512 * 4)
        let bigMetres = colorizer.colorize(values: ws.values, valid: ws.valid, grid: grid, into: &big)!
        let tiles = sink.tiles
        var worst = 0
        for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
            let tile = TileID(z: z, x: first.x + dx, y: first.y + dy)!
            let rgba = try #require(tiles[tile])
            for py in 0..<256 {
                for px in 0..<256 {
                    let o = (py * 256 + px) * 4, bo = ((dy * 256 + py) * 512 + dx * 256 + px) * 4
                    for ch in 0..<4 { worst = max(worst, abs(Int(rgba[o + ch]) - Int(big[bo + ch]))) }
                }
            }
        }
        // Float rounding of a different window origin may move a channel by one level;
        // a seam (a border pixel shaded with a missing neighbour) moves it by tens.
        #expect(worst <= 1)
        // The elevation written is the resampled metres.
        let e = try #require(sink.elevations.first { $0.0 == first }?.1)
        #expect(abs(e[100 * 256 + 100] - bigMetres[100 * 512 + 100]) < 1e-3)
    }

    /// A sink that lets the build's workers pack elevation (as the MBTiles writer does) and keeps
    /// what it is handed.
    final class PackingSink: TileSink {
        let elevationPacker: ElevationPacker?
        var packed: [TileID: PackedElevation] = [:]
        var metres = 0
        init(_ packer: ElevationPacker) { elevationPacker = packer }
        func write(tile: TileID, encoded: [UInt8]) throws {}
        func writeElevation(tile: TileID, metres: [Float], width: Int, height: Int) throws { self.metres += 1 }
        func writeElevation(tile: TileID, packed: PackedElevation) throws { self.packed[tile] = packed }
    }

    /// The workers pack each tile's elevation with the sink's packer, in parallel: the same
    /// blobs as packing the metres a sink without a packer is handed, for the zooms
    /// `elevationLevels` keeps (every zoom, or the max zoom only), and no metres besides.
    @Test(arguments: [ElevationLevels.all, .maxZoom])
    func workersPackElevationAsTheSinkWould(levels: ElevationLevels) throws {
        let w = 650, h = 700
        let source = FunctionSource(width: w, height: h, nodata: -32768) { c, r, _ in
            c < 40 && r < 40 ? -32768 : Self.hills(c, r)
        }
        let georef = PlateCarree(west: 7.0, north: 46.5, dx: 0.0003, dy: 0.0002, width: w, height: h)
        var options = BuildOptions()
        options.minZoom = 11; options.maxZoom = 13; options.workers = 2; options.elevationRange = 0...1500
        options.elevationLevels = levels
        let packer = ElevationPacker(encoding: nil, step: 0.5, level: 6)
        let plain = MemorySink(), packing = PackingSink(packer)
        for sink in [plain as any TileSink, packing] {
            _ = try TileBuilder(source: source, georeference: georef, options: options, codec: RawCodec()).run(
                sink: sink)
        }
        #expect(packing.metres == 0)
        #expect(packing.packed.count == plain.elevations.count && !plain.elevations.isEmpty)
        if levels == .maxZoom { #expect(plain.elevations.allSatisfy { $0.0.z == 13 }) }
        for (tile, metres) in plain.elevations {
            let expected = try packer.pack(ElevationTile(width: 256, height: 256, values: metres))
            #expect(packing.packed[tile] == expected, "tile \(tile)")
        }
    }

    /// A sink without a packer that is handed a packed tile anyway (``TileSink``'s default)
    /// stores the metres it unpacks: a grid on the quantisation step comes back exactly.
    @Test func aSinkWithoutAPackerTakesPackedElevationAsMetres() throws {
        let metres = (0..<256 * 256).map { i in i % 97 == 0 ? Float.nan : Float(i % 4000) * 0.5 - 200 }
        let packed = try ElevationPacker(encoding: nil, step: 0.5, level: 6).pack(
            ElevationTile(width: 256, height: 256, values: metres))
        #expect(packed.encoding == .quantizedPlanarDeflate)
        let sink = MemorySink()
        #expect(sink.elevationPacker == nil)
        let tile = try #require(TileID(z: 12, x: 2130, y: 1450))
        try sink.writeElevation(tile: tile, packed: packed)
        let stored = try #require(sink.elevations.first)
        #expect(stored.0 == tile && stored.1.count == metres.count)
        #expect(zip(stored.1, metres).allSatisfy { $0.bitPattern == $1.bitPattern || ($0 == $1) })
    }

    @Test func hillshadeLightsNorthWestSlopes() throws {
        // A plane rising to the east faces west: a north-west sun lights it more than flat ground.
        let flat = FunctionSource(width: 500, height: 500) { _, _, _ in 100 }
        let east = FunctionSource(width: 500, height: 500) { c, _, _ in Float(c) * 5 }
        let georef = PlateCarree(west: 7.0, north: 46.5, dx: 0.0003, dy: 0.0003, width: 500, height: 500)
        func centrePixel(_ s: FunctionSource) throws -> [UInt8] {
            let c = try Colorizer(source: s, mode: .elevation, elevationRange: -10000...10000)
            let tile = WebMercator.tile(lon: 7.05, lat: 46.45, zoom: 13)!.tile
            let grid = MapFrame(tile: tile, border: 1)
            let ws = ResampleWorkspace()
            _ = try Resampler(
                source: s, mapper: CoordinateMapper(georeference: georef, maxError: 0.125), method: .bilinear
            )
            .resample(grid, tile: tile, into: ws)
            var rgba = [UInt8](repeating: 0, count: 256 * 256 * 4)
            _ = c.colorize(values: ws.values, valid: ws.valid, grid: grid, into: &rgba)
            return Array(rgba[(128 * 256 + 128) * 4..<(128 * 256 + 128) * 4 + 4])
        }
        let f = try centrePixel(flat), e = try centrePixel(east)
        #expect(e[3] == 255 && f[3] == 255)
        let lit: Int = Int(e[0]) + Int(e[1]) + Int(e[2])
        let level: Int = Int(f[0]) + Int(f[1]) + Int(f[2])
        #expect(lit > level)
    }

    @Test func stretchUsesSecondAndNinetyEighthPercentiles() throws {
        // Values 0…999, each ten times: the 2nd percentile is ~20, the 98th ~979. (auto would
        // take this range for heights: see TerrainDetectionTests.)
        let source = FunctionSource(width: 100, height: 100, sampleType: .uint16) { c, r, _ in
            Float((c + r * 100) % 1000)
        }
        let colorizer = try Colorizer(source: source, mode: .stretch, elevationRange: nil)
        #expect(colorizer.mode == .stretch)
        let (lo, hi) = colorizer.stretchRange[0]
        #expect(abs(lo - 20) <= 1 && abs(hi - 979) <= 1)
        var rgba = [UInt8](repeating: 0, count: 4 * 4)
        let grid = MapFrame(zoom: 0, originX: 0, originY: 0, width: 4, height: 1)
        _ = colorizer.colorize(values: [0, lo, (lo + hi) / 2, 5000], valid: [1, 1, 1, 1], grid: grid, into: &rgba)
        #expect(rgba[0] == 0 && rgba[4] == 0 && abs(Int(rgba[8]) - 128) <= 1 && rgba[12] == 255 && rgba[15] == 255)

        // A huge source is sampled, not read: at most 16×16 windows of 64×64.
        let huge = FunctionSource(width: 100_000, height: 80_000, sampleType: .uint16) { c, r, _ in
            Float((c ^ r) & 0xfff)
        }
        let p = try SourceStatistics.percentiles(of: huge, bands: [0], [2, 98])
        #expect(p[0] != nil)
        let read = huge.log.all.reduce(0) { $0 + $1.w * $1.h }
        #expect(read <= 16 * 16 * 64 * 64 && huge.log.all.allSatisfy { $0.w == 64 && $0.h == 64 })
    }

    @Test func autoModes() throws {
        func mode(_ t: SampleType, bands: Int = 1, map: [UInt16]? = nil) throws -> Colorizer.Mode {
            try Colorizer(
                source: FunctionSource(width: 8, height: 8, bands: bands, sampleType: t, colorMap: map) { _, _, _ in 1
                },
                mode: .auto, elevationRange: nil
            ).mode
        }
        #expect(try mode(.uint8) == .rgb)
        #expect(try mode(.uint8, bands: 4) == .rgb)
        // A constant integer band is one class (issue 25: integer bands with ≤ 32 values are classes).
        #expect(try mode(.int16) == .classes)
        #expect(try mode(.float32) == .elevation)
        #expect(try mode(.uint16) == .classes)
        #expect(try mode(.uint16, bands: 3) == .stretch)
        #expect(try mode(.uint8, map: [UInt16](repeating: 0, count: 768)) == .palette)
        #expect(throws: BuildError.self) {
            try Colorizer(
                source: FunctionSource(width: 8, height: 8, sampleType: .uint16) { _, _, _ in 1 }, mode: .rgb,
                elevationRange: nil)
        }
        #expect(throws: BuildError.self) {
            try Colorizer(
                source: FunctionSource(width: 8, height: 8, bands: 3, sampleType: .float32) { _, _, _ in 1 },
                mode: .elevation, elevationRange: nil)
        }
    }
}
