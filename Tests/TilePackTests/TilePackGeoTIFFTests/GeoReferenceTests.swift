import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackGeoTIFF
import TilePackTestSupport

@Suite("Geo georeference")
struct GeoReferenceTests {
    /// A 10 km × 10 km UTM 33N raster of 30 m pixels with its top-left at (500000, 6650000).
    func utmRaster() throws -> GeoReference {
        try GeoReference(
            crs: try CRS(epsg: 32633), transform: GeoTransform([500_000, 30, 0, 6_650_000, 0, -30]),
            width: 334, height: 334)
    }

    @Test func pixelCRSLonLatRoundTrip() throws {
        let g = try utmRaster()
        let c = g.crsCoordinate(col: 10.5, row: 20.5)
        #expect(c.x == 500_315 && c.y == 6_649_385)
        let ll = g.lonLat(col: 10.5, row: 20.5)
        let px = g.pixel(lon: ll.lon, lat: ll.lat)
        #expect(abs(px.col - 10.5) < 1e-6 && abs(px.row - 20.5) < 1e-6)
    }

    @Test func densifiedBoundsContainTheCurvedEdges() throws {
        // A wide UTM raster: its top edge bows north of its corners in lon/lat.
        let g = try GeoReference(
            crs: try CRS(epsg: 32633), transform: GeoTransform([200_000, 1000, 0, 7_000_000, 0, -1000]),
            width: 600, height: 300)
        let dense = g.lonLatBounds(pointsPerEdge: 33)
        let corners = g.lonLatBounds(pointsPerEdge: 2)
        #expect(dense.north > corners.north + 0.01)
        #expect(dense.west <= corners.west && dense.east >= corners.east && dense.south <= corners.south)
    }

    @Test func poleInsideAPolarRaster() throws {
        let g = try GeoReference(
            crs: try CRS(epsg: 3031), transform: GeoTransform([-1_000_000, 1000, 0, 1_000_000, 0, -1000]),
            width: 2000, height: 2000)
        let b = g.lonLatBounds()
        #expect(b.south == -90 && b.west == -180 && b.east == 180)
        #expect(b.north < -75 && b.north > -82)
    }

    @Test func geographicRasterReachingThePolesKeepsItsLongitudes() throws {
        // MapServer's red_square.tif: 0…180°E, 90°S…90°N. GDAL reports [0, -90, 180, 90].
        let g = try GeoReference(
            crs: try CRS(epsg: 4326), transform: GeoTransform([0, 1.8, 0, 90, 0, -1.8]),
            width: 100, height: 100)
        let b = g.lonLatBounds()
        #expect(abs(b.west) < 1e-9 && abs(b.east - 180) < 1e-9 && abs(b.south + 90) < 1e-9 && abs(b.north - 90) < 1e-9)
    }

    @Test func resolutionAndZoom() throws {
        let utm = try utmRaster()
        #expect(utm.nativeResolutionMetres.x == 30)
        // 30 m UTM pixels at ~60°N: zoom z with 156543/2^z·cos(60°) ≤ ~30 m → 12.
        #expect(abs(utm.groundResolution - 30) < 0.1)
        #expect(utm.nativeZoom == 12)
        // One-arc-second geographic DEM at 45°N: ~21.9 m east-west, 30.9 m north-south.
        let dem = try GeoReference(
            crs: try CRS(epsg: 4326), transform: GeoTransform([7, 1.0 / 3600, 0, 46, 0, -1.0 / 3600]),
            width: 3600, height: 3600)
        let r = dem.nativeResolutionMetres
        #expect(abs(r.x - 21.9) < 0.2 && abs(r.y - 30.9) < 0.2)
        #expect(abs(dem.groundResolution - r.x) < 0.1)
        #expect(dem.nativeZoom == WebMercator.zoom(forGroundResolution: dem.groundResolution, latitude: 45.5))
        // A web-mercator source: its projected metres shrink by cos(lat) on the ground, and
        // the zoom is the one whose pixels match its projected metres.
        let merc = try GeoReference(
            crs: try CRS(epsg: 3857),
            transform: GeoTransform([
                0, WebMercator.resolution(zoom: 10), 0, 8_000_000, 0, -WebMercator.resolution(zoom: 10),
            ]),
            width: 256, height: 256)
        #expect(merc.nativeZoom == 10)
    }

