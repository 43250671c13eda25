import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Krovak oblique conformal conic (EPSG methods 9819 Krovak, 1041 north orientated, 1042
/// modified, 1043 modified north orientated; the Czech and Slovak S-JTSK grids) by IOGP
/// GN 7-2 §3.2.3 (and §3.2.3.2 for the modified form's 10-term polynomial correction):
/// ellipsoid → Gauss conformal sphere → oblique sphere with its pole on the cone axis →
/// conic on the pseudo standard parallel.
///
/// Output orientation: the method defines southing X and westing Y (both positive in the
/// country). Like PROJ's `+proj=krovak` (which the EPSG CRSs use with `+axis=swu`), forward
/// returns `x = −Y` and `y = −X`: x grows east, y grows north, both negative in the country.
/// That is exactly the north-orientated variants' easting/northing, so one struct serves all
/// four methods and a CRS with south/west axes negates both.
///
/// The ellipsoid → sphere step uses isometric latitudes (U = gd(ln t0 + B·ψ)), so the inverse
/// needs no iteration of its own beyond ``ConformalLatitude``'s bounded Newton step.
/// O(1), allocation-free.
public struct Krovak: Sendable, Equatable {
    /// The modified form's correction: evaluation point (X0, Y0) and C1…C10 (GN 7-2 §3.2.3.2).
    public struct Modification: Sendable, Equatable {
        public var x0: Double, y0: Double
        public var c1: Double, c2: Double, c3: Double, c4: Double, c5: Double
        public var c6: Double, c7: Double, c8: Double, c9: Double, c10: Double

        public init(
            x0: Double, y0: Double,
            c: (
                Double, Double, Double, Double, Double,
                Double, Double, Double, Double, Double
            )
        ) {
            self.x0 = x0
            self.y0 = y0
            (c1, c2, c3, c4, c5, c6, c7, c8, c9, c10) = c
        }

        /// The S-JTSK/05 correction EPSG publishes with methods 1042/1043 (X0 1,089,000 m,
        /// Y0 654,000 m, C1…C10 from ČÚZK). PROJ's proj.db keeps only seven parameters per
        /// conversion and drops these twelve, so a registry read without them uses this.
        public static let sJTSK05 = Modification(
            x0: 1_089_000, y0: 654_000,
            c: (
                2.946529277e-02, 2.515965696e-02, 1.193845912e-07, -4.668270147e-07, 9.233980362e-12,
                1.523735715e-12, 1.696780024e-18, 4.408314235e-18, -8.331083518e-24, -3.689471323e-24
            ))

        /// (dX, dY) at reduced coordinates (Xr, Yr).
        func delta(_ xr: Double, _ yr: Double) -> (dx: Double, dy: Double) {
            let x2 = xr * xr, y2 = yr * yr
            let quartic = x2 * x2 + y2 * y2 - 6 * x2 * y2
            let dx =
                c1 + c3 * xr - c4 * yr - 2 * c6 * xr * yr + c5 * (x2 - y2)
                + c7 * xr * (x2 - 3 * y2) - c8 * yr * (3 * x2 - y2)
                + 4 * c9 * xr * yr * (x2 - y2) + c10 * quartic
            let dy =
                c2 + c3 * yr + c4 * xr + 2 * c5 * xr * yr + c6 * (x2 - y2)
                + c8 * xr * (x2 - 3 * y2) + c7 * yr * (3 * x2 - y2)
                - 4 * c10 * xr * yr * (x2 - y2) + c9 * quartic
            return (dx, dy)
        }
    }

    let e: Double
    let b: Double  // B: Gauss sphere longitude factor
    let lnT0: Double  // ln t0
    let sinAc: Double, cosAc: Double  // co-latitude of the cone axis αc
    let n: Double  // sin φp
    let r0: Double  // kp·A/tan φp
    let tanHalfP: Double  // tan(π/4 + φp/2)
    let lonO: Double
    let fe: Double, fn: Double
    let modification: Modification?

    /// - Parameters: latitude of projection centre φc, longitude of origin λO, co-latitude of
    ///   the cone axis αc, latitude of the pseudo standard parallel φp (degrees), scale kp on
    ///   it, false easting/northing (metres, added to westing/southing), and for the modified
    ///   methods their polynomial.
    public init(
        ellipsoid: Ellipsoid, latitudeOfCentre: Double, longitudeOfOrigin: Double,
        coLatitudeOfConeAxis: Double, pseudoStandardParallel: Double, scale kp: Double,
        falseEasting: Double, falseNorthing: Double, modification: Modification? = nil
    ) {
        e = ellipsoid.eccentricity
        let e2 = ellipsoid.eccentricitySquared
        let phic = latitudeOfCentre * .pi / 180
        let sc = sin(phic), cc = cos(phic)
        let a = ellipsoid.semiMajorAxis * (1 - e2).squareRoot() / (1 - e2 * sc * sc)
        b = (1 + e2 * cc * cc * cc * cc / (1 - e2)).squareRoot()
        let gamma0 = asin(sc / b)
        // t0 = tan(π/4 + γ0/2)·(…)^(eB/2) / tan^B(π/4 + φc/2): in logs, ψ_sphere(γ0) − B·ψ(φc).
        lnT0 = asinh(tan(gamma0)) - b * ConformalLatitude.isometric(phi: phic, e: e)
        let ac = coLatitudeOfConeAxis * .pi / 180
        sinAc = sin(ac)
        cosAc = cos(ac)
        let phip = pseudoStandardParallel * .pi / 180
        n = sin(phip)
        r0 = kp * a / tan(phip)
        tanHalfP = tan(.pi / 4 + phip / 2)
        lonO = longitudeOfOrigin * .pi / 180
        fe = falseEasting
        fn = falseNorthing
        self.modification = modification
    }

    /// Geodetic lon/lat (radians) → (−westing, −southing) in metres (see the type's note).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let u = atan(sinh(lnT0 + b * ConformalLatitude.isometric(phi: lat, e: e)))
        let v = b * remainder(lonO - lon, 2 * .pi)
        let su = sin(u), cu = cos(u)
        let t = asin(UnitClamp.clamp(cosAc * su + sinAc * cu * cos(v)))
        let d = asin(UnitClamp.clamp(cu * sin(v) / cos(t)))
        let theta = n * d
        let r = r0 * pow(tanHalfP / tan(t / 2 + .pi / 4), n)
        var xp = r * cos(theta), yp = r * sin(theta)
        if let m = modification {
            let dd = m.delta(xp - m.x0, yp - m.y0)
            xp -= dd.dx
            yp -= dd.dy
        }
        return (-(yp + fe), -(xp + fn))
    }

    /// (−westing, −southing) in metres → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        var xp = -y - fn, yp = -x - fe
        if let m = modification {
            let dd = m.delta(xp - m.x0, yp - m.y0)
            xp += dd.dx
            yp += dd.dy
        }
        let r = (xp * xp + yp * yp).squareRoot()
        let d = atan2(yp, xp) / n
        let t = 2 * (atan(pow(r0 / r, 1 / n) * tanHalfP) - .pi / 4)
        let st = sin(t), ct = cos(t)
        let u = asin(UnitClamp.clamp(cosAc * st - sinAc * ct * cos(d)))
        let v = asin(UnitClamp.clamp(ct * sin(d) / cos(u)))
        let psi = (asinh(tan(u)) - lnT0) / b
        return (remainder(lonO - v / b, 2 * .pi), ConformalLatitude.latitude(isometric: psi, e: e))
    }
}
