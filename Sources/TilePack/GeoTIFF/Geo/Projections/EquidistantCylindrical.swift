import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Equidistant cylindrical (EPSG method 1028, e.g. EPSG:4087) and its spherical form
/// (EPSG 1029), by IOGP GN 7-2: X = FE + ν₁·cosφ₁·(λ − λ₀), Y = FN + M(φ), with ν₁ the prime
/// vertical radius on the standard parallel φ₁ and M the meridian arc from the equator.
/// The spherical form is the same with e = 0 on the authalic sphere (``AuthalicLatitude``).
///
/// PROJ before 9.8 computes method 1028 with the spherical formula on radius a (a PROJ bug,
/// OSGeo/PROJ#4654, fixed by #4656): up to ~22 km apart in northing at high latitudes.
/// O(1), allocation-free; the inverse is the meridian-arc series plus Newton steps.
public struct EquidistantCylindrical: Sendable, Equatable {
    let arc: MeridianArc
    let nu1Cos: Double
    let lon0: Double
    let fe: Double, fn: Double

    /// - Parameters: standard parallel φ₁ and longitude of natural origin in degrees.
    public init(
        ellipsoid: Ellipsoid, standardParallel: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        arc = MeridianArc(ellipsoid)
        let p1 = standardParallel * .pi / 180, s1 = sin(p1)
        nu1Cos = ellipsoid.semiMajorAxis / (1 - ellipsoid.eccentricitySquared * s1 * s1).squareRoot() * cos(p1)
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        (fe + nu1Cos * remainder(lon - lon0, 2 * .pi), fn + arc.distance(latitude: lat))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians); non-finite beyond the poles.
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let lat = arc.latitude(distance: y - fn)
        guard abs(lat) <= .pi / 2 + 1e-12 else { return (.nan, .nan) }
        let dl = (x - fe) / nu1Cos
        guard abs(dl) <= .pi + 1e-12 else { return (.nan, .nan) }
        return (remainder(lon0 + dl, 2 * .pi), min(.pi / 2, max(-.pi / 2, lat)))
    }
}
