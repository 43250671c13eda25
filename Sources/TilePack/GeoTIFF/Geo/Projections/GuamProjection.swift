import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Guam projection (EPSG method 9831; EPSG:3993), the azimuthal-equidistant approximation of
/// IOGP GN 7-2 for small islands:
///   x = a·cosφ·Δλ/√(1 − e² sin²φ),  E = FE + x,
///   N = FN + M(φ) − M(φ₀) + x²·tanφ·√(1 − e² sin²φ)/(2a).
/// The inverse iterates the note's fixed point on M (≤ 12 steps, 1e-15 rad tolerance;
/// each step shrinks the error by ~(x/a)², so 3–4 steps at island scale). O(1), no allocation.
public struct GuamProjection: Sendable, Equatable {
    let arc: MeridianArc
    let a: Double, e2: Double
    let m0: Double
    let lon0: Double
    let fe: Double, fn: Double

    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        arc = MeridianArc(ellipsoid)
        a = ellipsoid.semiMajorAxis
        e2 = ellipsoid.eccentricitySquared
        m0 = arc.distance(latitude: latitudeOfOrigin * .pi / 180)
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let s = sin(lat), w = (1 - e2 * s * s).squareRoot()
        let x = a * cos(lat) * remainder(lon - lon0, 2 * .pi) / w
        return (fe + x, fn + arc.distance(latitude: lat) - m0 + x * x * tan(lat) * w / (2 * a))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = x - fe, dy = y - fn
        var lat = arc.latitude(distance: m0 + dy)
        for _ in 0..<12 {
            let s = sin(lat), w = (1 - e2 * s * s).squareRoot()
            let next = arc.latitude(distance: m0 + dy - dx * dx * tan(lat) * w / (2 * a))
            let d = next - lat
            lat = next
            if !(abs(d) > 1e-15) { break }
        }
        guard lat.isFinite, abs(lat) < .pi / 2 else { return (.nan, .nan) }
        let s = sin(lat)
        let dl = dx * (1 - e2 * s * s).squareRoot() / (a * cos(lat))
        return (remainder(lon0 + dl, 2 * .pi), lat)
    }
}
