import Testing
@testable import TilePackCore
@testable import TilePackCodec
@testable import TilePackArchive
import TilePackTestSupport

/// `tilepack info ARCHIVE`'s report: every field the archive records, counted from the file.
@Suite struct ArchiveReportTests {
    @Test func reportsNameZoomsCentreElevationSourcesAndOptions() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("r.mbtiles")
        var metadata = ArchiveFixture.metadata()
        metadata.buildOptions = #"{"codec":"png","max_zoom":3,"keep_empty":false}"#
        let writer = try MBTilesWriter(path: path, metadata: metadata)
        try writer.write([1, 2, 3], for: TileID(z: 2, x: 1, y: 1)!)
        try writer.write([4, 5, 6, 7], for: TileID(z: 3, x: 2, y: 2)!)
        let grid = ElevationTile(width: 4, height: 4, values: (0..<16).map { Float($0) })
        try writer.writeElevation(grid, for: TileID(z: 3, x: 2, y: 2)!)
        try writer.writeElevation(grid, for: TileID(z: 3, x: 2, y: 3)!)
        try writer.finish()

        let report = try ArchiveReport(path: path)
        #expect(report.kind == "archive" && report.container == "mbtiles")
        #expect(report.name == "Test region" && report.codec == "png" && report.tileSize == 256)
        #expect(report.codecLevel == "6")
        #expect(report.minzoom == 2 && report.maxzoom == 3)
        #expect(report.tiles.count == 2 && report.tiles.bytes == 7)
        #expect(
            report.tiles.perZoom == [PackZoomCount(z: 2, tiles: 1, bytes: 3), PackZoomCount(z: 3, tiles: 1, bytes: 4)])
        let elevation = try #require(report.elevation)
        #expect(elevation.rows == 2 && elevation.minzoom == 3 && elevation.maxzoom == 3)
        #expect(elevation.bytes > 0 && elevation.valueKind == "elevation")
        #expect(report.sources == [ArchiveReport.Source(file: "dem.tif", sha256: String(repeating: "ab", count: 32))])
        #expect(
            report.buildOptions
                == .object(["codec": .string("png"), "max_zoom": .number(3), "keep_empty": .bool(false)]))
        #expect(report.formatVersion == 1)  // Float32 elevation: format 1 (quantised grids write 2)
        let center = try #require(report.center)
        #expect(center.count == 3)

        // The options come back as a JSON object, not a quoted string.
        let json = try JSONOutput.string(report)
        #expect(json.contains(#""build_options":{"codec":"png","keep_empty":false,"max_zoom":3}"#))
        #expect(json.contains(#""tile_size":256"#))
    }

    @Test func aMosaicListsEveryFileAndAnArchiveWithoutElevationHasNone() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("m.mbtiles")
        var metadata = ArchiveFixture.metadata()
        metadata.sourceFile = nil
        metadata.sourceSHA256 = nil
        metadata.sources = #"[{"file":"a.tif","sha256":"01"},{"file":"b.tif","sha256":"02"}]"#
        metadata.buildOptions = "not json"
        let writer = try MBTilesWriter(path: path, metadata: metadata)
        try writer.write([9], for: TileID(z: 0, x: 0, y: 0)!)
        try writer.finish()

        let report = try ArchiveReport(path: path)
        #expect(report.sources.map(\.file) == ["a.tif", "b.tif"])
        #expect(report.elevation == nil)
        #expect(report.buildOptions == nil)  // not JSON: left out rather than guessed
    }

    @Test func aPMTilesArchiveReportsItsHeaderAndCountsFromItsDirectories() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("p.pmtiles")
        let writer = try PMTilesWriter(
            path: path, metadata: ["name": "P", "format": "png", "tilepack:codec": "png"], tileType: .png)
        let a = TileID(z: 1, x: 0, y: 0)!, b = TileID(z: 1, x: 0, y: 1)!, c = TileID(z: 2, x: 1, y: 1)!
        // Written in Hilbert order; a and b share their bytes (one content, two entries or a run).
        for id in [a, b, c].sorted(by: { $0.pmtilesID < $1.pmtilesID }) {
            try writer.write(id == c ? [7, 7, 7] : [1, 2], for: id)
        }
        try writer.finish()

        let report = try ArchiveReport(path: path)
        #expect(report.container == "pmtiles" && report.name == "P" && report.codec == "png")
        #expect(
            report.tiles.perZoom == [PackZoomCount(z: 1, tiles: 2, bytes: 4), PackZoomCount(z: 2, tiles: 1, bytes: 3)])
        #expect(report.minzoom == 1 && report.maxzoom == 2)
        let facts = try #require(report.pmtiles)
        #expect(facts.clustered && facts.tileType == "png" && facts.internalCompression == "gzip")
        #expect(facts.addressedTiles == 3 && facts.tileContents == 2 && facts.terrain == nil)
        #expect(report.elevation == nil)
    }
}
