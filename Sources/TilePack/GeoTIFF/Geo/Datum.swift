import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A geodetic datum: its ellipsoid, prime meridian and how (or whether) we reach WGS 84.
///
/// Policy (see docs/BUILDING.md "Georeferencing"): a datum with TOWGS84 parameters is shifted by a
/// Helmert transform through geocentric coordinates; any other datum is treated as WGS 84.
/// For WGS 84 and the modern earth-centred frames (ETRS89, NAD83, GDA94, SIRGAS 2000, RGF93)
/// that is within about 1–2 m, below a web-mercator pixel at any zoom an app shows terrain
/// at; for older datums ``note`` says how far off the result may be.
public struct Datum: Sendable, Equatable {
    public let name: String
    /// EPSG datum code (6326 …) when known.
    public let epsg: Int?
    public let ellipsoid: Ellipsoid
    /// Greenwich longitude of the prime meridian, degrees (Paris: 2.33722917).
    public let primeMeridian: Double
    /// Shift to WGS 84 when the file or registry gives one.
    public let toWGS84: Helmert?
    /// Whether coordinates on this datum may be used as WGS 84 without a shift (≲ 2 m).
    public let isWGS84Compatible: Bool

    public init(
        name: String, epsg: Int? = nil, ellipsoid: Ellipsoid, primeMeridian: Double = 0,
        toWGS84: Helmert? = nil, isWGS84Compatible: Bool = false
    ) {
        self.name = name
        self.epsg = epsg
        self.ellipsoid = ellipsoid
        self.primeMeridian = primeMeridian
        self.toWGS84 = toWGS84
        self.isWGS84Compatible = isWGS84Compatible
    }

    public static let wgs84 = Datum(name: "WGS 84", epsg: 6326, ellipsoid: .wgs84, isWGS84Compatible: true)
    public static let nad83 = Datum(name: "NAD83", epsg: 6269, ellipsoid: .grs80, isWGS84Compatible: true)
    public static let etrs89 = Datum(name: "ETRS89", epsg: 6258, ellipsoid: .grs80, isWGS84Compatible: true)
    public static let gda94 = Datum(name: "GDA94", epsg: 6283, ellipsoid: .grs80, isWGS84Compatible: true)
    public static let sirgas2000 = Datum(name: "SIRGAS 2000", epsg: 6674, ellipsoid: .grs80, isWGS84Compatible: true)
    /// RGF93 is the French realisation of ETRS89.
    public static let rgf93 = Datum(name: "RGF93", epsg: 6171, ellipsoid: .grs80, isWGS84Compatible: true)
    public static let nad27 = Datum(name: "NAD27", epsg: 6267, ellipsoid: .clarke1866)
    public static let wgs72 = Datum(name: "WGS 72", epsg: 6322, ellipsoid: .wgs72)

    /// Datums GeogGeodeticDatumGeoKey may name that we know, by EPSG code.
    public static func epsg(_ code: Int) -> Datum? {
        switch code {
        case 6326: .wgs84
        case 6269: .nad83
        case 6258: .etrs89
        case 6283: .gda94
        case 6674: .sirgas2000
        case 6171: .rgf93
        case 6267: .nad27
        case 6322: .wgs72
        case 6277: Datum(name: "OSGB 1936", epsg: 6277, ellipsoid: .airy1830)
        case 6230: Datum(name: "European Datum 1950", epsg: 6230, ellipsoid: .international1924)
        case 6314: Datum(name: "Deutsches Hauptdreiecksnetz", epsg: 6314, ellipsoid: .bessel1841)
        default: nil
        }
    }

    /// A copy with a TOWGS84 shift (from GeogTOWGS84GeoKey).
    public func with(toWGS84 shift: Helmert?) -> Datum {
        Datum(
            name: name, epsg: epsg, ellipsoid: ellipsoid, primeMeridian: primeMeridian,
            toWGS84: shift, isWGS84Compatible: isWGS84Compatible)
    }

    /// Why lon/lat on this datum may be off, or nil when it is WGS 84 to within ~2 m or
    /// shifted by TOWGS84.
    public var note: String? {
        if toWGS84 != nil || isWGS84Compatible { return nil }
        let error =
            switch epsg {
            case 6267: "~200 m"
            case 6322: "~20 m"
            default: "hundreds of metres"
            }
        return "datum \(name) has no TOWGS84 shift: treated as WGS 84; may be off by up to \(error)"
    }
}

