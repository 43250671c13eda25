#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Spherical web mercator (EPSG:3857) and the XYZ tile grid on it.
///
/// All functions are O(1) and allocation-free. Latitudes are clamped to ±``maxLatitude``, the
/// latitude at which the square world map ends.
public enum WebMercator {
    /// Radius of the sphere web mercator projects (the WGS 84 semi-major axis), metres.
    public static let earthRadius = 6_378_137.0
    /// Half the width of the square world in metres: π·R.
    public static let originShift = Double.pi * earthRadius
    /// The latitude where y reaches ±originShift: atan(sinh(π)).
    public static let maxLatitude = 85.051128779806592
    /// Pixels on a side of one tile.
    public static let tileSize = 256

    /// Projects lon/lat (degrees) to web-mercator metres.
    @inlinable
    public static func metres(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let clampedLat = min(max(lat, -maxLatitude), maxLatitude)
        let x = lon * .pi / 180 * earthRadius
        let y = log(tan(.pi / 4 + clampedLat * .pi / 360)) * earthRadius
        return (x, y)
    }

    /// Unprojects web-mercator metres to lon/lat (degrees).
    @inlinable
    public static func lonLat(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let lon = x / earthRadius * 180 / .pi
        let lat = (2 * atan(exp(y / earthRadius)) - .pi / 2) * 180 / .pi
        return (lon, lat)
    }

    /// Position on the unit square of the world, (0,0) at the north-west corner, with the
    /// latitude clamped to ±``maxLatitude``. Same formulas as mercantile's `_xy`, so tile
    /// boundaries fall on exactly the same side.
    @inlinable
    public static func unitPosition(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let clampedLat = min(max(lat, -maxLatitude), maxLatitude)
        let s = sin(clampedLat * .pi / 180)
        return (lon / 360 + 0.5, 0.5 - 0.25 * log((1 + s) / (1 - s)) / .pi)
    }

    /// Fractional position on the world at zoom z, in tiles: (0,0) is the north-west corner.
    @inlinable
    public static func fractionalTile(lon: Double, lat: Double, zoom: Int) -> (x: Double, y: Double) {
        let n = Double(1 << zoom)
        let u = unitPosition(lon: lon, lat: lat)
        return (u.x * n, u.y * n)
    }

    /// Points within this distance (unit-square units) left of or above a tile edge count in
    /// the next tile, as in mercantile: a tile's own north-west corner, computed from
    /// ``bounds(of:)`` and fed back, lands in that tile despite rounding.
    public static let edgeEpsilon = 1e-14

    /// The tile covering a point, and the pixel (0..<256) within it, or nil for a zoom outside
    /// 0…``TileID/maxZoom`` or a lon/lat outside ±180/±90 or non-finite.
    ///
    /// Latitudes beyond ±``maxLatitude`` clamp to the top or bottom row (web mercator has
    /// nothing further); lon = 180 and the south edge belong to the last column/row. Matches
    /// mercantile's `tile()` (checked on 100,000 random points by Scripts/proj-check).
    public static func tile(lon: Double, lat: Double, zoom: Int) -> (tile: TileID, pixelX: Int, pixelY: Int)? {
        guard zoom >= 0, zoom <= TileID.maxZoom, lon.isFinite, lat.isFinite,
            lon >= -180, lon <= 180, lat >= -90, lat <= 90
        else { return nil }
        let n = 1 << zoom
        let u = unitPosition(lon: lon, lat: lat)
        func index(_ f: Double) -> Int {
            if f <= 0 { return 0 }
            if f >= 1 { return n - 1 }
            return min(n - 1, Int(((f + edgeEpsilon) * Double(n)).rounded(.down)))
        }
        func pixel(_ f: Double, _ t: Int) -> Int {
            let p = Int(((f * Double(n) - Double(t)) * Double(tileSize)).rounded(.down))
            return min(tileSize - 1, max(0, p))
        }
        let tx = index(u.x), ty = index(u.y)
        return (TileID(unchecked: zoom, tx, ty), pixel(u.x, tx), pixel(u.y, ty))
    }

    /// Latitude (degrees) at a fraction `t` of the world's height from its north edge
    /// (0 = 85.0511°N, 1 = 85.0511°S): the inverse of ``unitPosition(lon:lat:)``'s y.
    @inlinable
    public static func latitude(unitY t: Double) -> Double {
        atan(sinh(.pi * (1 - 2 * t))) * 180 / .pi
    }

    /// Bounds of a tile in lon/lat degrees: west, south, east, north.
    public static func bounds(of tile: TileID) -> GeoBounds {
        let n = Double(1 << tile.z)
        func lat(_ ty: Double) -> Double { latitude(unitY: ty / n) }
        return GeoBounds(
            west: Double(tile.x) / n * 360 - 180, south: lat(Double(tile.y + 1)),
            east: Double(tile.x + 1) / n * 360 - 180, north: lat(Double(tile.y)))
    }

    /// Bounds of a tile in web-mercator metres: minX, minY, maxX, maxY.
    public static func metreBounds(of tile: TileID) -> (minX: Double, minY: Double, maxX: Double, maxY: Double) {
        let size = 2 * originShift / Double(1 << tile.z)
        let minX = -originShift + Double(tile.x) * size
        let maxY = originShift - Double(tile.y) * size
        return (minX, maxY - size, minX + size, maxY)
    }

    /// Ground size of one pixel at the equator at zoom z, metres: 2πR / (256·2^z).
    @inlinable
    public static func resolution(zoom: Int) -> Double {
        2 * originShift / Double(tileSize) / Double(1 << zoom)
    }

    /// The middle latitude of `bounds`' part within web mercator's ±``maxLatitude``: where a
    /// source's default max zoom is measured (``TilePlan``, ``GeoReference/nativeZoom`` for a
    /// polar raster). Cost: two comparisons.
    public static func middleLatitude(of bounds: GeoBounds) -> Double {
        (max(bounds.south, -maxLatitude) + min(bounds.north, maxLatitude)) / 2
    }

    /// Ground size of one pixel at zoom z at a latitude (degrees): resolution(z)·cos(lat),
    /// the true size web mercator's scale factor 1/cos(lat) leaves on the ground.
    public static func groundResolution(zoom: Int, latitude: Double) -> Double {
        resolution(zoom: zoom) * cos(min(abs(latitude), maxLatitude) * .pi / 180)
    }

    /// The first zoom whose ground pixel size at `latitude` is at or below `metres`: the
    /// coarsest zoom that loses no detail of a source with that ground resolution (capped
    /// at ``TileID/maxZoom``). gdal2tiles rounds the other way (the last zoom at or above).
    public static func zoom(forGroundResolution metres: Double, latitude: Double) -> Int {
        guard metres > 0, metres.isFinite, latitude.isFinite else { return TileID.maxZoom }
        for z in 0...TileID.maxZoom where groundResolution(zoom: z, latitude: latitude) <= metres { return z }
        return TileID.maxZoom
    }

    /// The first zoom whose equatorial pixel size is at or below `metres` (capped at
    /// ``TileID/maxZoom``); for web-mercator metres, which already carry the 1/cos(lat) scale.
    public static func zoom(forResolution metres: Double) -> Int {
        guard metres > 0, metres.isFinite else { return TileID.maxZoom }
        for z in 0...TileID.maxZoom where resolution(zoom: z) <= metres { return z }
        return TileID.maxZoom
    }
}
