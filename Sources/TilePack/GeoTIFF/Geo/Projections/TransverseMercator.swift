import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Transverse mercator (EPSG method 9807, UTM) by the Krüger series to sixth order in the
/// third flattening n, as Karney (2011) and PROJ's default `tmerc` do: ~5 nm accurate within
/// 3,900 km of the central meridian, so well beyond a UTM zone.
///
/// Construction precomputes the series coefficients; forward and inverse are O(1), no
/// allocation (about 6 transcendental evaluations each plus a 2–3 step Newton inverse).
public struct TransverseMercator: Sendable, Equatable {
    let e: Double
    let k0A: Double  // k0 · rectifying radius A
    let alpha: [Double]  // α1…α6 (forward)
    let beta: [Double]  // β1…β6 (inverse)
    let lon0: Double  // radians
    let fe: Double, fn: Double
    let xi0: Double  // ξ of the latitude of origin on the central meridian

    /// - Parameters: latitude/longitude of natural origin in degrees, scale k0, false
    ///   easting/northing in metres.
    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        scale k0: Double, falseEasting: Double, falseNorthing: Double
    ) {
        let f = ellipsoid.flattening
        let n = f / (2 - f)
        let n2 = n * n, n3 = n2 * n, n4 = n3 * n, n5 = n4 * n, n6 = n5 * n
        e = ellipsoid.eccentricity
        let a = ellipsoid.semiMajorAxis / (1 + n) * (1 + n2 / 4 + n4 / 64 + n6 / 256)
        k0A = k0 * a
        alpha = [
            n / 2 - 2 * n2 / 3 + 5 * n3 / 16 + 41 * n4 / 180 - 127 * n5 / 288 + 7891 * n6 / 37800,
            13 * n2 / 48 - 3 * n3 / 5 + 557 * n4 / 1440 + 281 * n5 / 630 - 1983433 * n6 / 1935360,
            61 * n3 / 240 - 103 * n4 / 140 + 15061 * n5 / 26880 + 167603 * n6 / 181440,
            49561 * n4 / 161280 - 179 * n5 / 168 + 6601661 * n6 / 7257600,
            34729 * n5 / 80640 - 3418889 * n6 / 1995840,
            212378941 * n6 / 319334400,
        ]
        beta = [
            n / 2 - 2 * n2 / 3 + 37 * n3 / 96 - n4 / 360 - 81 * n5 / 512 + 96199 * n6 / 604800,
            n2 / 48 + n3 / 15 - 437 * n4 / 1440 + 46 * n5 / 105 - 1118711 * n6 / 3870720,
            17 * n3 / 480 - 37 * n4 / 840 - 209 * n5 / 4480 + 5569 * n6 / 90720,
            4397 * n4 / 161280 - 11 * n5 / 504 - 830251 * n6 / 7257600,
            4583 * n5 / 161280 - 108847 * n6 / 3991680,
            20648693 * n6 / 638668800,
        ]
        lon0 = centralMeridian * .pi / 180
        fe = falseEasting
        fn = falseNorthing
        // On the central meridian η′ = 0 and ξ′ is the conformal latitude.
        let phi0 = latitudeOfOrigin * .pi / 180
        let xip0 = atan(ConformalLatitude.tauPrime(tau: tan(phi0), e: e))
        var xi = xip0
        for j in 0..<6 { xi += alpha[j] * sin(2 * Double(j + 1) * xip0) }
        xi0 = xi
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).

    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        var lam = lon - lon0
        // Reduce to (−π, π] so points across the antimeridian from the zone stay continuous.
        lam = remainder(lam, 2 * .pi)
        let taup = ConformalLatitude.tauPrime(tau: tan(lat), e: e)
        let cl = cos(lam)
        let xip = atan2(taup, cl)
        let etap = asinh(sin(lam) / (taup * taup + cl * cl).squareRoot())
        var xi = xip, eta = etap
        for j in 0..<6 {
            let k = 2 * Double(j + 1)
            xi += alpha[j] * sin(k * xip) * cosh(k * etap)
            eta += alpha[j] * cos(k * xip) * sinh(k * etap)
        }
        return (fe + k0A * eta, fn + k0A * (xi - xi0))
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).

    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let xi = (y - fn) / k0A + xi0
        let eta = (x - fe) / k0A
        var xip = xi, etap = eta
        for j in 0..<6 {
            let k = 2 * Double(j + 1)
            xip -= beta[j] * sin(k * xi) * cosh(k * eta)
            etap -= beta[j] * cos(k * xi) * sinh(k * eta)
        }
        let s = sinh(etap), c = cos(xip)
        let r = (s * s + c * c).squareRoot()
        let lam = atan2(s, c)
        let taup = sin(xip) / r
        let lat = r == 0 ? (xip > 0 ? .pi / 2 : -.pi / 2) : atan(ConformalLatitude.tau(tauPrime: taup, e: e))
        return (remainder(lon0 + lam, 2 * .pi), lat)
    }
}
