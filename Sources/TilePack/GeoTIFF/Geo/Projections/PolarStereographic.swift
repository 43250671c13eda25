import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Polar stereographic, variant A (EPSG 9810: scale k0 at the pole, e.g. UPS) and variant B
/// (EPSG 9829: true scale on a standard parallel, e.g. EPSG:3031/3413), north or south.
///
/// Both reduce to ρ = a·K·t(φ) with a per-variant constant K; the southern aspect is the
/// northern one with φ negated and the northing axis flipped (IOGP GN 7-2 §3.5.2).
/// O(1), allocation-free.
public struct PolarStereographic: Sendable, Equatable {
    let e: Double
    let aK: Double  // ρ = aK · t
    let s: Double  // +1 north pole, −1 south pole
    let lon0: Double
    let fe: Double, fn: Double

    /// Variant A: origin at the pole `latitudeOfOrigin` (±90) with scale k0.
    public init(
        ellipsoid: Ellipsoid, northPole: Bool, centralMeridian: Double, scale k0: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        e = ellipsoid.eccentricity
        let c = (pow(1 + e, 1 + e) * pow(1 - e, 1 - e)).squareRoot()
        aK = ellipsoid.semiMajorAxis * 2 * k0 / c
        s = northPole ? 1 : -1
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Variant B: true scale on `standardParallel` (degrees; its sign picks the pole).
    public init(
        ellipsoid: Ellipsoid, standardParallel: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        e = ellipsoid.eccentricity
        s = standardParallel >= 0 ? 1 : -1
        let phic = abs(standardParallel) * .pi / 180
        if abs(standardParallel) == 90 {
            let c = (pow(1 + e, 1 + e) * pow(1 - e, 1 - e)).squareRoot()
            aK = ellipsoid.semiMajorAxis * 2 / c
        } else {
            let sc = sin(phic)
            let mc = cos(phic) / (1 - e * e * sc * sc).squareRoot()
            let tc = ConformalLatitude.t(phi: phic, e: e)
            aK = ellipsoid.semiMajorAxis * mc / tc
        }
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let rho = aK * ConformalLatitude.t(phi: s * lat, e: e)
        let theta = lon - lon0
        return (fe + rho * sin(theta), fn - s * rho * cos(theta))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = x - fe, dy = y - fn
        let rho = (dx * dx + dy * dy).squareRoot()
        let lat = s * ConformalLatitude.latitude(t: rho / aK, e: e)
        let lon = rho == 0 ? lon0 : remainder(lon0 + atan2(dx, -s * dy), 2 * .pi)
        return (lon, lat)
    }
}
