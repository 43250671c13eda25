/// A window of the web-mercator plane at one zoom, in global pixels (256 per tile at that zoom,
/// pixel (0, 0) the north-west corner of the world): the one pixel frame of tilepack. A build
/// resamples a tile (with a border) into it; a render composites tiles into it.
///
/// Cost: a value of five integers; ``tiles`` is O(tiles touched).
public struct MapFrame: Sendable, Equatable {
    public let zoom: Int
    /// Global pixel of the window's top-left corner at `zoom`.
    public let originX: Int
    public let originY: Int
    public let width: Int
    public let height: Int

    /// A window as given (callers that take sizes from users check them first: a render's
    /// `init(lat:lon:zoom:width:height:)`).
    public init(zoom: Int, originX: Int, originY: Int, width: Int, height: Int) {
        self.zoom = zoom
        self.originX = originX
        self.originY = originY
        self.width = width
        self.height = height
    }

    /// One tile, 256 × 256, grown by `border` pixels on every side.
    public init(tile: TileID, border: Int = 0) {
        let s = WebMercator.tileSize
        self.init(
            zoom: tile.z, originX: tile.x * s - border, originY: tile.y * s - border,
            width: s + 2 * border, height: s + 2 * border)
    }

    private var worldPixels: Double { Double(WebMercator.tileSize << zoom) }

    /// Longitude of the centre of column `i`.
    public func lon(column i: Int) -> Double {
        (Double(originX + i) + 0.5) / worldPixels * 360 - 180
    }

    /// Latitude of the centre of row `j` (inverse mercator).
    public func lat(row j: Int) -> Double {
        WebMercator.latitude(unitY: (Double(originY + j) + 0.5) / worldPixels)
    }

    /// The tiles the window touches, rows top first (columns wrap around the antimeridian;
    /// rows beyond the poles are left out), each with its top-left corner in the window.
    public var tiles: [(id: TileID, left: Int, top: Int)] {
        let s = WebMercator.tileSize, n = 1 << zoom
        let tx0 = Self.floorDiv(originX, s), tx1 = Self.floorDiv(originX + width - 1, s)
        let ty0 = max(0, Self.floorDiv(originY, s)), ty1 = min(n - 1, Self.floorDiv(originY + height - 1, s))
        guard ty0 <= ty1 else { return [] }
        var out: [(TileID, Int, Int)] = []
        for ty in ty0...ty1 {
            for tx in tx0...tx1 {
                let wrapped = ((tx % n) + n) % n
                if let id = TileID(z: zoom, x: wrapped, y: ty) { out.append((id, tx * s - originX, ty * s - originY)) }
            }
        }
        return out
    }

    static func floorDiv(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }
}
