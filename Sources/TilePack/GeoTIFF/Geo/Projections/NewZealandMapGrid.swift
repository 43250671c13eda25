import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// New Zealand Map Grid (EPSG method 9811; EPSG:27200), by IOGP GN 7-2: a polynomial in the
/// latitude difference gives the isometric-like Δψ, then a sixth-degree complex polynomial
/// z = Σ Bₙζⁿ of ζ = Δψ + iΔλ gives N = FN + a·Re z, E = FE + a·Im z.
///
/// The inverse starts from the guidance note's C-series, refines ζ by two complex Newton
/// steps (as the note does), then inverts the Δψ polynomial by Newton from the D-series
/// start (≤ 6 steps, 1e-15 tolerance) so that inverse(forward(p)) = p to rounding.
/// Only meaningful near New Zealand (the polynomials are a fit). O(1), allocation-free.
public struct NewZealandMapGrid: Sendable, Equatable {
    /// Δψ = Σ Aᵢ Δφⁱ, Δφ in units of 10⁵ arc-seconds.
    static let aCoeff: (Double, Double, Double, Double, Double, Double, Double, Double, Double, Double) =
        (
            0.6399175073, -0.1358797613, 0.063294409, -0.02526853, 0.0117879,
            -0.0055161, 0.0026906, -0.001333, 0.00067, -0.00034
        )
    /// Bₙ (real, imaginary), n = 1…6.
    static let bRe: (Double, Double, Double, Double, Double, Double) =
        (0.7557853228, 0.249204646, -0.001541739, -0.10162907, -0.26623489, -0.6870983)
    static let bIm: (Double, Double, Double, Double, Double, Double) =
        (0, 0.003371507, 0.041058560, 0.01727609, -0.36249218, -1.1651967)
    static let cRe: (Double, Double, Double, Double, Double, Double) =
        (1.3231270439, -0.577245789, 0.508307513, -0.15094762, 1.01418179, 1.9660549)
    static let cIm: (Double, Double, Double, Double, Double, Double) =
        (0, -0.007809598, -0.112208952, 0.18200602, 1.64497696, 2.5127645)
    static let dCoeff: (Double, Double, Double, Double, Double, Double, Double, Double, Double) =
        (1.5627014243, 0.5185406398, -0.03333098, -0.1052906, -0.0368594, 0.007317, 0.01220, 0.00394, -0.0013)
    /// Radians per unit of Δφ (10⁵ arc-seconds).
    static let unit = 1e5 / 3600 * .pi / 180

    let a: Double
    let phi0: Double, lon0: Double
    let fe: Double, fn: Double

    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        falseEasting: Double, falseNorthing: Double
    ) {
        a = ellipsoid.semiMajorAxis
        phi0 = latitudeOfOrigin * .pi / 180
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
    }

    static func psi(_ d: Double) -> Double {
        let c = aCoeff
        return d
            * (c.0 + d
                * (c.1 + d * (c.2 + d * (c.3 + d * (c.4 + d * (c.5 + d * (c.6 + d * (c.7 + d * (c.8 + d * c.9)))))))))
    }

    static func dPsi(_ d: Double) -> Double {
        let c = aCoeff
        return c.0 + d
            * (2 * c.1 + d
                * (3 * c.2 + d
                    * (4 * c.3 + d
                        * (5 * c.4 + d * (6 * c.5 + d * (7 * c.6 + d * (8 * c.7 + d * (9 * c.8 + d * 10 * c.9))))))))
    }

    /// Σ (re,im)ₙ zⁿ by Horner, n = 1…6, and its derivative Σ n(re,im)ₙ zⁿ⁻¹.
    static func poly(
        _ re: (Double, Double, Double, Double, Double, Double),
        _ im: (Double, Double, Double, Double, Double, Double),
        _ x: Double, _ y: Double
    ) -> (Double, Double, Double, Double) {
        // Horner for p(z) = z(c1 + z(c2 + … z c6)) and p′(z) = c1 + z(2c2 + … z 6c6).
        var pr = re.5, pi = im.5
        var dr = 6 * re.5, di = 6 * im.5
        func step(_ cr: Double, _ ci: Double, _ k: Double) {
            (pr, pi) = (pr * x - pi * y + cr, pr * y + pi * x + ci)
            (dr, di) = (dr * x - di * y + k * cr, dr * y + di * x + k * ci)
        }
        step(re.4, im.4, 5); step(re.3, im.3, 4); step(re.2, im.2, 3); step(re.1, im.1, 2); step(re.0, im.0, 1)
        return (pr * x - pi * y, pr * y + pi * x, dr, di)
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let dpsi = Self.psi((lat - phi0) / Self.unit)
        let dl = remainder(lon - lon0, 2 * .pi)
        let z = Self.poly(Self.bRe, Self.bIm, dpsi, dl)
        return (fe + a * z.1, fn + a * z.0)
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let zr = (y - fn) / a, zi = (x - fe) / a
        guard zr.isFinite, zi.isFinite else { return (.nan, .nan) }
        var c = Self.poly(Self.cRe, Self.cIm, zr, zi)
        var tr = c.0, ti = c.1
        // Newton on B(ζ) − z: ζ ← ζ − (B(ζ) − z)/B′(ζ), bounded.
        for _ in 0..<6 {
            c = Self.poly(Self.bRe, Self.bIm, tr, ti)
            let fr = c.0 - zr, fi = c.1 - zi
            let den = c.2 * c.2 + c.3 * c.3
            guard den > 0 else { return (.nan, .nan) }
            let dr = (fr * c.2 + fi * c.3) / den, di = (fi * c.2 - fr * c.3) / den
            tr -= dr
            ti -= di
            if !(abs(dr) + abs(di) > 1e-16) { break }
        }
        let dpsi = tr
        let dc = Self.dCoeff
        var d =
            dpsi
            * (dc.0 + dpsi
                * (dc.1 + dpsi
                    * (dc.2 + dpsi
                        * (dc.3 + dpsi * (dc.4 + dpsi * (dc.5 + dpsi * (dc.6 + dpsi * (dc.7 + dpsi * dc.8))))))))
        for _ in 0..<6 {
            let step = (Self.psi(d) - dpsi) / Self.dPsi(d)
            d -= step
            if !(abs(step) > 1e-15) { break }
        }
        let lat = phi0 + d * Self.unit
        guard lat.isFinite, abs(lat) <= .pi / 2 else { return (.nan, .nan) }
        return (remainder(lon0 + ti, 2 * .pi), lat)
    }
}