    /// A source on a zoom's own pixel grid maps to that zoom wherever it lies: both pixels are
    /// measured on the ellipsoid at the source's centre. Compared with resolution(z)·cos φ (a
    /// sphere), web-mercator sources below ~55° and a geographic one at the equator came out
    /// a hair finer than their zoom and were built one zoom deeper (2× upsampled); with a
    /// tolerance of 10⁻⁹, fine grids (z15 and deeper) still did, by their rounding alone.
    @Test func sourceOnAZoomsGridMapsToThatZoom() throws {
        // (zoom, pixel, origin x, origin y, size): rio-tiler's web.tif (z8, 44–48° N); rasterio's
        // shade.tif (9.5546285343 m, 1.4 × 10⁻¹⁰ finer than z14's, 39.6° N); XYZ-aligned grids at
        // z18 (a New York tile's corner), z17 (Paris) and z20, of odd sizes; grids at the
        // equator, in the south and centred at 57° N (above 55°, where the sphere's north–south
        // pixel is the shorter, so the old rule held there).
        let r = WebMercator.resolution
        let grids: [(zoom: Int, pixel: Double, x: Double, y: Double, size: Int)] = [
            (8, r(8), -8_766_409.899970293, 6_105_178.323193597, 1024),
            (14, 9.5546285343, -11_858_134.818413004, 4_813_698.2926443005, 1024),
            (18, r(18), -8_237_771.412350016, 4_968_253.964479886, 4096),
            (17, r(17), 261_414.63673530146, 6_244_599.46278576, 3001),
            (20, r(20), 1_000_003.7, -3_000_001.3, 1999),
            (10, r(10), 0, 0, 1024), (12, r(12), 0, -4_000_000, 1024), (6, r(6), 0, 9_000_000, 1024),
        ]
        for g in grids {
            func source(_ pixel: Double) throws -> GeoReference {
                try GeoReference(
                    crs: try CRS(epsg: 3857), transform: GeoTransform([g.x, pixel, 0, g.y, 0, -pixel]),
                    width: g.size, height: g.size)
            }
            #expect(try source(g.pixel).nativeZoom == g.zoom, "EPSG:3857 at z\(g.zoom)'s pixel, origin \(g.x), \(g.y)")
            // A pixel 1 % finer needs the next zoom; 1 % coarser still this one.
            #expect(try source(g.pixel * 0.99).nativeZoom == g.zoom + 1 && source(g.pixel * 1.01).nativeZoom == g.zoom)
        }
        // rasterio's world.rgb: 512 × 256 pixels of 360/512°, centred on the equator, where
        // z1's pixels are as long (0.703125° of longitude and of latitude).
        let world = try GeoReference(
            crs: try CRS(epsg: 4326), transform: GeoTransform([-180, 0.703125, 0, 90, 0, -0.703125]),
            width: 512, height: 256)
        #expect(world.nativeZoom == 1)
    }

    /// A polar stereographic raster centred on the South Pole (BedMachine's grid: 500 m pixels,
    /// ±3,333 km): its pixel at the pole is 500 m ÷ 0.9728 (EPSG:3031's scale there, true at
    /// 71° S) = 514 m, and the zoom is chosen where web mercator reaches, at the middle latitude
    /// of its covered bounds (−85.05° … −48.5°: −66.8°), where z7's pixel is 483 m and z8's 241 m.
    /// Measured at the pole the flat distance in degrees gave 654 m (its longitudes 90° apart), and
    /// the tile pixel at −85.05° (where it shrinks to 0.086 of the equator's) gave z5.
    @Test func polarRasterGetsTheZoomOfItsMercatorPart() throws {
        let g = try GeoReference(
            crs: try CRS(epsg: 3031), transform: GeoTransform([-3_333_250, 500, 0, 3_333_250, 0, -500]),
            width: 13_333, height: 13_333)
        #expect(abs(g.groundResolution - 514.0) < 0.5)
        #expect(g.nativeZoom == 7)
    }

    @Test func batchInverseMatchesPointInverse() throws {
        let g = try utmRaster()
        let lons = [15.01, 15.05, 15.1], lats = [59.9, 59.95, 59.98]
        var cols = [Double](repeating: 0, count: 3), rows = cols
        lons.withUnsafeBufferPointer { lo in
            lats.withUnsafeBufferPointer { la in
                cols.withUnsafeMutableBufferPointer { c in
                    rows.withUnsafeMutableBufferPointer { r in g.sourcePixels(lons: lo, lats: la, cols: c, rows: r) }
                }
            }
        }
        for i in 0..<3 {
            let p = g.pixel(lon: lons[i], lat: lats[i])
            #expect(cols[i] == p.col && rows[i] == p.row)
        }
        // A tile over the raster: its pixel centres map into it, in row-major order.
        let centre = g.centre
        let hit = try #require(WebMercator.tile(lon: centre.lon, lat: centre.lat, zoom: 14))
        var tc: [Double] = [], tr: [Double] = []
        g.sourcePixels(for: hit.tile, cols: &tc, rows: &tr)
        #expect(tc.count == 256 * 256)
        let b = WebMercator.bounds(of: hit.tile)
        let first = g.pixel(
            lon: b.west + (b.east - b.west) / 512,
            lat: WebMercator.lonLat(
                x: 0,
                y: WebMercator.metreBounds(of: hit.tile).maxY
                    - (WebMercator.metreBounds(of: hit.tile).maxY - WebMercator.metreBounds(of: hit.tile).minY) / 512
            ).lat)
        #expect(abs(tc[0] - first.col) < 1e-6 && abs(tr[0] - first.row) < 1e-6)
        #expect(tr[255 * 256] > tr[0] && tc[255] > tc[0])
    }

    @Test func rejectsSingularTransform() throws {
        #expect(throws: GeoReference.Error.self) {
            try GeoReference(
                crs: try CRS(epsg: 4326), transform: GeoTransform([0, 0, 0, 0, 0, 0]), width: 1, height: 1)
        }
        #expect(throws: GeoReference.Error.self) {
            try GeoReference(
                crs: try CRS(epsg: 4326), transform: GeoTransform([0, 1, 0, 0, 0, -1]), width: 0, height: 1)
        }
    }
}
