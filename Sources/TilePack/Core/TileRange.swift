/// A rectangle of XYZ tiles at one zoom (inclusive ranges, rows growing south): the one tile
/// range of tilepack, with the one rule for the tiles a lon/lat box covers (``covering(_:zoom:)``),
/// which a build plans with and the viewer traces move over.
///
/// Cost: a value of five integers; ``tiles`` is O(count).
public struct TileRange: Sendable, Equatable {
    public let z: Int
    public let minX: Int, maxX: Int, minY: Int, maxY: Int

    /// A rectangle as given; callers keep `minX ≤ maxX`, `minY ≤ maxY` inside zoom `z`'s pyramid.
    public init(z: Int, minX: Int, maxX: Int, minY: Int, maxY: Int) {
        assert(minX <= maxX && minY <= maxY, "an empty tile range")
        self.z = z
        self.minX = minX; self.maxX = maxX; self.minY = minY; self.maxY = maxY
    }

    public var width: Int { maxX - minX + 1 }
    public var height: Int { maxY - minY + 1 }
    /// Number of tiles in the rectangle.
    public var count: Int { width * height }

    public func contains(_ tile: TileID) -> Bool {
        tile.z == z && contains(x: tile.x, y: tile.y)
    }

    public func contains(x: Int, y: Int) -> Bool { x >= minX && x <= maxX && y >= minY && y <= maxY }

    /// The tiles, row by row (the build's write order).
    public var tiles: [TileID] {
        var out: [TileID] = []
        out.reserveCapacity(count)
        for y in minY...maxY { for x in minX...maxX { out.append(TileID(unchecked: z, x, y)) } }
        return out
    }

    /// The tiles at zoom `z` intersecting a lon/lat box (clamped to the pyramid; a box of no
    /// area gives the tile holding it). A box edge lying exactly on a tile edge does not pull
    /// in the neighbouring tile (as mercantile's `tiles()`): a region built to whole tiles
    /// would otherwise grow a row and a column it does not hold.
    public static func covering(_ b: GeoBounds, zoom z: Int) -> TileRange {
        let n = 1 << z
        let nw = WebMercator.fractionalTile(lon: b.west, lat: b.north, zoom: z)
        let se = WebMercator.fractionalTile(lon: b.east, lat: b.south, zoom: z)
        func clamp(_ v: Int) -> Int { min(max(v, 0), n - 1) }
        // Snap within 1e-9 tile of an edge: a bound on a tile edge must not pick up the
        // neighbour through rounding in the mercator formula.
        let eps = 1e-9
        let minX = clamp(Int((nw.x + eps).rounded(.down))), minY = clamp(Int((nw.y + eps).rounded(.down)))
        let maxX = max(minX, clamp(Int((se.x - eps).rounded(.up)) - 1))
        let maxY = max(minY, clamp(Int((se.y - eps).rounded(.up)) - 1))
        return TileRange(z: z, minX: minX, maxX: maxX, minY: minY, maxY: maxY)
    }
}
