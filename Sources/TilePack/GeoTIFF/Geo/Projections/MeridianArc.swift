import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Distance along the meridian from the equator, M(φ), and its inverse (the footpoint
/// latitude), through the rectifying latitude μ = M/A as series in the third flattening n
/// to n⁴ (Helmert; the neglected n⁵ terms are ~1e-14 rad, 0.1 µm). Shared by Cassini-Soldner
/// and the American polyconic. O(1), allocation-free.
struct MeridianArc: Sendable, Equatable {
    let rectifyingRadius: Double   // A = a/(1+n)·(1 + n²/4 + n⁴/64 + n⁶/256)
    let f2: Double, f4: Double, f6: Double, f8: Double   // φ → μ
    let i2: Double, i4: Double, i6: Double, i8: Double   // μ → φ

    init(ellipsoid: Ellipsoid) {
        let f = ellipsoid.flattening
        let n = f / (2 - f)
        let n2 = n * n, n3 = n2 * n, n4 = n3 * n
        rectifyingRadius = ellipsoid.semiMajorAxis / (1 + n) * (1 + n2 / 4 + n4 / 64 + n4 * n2 / 256)
        f2 = -3 * n / 2 + 9 * n3 / 16
        f4 = 15 * n2 / 16 - 15 * n4 / 32
        f6 = -35 * n3 / 48
        f8 = 315 * n4 / 512
        i2 = 3 * n / 2 - 27 * n3 / 32
        i4 = 21 * n2 / 16 - 55 * n4 / 32
        i6 = 151 * n3 / 96
        i8 = 1097 * n4 / 512
    }

    /// M(φ) in metres for φ in radians.
    func distance(_ phi: Double) -> Double {
        rectifyingRadius * (phi + f2 * sin(2 * phi) + f4 * sin(4 * phi) + f6 * sin(6 * phi) + f8 * sin(8 * phi))
    }

    /// φ (radians) with M(φ) = m.
    func latitude(_ m: Double) -> Double {
        let mu = m / rectifyingRadius
        return mu + i2 * sin(2 * mu) + i4 * sin(4 * mu) + i6 * sin(6 * mu) + i8 * sin(8 * mu)
    }
}
