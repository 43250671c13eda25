import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
@testable import TilePackStore
@testable import TilePackSamples
#if canImport(Glibc)
import Glibc
#endif
import TilePackTestSupport

/// GeoTIFF in, archive out, point answered: the SampleRegions rasters through every stage.
@Suite("End to end: build and query the sample regions")
struct EndToEndTests {
    static let sampleRegions = TestData.sampleRegions

    /// Builds a sample with PNG tiles (lossless, so colours can be compared with the source;
    /// the debug build's PVRTC quality encoder is too slow for a unit test).
    static func build(_ file: String, in dir: String, maxZoom: Int? = nil) throws -> (RegionBuild.Result, TilePlan) {
        try SampleLibrary.build(file, in: dir, maxZoom: maxZoom)
    }

    /// The archive is intact, carries every metadata key, and stores exactly the planned
    /// tiles that are not fully transparent.
    static func checkArchive(_ result: RegionBuild.Result, plan: TilePlan) throws -> MBTilesReader {
        let reader = try MBTilesReader(path: result.outputPath)
        try reader.verifyIntegrity()
        for key in [
            "name", "format", "bounds", "center", "minzoom", "maxzoom", "type", "version", "description", "attribution",
            "tilepack:codec", "tilepack:source_sha256", "tilepack:build_options",
        ] {
            #expect(reader.metadata[key] != nil, "metadata lacks \(key)")
        }
        #expect(reader.zoomRange == plan.minZoom...plan.maxZoom)
        var stored = 0
        for z in plan.minZoom...plan.maxZoom {
            let ids = try reader.tileIDs(zoom: z)
            stored += ids.count
            let range = try #require(plan.range(atZoom: z))
            #expect(ids.allSatisfy { range.contains($0) }, "zoom \(z) has tiles outside the plan")
        }
        #expect(stored == result.report.tilesWritten)
        #expect(stored + result.report.emptySkipped == plan.tileCount)
        return reader
    }

    @Test func demBuildsAndAnswersElevationInMetres() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }  // keep the directory until the test ends
        let (result, plan) = try Self.build("montblanc-dem.tif", in: dir)
        let reader = try Self.checkArchive(result, plan: plan)
        #expect(reader.hasElevation && result.archive.elevationTiles == result.report.tilesWritten)

        // A library query: the archive answers inside its bounds, nothing answers outside.
        let library = try PointQuery.archives(in: dir)
        #expect(library == [result.outputPath])
        #expect(
            try PointQuery.answer(try TileQuery(lat: 45.85, lon: 6.88, zoom: 12), store: TileStore.over(library)).count
                == 1)
        #expect(
            try PointQuery.answer(try TileQuery(lat: 10, lon: 10, zoom: 12), store: TileStore.over(library)).isEmpty)

        let tiff = try TIFFFile(path: Self.sampleRegions + "/montblanc-dem.tif")
        let geo = try GeoReference(image: tiff.image, path: tiff.path)
        // Points on a grid over the DEM's interior, away from its nodata corner.
        for (fx, fy) in [(0.5, 0.5), (0.3, 0.7), (0.8, 0.4), (0.6, 0.85)] {
            let col = fx * Double(tiff.image.width), row = fy * Double(tiff.image.height)
            let p = geo.lonLat(col: col, row: row)
            let query = try TileQuery(lat: p.lat, lon: p.lon, zoom: plan.maxZoom)
            let answer = try PointQuery.answer(query, reader: reader)
            let metres = try #require(answer.elevationMetres)
            #expect(answer.elevationZoom == plan.maxZoom)
            #expect(answer.present && answer.rgba?[3] == 255)
            // Error bound: the answer is a bilinear blend (query) of bilinear blends (build)
            // of source samples, all within 2 source pixels of the point (a z12 pixel is
            // 26.6 m here, a source pixel 30 m), so it must lie within their range.
            let window = try tiff.read(window: PixelWindow(x: Int(col) - 2, y: Int(row) - 2, width: 5, height: 5))
            let samples = (0..<25).map { window.sample(x: $0 % 5, y: $0 / 5, band: 0) }
            #expect(
                metres >= samples.min()! - 1e-3 && metres <= samples.max()! + 1e-3,
                "elevation \(metres) outside the neighbourhood \(samples.min()!)…\(samples.max()!)")
        }
    }

    @Test func colourImageBuildsAndAnswersTheSourceColour() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }  // keep the directory until the test ends
        let (result, plan) = try Self.build("montblanc-color.tif", in: dir, maxZoom: 13)
        let reader = try Self.checkArchive(result, plan: plan)
        #expect(!reader.hasElevation || result.archive.elevationTiles == 0)

        let tiff = try TIFFFile(path: Self.sampleRegions + "/montblanc-color.tif")
        let geo = try GeoReference(image: tiff.image, path: tiff.path)
        var close = 0, total = 0
        for i in 0..<40 {
            let col = (0.1 + 0.8 * Double(i % 8) / 7) * Double(tiff.image.width)
            let row = (0.1 + 0.8 * Double(i / 8) / 4) * Double(tiff.image.height)
            let p = geo.lonLat(col: col, row: row)
            let answer = try PointQuery.answer(
                try TileQuery(lat: p.lat, lon: p.lon, zoom: plan.maxZoom), reader: reader)
            let rgba = try #require(answer.rgba)
            #expect(rgba[3] == 255)
            // Bilinear resampling blends the 2×2 source pixels around the point: each channel
            // lies within their range (one level of rounding allowed).
            let window = try tiff.read(window: PixelWindow(x: Int(col) - 1, y: Int(row) - 1, width: 3, height: 3))
            for band in 0..<3 {
                let values = (0..<9).map { window.sample(x: $0 % 3, y: $0 / 3, band: band) }
                #expect(Double(rgba[band]) >= values.min()! - 1 && Double(rgba[band]) <= values.max()! + 1)
                total += 1
                if abs(Double(rgba[band]) - window.sample(x: 1, y: 1, band: band)) <= 8 { close += 1 }
            }
        }
        // And mostly within ±8 of the pixel under the point itself (edges of fields differ more).
        #expect(Double(close) / Double(total) >= 0.8)
    }

    @Test func aBuildFailingHalfwayLeavesTheExistingArchiveUntouched() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }  // keep the directory until the test ends
        let (first, _) = try Self.build("montblanc-dem.tif", in: dir, maxZoom: 10)
        let before = try FileDigest.sha256(path: first.outputPath)
        // A copy of the DEM whose compressed blocks are damaged from the middle on: it opens
        // (the IFD is intact), the build starts writing, then a block fails to inflate.
        var bytes = readFile(Self.sampleRegions + "/montblanc-dem.tif")
        for i in stride(from: bytes.count / 3, to: bytes.count * 2 / 3, by: 7) { bytes[i] ^= 0x5A }
        let damaged = dir + "/damaged.tif"
        let fd = open(damaged, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
        var request = RegionBuild.Request(sourcePath: damaged)
        request.outputPath = first.outputPath
        request.codec = .png
        request.options.maxZoom = 12
        #expect(throws: TIFFError.self) { try RegionBuild(request).run() }
        #expect(try FileDigest.sha256(path: first.outputPath) == before)
        #expect(try MBTilesReader(path: first.outputPath).zoomRange?.upperBound == 10)
        // No temporary archive is left behind.
        #expect(access(first.outputPath + ".tmp-\(getpid())", F_OK) != 0)
    }
}

private extension String {
    func replacingSuffix(_ suffix: String, with replacement: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) + replacement : self
    }
}
