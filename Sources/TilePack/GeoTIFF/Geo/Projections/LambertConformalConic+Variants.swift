import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The EPSG variants of Lambert conic conformal (GN 7-2 §3.2.1.3–3.2.1.5), each the 1SP or
/// 2SP cone with one change; same cost as the base methods.
extension LambertConformalConic {
    /// 1SP variant B (EPSG 1102): the cone of the 1SP method (natural origin φ0, scale k0)
    /// with easting/northing given at a false origin (φF, λ0).
    public static func variantB(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        scale: Double, latitudeOfFalseOrigin: Double, eastingAtFalseOrigin: Double,
        northingAtFalseOrigin: Double
    ) -> LambertConformalConic {
        var p = LambertConformalConic(
            ellipsoid: ellipsoid, latitudeOfOrigin: latitudeOfOrigin,
            centralMeridian: centralMeridian, scale: scale,
            falseEasting: eastingAtFalseOrigin, falseNorthing: northingAtFalseOrigin)
        p.rOrigin = p.aFk * pow(ConformalLatitude.t(phi: latitudeOfFalseOrigin * .pi / 180, e: p.e), p.n)
        return p
    }

    /// 2SP Belgium (EPSG 9803, Belge Lambert 72): the 2SP cone turned by 29.2985″.
    public static func belgium(
        ellipsoid: Ellipsoid, standardParallel1: Double, standardParallel2: Double,
        latitudeOfFalseOrigin: Double, longitudeOfFalseOrigin: Double,
        eastingAtFalseOrigin: Double, northingAtFalseOrigin: Double
    ) -> LambertConformalConic {
        var p = LambertConformalConic(
            ellipsoid: ellipsoid, standardParallel1: standardParallel1,
            standardParallel2: standardParallel2, latitudeOfFalseOrigin: latitudeOfFalseOrigin,
            longitudeOfFalseOrigin: longitudeOfFalseOrigin,
            eastingAtFalseOrigin: eastingAtFalseOrigin, northingAtFalseOrigin: northingAtFalseOrigin)
        p.thetaShift = 29.2985 / 3600 * .pi / 180
        return p
    }

    /// 2SP Michigan (EPSG 1051): the 2SP cone on the ellipsoid enlarged by the ellipsoid
    /// scaling factor K (r = a·K·F·tⁿ; eccentricity unchanged).
    public static func michigan(
        ellipsoid: Ellipsoid, ellipsoidScale k: Double, standardParallel1: Double,
        standardParallel2: Double, latitudeOfFalseOrigin: Double,
        longitudeOfFalseOrigin: Double, eastingAtFalseOrigin: Double,
        northingAtFalseOrigin: Double
    ) -> LambertConformalConic {
        let scaled = Ellipsoid(
            name: ellipsoid.name, semiMajorAxis: ellipsoid.semiMajorAxis * k,
            inverseFlattening: ellipsoid.inverseFlattening)
        return LambertConformalConic(
            ellipsoid: scaled, standardParallel1: standardParallel1,
            standardParallel2: standardParallel2, latitudeOfFalseOrigin: latitudeOfFalseOrigin,
            longitudeOfFalseOrigin: longitudeOfFalseOrigin,
            eastingAtFalseOrigin: eastingAtFalseOrigin, northingAtFalseOrigin: northingAtFalseOrigin)
    }

    /// West orientated (EPSG 9826, Greenland, Iceland, Faroe): the 1SP cone with x a westing,
    /// W = FE − r·sinθ.
    public static func westOrientated(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        scale: Double, falseEasting: Double, falseNorthing: Double
    ) -> LambertConformalConic {
        var p = LambertConformalConic(
            ellipsoid: ellipsoid, latitudeOfOrigin: latitudeOfOrigin,
            centralMeridian: centralMeridian, scale: scale,
            falseEasting: falseEasting, falseNorthing: falseNorthing)
        p.xSign = -1
        return p
    }
}
