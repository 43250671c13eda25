import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Conversions between geodetic and conformal latitude in Karney's τ form (τ = tan φ,
/// τ′ = tan χ = sinh ψ with ψ the isometric latitude), shared by every conformal projection
/// here (transverse mercator, mercator, polar stereographic, Lambert conic).
///
/// Working with tangents instead of angles keeps full precision near the poles, where
/// `tan(π/4 + φ/2)` style formulas lose digits. Reference: C. F. F. Karney, "Transverse
/// Mercator with an accuracy of a few nanometers", J. Geodesy 85 (2011), eqs. 7–9, 19–21.

enum ConformalLatitude {
    /// τ′ from τ for eccentricity e: τ′ = τ√(1+σ²) − σ√(1+τ²), σ = sinh(e·atanh(eτ/√(1+τ²))).

    static func tauPrime(tau: Double, e: Double) -> Double {
        guard e != 0 else { return tau }
        let tau1 = (1 + tau * tau).squareRoot()
        let sig = sinh(e * atanh(e * tau / tau1))
        return tau * (1 + sig * sig).squareRoot() - sig * tau1
    }

    /// τ from τ′ by Newton's method (Karney 2011 eq. 19–21); converges in 2–3 steps for
    /// terrestrial eccentricities. Non-finite input passes through.

    static func tau(tauPrime taup: Double, e: Double) -> Double {
        guard e != 0, taup.isFinite else { return taup }
        let e2 = e * e, e2m = 1 - e2
        // Start at τ′/(1−e²): exact at the equator and the poles' limit.
        var tau = taup / e2m
        let stol = 0.1 * Double.ulpOfOne.squareRoot() * max(1, abs(taup))
        for _ in 0..<8 {
            let taupa = tauPrime(tau: tau, e: e)
            let dtau =
                (taup - taupa) * (1 + e2m * tau * tau)
                / (e2m * (1 + tau * tau).squareRoot() * (1 + taupa * taupa).squareRoot())
            tau += dtau
            if !(abs(dtau) >= stol) { break }
        }
        return tau
    }

    /// Isometric latitude ψ = asinh(τ′) for a geodetic latitude in radians.

    static func isometric(phi: Double, e: Double) -> Double {
        asinh(tauPrime(tau: tan(phi), e: e))
    }

    /// Geodetic latitude in radians from isometric latitude ψ.

    static func latitude(isometric psi: Double, e: Double) -> Double {
        atan(tau(tauPrime: sinh(psi), e: e))
    }

    /// Snyder's t(φ) = tan(π/4 − φ/2)·((1 + e sinφ)/(1 − e sinφ))^(e/2) = e^(−ψ), computed
    /// without cancellation for φ near +90° (where t → 0).

    static func t(phi: Double, e: Double) -> Double {
        let taup = tauPrime(tau: tan(phi), e: e)
        let h = (1 + taup * taup).squareRoot()
        return taup >= 0 ? 1 / (h + taup) : h - taup
    }

    /// Geodetic latitude (radians) from Snyder's t (t ≥ 0).

    static func latitude(t: Double, e: Double) -> Double {
        // τ′ = sinh ψ = (1/t − t)/2.
        atan(tau(tauPrime: (1 / t - t) / 2, e: e))
    }
}
