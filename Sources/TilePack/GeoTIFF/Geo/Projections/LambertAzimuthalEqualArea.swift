import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lambert azimuthal equal-area on the ellipsoid (EPSG 9820), oblique, equatorial and polar
/// aspects (e.g. EPSG:3035), by IOGP GN 7-2 §3.6.2 through the authalic latitude β.
///
/// The inverse turns β back into φ by Newton's method on q(φ) (2–3 steps from the
/// guidance note's series), exact to rounding; within about a metre of a pole the
/// problem itself is ill-conditioned (q is flat there) and precision drops to millimetres.
/// O(1), allocation-free.
public struct LambertAzimuthalEqualArea: Sendable, Equatable {
    enum Aspect: Sendable, Equatable { case north, south, oblique }
    let a: Double, e: Double, e2: Double
    let qp: Double, rq: Double
    let sinB0: Double, cosB0: Double, d: Double
    let aspect: Aspect
    let lon0: Double
    let fe: Double, fn: Double

    public init(
        ellipsoid: Ellipsoid, latitudeOfCentre: Double, longitudeOfCentre: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        a = ellipsoid.semiMajorAxis
        e = ellipsoid.eccentricity
        e2 = ellipsoid.eccentricitySquared
        let phi0 = latitudeOfCentre * .pi / 180
        qp = AuthalicLatitude.q(sinPhi: 1, e: e)
        rq = a * (qp / 2).squareRoot()
        let b0 = asin(AuthalicLatitude.q(sinPhi: sin(phi0), e: e) / qp)
        sinB0 = sin(b0)
        cosB0 = cos(b0)
        let s0 = sin(phi0)
        d = cosB0 == 0 ? 1 : a * cos(phi0) / (1 - e2 * s0 * s0).squareRoot() / (rq * cosB0)
        aspect = latitudeOfCentre == 90 ? .north : latitudeOfCentre == -90 ? .south : .oblique
        lon0 = longitudeOfCentre * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let lam = remainder(lon - lon0, 2 * .pi)
        let q = AuthalicLatitude.q(sinPhi: sin(lat), e: e)
        switch aspect {
        case .north:
            let rho = a * max(0, qp - q).squareRoot()
            return (fe + rho * sin(lam), fn - rho * cos(lam))
        case .south:
            let rho = a * max(0, qp + q).squareRoot()
            return (fe + rho * sin(lam), fn + rho * cos(lam))
        case .oblique:
            let sinB = UnitClamp.clamp(q / qp)
            let cosB = (1 - sinB * sinB).squareRoot()
            let b = rq * (2 / (1 + sinB0 * sinB + cosB0 * cosB * cos(lam))).squareRoot()
            return (fe + b * d * cosB * sin(lam), fn + (b / d) * (cosB0 * sinB - sinB0 * cosB * cos(lam)))
        }
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = x - fe, dy = y - fn
        let q: Double
        let lam: Double
        switch aspect {
        case .north, .south:
            let rho2 = dx * dx + dy * dy
            let sg: Double = aspect == .north ? 1 : -1
            q = sg * (qp - rho2 / (a * a))
            lam = atan2(dx, -sg * dy)
        case .oblique:
            let rho = ((dx / d) * (dx / d) + (d * dy) * (d * dy)).squareRoot()
            if rho == 0 { return (lon0, latitude(q: sinB0 * qp)) }
            let c = 2 * asin(min(1, rho / (2 * rq)))
            let sinC = sin(c), cosC = cos(c)
            let sinB = cosC * sinB0 + d * dy * sinC * cosB0 / rho
            q = qp * sinB
            lam = atan2(dx * sinC, d * rho * cosB0 * cosC - d * d * dy * sinB0 * sinC)
        }
        return (remainder(lon0 + lam, 2 * .pi), latitude(q: q))
    }

    /// φ from q (``AuthalicLatitude/latitude(q:qp:e:)``).
    func latitude(q: Double) -> Double { AuthalicLatitude.latitude(q: q, qp: qp, e: e) }
}
