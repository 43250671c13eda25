import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Hotine oblique mercator (EPSG methods 9812 variant A and 9815 variant B) on the
/// ellipsoid, by IOGP GN 7-2 §3.2.4: the ellipsoid is mapped conformally onto an
/// "aposphere", then a mercator projection along the initial line through the projection
/// centre at azimuth αc, rotated by the rectified grid angle γc.
///
/// Variant A's false easting/northing are at the natural origin (where the initial line
/// meets the aposphere's equator); variant B's are at the projection centre (Swiss, Malaysian
/// RSO grids). Q = H/t^B is written as exp(ln H + B·ψ) with ψ the isometric latitude, so S
/// and T are sinh/cosh of one number. O(1), allocation-free; the poles of the oblique
/// cylinder (|U| = 1) have no image (non-finite).
public struct HotineObliqueMercator: Sendable, Equatable {
    let e: Double
    let b: Double  // B
    let aOverB: Double  // A/B
    let lnH: Double  // ln H
    let sinG0: Double, cosG0: Double  // γ0
    let sinGc: Double, cosGc: Double  // γc
    let lon0: Double  // λ0: longitude of the natural origin
    let uOffset: Double  // variant B: |uc|·sign(φc); variant A: 0
    let fe: Double, fn: Double

    /// - Parameters: latitude/longitude of projection centre (degrees), azimuth of the initial
    ///   line αc (degrees), angle from rectified to skew grid γc (degrees; γ0 when nil), scale on
    ///   the initial line kc, false easting/northing (variant A: at the natural origin;
    ///   variant B: at the projection centre), `variantB`.
    public init(
        ellipsoid: Ellipsoid, latitudeOfCentre: Double, longitudeOfCentre: Double,
        azimuth: Double, rectifiedGridAngle: Double?, scale kc: Double,
        falseEasting: Double, falseNorthing: Double, variantB: Bool
    ) {
        e = ellipsoid.eccentricity
        let e2 = ellipsoid.eccentricitySquared
        let phic = latitudeOfCentre * .pi / 180
        let lamc = longitudeOfCentre * .pi / 180
        let alphac = azimuth * .pi / 180
        let sp = sin(phic), cp = cos(phic)
        b = (1 + e2 * cp * cp * cp * cp / (1 - e2)).squareRoot()
        let a = ellipsoid.semiMajorAxis * b * kc * (1 - e2).squareRoot() / (1 - e2 * sp * sp)
        aOverB = a / b
        let d = b * (1 - e2).squareRoot() / (cp * (1 - e2 * sp * sp).squareRoot())
        let d2m1 = max(d * d - 1, 0)
        let signPhi: Double = phic < 0 ? -1 : 1
        let f = d + d2m1.squareRoot() * signPhi
        // H = F·t0^B, t0 = exp(−ψc)
        lnH = log(f) - b * ConformalLatitude.isometric(phi: phic, e: e)
        let gamma0 = asin(UnitClamp.clamp(sin(alphac) / d))
        sinG0 = sin(gamma0)
        cosG0 = cos(gamma0)
        let gammac = rectifiedGridAngle.map { $0 * .pi / 180 } ?? gamma0
        sinGc = sin(gammac)
        cosGc = cos(gammac)
        // λ0 = λc − asin(G·tanγ0)/B, with G·tanγ0 = sign(φc)·√(D²−1)·sinαc/√(D²−sin²αc) written
        // as an atan2: asin near 1 (αc = 90°, the Swiss and Hungarian grids) loses half the
        // digits, which is centimetres here.
        lon0 = lamc - atan2(signPhi * d2m1.squareRoot() * sin(alphac), d * abs(cos(alphac))) / b
        if variantB {
            let uc: Double
            if abs(abs(azimuth) - 90) < 1e-10 {
                uc = a * (lamc - lon0)
            } else {
                uc = aOverB * atan(d2m1.squareRoot() / cos(alphac))
            }
            uOffset = abs(uc) * signPhi
        } else {
            uOffset = 0
        }
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let lnQ = lnH + b * ConformalLatitude.isometric(phi: lat, e: e)
        let s = sinh(lnQ), t = cosh(lnQ)
        let bl = b * remainder(lon - lon0, 2 * .pi)
        let vv = sin(bl)
        let uu = (-vv * cosG0 + s * sinG0) / t
        guard abs(uu) < 1 else { return (.nan, .nan) }
        let v = -aOverB * atanh(uu)
        let u = aOverB * atan2(s * cosG0 + vv * sinG0, cos(bl)) - uOffset
        return (v * cosGc + u * sinGc + fe, u * cosGc - v * sinGc + fn)
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let dx = x - fe, dy = y - fn
        let v = dx * cosGc - dy * sinGc
        let u = dy * cosGc + dx * sinGc + uOffset
        // Q′ = exp(−B v′/A): S′, T′ are sinh/cosh of −v′/(A/B).
        let w = -v / aOverB
        let s = sinh(w), t = cosh(w)
        let bu = u / aOverB
        let vv = sin(bu)
        let uu = (vv * cosG0 + s * sinG0) / t
        guard uu.isFinite, abs(uu) <= 1 else { return (.nan, .nan) }
        // t′ = (H/√((1+U′)/(1−U′)))^(1/B): ψ = (atanh U′ − ln H)/B
        let psi = (atanh(uu) - lnH) / b
        let lon = lon0 - atan2(s * cosG0 - vv * sinG0, cos(bu)) / b
        return (remainder(lon, 2 * .pi), ConformalLatitude.latitude(isometric: psi, e: e))
    }
}
