import TilePackCore
import TilePackArchive

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
            LegendEntry(
                value: Double(s.0), label: "\(ColorDecision.number(s.0)) %",
                rgba: [Colorizer.byte(s.1), Colorizer.byte(s.2), Colorizer.byte(s.3), 255])
        }
    }
}
