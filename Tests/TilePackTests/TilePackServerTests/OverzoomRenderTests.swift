import Testing
import Foundation
import TilePackArchive
import TilePackCodec
import TilePackCore
import TilePackEncoders
import TilePackRegions
import TilePackRender
import TilePackSQLite
import TilePackStore
import TilePackTools
@testable import TilePackServer
import TilePackTestSupport

/// Maps that never go blank (issue 25, Must-show 5): render, query, serve and the CLI beyond
/// the sample archives' zooms (they stop at z12).
@Suite struct OverzoomRenderTests {
    static let budget: MemoryBudget = { (try? MemoryBudget(bytes: 64 << 20))! }()
    static let point = (lat: 45.86, lon: 6.88)

    static func layers() throws -> MapLayers {
        MapLayers(store: try TileStore.over(SampleLibrary.archives, budget: budget), credits: [])
    }

    /// The archives' shared zooms (the samples are built alike).
    static func zooms(_ store: TileStore) throws -> ClosedRange<Int> {
        let ranges = store.archives.compactMap(\.zoomRange)
        return try #require(ranges.map(\.lowerBound).max())...(try #require(ranges.map(\.upperBound).min()))
    }

    static func frame(_ zoom: Int) throws -> MapFrame {
        try MapFrame(lat: point.lat, lon: point.lon, zoom: zoom, width: 256, height: 256)
    }

    /// Mean absolute channel difference of `a`'s pixels against `reference(globalX, globalY)`
    /// over the pixels where the reference answers.
    static func meanDifference(_ a: MapPicture, _ f: MapFrame, reference: (Int, Int) -> [Int]?) -> Double {
        var sum = 0, n = 0
        for y in 0..<f.height {
            for x in 0..<f.width {
                guard let want = reference(f.originX + x, f.originY + y) else { continue }
                let i = (y * f.width + x) * 4
                for c in 0..<3 { sum += abs(Int(a.image.pixels[i + c]) - want[c]) }
                n += 3
            }
        }
        return n == 0 ? .infinity : Double(sum) / Double(n)
    }

    static func notBackground(_ p: MapPicture) -> Double {
        var n = 0
        for i in stride(from: 0, to: p.image.pixels.count, by: 4)
        where Array(p.image.pixels[i..<i + 4]) != MapRenderer.background { n += 1 }
        return Double(n) / Double(p.image.width * p.image.height)
    }

    @Test func renderBeyondTheMaxZoomDrawsTheRegionFromTheAncestor() throws {
        let layers = try Self.layers()
        let zooms = try Self.zooms(layers.store)
        let top = try Self.frame(zooms.upperBound), deep = try Self.frame(zooms.upperBound + 3)
        let reference = try MapRenderer.render(top, store: layers.store)
        let picture = try MapRenderer.render(deep, store: layers.store)
        #expect(picture.tilesDrawn >= 1 && picture.tilesLocked == 0)
        #expect(picture.sourceZooms == [zooms.upperBound])
        #expect(Self.notBackground(picture) > 0.99)
        // The same place as the max zoom draws it, scaled 8×: bilinear against nearest differ
        // by the smoothing only.
        let diff = Self.meanDifference(picture, deep) { gx, gy in
            let x = gx / 8 - top.originX, y = gy / 8 - top.originY
            guard (0..<top.width).contains(x), (0..<top.height).contains(y) else { return nil }
            let i = (y * top.width + x) * 4
            return (0..<3).map { Int(reference.image.pixels[i + $0]) }
        }
        #expect(diff < 8, "mean difference \(diff) against the max-zoom render")
    }

