import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Laborde oblique mercator (EPSG method 9813; Madagascar, EPSG:8441 and 29701), by IOGP
/// GN 7-2: the ellipsoid is mapped conformally onto a sphere of radius R (Gauss), the sphere
/// rotated so the projection centre's parallel φs becomes the equator, a mercator taken
/// there, and the result bent by the complex cubic H + G·H³ (G from the azimuth α of the
/// initial line).
///
/// The inverse solves the cubic by complex Newton (≤ 8 steps, 1e-16 tolerance), un-rotates
/// the sphere in closed form, and returns to the ellipsoid through the isometric latitude.
/// O(1), allocation-free.
public struct LabordeObliqueMercator: Sendable, Equatable {
    let e: Double
    let b: Double, c: Double, r: Double
    let sinS: Double, cosS: Double
    let gRe: Double, gIm: Double
    let lonC: Double
    let fe: Double, fn: Double

    /// - Parameters: latitude/longitude of the projection centre and azimuth of the initial
    ///   line (degrees), scale on the initial line, false easting/northing (metres).
    public init(
        ellipsoid: Ellipsoid, latitudeOfCentre: Double, longitudeOfCentre: Double, azimuth: Double,
        scale k: Double, falseEasting: Double, falseNorthing: Double
    ) {
        e = ellipsoid.eccentricity
        let e2 = e * e
        let phiC = latitudeOfCentre * .pi / 180
        let sC = sin(phiC), cC = cos(phiC)
        b = (1 + e2 * cC * cC * cC * cC / (1 - e2)).squareRoot()
        let phiS = asin(sC / b)
        sinS = sin(phiS)
        cosS = cos(phiS)
        r = ellipsoid.semiMajorAxis * k * (1 - e2).squareRoot() / (1 - e2 * sC * sC)
        c = asinh(tan(phiS)) - b * ConformalLatitude.isometric(phi: phiC, e: e)
        let alpha = azimuth * .pi / 180
        gRe = (1 - cos(2 * alpha)) / 12
        gIm = sin(2 * alpha) / 12
        lonC = longitudeOfCentre * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let l = b * remainder(lon - lonC, 2 * .pi)
        let p = atan(sinh(c + b * ConformalLatitude.isometric(phi: lat, e: e)))
        let cp = cos(p), sp = sin(p)
        let u = cp * cos(l) * cosS + sp * sinS
        let v = cp * cos(l) * sinS - sp * cosS
        let w = cp * sin(l)
        let lp = atan2(v, u)
        let pp = asin(UnitClamp.clamp(w))
        // H = −L′ + i·ln tan(π/4 + P′/2); H + G·H³.
        let hr = -lp, hi = asinh(tan(pp))
        let h2r = hr * hr - hi * hi, h2i = 2 * hr * hi
        let h3r = h2r * hr - h2i * hi, h3i = h2r * hi + h2i * hr
        let zr = hr + gRe * h3r - gIm * h3i
        let zi = hi + gRe * h3i + gIm * h3r
        return (fe + r * zi, fn + r * zr)
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let zr = (y - fn) / r, zi = (x - fe) / r
        guard zr.isFinite, zi.isFinite else { return (.nan, .nan) }
        var hr = zr, hi = zi
        for _ in 0..<8 {
            // f(H) = H + G H³ − Z, f′(H) = 1 + 3 G H².
            let h2r = hr * hr - hi * hi, h2i = 2 * hr * hi
            let h3r = h2r * hr - h2i * hi, h3i = h2r * hi + h2i * hr
            let fr = hr + gRe * h3r - gIm * h3i - zr
            let fi = hi + gRe * h3i + gIm * h3r - zi
            let dr = 1 + 3 * (gRe * h2r - gIm * h2i), di = 3 * (gRe * h2i + gIm * h2r)
            let den = dr * dr + di * di
            guard den > 0 else { return (.nan, .nan) }
            let sr = (fr * dr + fi * di) / den, si = (fi * dr - fr * di) / den
            hr -= sr
            hi -= si
            if !(abs(sr) + abs(si) > 1e-16) { break }
        }
        let lp = -hr, pp = atan(sinh(hi))
        let u = cos(pp) * cos(lp), v = cos(pp) * sin(lp), w = sin(pp)
        let x1 = cosS * u + sinS * v, x3 = sinS * u - cosS * v
        let p = asin(UnitClamp.clamp(x3))
        let l = atan2(w, x1)
        let psi = (asinh(tan(p)) - c) / b
        let lat = ConformalLatitude.latitude(isometric: psi, e: e)
        guard lat.isFinite else { return (.nan, .nan) }
        return (remainder(lonC + l / b, 2 * .pi), lat)
    }
}
