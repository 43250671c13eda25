import Testing
@testable import TilePackCore
import TilePackTestSupport

/// Tile math cases checked by hand and against mercantile (Scripts/proj-check runs 100,000).
@Suite("Geo tile math")
struct GeoTileTests {
    @Test func knownTilesAndTMSFlip() throws {
        // mercantile.tile(151.2153, -33.8568, 15) == Tile(30147, 19662, 15)
        let hit = try #require(WebMercator.tile(lon: 151.2153, lat: -33.8568, zoom: 15))
        #expect(hit.tile == TileID(z: 15, x: 30147, y: 19662))
        #expect(hit.tile.tmsY == 32767 - 19662)
        #expect(TileID(z: 15, x: 30147, tmsY: hit.tile.tmsY) == hit.tile)
        let zero = try #require(WebMercator.tile(lon: 0, lat: 0, zoom: 0))
        #expect(zero.tile == TileID(z: 0, x: 0, y: 0) && zero.pixelX == 128 && zero.pixelY == 128)
        #expect(TileID(z: 3, x: 1, y: 2)!.tmsY == 5)
    }

    @Test func clampAtMaxLatitudeAndEdges() throws {
        let north = try #require(WebMercator.tile(lon: 10, lat: 89, zoom: 5))
        #expect(north.tile.y == 0 && north.pixelY == 0)
        let south = try #require(WebMercator.tile(lon: 10, lat: -85.0511, zoom: 5))
        #expect(south.tile.y == 31 && south.pixelY == 255)
        let pole = try #require(WebMercator.tile(lon: 10, lat: -90, zoom: 5))
        #expect(pole.tile.y == 31)
        let east = try #require(WebMercator.tile(lon: 180, lat: 0, zoom: 4))
        #expect(east.tile.x == 15 && east.pixelX == 255)
        let west = try #require(WebMercator.tile(lon: -180, lat: 0, zoom: 4))
        #expect(west.tile.x == 0 && west.pixelX == 0)
        #expect(WebMercator.tile(lon: 180.1, lat: 0, zoom: 4) == nil)
        #expect(WebMercator.tile(lon: 0, lat: .nan, zoom: 4) == nil)
        #expect(WebMercator.tile(lon: 0, lat: 0, zoom: 25) == nil)
    }

    @Test func boundsRoundTripIntoTheSameTile() throws {
        for (z, x, y) in [(1, 1, 0), (10, 511, 340), (18, 131071, 87000), (24, 1 << 23, 5)] {
            let t = try #require(TileID(z: z, x: x, y: y))
            let b = WebMercator.bounds(of: t)
            // The north-west corner belongs to the tile (mercantile's edge epsilon).
            #expect(WebMercator.tile(lon: b.west, lat: b.north, zoom: z)?.tile == t)
            let m = WebMercator.metreBounds(of: t)
            let sw = WebMercator.lonLat(x: m.minX, y: m.minY)
            #expect(abs(sw.lon - b.west) < 1e-9 && abs(sw.lat - b.south) < 1e-9)
        }
        let world = WebMercator.bounds(of: TileID(z: 0, x: 0, y: 0)!)
        #expect(world.west == -180 && world.east == 180 && abs(world.north - WebMercator.maxLatitude) < 1e-12)
    }

    @Test func zoomForResolution() {
        // resolution(z) = 156543.03392804097 / 2^z
        #expect(abs(WebMercator.resolution(zoom: 0) - 156_543.033_928_041) < 1e-6)
        #expect(WebMercator.zoom(forResolution: 156_543.04) == 0)
        #expect(WebMercator.zoom(forResolution: 30) == 13)  // 19.1 m ≤ 30 < 38.2 m
        // At 60° the ground pixel is half the equatorial one: 30 m needs one zoom less.
        #expect(WebMercator.zoom(forGroundResolution: 30, latitude: 60) == 12)
        #expect(WebMercator.zoom(forGroundResolution: 0, latitude: 0) == TileID.maxZoom)
    }
}