    @Test func renderBelowTheMinZoomDrawsTheRegionFromTheDescendants() throws {
        let layers = try Self.layers()
        let zooms = try Self.zooms(layers.store)
        let low = zooms.lowerBound - 2
        let base = try MapFrame(
            lat: Self.point.lat, lon: Self.point.lon, zoom: zooms.lowerBound, width: 1024, height: 1024)
        let under = try Self.frame(low)
        let reference = try MapRenderer.render(base, store: layers.store)
        let picture = try MapRenderer.render(under, store: layers.store)
        #expect(picture.tilesDrawn >= 1 && picture.sourceZooms == [zooms.lowerBound])
        // The region is ~27 × 24 pixels at z7: about 1 % of the picture, but drawn.
        #expect(Self.notBackground(picture) > 0.008, "the region is small at this zoom, but drawn")
        // Each pixel is the mean of a 4 × 4 block of the min zoom's picture (to the rounding of
        // two 2 × 2 steps).
        let diff = Self.meanDifference(picture, under) { gx, gy in
            let x0 = gx * 4 - base.originX, y0 = gy * 4 - base.originY
            guard x0 >= 0, y0 >= 0, x0 + 4 <= base.width, y0 + 4 <= base.height else { return nil }
            var sum = [0, 0, 0]
            for y in y0..<(y0 + 4) {
                for x in x0..<(x0 + 4) {
                    for c in 0..<3 { sum[c] += Int(reference.image.pixels[(y * base.width + x) * 4 + c]) }
                }
            }
            return sum.map { ($0 + 8) / 16 }
        }
        #expect(diff < 3, "mean difference \(diff) against the min zoom's block means")
        // Four zooms below: nothing (underzoom is bounded), so nothing is drawn.
        let far = try MapRenderer.render(Self.frame(zooms.lowerBound - 4), store: layers.store)
        #expect(far.tilesDrawn == 0)
    }

