import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
import TilePackTestSupport

@Suite struct BuildPlanTests {
    /// Every tile at zoom z whose bounds overlap the box with positive area.
    func bruteForce(_ w: Double, _ s: Double, _ e: Double, _ n: Double, _ z: Int) -> Set<TileID> {
        var out = Set<TileID>()
        for y in 0..<(1 << z) {
            for x in 0..<(1 << z) {
                let t = TileID(z: z, x: x, y: y)!
                let b = WebMercator.bounds(of: t)
                if b.west < e && b.east > w && b.south < n && b.north > s { out.insert(t) }
            }
        }
        return out
    }

    @Test(arguments: [
        (10.0, 45.0, 12.5, 47.3),  // Alps
        (0.0, 0.0, 90.0, 66.51326044311186),  // exactly one z2 tile's edges
        (-179.9, -84.0, 179.9, 84.0),  // nearly the world
        (-0.001, -0.001, 0.001, 0.001),  // a point on the 4-tile corner
        (138.5, -35.2, 138.7, -34.8),
    ])
    func tileSetsMatchBruteForce(_ b: (Double, Double, Double, Double)) throws {
        let plan = try TilePlan(
            bounds: GeoBounds(west: b.0, south: b.1, east: b.2, north: b.3), nativeResolutionMetres: 100, minZoom: 0,
            maxZoom: 7, maxTiles: 1 << 20)
        for z in 0...7 {
            let planned = Set(plan.range(atZoom: z)!.tiles)
            let expected = bruteForce(b.0, b.1, b.2, b.3, z)
            #expect(
                planned.symmetricDifference(expected).isEmpty,
                "zoom \(z): \(planned.count) planned, \(expected.count) expected")
        }
        #expect(plan.tileCount == (0...7).reduce(0) { $0 + bruteForce(b.0, b.1, b.2, b.3, $1).count })
    }

    @Test func defaultZooms() throws {
        // 30 m at the equator: res(12) = 38.2 m > 30 ≥ res(13) = 19.1 m.
        #expect(TilePlan.defaultMaxZoom(nativeResolutionMetres: 30, latitude: 0) == 13)
        // At 60° a z12 pixel is 38.2·cos 60° = 19.1 m ≤ 30.
        #expect(TilePlan.defaultMaxZoom(nativeResolutionMetres: 30, latitude: 60) == 12)
        #expect(TilePlan.defaultMaxZoom(nativeResolutionMetres: WebMercator.resolution(zoom: 9), latitude: 0) == 9)
        #expect(TilePlan.defaultMaxZoom(nativeResolutionMetres: 0.0001, latitude: 0) == 24)

        let plan = try TilePlan(
            bounds: GeoBounds(west: 10, south: 45, east: 12.5, north: 47.3), nativeResolutionMetres: 30)
        #expect(plan.maxZoom == TilePlan.defaultMaxZoom(nativeResolutionMetres: 30, latitude: 46.15))
        #expect(plan.ranges[0].count <= 2)
        #expect(
            TileRange.covering(GeoBounds(west: 10, south: 45, east: 12.5, north: 47.3), zoom: plan.minZoom + 1).count
                > 2)
        #expect(plan.metadata.minZoom == plan.minZoom && plan.metadata.bounds.centerLon == 11.25)
    }

    /// The builder's default max zoom is the georeference's native zoom: rio-tiler's web.tif
    /// (EPSG:3857, z8's own pixels, 44–48° N) is built to z8, not to a 2× upsampled z9.
    @Test func builderPlansToTheSourcesNativeZoom() throws {
        let r = WebMercator.resolution(zoom: 8)
        let geo = try GeoReference(
            crs: try CRS(epsg: 3857),
            transform: GeoTransform([-8_766_409.899970293, r, 0, 6_105_178.323193597, 0, -r]),
            width: 1024, height: 1024)
        let source = FunctionSource(width: 1024, height: 1024) { _, _, _ in 0 }
        var options = BuildOptions()
        let plan = try TileBuilder(source: source, georeference: geo, options: options, codec: RawCodec()).plan()
        #expect(plan.maxZoom == 8 && plan.minZoom == 6)
        options.maxZoom = 9
        #expect(
            try TileBuilder(source: source, georeference: geo, options: options, codec: RawCodec()).plan().maxZoom == 9)
    }

    @Test func refusesBadPlans() throws {
        #expect(throws: BuildError.crossesAntimeridian(west: 170, east: -170)) {
            try TilePlan(bounds: GeoBounds(west: 170, south: 0, east: -170, north: 10), nativeResolutionMetres: 30)
        }
        #expect(throws: BuildError.self) {
            try TilePlan(
                bounds: GeoBounds(west: 0, south: 0, east: 1, north: 1), nativeResolutionMetres: 30, minZoom: 9,
                maxZoom: 8)
        }
        #expect(throws: BuildError.self) {
            try TilePlan(
                bounds: GeoBounds(west: 0, south: 0, east: 1, north: 1), nativeResolutionMetres: 30, maxZoom: 25)
        }
        #expect(throws: BuildError.self) {
            try TilePlan(bounds: GeoBounds(west: 0, south: 0, east: 1, north: 1), nativeResolutionMetres: .nan)
        }
        #expect(throws: BuildError.self) {
            try TilePlan(bounds: GeoBounds(west: 0, south: -91, east: 1, north: 1), nativeResolutionMetres: 30)
        }
        // Poles reached up to rounding are clamped to web mercator's edge, not refused.
        let polar = try TilePlan(
            bounds: GeoBounds(west: 0, south: -89.99999999999999, east: 180, north: 90.00000000000001),
            nativeResolutionMetres: 200_000)
        #expect(polar.bounds.north == WebMercator.maxLatitude && polar.bounds.south == -WebMercator.maxLatitude)
        #expect(throws: BuildError.self) {
            try TilePlan(bounds: GeoBounds(west: 0, south: 86, east: 1, north: 89), nativeResolutionMetres: 30)
        }
        do {
            _ = try TilePlan(
                bounds: GeoBounds(west: -10, south: -10, east: 10, north: 10), nativeResolutionMetres: 1, minZoom: 0,
                maxZoom: 20, maxTiles: 5_000_000)
            Issue.record("absurd plan accepted")
        } catch let error as BuildError {
            guard error.code == .planTooLarge else { Issue.record("\(error)"); return }
            #expect(error.detail.contains("more than the limit 5000000"))
            #expect(!error.description.contains("\n"))
        } catch { Issue.record("\(error)") }
    }
}
