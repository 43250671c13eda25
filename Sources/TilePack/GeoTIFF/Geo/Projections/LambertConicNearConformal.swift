import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lambert conic near-conformal (EPSG method 9817; Levant zone, EPSG:22700), by IOGP GN 7-2:
/// a 1SP Lambert cone whose radius is the truncated cubic r = r₀ − k₀(s + A·s³) of the
/// meridian distance s from the origin, with the meridian distance itself the note's series in
/// n (kept as the note states it: the method is defined by these truncations).
///
/// The inverse solves the cubic by Newton and the meridian series by Newton on its exact
/// derivative (each ≤ 8 steps, 1e-15 tolerance), so it inverts this forward to rounding.
/// PROJ 9.1 lacks the method. O(1), allocation-free.
public struct LambertConicNearConformal: Sendable, Equatable {
    let capA: Double
    let ap: Double, bp: Double, cp: Double, dp: Double, ep: Double  // A′ (per radian), B′ … E′
    let r0: Double, s0: Double, k0: Double
    let sinPhi0: Double
    let lon0: Double
    let fe: Double, fn: Double

    /// - Parameters: latitude of natural origin (≠ 0) and longitude (degrees), k₀, FE, FN.
    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        scale: Double, falseEasting: Double, falseNorthing: Double
    ) {
        let a = ellipsoid.semiMajorAxis, e2 = ellipsoid.eccentricitySquared, f = ellipsoid.flattening
        let n = f / (2 - f), n2 = n * n, n3 = n2 * n, n4 = n3 * n, n5 = n4 * n
        let phi0 = latitudeOfOrigin * .pi / 180
        let s = sin(phi0), w = 1 - e2 * s * s
        let nu0 = a / w.squareRoot()
        let rho0 = a * (1 - e2) / (w * w.squareRoot())
        capA = 1 / (6 * rho0 * nu0)
        // The note's A′ multiplies φ in degrees with a π/180 factor: per radian it is the bracket.
        ap = a * (1 - n + 5 * (n2 - n3) / 4 + 81 * (n4 - n5) / 64)
        bp = 3 * a * (n - n2 + 7 * (n3 - n4) / 8 + 55 * n5 / 64) / 2
        cp = 15 * a * (n2 - n3 + 3 * (n4 - n5) / 4) / 16
        dp = 35 * a * (n3 - n4 + 11 * n5 / 16) / 48
        ep = 315 * a * (n4 - n5) / 512
        k0 = scale
        r0 = k0 * nu0 / tan(phi0)
        sinPhi0 = s
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
        s0 = ap * phi0 - bp * sin(2 * phi0) + cp * sin(4 * phi0) - dp * sin(6 * phi0) + ep * sin(8 * phi0)
    }

    /// The note's meridian distance series m(φ).
    func m(_ phi: Double) -> Double {
        ap * phi - bp * sin(2 * phi) + cp * sin(4 * phi) - dp * sin(6 * phi) + ep * sin(8 * phi)
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let s = m(lat) - s0
        let r = r0 - k0 * (s + capA * s * s * s)
        let theta = remainder(lon - lon0, 2 * .pi) * sinPhi0
        return (fe + r * sin(theta), fn + r0 - r * cos(theta))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = x - fe, dy = r0 - (y - fn)
        guard dx.isFinite, dy.isFinite else { return (.nan, .nan) }
        let sign: Double = sinPhi0 < 0 ? -1 : 1
        let theta = atan2(sign * dx, sign * dy)
        let r = sign * (dx * dx + dy * dy).squareRoot()
        let mm = (r0 - r) / k0
        // s + A s³ = M′ (monotone): Newton from s = M′.
        var s = mm
        for _ in 0..<8 {
            let d = (s + capA * s * s * s - mm) / (1 + 3 * capA * s * s)
            s -= d
            if !(abs(d) > 1e-9) { break }
        }
        let target = s + s0
        var phi = target / ap
        for _ in 0..<8 {
            let dm = ap - 2 * bp * cos(2 * phi) + 4 * cp * cos(4 * phi) - 6 * dp * cos(6 * phi) + 8 * ep * cos(8 * phi)
            let d = (m(phi) - target) / dm
            phi -= d
            if !(abs(d) > 1e-15) { break }
        }
        guard phi.isFinite, abs(phi) <= .pi / 2 else { return (.nan, .nan) }
        return (remainder(lon0 + theta / sinPhi0, 2 * .pi), phi)
    }
}
