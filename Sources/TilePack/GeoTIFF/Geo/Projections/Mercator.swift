import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Normal-aspect mercator: ellipsoidal 1SP/2SP (EPSG methods 9804/9805, e.g. EPSG:3395) and,
/// with eccentricity 0, the spherical form web mercator uses (EPSG method 1024, EPSG:3857:
/// geodetic WGS 84 latitudes projected as if on a sphere of radius a).
///
/// O(1), allocation-free. The poles have no image (y = ±∞).
public struct Mercator: Sendable, Equatable {
    let e: Double
    let ak0: Double
    let lon0: Double
    let fe: Double, fn: Double

    /// - Parameters:
    ///   - spherical: project geodetic latitudes with the spherical formulas (pseudo-mercator).
    ///   - scale: k0 at the equator (1SP); ignored when `standardParallel` is given (2SP).
    public init(
        ellipsoid: Ellipsoid, spherical: Bool = false, centralMeridian: Double,
        scale: Double = 1, standardParallel: Double? = nil,
        falseEasting: Double, falseNorthing: Double
    ) {
        e = spherical ? 0 : ellipsoid.eccentricity
        var k0 = scale
        if let lat1 = standardParallel {
            let p1 = lat1 * .pi / 180, s = sin(p1)
            k0 = cos(p1) / (1 - e * e * s * s).squareRoot()
        }
        ak0 = ellipsoid.semiMajorAxis * k0
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let lam = remainder(lon - lon0, 2 * .pi)
        // tan(±π/2) is finite in floating point; the poles themselves are at infinity.
        guard abs(lat) < .pi / 2 else { return (fe + ak0 * lam, lat > 0 ? .infinity : -.infinity) }
        return (fe + ak0 * lam, fn + ak0 * ConformalLatitude.isometric(phi: lat, e: e))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let lam = (x - fe) / ak0
        return (remainder(lon0 + lam, 2 * .pi), ConformalLatitude.latitude(isometric: (y - fn) / ak0, e: e))
    }
}
