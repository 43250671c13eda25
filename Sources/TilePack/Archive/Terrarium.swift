import TilePackCore
import TilePackCodec

/// Terrarium elevation encoding (Mapzen/Tilezen, used by MapLibre and Leaflet hillshade
/// plugins): metres = (R × 256 + G + B / 256) − 32768. Resolution 1/256 m, range
/// −32768…32767 m. Here in Archive because PMTiles has no elevation table: a PMTiles archive's
/// elevation is a sibling archive of Terrarium PNG tiles, which its reader decodes.
public enum Terrarium {
    /// The metadata value (`encoding`) that marks a PMTiles archive of Terrarium tiles.
    public static let encodingName = "terrarium"

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

    /// The elevation grid of a decoded Terrarium picture: one sample per pixel, a transparent
    /// pixel (alpha 0) is no data (NaN), as ``rgba(_:side:)`` writes it.
    /// - Precondition: the image's sides are in 1…``ElevationTile/maxSide`` (callers check).
    /// - Cost: O(pixels); one allocation of the grid.
    public static func grid(_ image: RGBAImage) -> ElevationTile {
        var values = [Float](repeating: .nan, count: image.width * image.height)
        image.pixels.withUnsafeBufferPointer { px in
            for i in 0..<values.count where px[i * 4 + 3] != 0 {
                values[i] = Float(decode(px[i * 4], px[i * 4 + 1], px[i * 4 + 2]))
            }
        }
        return ElevationTile(width: image.width, height: image.height, values: values)
    }
}
