/// PMTiles v3 tile ids: every tile of zooms below z counted first (4^0 + … + 4^(z−1)), then
/// the tile's position along the Hilbert curve through the 2^z × 2^z grid. One number orders a
/// whole pyramid so that tiles near each other on the map sit near each other in the file.
extension TileID {
    /// Tiles at zooms 0 ..< `z`: (4^z − 1) / 3. Exact in UInt64 for every zoom up to 31.
    /// - Cost: O(1).
    package static func pmtilesZoomBase(_ z: Int) -> UInt64 {
        ((1 as UInt64) << (2 * UInt64(z)) &- 1) / 3
    }

    /// This tile's PMTiles id.
    /// - Cost: O(z).
    public var pmtilesID: UInt64 {
        let n = UInt64(1) << UInt64(z)
        var x = UInt64(x), y = UInt64(y), d: UInt64 = 0
        var s = n >> 1
        while s > 0 {
            let rx: UInt64 = (x & s) > 0 ? 1 : 0
            let ry: UInt64 = (y & s) > 0 ? 1 : 0
            d += s * s * ((3 * rx) ^ ry)
            // Rotate the quadrant so the curve's sub-square starts where the parent's path enters.
            if ry == 0 {
                if rx == 1 {
                    x = n - 1 - x
                    y = n - 1 - y
                }
                swap(&x, &y)
            }
            s >>= 1
        }
        return Self.pmtilesZoomBase(z) + d
    }

    /// The tile with PMTiles id `id`, or nil when the id lies beyond ``maxZoom``.
    /// - Cost: O(z).
    public init?(pmtilesID id: UInt64) {
        var z = 0
        while z < Self.maxZoom && id >= Self.pmtilesZoomBase(z + 1) { z += 1 }
        guard id < Self.pmtilesZoomBase(z + 1) else { return nil }
        var t = id - Self.pmtilesZoomBase(z)
        let n = UInt64(1) << UInt64(z)
        var x: UInt64 = 0, y: UInt64 = 0
        var s: UInt64 = 1
        while s < n {
            let rx = 1 & (t / 2)
            let ry = 1 & (t ^ rx)
            if ry == 0 {
                if rx == 1 {
                    x = s - 1 - x
                    y = s - 1 - y
                }
                swap(&x, &y)
            }
            x += s * rx
            y += s * ry
            t /= 4
            s <<= 1
        }
        self.init(unchecked: z, Int(x), Int(y))
    }
}
