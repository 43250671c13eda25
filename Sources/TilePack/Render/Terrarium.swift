import TilePackArchive

/// Terrarium elevation encoding (Mapzen/Tilezen, used by MapLibre and Leaflet hillshade
/// plugins): metres = (R × 256 + G + B / 256) − 32768. Resolution 1/256 m, range
/// −32768…32767 m.
public enum Terrarium {
    /// `grid` as a `side` × `side` RGBA tile (nearest sample per pixel). NaN (no data) is
    /// transparent with 0 m in its colour.
    public static func rgba(_ grid: ElevationTile, side: Int = 256) -> [UInt8] {
        precondition(side > 0 && grid.width > 0 && grid.height > 0, "callers check sizes")
        var out = [UInt8](repeating: 0, count: side * side * 4)
        for y in 0..<side {
            let gy = y * grid.height / side
            for x in 0..<side {
                let gx = x * grid.width / side
                let metres = grid[gx, gy]
                let i = (y * side + x) * 4
                let (r, g, b) = encode(metres.isFinite ? Double(metres) : 0)
                out[i] = r; out[i + 1] = g; out[i + 2] = b
                out[i + 3] = metres.isFinite ? 255 : 0
            }
        }
        return out
    }

    /// The (R, G, B) of `metres`, clamped to the encodable range.
    public static func encode(_ metres: Double) -> (UInt8, UInt8, UInt8) {
        let v = min(max(metres + 32768, 0), 65535.996)
        let whole = v.rounded(.down)
        let r = Int(whole) >> 8, g = Int(whole) & 255
        let b = min(255, Int(((v - whole) * 256).rounded(.down)))
        return (UInt8(r), UInt8(g), UInt8(b))
    }

    /// Metres from Terrarium (R, G, B).
    public static func decode(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> Double {
        Double(r) * 256 + Double(g) + Double(b) / 256 - 32768
    }
}