/// A 3- or 7-parameter Helmert transform to WGS 84 in the position-vector convention (EPSG
/// 9606) that GeoTIFF's GeogTOWGS84GeoKey and WKT1's TOWGS84 use: translations in metres,
/// rotations in arc-seconds, scale in parts per million.
///
/// Applied to geodetic coordinates through geocentric XYZ (height 0 on the source
/// ellipsoid); O(1) with a short fixed-point loop back to geodetic.
public struct Helmert: Sendable, Equatable {
    public let tx: Double, ty: Double, tz: Double
    public let rx: Double, ry: Double, rz: Double
    public let ppm: Double

    /// From 3 or 7 values; nil for any other count or a non-finite value.
    public init?(_ v: [Double]) {
        guard v.count == 3 || v.count == 7, v.allSatisfy(\.isFinite) else { return nil }
        tx = v[0]; ty = v[1]; tz = v[2]
        if v.count == 7 {
            rx = v[3]; ry = v[4]; rz = v[5]; ppm = v[6]
        } else {
            rx = 0; ry = 0; rz = 0; ppm = 0
        }
    }

    /// Source geocentric → WGS 84 geocentric.
    public func apply(_ p: (x: Double, y: Double, z: Double)) -> (x: Double, y: Double, z: Double) {
        let k = Double.pi / 648_000
        let (r1, r2, r3) = (rx * k, ry * k, rz * k)
        let m = 1 + ppm * 1e-6
        return (
            tx + m * (p.x - r3 * p.y + r2 * p.z),
            ty + m * (r3 * p.x + p.y - r1 * p.z),
            tz + m * (-r2 * p.x + r1 * p.y + p.z)
        )
    }

    /// WGS 84 geocentric → source geocentric, as PROJ's `helmert` runs in reverse (and EPSG
    /// reverses the method): the translation removed, the scale divided out, then the
    /// transposed small-angle rotation — not the exact matrix inverse, which differs by
    /// |ω|²·R (4 mm for S-JTSK's 5″ rotations) and so would not match PROJ to 1 mm.
    public func invert(_ p: (x: Double, y: Double, z: Double)) -> (x: Double, y: Double, z: Double) {
        let k = Double.pi / 648_000
        let (r1, r2, r3) = (rx * k, ry * k, rz * k)
        let m = 1 + ppm * 1e-6
        let u = ((p.x - tx) / m, (p.y - ty) / m, (p.z - tz) / m)
        return (
            u.0 + r3 * u.1 - r2 * u.2,
            -r3 * u.0 + u.1 + r1 * u.2,
            r2 * u.0 - r1 * u.1 + u.2
        )
    }
}

/// Geodetic ↔ geocentric conversions on an ellipsoid.
enum Geocentric {
    /// Geodetic (radians, height 0) → geocentric metres.
    static func fromGeodetic(lon: Double, lat: Double, on el: Ellipsoid) -> (x: Double, y: Double, z: Double) {
        let n = el.primeVerticalRadius(latitudeRadians: lat)
        let c = cos(lat)
        return (n * c * cos(lon), n * c * sin(lon), n * (1 - el.eccentricitySquared) * sin(lat))
    }

    /// Geocentric metres → geodetic (radians); the height is dropped. Fixed-point iteration
    /// on φ, converging to < 1e-14 rad in ≤ 6 steps for points near the surface.
    static func toGeodetic(_ p: (x: Double, y: Double, z: Double), on el: Ellipsoid) -> (lon: Double, lat: Double) {
        let e2 = el.eccentricitySquared
        let r = (p.x * p.x + p.y * p.y).squareRoot()
        let lon = atan2(p.y, p.x)
        guard r > 1e-9 else { return (lon, p.z >= 0 ? .pi / 2 : -.pi / 2) }
        var lat = atan2(p.z, r * (1 - e2))
        for _ in 0..<10 {
            let s = sin(lat)
            let n = el.semiMajorAxis / (1 - e2 * s * s).squareRoot()
            let next = atan2(p.z + e2 * n * s, r)
            if abs(next - lat) < 1e-15 { lat = next; break }
            lat = next
        }
        return (lon, lat)
    }
}
