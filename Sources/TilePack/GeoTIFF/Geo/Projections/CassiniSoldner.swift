import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Cassini-Soldner (EPSG method 9806) and its hyperbolic form (9833, Vanua Levu), by IOGP
/// GN 7-2 §3.2.2: the guidance note's series in A = Δλ·cosφ for the forward map; the
/// hyperbolic form subtracts X³/(6ρν) from the northing component.
///
/// The inverse starts from the guidance note's reverse series and refines it by Newton's
/// method on the forward formulas (``NewtonInverse``), as PROJ does, so forward and inverse
/// are exact inverses of each other (the reverse series alone misses by millimetres a few
/// hundred kilometres out, and the hyperbolic form has no closed reverse).
/// Forward O(1); inverse O(1) with at most ``NewtonInverse/maxIterations`` steps; no allocation.
public struct CassiniSoldner: Sendable, Equatable {
    let e2: Double
    let a: Double
    let arc: MeridianArc
    let m0: Double
    let lon0: Double
    let fe: Double, fn: Double
    let hyperbolic: Bool

    /// - Parameters: natural origin (degrees), false easting/northing (metres), `hyperbolic`
    ///   for EPSG 9833.
    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double, hyperbolic: Bool = false
    ) {
        e2 = ellipsoid.eccentricitySquared
        a = ellipsoid.semiMajorAxis
        arc = MeridianArc(ellipsoid)
        m0 = arc.distance(latitude: latitudeOfOrigin * .pi / 180)
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
        self.hyperbolic = hyperbolic
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let (x, y) = local(dlon: remainder(lon - lon0, 2 * .pi), lat: lat)
        return (fe + x, fn + y)
    }

    /// Offsets from the false origin for a longitude difference from the central meridian.
    func local(dlon: Double, lat: Double) -> (x: Double, y: Double) {
        let s = sin(lat), c = cos(lat)
        let w = 1 - e2 * s * s
        let nu = a / w.squareRoot()
        let tn = tan(lat)
        let t = tn * tn
        let aa = dlon * c
        let cc = e2 * c * c / (1 - e2)
        let a2 = aa * aa
        let x = nu * aa * (1 - a2 * t * (1.0 / 6 + (8 - t + 8 * cc) * a2 / 120))
        var y = arc.distance(latitude: lat) - m0 + nu * tn * a2 * (0.5 + (5 - t + 6 * cc) * a2 / 24)
        if hyperbolic {
            let rho = a * (1 - e2) / (w * w.squareRoot())
            y -= y * y * y / (6 * rho * nu)
        }
        return (x, y)
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = x - fe, dy = y - fn
        // Reverse series (GN 7-2) at the footpoint latitude as Newton's start.
        let phi1 = arc.latitude(distance: m0 + dy)
        let s = sin(phi1)
        let w = 1 - e2 * s * s
        let nu1 = a / w.squareRoot()
        let rho1 = a * (1 - e2) / (w * w.squareRoot())
        let tn = tan(phi1), t1 = tn * tn
        let d = dx / nu1, d2 = d * d
        let lat0 = phi1 - (nu1 * tn / rho1) * d2 * (0.5 - (1 + 3 * t1) * d2 / 24)
        let dlon0 = d * (1 + t1 * d2 * (-1.0 / 3 + (1 + 3 * t1) * d2 / 15)) / cos(phi1)
        let r = NewtonInverse.refine(x: dx, y: dy, start: (dlon0, lat0)) { local(dlon: $0, lat: $1) }
        return (remainder(r.lon + lon0, 2 * .pi), r.lat)
    }
}
