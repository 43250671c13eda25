import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Albers equal-area conic (EPSG method 9822) on the ellipsoid, by IOGP GN 7-2 §3.3.1.1,
/// with the authalic function q(φ) written with `atanh` (no cancellation near the equator)
/// and the inverse latitude found by Newton's method on q instead of the guidance note's
/// e⁶ series (whose truncation reaches millimetres).
///
/// Construction precomputes the cone; forward is O(1), inverse O(1) with at most
/// ``maxIterations`` Newton steps; no allocation. Points with no image (C − n·q < 0) come
/// back NaN.
public struct AlbersEqualArea: Sendable, Equatable {
    let a: Double, e: Double, e2: Double
    let n: Double
    let c: Double  // C = m1² + n·q1
    let rho0: Double  // ρ at the latitude of false origin
    let qPole: Double  // q(90°): the largest |q|
    let lon0: Double
    let fe: Double, fn: Double
    static let maxIterations = 12

    /// - Parameters: standard parallels, latitude/longitude of false origin (degrees),
    ///   easting/northing at the false origin (metres).
    public init(
        ellipsoid: Ellipsoid, standardParallel1: Double, standardParallel2: Double,
        latitudeOfFalseOrigin: Double, longitudeOfFalseOrigin: Double,
        eastingAtFalseOrigin: Double, northingAtFalseOrigin: Double
    ) {
        a = ellipsoid.semiMajorAxis
        e = ellipsoid.eccentricity
        e2 = ellipsoid.eccentricitySquared
        let p1 = standardParallel1 * .pi / 180, p2 = standardParallel2 * .pi / 180
        let m1 = Self.m(p1, e2), m2 = Self.m(p2, e2)
        let q1 = Self.q(sin(p1), e: e, e2: e2), q2 = Self.q(sin(p2), e: e, e2: e2)
        n = abs(p1 - p2) < 1e-10 ? sin(p1) : (m1 * m1 - m2 * m2) / (q2 - q1)
        c = m1 * m1 + n * q1
        let qF = Self.q(sin(latitudeOfFalseOrigin * .pi / 180), e: e, e2: e2)
        rho0 = a * (c - n * qF).squareRoot() / n
        qPole = Self.q(1, e: e, e2: e2)
        lon0 = longitudeOfFalseOrigin * .pi / 180
        fe = eastingAtFalseOrigin
        fn = northingAtFalseOrigin
    }

    static func m(_ phi: Double, _ e2: Double) -> Double {
        let s = sin(phi)
        return cos(phi) / (1 - e2 * s * s).squareRoot()
    }

    /// Authalic q(φ) = (1 − e²)[sinφ/(1 − e²sin²φ) + atanh(e sinφ)/e]; 2 sinφ on a sphere.
    static func q(_ s: Double, e: Double, e2: Double) -> Double {
        guard e != 0 else { return 2 * s }
        return (1 - e2) * (s / (1 - e2 * s * s) + atanh(e * s) / e)
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let rho = a * (c - n * Self.q(sin(lat), e: e, e2: e2)).squareRoot() / n
        let theta = n * remainder(lon - lon0, 2 * .pi)
        return (fe + rho * sin(theta), fn + rho0 - rho * cos(theta))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = x - fe, dy = rho0 - (y - fn)
        let sg: Double = n < 0 ? -1 : 1
        let rho = (dx * dx + dy * dy).squareRoot()
        let theta = atan2(sg * dx, sg * dy)
        let qv = (c - rho * rho * n * n / (a * a)) / n
        return (remainder(theta / n + lon0, 2 * .pi), latitude(q: qv))
    }

    /// Geodetic latitude with authalic q (|q| ≤ q(90°), else NaN).
    func latitude(q qv: Double) -> Double {
        guard qv.isFinite, abs(qv) <= qPole * (1 + 1e-15) else { return .nan }
        if abs(qv) >= qPole { return qv > 0 ? .pi / 2 : -.pi / 2 }
        // Authalic latitude as the start: within e² of the answer.
        var phi = asin(qv / qPole)
        guard e != 0 else { return phi }
        for _ in 0..<Self.maxIterations {
            let s = sin(phi), cp = cos(phi)
            let w = 1 - e2 * s * s
            // dq/dφ = 2(1 − e²) cosφ / w²
            let dphi = (qv - Self.q(s, e: e, e2: e2)) * w * w / (2 * (1 - e2) * cp)
            phi += dphi
            if !(abs(dphi) > 1e-14) { break }
        }
        return phi
    }
}
