import Foundation
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
import TilePackTestSupport

/// Records every window a test source is asked for.
final class ReadLog: Sendable {
    private let windows = Locked<[(x: Int, y: Int, w: Int, h: Int)]>([])
    func add(_ x: Int, _ y: Int, _ w: Int, _ h: Int) { windows.withLock { $0.append((x, y, w, h)) } }
    var all: [(x: Int, y: Int, w: Int, h: Int)] { windows.withLock { $0 } }
}

struct TestSourceError: Error, Equatable {}

/// A virtual raster whose samples come from a function of (col, row, band): any size, no memory.
struct FunctionSource: RasterSource {
    var width: Int
    var height: Int
    var bands = 1
    var sampleType = SampleType.float32
    var nodata: Double? = nil
    var colorMap: [UInt16]? = nil
    var alphaBand: Int? = nil
    var failReads = false
    /// What a compressed file's byte counts would say (nil: unknown, as for most sources).
    var storedBytes: StoredByteMap? = nil
    let log = ReadLog()
    let value: @Sendable (Int, Int, Int) -> Float

    func readFloats(x: Int, y: Int, width w: Int, height h: Int) throws -> [Float] {
        // The pipeline must only ask for windows inside the raster.
        precondition(x >= 0 && y >= 0 && w > 0 && h > 0 && x + w <= width && y + h <= height, "window outside raster")
        if failReads { throw TestSourceError() }
        log.add(x, y, w, h)
        var out = [Float](repeating: 0, count: w * h * bands)
        for r in 0..<h {
            for c in 0..<w { for b in 0..<bands { out[(r * w + c) * bands + b] = value(x + c, y + r, b) } }
        }
        return out
    }
}

/// Plate carrée: lon/lat linear in pixels.
struct PlateCarree: SourceGeoreference {
    let west: Double, north: Double, dx: Double, dy: Double, width: Int, height: Int
    var lonLatBounds: GeoBounds {
        GeoBounds(west: west, south: north - Double(height) * dy, east: west + Double(width) * dx, north: north)
    }
    var groundResolutionMetres: Double { dx * 111_320 * cos((north - Double(height) * dy / 2) * .pi / 180) }
    func sourcePixel(lon: Double, lat: Double) -> (col: Double, row: Double)? {
        ((lon - west) / dx, (north - lat) / dy)
    }
}

/// A source gridded in web-mercator metres (EPSG:3857), top-left corner and pixel size.
struct MercatorGrid: SourceGeoreference {
    let originX: Double, originY: Double, res: Double, width: Int, height: Int
    var lonLatBounds: GeoBounds {
        let nw = WebMercator.lonLat(x: originX, y: originY)
        let se = WebMercator.lonLat(x: originX + Double(width) * res, y: originY - Double(height) * res)
        return GeoBounds(west: nw.lon, south: se.lat, east: se.lon, north: nw.lat)
    }
    var groundResolutionMetres: Double { res }
    func sourcePixel(lon: Double, lat: Double) -> (col: Double, row: Double)? {
        let m = WebMercator.metres(lon: lon, lat: lat)
        return ((m.x - originX) / res, (originY - m.y) / res)
    }
}

/// A strongly curved mapping (polar-stereographic-like) to exercise the approximate transformer.
struct PolarLike: SourceGeoreference {
    var lonLatBounds: GeoBounds { GeoBounds(west: -180, south: 60, east: 180, north: 85) }
    var groundResolutionMetres: Double { 1000 }
    func sourcePixel(lon: Double, lat: Double) -> (col: Double, row: Double)? {
        let rho = (90 - lat) * 111.32  // km from the pole, 1 km pixels
        let t = lon * .pi / 180
        return (3000 + rho * sin(t), 3000 + rho * cos(t))
    }
}

/// Stores raw RGBA: lets tests look at the pixels the pipeline produced.
struct RawCodec: TileCodec {
    var name: String { "raw" }
    func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] { rgba }
    func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] { data }
}

final class MemorySink: TileSink {
    var writes: [(TileID, [UInt8])] = []
    var elevations: [(TileID, [Float])] = []
    var failAfter: Int? = nil
    struct Failure: Error, Equatable {}

    func write(tile: TileID, encoded: [UInt8]) throws {
        if let n = failAfter, writes.count >= n { throw Failure() }
        writes.append((tile, encoded))
    }
    func writeElevation(tile: TileID, metres: [Float], width: Int, height: Int) throws {
        precondition(metres.count == width * height)
        elevations.append((tile, metres))
    }
    var tiles: [TileID: [UInt8]] { Dictionary(writes, uniquingKeysWith: { a, _ in a }) }
}

/// Centre of output pixel (px, py) of `tile` in lon/lat, computed from web-mercator metres
/// (independently of the pipeline's own pixel-grid helper).
func pixelCentre(_ tile: TileID, _ px: Int, _ py: Int) -> (lon: Double, lat: Double) {
    let b = WebMercator.metreBounds(of: tile)
    let size = (b.maxX - b.minX) / 256
    return WebMercator.lonLat(x: b.minX + (Double(px) + 0.5) * size, y: b.maxY - (Double(py) + 0.5) * size)
}

/// An 8×8 block of zoom-10 tiles (x 512…519, y 360…367) covered exactly by a 640 × 500 RGB
/// plate-carrée source whose pixels are `pixel(column, row, band)`.
func zoom10BlockSource(_ pixel: @escaping @Sendable (Int, Int, Int) -> Float) -> (FunctionSource, PlateCarree) {
    let nw = WebMercator.bounds(of: TileID(z: 10, x: 512, y: 360)!)
    let se = WebMercator.bounds(of: TileID(z: 10, x: 519, y: 367)!)
    let w = 640, h = 500
    let geo = PlateCarree(
        west: nw.west + 1e-6, north: nw.north - 1e-6, dx: (se.east - nw.west - 2e-6) / Double(w),
        dy: (nw.north - se.south - 2e-6) / Double(h), width: w, height: h)
    return (FunctionSource(width: w, height: h, bands: 3, sampleType: .uint8, value: pixel), geo)
}
