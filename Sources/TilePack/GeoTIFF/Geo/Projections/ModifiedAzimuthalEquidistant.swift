import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Modified azimuthal equidistant (EPSG method 9832; Yap Islands, EPSG:3295), IOGP GN 7-2's
/// series for the geodesic distance c and azimuth α from the origin (good to a few cm within
/// ~800 km; EPSG states it for islands):
///   E = FE + c·sinα,  N = FN + c·cosα.
/// The inverse uses the note's series as a start and then two Newton corrections on the
/// forward (finite-difference Jacobian, 3 forwards each) so it inverts this forward exactly.
/// O(1), allocation-free.
public struct ModifiedAzimuthalEquidistant: Sendable, Equatable {
    let a: Double, e: Double, e2: Double
    let phi0: Double, sin0: Double, cos0: Double, nu0: Double
    let g: Double
    let lon0: Double
    let fe: Double, fn: Double

    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        a = ellipsoid.semiMajorAxis
        e = ellipsoid.eccentricity
        e2 = ellipsoid.eccentricitySquared
        phi0 = latitudeOfOrigin * .pi / 180
        sin0 = sin(phi0)
        cos0 = cos(phi0)
        nu0 = a / (1 - e2 * sin0 * sin0).squareRoot()
        g = e * sin0 / (1 - e2).squareRoot()
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let dl = remainder(lon - lon0, 2 * .pi)
        let s1 = sin(lat), c1 = cos(lat)
        let nu = a / (1 - e2 * s1 * s1).squareRoot()
        let psi = atan((1 - e2) * tan(lat) + e2 * nu0 * sin0 / (nu * c1))
        let alpha = atan2(sin(dl), cos0 * tan(psi) - sin0 * cos(dl))
        let sa = sin(alpha), ca = cos(alpha)
        let h = e * cos0 * ca / (1 - e2).squareRoot()
        let s: Double
        if abs(sa) < 1e-15 {
            s = asin(UnitClamp.clamp(cos0 * sin(psi) - sin0 * cos(psi))) * (ca < 0 ? -1 : 1)
        } else {
            s = asin(UnitClamp.clamp(sin(dl) * cos(psi) / sa))
        }
        let h2 = h * h, s2 = s * s
        let c =
            nu0 * s
            * (1 - s2 * h2 * (1 - h2) / 6 + s2 * s / 8 * g * h * (1 - 2 * h2)
                + s2 * s2 / 120 * (h2 * (4 - 7 * h2) - 3 * g * g * (1 - 7 * h2)) - s2 * s2 * s / 48 * g * h)
        return (fe + c * sa, fn + c * ca)
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = x - fe, dy = y - fn
        guard dx.isFinite, dy.isFinite else { return (.nan, .nan) }
        let cp = (dx * dx + dy * dy).squareRoot()
        guard cp > 0 else { return (lon0, phi0) }
        let alpha = atan2(dx, dy), ca = cos(alpha)
        let capA = -e2 * cos0 * cos0 * ca * ca / (1 - e2)
        let capB = 3 * e2 * (1 - capA) * sin0 * cos0 * ca / (1 - e2)
        let d = cp / nu0
        let j = d - capA * (1 + capA) * d * d * d / 6 - capB * (1 + 3 * capA) * d * d * d * d / 24
        let k = 1 - capA * j * j / 2 - capB * j * j * j / 6
        let psi = asin(UnitClamp.clamp(sin0 * cos(j) + cos0 * sin(j) * ca))
        var lat = atan((1 - e2 * k * sin0 / sin(psi)) * tan(psi) / (1 - e2))
        var lon = lon0 + asin(UnitClamp.clamp(sin(alpha) * sin(j) / cos(psi)))
        // Newton on the forward: the series are not exact inverses of each other.
        let hstep = 1e-7
        for _ in 0..<3 {
            let f = forward(lon: lon, lat: lat)
            let rx = x - f.x, ry = y - f.y
            guard rx.isFinite, ry.isFinite else { return (.nan, .nan) }
            if abs(rx) + abs(ry) < 1e-9 { break }
            let fl = forward(lon: lon + hstep, lat: lat), fp = forward(lon: lon, lat: lat + hstep)
            let j11 = (fl.x - f.x) / hstep, j12 = (fp.x - f.x) / hstep
            let j21 = (fl.y - f.y) / hstep, j22 = (fp.y - f.y) / hstep
            let det = j11 * j22 - j12 * j21
            guard det != 0 else { break }
            lon += (j22 * rx - j12 * ry) / det
            lat += (j11 * ry - j21 * rx) / det
        }
        guard lat.isFinite, abs(lat) <= .pi / 2 else { return (.nan, .nan) }
        return (remainder(lon, 2 * .pi), lat)
    }
}
