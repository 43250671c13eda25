import Foundation
import TilePackArchive
import TilePackBuild
import TilePackCodec
import TilePackCore
import TilePackEncoders
import TilePackGeoTIFF

/// Records every window a test source is asked for.
package final class ReadLog: Sendable {
    package init() {}
    private let windows = Locked<[(x: Int, y: Int, w: Int, h: Int)]>([])
    package func add(_ x: Int, _ y: Int, _ w: Int, _ h: Int) { windows.withLock { $0.append((x, y, w, h)) } }
    package var all: [(x: Int, y: Int, w: Int, h: Int)] { windows.withLock { $0 } }
}

package struct TestSourceError: Error, Equatable {
    package init() {}
}

/// A virtual raster whose samples come from a function of (col, row, band): any size, no memory.
package struct FunctionSource: RasterSource {
    package var width: Int
    package var height: Int
    package var bands = 1
    package var sampleType = SampleType.float32
    package var nodata: Double? = nil
    package var colorMap: [UInt16]? = nil
    package var alphaBand: Int? = nil
    package var failReads = false
    /// What a compressed file's byte counts would say (nil: unknown, as for most sources).
    package var storedBytes: StoredByteMap? = nil
    package let log = ReadLog()
    package let value: @Sendable (Int, Int, Int) -> Float

    package init(
        width: Int, height: Int, bands: Int = 1, sampleType: SampleType = .float32, nodata: Double? = nil,
        colorMap: [UInt16]? = nil, alphaBand: Int? = nil, failReads: Bool = false, storedBytes: StoredByteMap? = nil,
        value: @escaping @Sendable (Int, Int, Int) -> Float
    ) {
        self.width = width
        self.height = height
        self.bands = bands
        self.sampleType = sampleType
        self.nodata = nodata
        self.colorMap = colorMap
        self.alphaBand = alphaBand
        self.failReads = failReads
        self.storedBytes = storedBytes
        self.value = value
    }

    package func readFloats(x: Int, y: Int, width w: Int, height h: Int) throws -> [Float] {
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
package struct PlateCarree: SourceGeoreference {
    package let west: Double, north: Double, dx: Double, dy: Double, width: Int, height: Int

    package init(west: Double, north: Double, dx: Double, dy: Double, width: Int, height: Int) {
        self.west = west
        self.north = north
        self.dx = dx
        self.dy = dy
        self.width = width
        self.height = height
    }
    package var lonLatBounds: GeoBounds {
        GeoBounds(west: west, south: north - Double(height) * dy, east: west + Double(width) * dx, north: north)
    }
    package var groundResolutionMetres: Double { dx * 111_320 * cos((north - Double(height) * dy / 2) * .pi / 180) }
    package func sourcePixel(lon: Double, lat: Double) -> (col: Double, row: Double)? {
        ((lon - west) / dx, (north - lat) / dy)
    }
}

/// A source gridded in web-mercator metres (EPSG:3857), top-left corner and pixel size.
package struct MercatorGrid: SourceGeoreference {
    package let originX: Double, originY: Double, res: Double, width: Int, height: Int

    package init(originX: Double, originY: Double, res: Double, width: Int, height: Int) {
        self.originX = originX
        self.originY = originY
        self.res = res
        self.width = width
        self.height = height
    }
    package var lonLatBounds: GeoBounds {
        let nw = WebMercator.lonLat(x: originX, y: originY)
        let se = WebMercator.lonLat(x: originX + Double(width) * res, y: originY - Double(height) * res)
        return GeoBounds(west: nw.lon, south: se.lat, east: se.lon, north: nw.lat)
    }
    package var groundResolutionMetres: Double { res }
    package func sourcePixel(lon: Double, lat: Double) -> (col: Double, row: Double)? {
        let m = WebMercator.metres(lon: lon, lat: lat)
        return ((m.x - originX) / res, (originY - m.y) / res)
    }
}

/// A strongly curved mapping (polar-stereographic-like) to exercise the approximate transformer.
package struct PolarLike: SourceGeoreference {
    package init() {}
    package var lonLatBounds: GeoBounds { GeoBounds(west: -180, south: 60, east: 180, north: 85) }
    package var groundResolutionMetres: Double { 1000 }
    package func sourcePixel(lon: Double, lat: Double) -> (col: Double, row: Double)? {
        let rho = (90 - lat) * 111.32  // km from the pole, 1 km pixels
        let t = lon * .pi / 180
        return (3000 + rho * sin(t), 3000 + rho * cos(t))
    }
}

/// Stores raw RGBA: lets tests look at the pixels the pipeline produced.
package struct RawCodec: TileCodec {
    package init() {}
    package var name: String { "raw" }
    package func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] { rgba }
    package func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] { data }
}

package final class MemorySink: TileSink {
    package init() {}
    package var writes: [(TileID, [UInt8])] = []
    package var elevations: [(TileID, [Float])] = []
    package var failAfter: Int? = nil
    package struct Failure: Error, Equatable {
        package init() {}
    }

    package func write(tile: TileID, encoded: [UInt8]) throws {
        if let n = failAfter, writes.count >= n { throw Failure() }
        writes.append((tile, encoded))
    }
    package func writeElevation(tile: TileID, metres: [Float], width: Int, height: Int) throws {
        precondition(metres.count == width * height)
        elevations.append((tile, metres))
    }
    package var tiles: [TileID: [UInt8]] { Dictionary(writes, uniquingKeysWith: { a, _ in a }) }
}

/// Centre of output pixel (px, py) of `tile` in lon/lat, computed from web-mercator metres
/// (independently of the pipeline's own pixel-grid helper).
package func pixelCentre(_ tile: TileID, _ px: Int, _ py: Int) -> (lon: Double, lat: Double) {
    let b = WebMercator.metreBounds(of: tile)
    let size = (b.maxX - b.minX) / 256
    return WebMercator.lonLat(x: b.minX + (Double(px) + 0.5) * size, y: b.maxY - (Double(py) + 0.5) * size)
}

/// An 8×8 block of zoom-10 tiles (x 512…519, y 360…367) covered exactly by a 640 × 500 RGB
/// plate-carrée source whose pixels are `pixel(column, row, band)`.
package func zoom10BlockSource(_ pixel: @escaping @Sendable (Int, Int, Int) -> Float) -> (FunctionSource, PlateCarree) {
    let nw = WebMercator.bounds(of: TileID(z: 10, x: 512, y: 360)!)
    let se = WebMercator.bounds(of: TileID(z: 10, x: 519, y: 367)!)
    let w = 640, h = 500
    let geo = PlateCarree(
        west: nw.west + 1e-6, north: nw.north - 1e-6, dx: (se.east - nw.west - 2e-6) / Double(w),
        dy: (nw.north - se.south - 2e-6) / Double(h), width: w, height: h)
    return (FunctionSource(width: w, height: h, bands: 3, sampleType: .uint8, value: pixel), geo)
}
