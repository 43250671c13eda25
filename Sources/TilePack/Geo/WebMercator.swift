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

    /// Fractional position on the world at zoom z, in tiles: (0,0) is the north-west corner.
    @inlinable
    public static func fractionalTile(lon: Double, lat: Double, zoom: Int) -> (x: Double, y: Double) {
        let n = Double(1 << zoom)
        let clampedLat = min(max(lat, -maxLatitude), maxLatitude)
        let x = (lon + 180) / 360 * n
        let latRad = clampedLat * .pi / 180
        let y = (1 - log(tan(latRad) + 1 / cos(latRad)) / .pi) / 2 * n
        return (x, y)
    }

    /// The tile covering a point, and the pixel (0..<256) within it. Points on the east edge
    /// (lon = 180) or the south edge belong to the last tile, as mercantile does.
    public static func tile(lon: Double, lat: Double, zoom: Int) -> (tile: TileID, pixelX: Int, pixelY: Int)? {
        guard zoom >= 0, zoom <= TileID.maxZoom, lon.isFinite, lat.isFinite,
              lon >= -180, lon <= 180, lat >= -90, lat <= 90 else { return nil }
        let n = 1 << zoom
        let f = fractionalTile(lon: lon, lat: lat, zoom: zoom)
        let px = Int((f.x * Double(tileSize)).rounded(.down))
        let py = Int((f.y * Double(tileSize)).rounded(.down))
        let limit = n * tileSize - 1
        let cx = min(max(px, 0), limit), cy = min(max(py, 0), limit)
        return (TileID(unchecked: zoom, cx / tileSize, cy / tileSize), cx % tileSize, cy % tileSize)
    }

    /// Bounds of a tile in lon/lat degrees: west, south, east, north.
    public static func bounds(of tile: TileID) -> (west: Double, south: Double, east: Double, north: Double) {
        let n = Double(1 << tile.z)
        func lat(_ ty: Double) -> Double { atan(sinh(.pi * (1 - 2 * ty / n))) * 180 / .pi }
        return (Double(tile.x) / n * 360 - 180, lat(Double(tile.y + 1)),
                Double(tile.x + 1) / n * 360 - 180, lat(Double(tile.y)))
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

    /// The first zoom whose pixel size is at or below `metres` (capped at ``TileID/maxZoom``).
    public static func zoom(forResolution metres: Double) -> Int {
        guard metres > 0, metres.isFinite else { return TileID.maxZoom }
        for z in 0...TileID.maxZoom where resolution(zoom: z) <= metres { return z }
        return TileID.maxZoom
    }
}
