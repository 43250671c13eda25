import TilePackCore

/// Clamping a sine or cosine that rounding pushed just past ±1 before asin/acos, while
/// letting NaN through: `min(1, max(-1, x))` turns NaN into −1 (Swift's max returns its first
/// argument when the comparison is false), which would give a point with no image a finite,
/// wrong position.
enum UnitClamp {
    @inline(__always)
    static func clamp(_ v: Double) -> Double { v > 1 ? 1 : (v < -1 ? -1 : v) }
}
