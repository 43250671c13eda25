import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Oblique stereographic (EPSG method 9809, the Dutch RD grid): a double projection, first
/// conformally onto Gauss's sphere of radius R = √(ρ0·ν0), then stereographically from that
/// sphere, by IOGP GN 7-2 §3.4.1.
///
/// The ellipsoid → sphere step is written in isometric latitudes: the guidance note's
/// w = c·(S_a·S_b^e)^n is ψ_sphere = n·ψ + ½ln c, so χ = gd(n·ψ + K) with K = atanh(sin χ0) − n·ψ0,
/// and the inverse is ψ = (atanh(sin χ) − K)/n (then the shared τ′ Newton step of
/// ``ConformalLatitude``), which needs no iteration of its own. The sphere → plane inverse
/// uses atan2, so every quadrant is right. O(1), allocation-free; the antipode of the
/// origin (on Gauss's sphere) has no image (NaN).
public struct ObliqueStereographic: Sendable, Equatable {
    let e: Double
    let n: Double  // Gauss sphere longitude factor
    let k: Double  // K = atanh(sin χ0) − n·ψ0
    let sinChi0: Double, cosChi0: Double
    let twoRk0: Double  // 2·R·k0
    let lon0: Double
    let fe: Double, fn: Double

    /// - Parameters: natural origin (degrees), scale k0 there, false easting/northing (metres).
    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        scale k0: Double, falseEasting: Double, falseNorthing: Double
    ) {
        e = ellipsoid.eccentricity
        let e2 = ellipsoid.eccentricitySquared
        let phi0 = latitudeOfOrigin * .pi / 180
        let s0 = sin(phi0), c0 = cos(phi0)
        n = (1 + e2 * c0 * c0 * c0 * c0 / (1 - e2)).squareRoot()
        sinChi0 = s0 / n
        cosChi0 = (1 - sinChi0 * sinChi0).squareRoot()
        k = atanh(sinChi0) - n * ConformalLatitude.isometric(phi: phi0, e: e)
        // R = √(ρ0 ν0) = a√(1 − e²)/(1 − e² sin²φ0)
        let r = ellipsoid.semiMajorAxis * (1 - e2).squareRoot() / (1 - e2 * s0 * s0)
        twoRk0 = 2 * r * k0
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let w = n * ConformalLatitude.isometric(phi: lat, e: e) + k
        // sin χ = tanh w, cos χ = sech w
        let sinChi = tanh(w), cosChi = 1 / cosh(w)
        let dl = n * remainder(lon - lon0, 2 * .pi)
        let cdl = cos(dl)
        let b = 1 + sinChi * sinChi0 + cosChi * cosChi0 * cdl
        // b ≈ (angular distance from the antipode)²/2: within ~10 m of it the plane point is
        // beyond 1e13 m and meaningless, at it there is none.
        guard b > 1e-12 else { return (.nan, .nan) }
        return (
            fe + twoRk0 * cosChi * sin(dl) / b,
            fn + twoRk0 * (sinChi * cosChi0 - cosChi * sinChi0 * cdl) / b
        )
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let u = (x - fe) / twoRk0, v = (y - fn) / twoRk0
        let rho = (u * u + v * v).squareRoot()
        guard rho.isFinite else { return (.nan, .nan) }
        // Angular distance from the origin on the sphere: c = 2·atan(ρ/(2Rk0)).
        let c = 2 * atan(rho)
        let sc = sin(c), cc = cos(c)
        let sinChi = rho == 0 ? sinChi0 : cc * sinChi0 + v * sc * cosChi0 / rho
        let dl = atan2(u * sc, rho * cosChi0 * cc - v * sinChi0 * sc)
        let s = UnitClamp.clamp(sinChi)
        let psi = (atanh(s) - k) / n
        return (remainder(dl / n + lon0, 2 * .pi), ConformalLatitude.latitude(isometric: psi, e: e))
    }
}
