import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Equal Earth (EPSG method 1078; EPSG:8857–8859), Šavrič, Patterson & Jenny (2018), on the
/// ellipsoid through the authalic latitude β and the authalic radius R_A (IOGP GN 7-2):
///   θ = asin(M·sinβ), M = √3/2,
///   X = FE + R_A·λ·cosθ / (M·(A1 + 3A2θ² + 7A3θ⁶ + 9A4θ⁸)),
///   Y = FN + R_A·θ·(A1 + A2θ² + A3θ⁶ + A4θ⁸).
/// The inverse solves the Y polynomial for θ by Newton (monotone on [−π/3, π/3]; ≤ 12 steps,
/// tolerance 1e-15). O(1), allocation-free.
public struct EqualEarth: Sendable, Equatable {
    static let a1 = 1.340264, a2 = -0.081106, a3 = 0.000893, a4 = 0.003796
    static let m = 3.0.squareRoot() / 2
    let rA: Double, e: Double, qp: Double
    let lon0: Double
    let fe: Double, fn: Double

    public init(ellipsoid: Ellipsoid, centralMeridian: Double, falseEasting: Double, falseNorthing: Double) {
        e = ellipsoid.eccentricity
        qp = AuthalicLatitude.q(sinPhi: 1, e: e)
        rA = AuthalicLatitude.radius(ellipsoid)
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let sinBeta = UnitClamp.clamp(AuthalicLatitude.q(sinPhi: sin(lat), e: e) / qp)
        let th = asin(Self.m * sinBeta)
        let t2 = th * th, t6 = t2 * t2 * t2
        let dl = remainder(lon - lon0, 2 * .pi)
        let x = rA * dl * cos(th) / (Self.m * (Self.a1 + 3 * Self.a2 * t2 + t6 * (7 * Self.a3 + 9 * Self.a4 * t2)))
        let y = rA * th * (Self.a1 + Self.a2 * t2 + t6 * (Self.a3 + Self.a4 * t2))
        return (fe + x, fn + y)
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians); non-finite outside the map.
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let yr = (y - fn) / rA, xr = (x - fe) / rA
        let thMax = asin(Self.m)
        var th = yr / Self.a1
        for _ in 0..<12 {
            let t2 = th * th, t6 = t2 * t2 * t2
            let f = th * (Self.a1 + Self.a2 * t2 + t6 * (Self.a3 + Self.a4 * t2)) - yr
            let fp = Self.a1 + 3 * Self.a2 * t2 + t6 * (7 * Self.a3 + 9 * Self.a4 * t2)
            let d = f / fp
            th -= d
            if !(abs(d) > 1e-15) { break }
        }
        guard th.isFinite, abs(th) <= thMax * (1 + 1e-12) else { return (.nan, .nan) }
        th = min(thMax, max(-thMax, th))
        let t2 = th * th, t6 = t2 * t2 * t2
        let fp = Self.a1 + 3 * Self.a2 * t2 + t6 * (7 * Self.a3 + 9 * Self.a4 * t2)
        let dl = Self.m * xr * fp / cos(th)
        guard abs(dl) <= .pi * (1 + 1e-12) else { return (.nan, .nan) }
        let sinBeta = UnitClamp.clamp(sin(th) / Self.m)
        return (remainder(lon0 + dl, 2 * .pi), AuthalicLatitude.latitude(q: sinBeta * qp, qp: qp, e: e))
    }
}
