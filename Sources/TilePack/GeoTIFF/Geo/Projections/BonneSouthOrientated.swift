import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Bonne, south orientated (EPSG method 9828; the Portuguese Bonne grids EPSG:2963, 5017),
/// by IOGP GN 7-2: the ellipsoidal Bonne
///   ρ = a·m₀/sinφ₀ + M₀ − M,  T = a·m·Δλ/ρ,  X = ρ sinT,  Y = a·m₀/sinφ₀ − ρ cosT
/// (m = cosφ/√(1 − e² sin²φ), M the meridian arc) returned as westing W = FE − X and
/// southing S = FN − Y. The inverse is closed-form through the meridian arc. PROJ 9.1 lacks
/// this method (its `bonne` is the north-orientated one). O(1), allocation-free.
public struct BonneSouthOrientated: Sendable, Equatable {
    let arc: MeridianArc
    let a: Double, e2: Double
    let rho0: Double  // a·m₀/sinφ₀
    let m0: Double  // M(φ₀)
    let sign: Double  // sign of sinφ₀ (ρ's sign follows it)
    let lon0: Double
    let fe: Double, fn: Double

    /// - Parameters: latitude/longitude of natural origin (degrees; latitude ≠ 0).
    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        arc = MeridianArc(ellipsoid)
        a = ellipsoid.semiMajorAxis
        e2 = ellipsoid.eccentricitySquared
        let p0 = latitudeOfOrigin * .pi / 180, s0 = sin(p0)
        rho0 = a * cos(p0) / (1 - e2 * s0 * s0).squareRoot() / s0
        m0 = arc.distance(latitude: p0)
        sign = s0 < 0 ? -1 : 1
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → westing/southing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let s = sin(lat)
        let m = cos(lat) / (1 - e2 * s * s).squareRoot()
        let rho = rho0 + m0 - arc.distance(latitude: lat)
        let t = rho == 0 ? 0 : a * m * remainder(lon - lon0, 2 * .pi) / rho
        return (fe - rho * sin(t), fn - (rho0 - rho * cos(t)))
    }

    /// Westing/southing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let bx = fe - x, by = fn - y
        let dy = rho0 - by
        let rho = sign * (bx * bx + dy * dy).squareRoot()
        let lat = arc.latitude(distance: rho0 + m0 - rho)
        guard lat.isFinite, abs(lat) <= .pi / 2 else { return (.nan, .nan) }
        let s = sin(lat)
        let m = cos(lat) / (1 - e2 * s * s).squareRoot()
        guard m > 0 else { return (lon0, lat) }
        let t = atan2(sign * bx, sign * dy)
        return (remainder(lon0 + rho * t / (a * m), 2 * .pi), lat)
    }
}