    @Test func queryBelowAndBeyondTheZoomsAnswersAndSaysFromWhere() throws {
        let store = try TileStore.over(SampleLibrary.archives)
        let zooms = try Self.zooms(store)
        let dem = try #require(store.archivePaths.firstIndex { $0.hasSuffix("montblanc-dem.mbtiles") })
        let exact = try PointQuery.answer(
            TileQuery(lat: Self.point.lat, lon: Self.point.lon, zoom: zooms.upperBound), store: store, archive: dem)
        let below = try PointQuery.answer(
            TileQuery(lat: Self.point.lat, lon: Self.point.lon, zoom: zooms.lowerBound - 2), store: store, archive: dem)
        #expect(below.present && below.rgba != nil && below.dataZoom == zooms.lowerBound && !below.overzoomed)
        let metres = try #require(below.elevationMetres)
        #expect(below.elevationZoom == zooms.lowerBound)
        #expect(
            abs(metres - (exact.elevationMetres ?? .nan)) < 400,
            "a mean over a coarser cell: \(metres) vs \(exact.elevationMetres ?? .nan)")
        let beyond = try PointQuery.answer(
            TileQuery(lat: Self.point.lat, lon: Self.point.lon, zoom: zooms.upperBound + 4), store: store, archive: dem)
        #expect(
            beyond.present && beyond.dataZoom == zooms.upperBound && beyond.overzoomed
                && beyond.elevationZoom == zooms.upperBound)
        #expect(abs((beyond.elevationMetres ?? .nan) - (exact.elevationMetres ?? .nan)) < 30)
        #expect(
            try beyond.json.contains(#""data_zoom":\#(zooms.upperBound),"#)
                && beyond.json.contains(#""overzoomed":true"#))
        // Beyond z22 nothing is made: no colour, but the elevation still comes from the stored zooms.
        let z23 = try PointQuery.answer(
            TileQuery(lat: Self.point.lat, lon: Self.point.lon, zoom: 23), store: store, archive: dem)
        #expect(
            !z23.present && z23.elevationZoom == zooms.upperBound && z23.dataZoom == zooms.upperBound && z23.overzoomed)
    }

    @Test func serverTilesBeyondTheZoomsSayTheirSourceZoom() throws {
        let service = ServerTests.openService
        let zooms = try Self.zooms(service.store)
        let hit = try #require(WebMercator.tile(lon: Self.point.lon, lat: Self.point.lat, zoom: zooms.upperBound + 2))
        let (z, x, y) = ("\(hit.tile.z)", "\(hit.tile.x)", "\(hit.tile.y)")
        let png = service.tile(region: "montblanc-color", z: z, x: x, y: y + ".png")
        #expect(png.status == 200 && png.header("X-Tile-Overzoom") == "\(zooms.upperBound)")
        let etag = try #require(png.header("ETag"))
        let again = service.tile(region: "montblanc-color", z: z, x: x, y: y + ".png", ifNoneMatch: etag)
        #expect(again.status == 304 && again.header("X-Tile-Overzoom") == "\(zooms.upperBound)")
        // The payload stays exact-zoom only.
        #expect(service.tile(region: "montblanc-color", z: z, x: x, y: y).status == 404)
        let view = service.view(z: z, x: x, y: y + ".png")
        #expect(view.status == 200 && view.header("X-Tile-Overzoom") == "\(zooms.upperBound)")
        let decoded = try PNGDecoder().decode(view.body).pixels
        #expect(
            stride(from: 0, to: decoded.count, by: 4).filter { Array(decoded[$0..<$0 + 4]) != MapRenderer.background }
                .count > 60000)
        // Below the min zoom: the finer source zoom in the same header.
        let low = try #require(WebMercator.tile(lon: Self.point.lon, lat: Self.point.lat, zoom: zooms.lowerBound - 1))
        let under = service.view(z: "\(low.tile.z)", x: "\(low.tile.x)", y: "\(low.tile.y).png")
        #expect(under.status == 200 && under.header("X-Tile-Overzoom") == "\(zooms.lowerBound)")
        // A stored tile has no such header; the viewer's zooms follow the library.
        let stored = try #require(WebMercator.tile(lon: Self.point.lon, lat: Self.point.lat, zoom: zooms.upperBound))
        #expect(
            service.view(z: "\(stored.tile.z)", x: "\(stored.tile.x)", y: "\(stored.tile.y).png").header(
                "X-Tile-Overzoom") == nil)
        let regions = String(decoding: service.regionsListing().body, as: UTF8.self)
        #expect(
            regions.contains("\"view_maxzoom\":22,\"view_minzoom\":\(zooms.lowerBound - 3)"), "\(regions.suffix(80))")
        // The page itself (served only where Leaflet is installed; a 503 naming it elsewhere).
        #expect(ViewerPage.html.contains("map.setMaxZoom(info.view_maxzoom)"))
        // /query over nothing: 200 with the uncovered object.
        let nowhere = service.query(lat: "10", lon: "10", zoom: "12")
        #expect(nowhere.status == 200 && String(decoding: nowhere.body, as: UTF8.self).contains("\"archive\":null"))
    }

    // MARK: CLI

    static func run(_ arguments: [String]) throws -> TilepackBinary.Run {
        // No trust file from the machine's config: the sample library is open.
        let config = TemporaryDirectory()
        return try TilepackBinary.tilepack(
            arguments, environment: ["XDG_CONFIG_HOME": config.path, "HOME": config.path])
    }

    @Test func uncoveredRenderAndQueryExitTwo() throws {
        let dir = SampleLibrary.directory
        let out = TemporaryDirectory()
        let query = try Self.run(["query", "10", "10", "12", "--library", dir, "--json"])
        #expect(query.status == 2, "\(query.stderr)")
        let object = try TilepackBinary.json(query.stdout)
        #expect(object["archive"] is NSNull && object["data_zoom"] is NSNull && object["overzoomed"] as? Bool == false)
        let plain = try Self.run(["query", "10", "10", "12", "--library", dir])
        #expect(plain.status == 2 && plain.stderr.hasPrefix("error: ") && plain.stderr.contains("covers"))
        let render = try Self.run(["render", "10", "10", "12", "--library", dir, "-o", out.file("nowhere.png")])
        #expect(
            render.status == 2
                && render.stderr
                    == "error: \(dir): nothing covers 10 10 12 (2 archives searched): no picture written\n",
            "\(render.stderr)")
        // No background-only picture that would pass for a map.
        #expect(!fileExists(out.file("nowhere.png")))
        // Covered, beyond the zooms: drawn, exit 0, and the summary says from which zoom.
        let deep = try Self.run([
            "render", "45.86", "6.88", "15", "--size", "256x256", "--library", dir, "-o", out.file("deep.png"),
        ])
        #expect(deep.status == 0 && deep.stdout.contains("made from zoom 12"), "\(deep.stdout)\(deep.stderr)")
        let zooms = try Self.zooms(TileStore.over(SampleLibrary.archives))
        let low = try Self.run(["query", "45.86", "6.88", "\(zooms.lowerBound - 2)", "--library", dir, "--json"])
        #expect(low.status == 0, "\(low.stderr)")
        let answers = try low.stdout.split(separator: "\n").map { try TilepackBinary.json(String($0)) }
        #expect(answers.count == 2)
        for answer in answers {
            #expect(
                answer["present"] as? Bool == true && answer["data_zoom"] as? Int == zooms.lowerBound
                    && answer["overzoomed"] as? Bool == false)
        }
        let dem = try #require(answers.first { ($0["archive"] as? String)?.hasSuffix("montblanc-dem.mbtiles") == true })
        #expect(dem["elevation_m"] as? Double != nil, "elevation below the min zoom")
    }
}
