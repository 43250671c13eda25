import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Lambert cylindrical equal area (EPSG method 9835, e.g. EASE-Grid 2.0 EPSG:6933) and its
/// spherical form (EPSG 9834, on the authalic sphere), by IOGP GN 7-2:
///   k₀ = cosφ₁/√(1 − e² sin²φ₁),  X = FE + a·k₀·(λ − λ₀),  Y = FN + a·q(φ)/(2k₀).
/// The inverse turns q back into φ through the authalic latitude (Newton, bounded).
/// O(1), allocation-free.
public struct LambertCylindricalEqualArea: Sendable, Equatable {
    let ak0: Double, aOver2k0: Double
    let e: Double, qp: Double
    let lon0: Double
    let fe: Double, fn: Double

    /// - Parameters: standard parallel φ₁ and longitude of natural origin in degrees.
    public init(
        ellipsoid: Ellipsoid, standardParallel: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        e = ellipsoid.eccentricity
        let p1 = standardParallel * .pi / 180, s1 = sin(p1)
        let k0 = cos(p1) / (1 - e * e * s1 * s1).squareRoot()
        ak0 = ellipsoid.semiMajorAxis * k0
        aOver2k0 = ellipsoid.semiMajorAxis / (2 * k0)
        qp = AuthalicLatitude.q(sinPhi: 1, e: e)
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        (fe + ak0 * remainder(lon - lon0, 2 * .pi), fn + aOver2k0 * AuthalicLatitude.q(sinPhi: sin(lat), e: e))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians); non-finite beyond the poles.
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let q = (y - fn) / aOver2k0
        guard abs(q) <= qp * (1 + 1e-12) else { return (.nan, .nan) }
        let dl = (x - fe) / ak0
        guard abs(dl) <= .pi + 1e-12 else { return (.nan, .nan) }
        return (remainder(lon0 + dl, 2 * .pi), AuthalicLatitude.latitude(q: q, qp: qp, e: e))
    }
}
