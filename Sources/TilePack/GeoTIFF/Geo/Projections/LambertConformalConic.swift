import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lambert conic conformal, 1SP (EPSG 9801: natural origin on the one standard parallel,
/// scale k0 there) and 2SP (EPSG 9802: two standard parallels, false origin anywhere), on
/// the ellipsoid, by IOGP GN 7-2 §3.2.1 with t(φ) computed in Karney's τ′ form.
/// Southern cones (n < 0) follow the guidance note's sign rules. O(1), allocation-free.
/// The EPSG variants (1SP variant B, 2SP Belgium, 2SP Michigan, West Orientated) are built
/// in LambertConformalConic+Variants.swift from the same constants.
public struct LambertConformalConic: Sendable, Equatable {
    let e: Double
    let n: Double
    let aFk: Double  // r = aFk · t^n
    var rOrigin: Double  // r at the (false or natural) origin latitude
    let lon0: Double
    let fe: Double, fn: Double
    /// −1 for the west-orientated method (x is a westing), else 1.
    var xSign: Double = 1
    /// Belgium 1972's 29.2985″ rotation (radians), else 0.
    var thetaShift: Double = 0

    /// 1SP: natural origin (degrees) with scale k0 there.
    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        scale k0: Double, falseEasting: Double, falseNorthing: Double
    ) {
        e = ellipsoid.eccentricity
        let phi0 = latitudeOfOrigin * .pi / 180
        let t0 = ConformalLatitude.t(phi: phi0, e: e)
        n = sin(phi0)
        let f = Self.m(phi0, e) / (n * pow(t0, n))
        aFk = ellipsoid.semiMajorAxis * f * k0
        rOrigin = aFk * pow(t0, n)
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// 2SP: standard parallels φ1, φ2 and the false origin (degrees, metres).
    public init(
        ellipsoid: Ellipsoid, standardParallel1: Double, standardParallel2: Double,
        latitudeOfFalseOrigin: Double, longitudeOfFalseOrigin: Double,
        eastingAtFalseOrigin: Double, northingAtFalseOrigin: Double
    ) {
        e = ellipsoid.eccentricity
        let p1 = standardParallel1 * .pi / 180, p2 = standardParallel2 * .pi / 180
        let pf = latitudeOfFalseOrigin * .pi / 180
        let m1 = Self.m(p1, e), m2 = Self.m(p2, e)
        let t1 = ConformalLatitude.t(phi: p1, e: e), t2 = ConformalLatitude.t(phi: p2, e: e)
        n = p1 == p2 ? sin(p1) : (log(m1) - log(m2)) / (log(t1) - log(t2))
        let f = m1 / (n * pow(t1, n))
        aFk = ellipsoid.semiMajorAxis * f
        rOrigin = aFk * pow(ConformalLatitude.t(phi: pf, e: e), n)
        lon0 = longitudeOfFalseOrigin * .pi / 180
        fe = eastingAtFalseOrigin
        fn = northingAtFalseOrigin
    }

    static func m(_ phi: Double, _ e: Double) -> Double {
        let s = sin(phi)
        return cos(phi) / (1 - e * e * s * s).squareRoot()
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let r = aFk * pow(ConformalLatitude.t(phi: lat, e: e), n)
        let theta = n * remainder(lon - lon0, 2 * .pi) - thetaShift
        return (fe + xSign * r * sin(theta), fn + rOrigin - r * cos(theta))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = xSign * (x - fe), dy = rOrigin - (y - fn)
        let sg: Double = n < 0 ? -1 : 1
        let r = sg * (dx * dx + dy * dy).squareRoot()
        let t = pow(r / aFk, 1 / n)
        let theta = atan2(sg * dx, sg * dy)
        return (remainder((theta + thetaShift) / n + lon0, 2 * .pi), ConformalLatitude.latitude(t: t, e: e))
    }
}
