import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Colombia Urban (EPSG method 1052; the MAGNA-SIRGAS city grids): a local projection on
/// the plane at height h₀ above the ellipsoid at the origin (IOGP GN 7-2):
///   E = FE + A·ν·cosφ·Δλ,  N = FN + G·ρ₀·[(φ − φ₀) + B·Δλ²·ν²·cos²φ]
/// with A = 1 + h₀/ν₀, B = tanφ₀/(2ρ₀ν₀), G = 1 + h₀/ρ₀ (ν, ρ the radii of curvature).
///
/// The inverse is closed-form and exact: the northing gives φ directly once
/// ν·cosφ·Δλ = (E − FE)/A is known, then Δλ follows. O(1), allocation-free.
public struct ColombiaUrban: Sendable, Equatable {
    let a: Double, e2: Double
    let phi0: Double, lon0: Double
    let capA: Double, capB: Double, gRho0: Double
    let fe: Double, fn: Double

    /// Natural origin (degrees), its false easting/northing and the plane's height h₀ (metres).
    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double, originHeight h0: Double
    ) {
        a = ellipsoid.semiMajorAxis
        e2 = ellipsoid.eccentricitySquared
        phi0 = latitudeOfOrigin * .pi / 180
        lon0 = centralMeridian * .pi / 180
        let s0 = sin(phi0), w0 = 1 - e2 * s0 * s0
        let nu0 = a / w0.squareRoot()
        let rho0 = a * (1 - e2) / (w0 * w0.squareRoot())
        capA = 1 + h0 / nu0
        capB = tan(phi0) / (2 * rho0 * nu0)
        gRho0 = (1 + h0 / rho0) * rho0
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let dl = remainder(lon - lon0, 2 * .pi)
        let s = sin(lat)
        let nuCos = a / (1 - e2 * s * s).squareRoot() * cos(lat)
        let u = nuCos * dl
        return (fe + capA * u, fn + gRho0 * ((lat - phi0) + capB * u * u))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let u = (x - fe) / capA
        let lat = phi0 + (y - fn) / gRho0 - capB * u * u
        guard abs(lat) < .pi / 2 else { return (.nan, .nan) }
        let s = sin(lat)
        let nuCos = a / (1 - e2 * s * s).squareRoot() * cos(lat)
        return (remainder(lon0 + u / nuCos, 2 * .pi), lat)
    }
}
