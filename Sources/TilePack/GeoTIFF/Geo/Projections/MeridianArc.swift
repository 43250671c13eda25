import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Distance along a meridian from the equator, M(φ), and its inverse, through the rectifying
/// latitude μ = M / A (A the rectifying radius): μ(φ) and φ(μ) as Helmert/Krüger series in
/// the third flattening n to n⁴ (truncation ~n⁵ ≈ 1e-14 rad, a few tens of nanometres), the
/// inverse then polished by Newton steps on the exact dM/dφ so that φ(M(φ)) = φ to rounding.
///
/// Used by the methods whose northing is a meridian arc (equidistant cylindrical, Guam,
/// Bonne). O(1), allocation-free.
struct MeridianArc: Sendable, Equatable {
    let a: Double, e2: Double
    /// Rectifying radius A: M(π/2) = A·π/2.
    let rectifyingRadius: Double
    let f1: Double, f2: Double, f3: Double, f4: Double  // μ = φ + Σ fj sin 2jφ
    let g1: Double, g2: Double, g3: Double, g4: Double  // φ = μ + Σ gj sin 2jμ

    init(_ ellipsoid: Ellipsoid) {
        a = ellipsoid.semiMajorAxis
        e2 = ellipsoid.eccentricitySquared
        let f = ellipsoid.flattening
        let n = f / (2 - f), n2 = n * n, n3 = n2 * n, n4 = n3 * n
        rectifyingRadius = a / (1 + n) * (1 + n2 / 4 + n4 / 64)
        f1 = -3 * n / 2 + 9 * n3 / 16
        f2 = 15 * n2 / 16 - 15 * n4 / 32
        f3 = -35 * n3 / 48
        f4 = 315 * n4 / 512
        g1 = 3 * n / 2 - 27 * n3 / 32
        g2 = 21 * n2 / 16 - 55 * n4 / 32
        g3 = 151 * n3 / 96
        g4 = 1097 * n4 / 512
    }

    /// M(φ), metres (negative south of the equator).
    func distance(latitude phi: Double) -> Double {
        rectifyingRadius * (phi + f1 * sin(2 * phi) + f2 * sin(4 * phi) + f3 * sin(6 * phi) + f4 * sin(8 * phi))
    }

    /// φ with M(φ) = m; non-finite in, non-finite out. Beyond a pole's arc the result is
    /// outside [−π/2, π/2] (callers treat that as no image).
    func latitude(distance m: Double) -> Double {
        let mu = m / rectifyingRadius
        var phi = mu + g1 * sin(2 * mu) + g2 * sin(4 * mu) + g3 * sin(6 * mu) + g4 * sin(8 * mu)
        // Newton on M(φ) − m with dM/dφ = ρ(φ) = a(1−e²)/(1−e² sin²φ)^1.5: the series is
        // already within ~1e-14 rad, so two steps reach rounding.
        for _ in 0..<2 {
            let s = sin(phi), w = 1 - e2 * s * s
            let rho = a * (1 - e2) / (w * w.squareRoot())
            let d = (m - distance(latitude: phi)) / rho
            phi += d
            if !(abs(d) > 1e-15) { break }
        }
        return phi
    }
}

/// The authalic (equal-area) latitude machinery: q(φ) and its inverse, and the authalic
/// sphere's radius R_A = a√(q_p/2), which EPSG's spherical equal-area methods use when the
/// CRS's figure is an ellipsoid (IOGP GN 7-2: "R should be calculated as the radius of the
/// authalic sphere"). O(1), allocation-free.
enum AuthalicLatitude {
    /// q from sin φ: (1 − e²)[sinφ/(1 − e² sin²φ) + atanh(e sinφ)/e]; 2 sinφ on a sphere.
    static func q(sinPhi s: Double, e: Double) -> Double {
        guard e != 0 else { return 2 * s }
        let e2 = e * e
        return (1 - e2) * (s / (1 - e2 * s * s) + atanh(e * s) / e)
    }

    /// φ (radians) from q, given q_p = q(π/2): the guidance note's series in β for a start,
    /// then Newton (Snyder 3-16), bounded at 6 steps with a 1e-15 rad tolerance.
    static func latitude(q: Double, qp: Double, e: Double) -> Double {
        guard q.isFinite else { return .nan }
        if abs(q) >= qp { return q > 0 ? .pi / 2 : -.pi / 2 }
        let beta = asin(q / qp)
        guard e != 0 else { return beta }
        let e2 = e * e, e4 = e2 * e2, e6 = e4 * e2
        var phi =
            beta + (e2 / 3 + 31 * e4 / 180 + 517 * e6 / 5040) * sin(2 * beta)
            + (23 * e4 / 360 + 251 * e6 / 3780) * sin(4 * beta) + (761 * e6 / 45360) * sin(6 * beta)
        for _ in 0..<6 {
            let s = sin(phi), c = cos(phi)
            guard c > 1e-12 else { break }
            let w = 1 - e2 * s * s
            let d = w * w / (2 * c) * (q / (1 - e2) - s / w - atanh(e * s) / e)
            phi += d
            if !(abs(d) > 1e-15) { break }
        }
        return phi
    }

    /// Radius of the sphere with the ellipsoid's area, R_A = a√(q_p/2).
    static func radius(_ ellipsoid: Ellipsoid) -> Double {
        ellipsoid.semiMajorAxis * (q(sinPhi: 1, e: ellipsoid.eccentricity) / 2).squareRoot()
    }

    /// The authalic sphere of `ellipsoid` (itself when it is a sphere).
    static func sphere(_ ellipsoid: Ellipsoid) -> Ellipsoid {
        ellipsoid.isSphere ? ellipsoid : .sphere(name: "\(ellipsoid.name) authalic sphere", radius: radius(ellipsoid))
    }
}
