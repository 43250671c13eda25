import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// American polyconic (EPSG method 9818, Brazil and Panama polyconic grids) on the
/// ellipsoid, by IOGP GN 7-2 §3.5.2 (Snyder 18-19…18-25): each parallel is the arc of its
/// own tangent cone, true to scale along the parallels and the central meridian.
///
/// The inverse runs the guidance note's Newton iteration for the latitude (at most
/// ``maxIterations`` steps, stopping below 1e-14 rad), then a Newton polish on the forward
/// formulas (``NewtonInverse``) so forward and inverse agree to micrometres everywhere.
/// O(1), allocation-free.
public struct AmericanPolyconic: Sendable, Equatable {
    let a: Double, e2: Double
    let arc: MeridianArc
    let m0: Double
    let lon0: Double
    let fe: Double, fn: Double
    static let maxIterations = 20

    /// - Parameters: natural origin (degrees), false easting/northing (metres).
    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        a = ellipsoid.semiMajorAxis
        e2 = ellipsoid.eccentricitySquared
        arc = MeridianArc(ellipsoid)
        m0 = arc.distance(latitude: latitudeOfOrigin * .pi / 180)
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let (x, y) = local(dlon: remainder(lon - lon0, 2 * .pi), lat: lat)
        return (fe + x, fn + y)
    }

    func local(dlon: Double, lat: Double) -> (x: Double, y: Double) {
        let s = sin(lat)
        guard abs(s) > 1e-12 else { return (a * dlon, arc.distance(latitude: lat) - m0) }
        // ν·cotφ: the radius of the parallel's tangent cone.
        let r = a / (1 - e2 * s * s).squareRoot() * cos(lat) / s
        let l = dlon * s
        return (r * sin(l), arc.distance(latitude: lat) - m0 + r * (1 - cos(l)))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = x - fe, dy = y - fn
        let aa = (m0 + dy) / a
        guard aa.isFinite, dx.isFinite else { return (.nan, .nan) }
        guard abs(aa) > 1e-15 else { return (remainder(lon0 + dx / a, 2 * .pi), 0) }
        let bb = aa * aa + dx * dx / (a * a)
        var phi = aa
        for _ in 0..<Self.maxIterations {
            let s = sin(phi)
            let w = 1 - e2 * s * s
            let c = w.squareRoot() * tan(phi)
            let ma = arc.distance(latitude: phi) / a
            let mp = (1 - e2) / (w * w.squareRoot())
            let s2 = sin(2 * phi)
            let num = aa * (c * ma + 1) - ma - 0.5 * (ma * ma + bb) * c
            let den = e2 * s2 * (ma * ma + bb - 2 * aa * ma) / (4 * c) + (aa - ma) * (c * mp - 2 / s2) - mp
            let step = num / den
            guard step.isFinite else { return (.nan, .nan) }
            phi -= step
            if abs(step) < 1e-14 { break }
        }
        let s = sin(phi)
        let c = (1 - e2 * s * s).squareRoot() * tan(phi)
        let dlon = asin(UnitClamp.clamp(dx * c / a)) / s
        let r = NewtonInverse.refine(x: dx, y: dy, start: (dlon, phi)) { local(dlon: $0, lat: $1) }
        return (remainder(r.lon + lon0, 2 * .pi), r.lat)
    }
}
