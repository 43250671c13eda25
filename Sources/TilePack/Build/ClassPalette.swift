import TilePackCore
import TilePackArchive

/// The fixed categorical palette of `--color classes`: 32 colours told apart easily (Kelly's
/// 22 colours of maximum contrast without white and black, then 12 of Tableau 20). Class `v`
/// (an integer) is colour `v mod 32` (non-negative remainder), so the same class has the same
/// colour in every archive, whatever classes a build happens to see.
public enum ClassPalette {
    /// RGB, 32 entries.
    public static let colors: [(UInt8, UInt8, UInt8)] = [
        (0xF3, 0xC3, 0x00), (0x87, 0x56, 0x92), (0xF3, 0x84, 0x00), (0xA1, 0xCA, 0xF1),
        (0xBE, 0x00, 0x32), (0xC2, 0xB2, 0x80), (0x84, 0x84, 0x82), (0x00, 0x88, 0x56),
        (0xE6, 0x8F, 0xAC), (0x00, 0x67, 0xA5), (0xF9, 0x93, 0x79), (0x60, 0x4E, 0x97),
        (0xF6, 0xA6, 0x00), (0xB3, 0x44, 0x6C), (0xDC, 0xD3, 0x00), (0x88, 0x2D, 0x17),
        (0x8D, 0xB6, 0x00), (0x65, 0x45, 0x22), (0xE2, 0x58, 0x22), (0x2B, 0x3D, 0x26),
        (0x1F, 0x77, 0xB4), (0x2C, 0xA0, 0x2C), (0x98, 0xDF, 0x8A), (0xD6, 0x27, 0x28),
        (0x94, 0x67, 0xBD), (0xC5, 0xB0, 0xD5), (0x8C, 0x56, 0x4B), (0xE3, 0x77, 0xC2),
        (0x17, 0xBE, 0xCF), (0x9E, 0xDA, 0xE5), (0xBC, 0xBD, 0x22), (0xAE, 0xC7, 0xE8),
    ]

    /// The colour of class `v` (rounded to an integer); nil for a value that is not a finite
    /// number within ±2³¹ (drawn transparent).
    @inline(__always)
    public static func color(_ v: Float) -> (UInt8, UInt8, UInt8)? {
        let r = v.rounded()
        // Range-check in Float: a wild sample must not trap in the Int conversion.
        guard r.isFinite, r > -2_147_483_648, r < 2_147_483_648 else { return nil }
        let n = colors.count
        return colors[((Int(r) % n) + n) % n]
    }

    /// One legend entry per class in `values` ("class 7").
    public static func legend(_ values: [Float]) -> [LegendEntry] {
        values.compactMap { v in
            color(v).map { LegendEntry(value: Double(v), label: "class \(ColorDecision.number(v))", rgba: [$0.0, $0.1, $0.2, 255]) }
        }
    }
}

/// The fixed ramp of `--color percent`: viridis (perceptually uniform, readable by people
/// with colour-blindness) from 0 % to 100 %, linear between five stops; values beyond
/// 0…100 are clamped, so two archives draw the same percentage alike.
public enum PercentRamp {
    /// (percent, R, G, B).
    public static let stops: [(Float, Float, Float, Float)] = [
        (0, 68, 1, 84), (25, 59, 82, 139), (50, 33, 145, 140), (75, 94, 201, 98), (100, 253, 231, 37),
    ]

    /// The ramp colour at `v` percent (NaN → the 0 % colour; callers draw invalid pixels transparent).
    @inline(__always)
    public static func color(_ v: Float) -> (Float, Float, Float) {
        let p = v.isNaN ? 0 : min(max(v, 0), 100)
        for s in 1..<stops.count where p <= stops[s].0 {
            let (p0, r0, g0, b0) = stops[s - 1], (p1, r1, g1, b1) = stops[s]
            let u = (p - p0) / (p1 - p0)
            return (r0 + (r1 - r0) * u, g0 + (g1 - g0) * u, b0 + (b1 - b0) * u)
        }
        let last = stops[stops.count - 1]
        return (last.1, last.2, last.3)
    }

    /// The stops as a legend ("50 %").
    public static var legend: [LegendEntry] {
        stops.map { s in
            LegendEntry(value: Double(s.0), label: "\(ColorDecision.number(s.0)) %",
                        rgba: [Colorizer.byte(s.1), Colorizer.byte(s.2), Colorizer.byte(s.3), 255])
        }
    }
}
