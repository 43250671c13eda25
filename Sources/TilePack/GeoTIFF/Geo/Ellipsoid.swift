import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A reference ellipsoid of revolution (or a sphere when ``inverseFlattening`` is 0).
///
/// Stored as the two defining numbers; derived quantities (e², e, n) are computed once at
/// construction because every projection formula uses them in its inner loop.
public struct Ellipsoid: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    /// EPSG ellipsoid code (7030 …), when the ellipsoid is a registered one.
    public let epsg: Int?
    /// Semi-major axis a, metres.
    public let semiMajorAxis: Double
    /// 1/f; 0 for a sphere (the EPSG and GeoTIFF convention).
    public let inverseFlattening: Double
    /// Flattening f = (a − b)/a.
    public let flattening: Double
    /// First eccentricity squared e² = f(2 − f).
    public let eccentricitySquared: Double
    /// First eccentricity e.
    public let eccentricity: Double
    /// Semi-minor axis b, metres.
    public var semiMinorAxis: Double { semiMajorAxis * (1 - flattening) }
    public var isSphere: Bool { flattening == 0 }

    /// An ellipsoid from a and 1/f (0 → sphere).
    public init(name: String, epsg: Int? = nil, semiMajorAxis a: Double, inverseFlattening rf: Double) {
        self.name = name
        self.epsg = epsg
        self.semiMajorAxis = a
        self.inverseFlattening = rf
        self.flattening = rf == 0 ? 0 : 1 / rf
        self.eccentricitySquared = flattening * (2 - flattening)
        self.eccentricity = eccentricitySquared.squareRoot()
    }

    /// An ellipsoid from a and b (Clarke 1866 is defined this way).
    public init(name: String, epsg: Int? = nil, semiMajorAxis a: Double, semiMinorAxis b: Double) {
        self.init(name: name, epsg: epsg, semiMajorAxis: a, inverseFlattening: a == b ? 0 : a / (a - b))
    }

    /// A sphere of radius r.
    public static func sphere(name: String, epsg: Int? = nil, radius r: Double) -> Ellipsoid {
        Ellipsoid(name: name, epsg: epsg, semiMajorAxis: r, inverseFlattening: 0)
    }

    public static let wgs84 = Ellipsoid(
        name: "WGS 84", epsg: 7030, semiMajorAxis: 6_378_137, inverseFlattening: 298.257223563)
    public static let grs80 = Ellipsoid(
        name: "GRS 1980", epsg: 7019, semiMajorAxis: 6_378_137, inverseFlattening: 298.257222101)
    public static let clarke1866 = Ellipsoid(
        name: "Clarke 1866", epsg: 7008, semiMajorAxis: 6_378_206.4, semiMinorAxis: 6_356_583.8)
    public static let international1924 = Ellipsoid(
        name: "International 1924", epsg: 7022, semiMajorAxis: 6_378_388, inverseFlattening: 297)
    public static let bessel1841 = Ellipsoid(
        name: "Bessel 1841", epsg: 7004, semiMajorAxis: 6_377_397.155, inverseFlattening: 299.1528128)
    public static let wgs72 = Ellipsoid(name: "WGS 72", epsg: 7043, semiMajorAxis: 6_378_135, inverseFlattening: 298.26)
    public static let airy1830 = Ellipsoid(
        name: "Airy 1830", epsg: 7001, semiMajorAxis: 6_377_563.396, inverseFlattening: 299.3249646)
    public static let krassowsky1940 = Ellipsoid(
        name: "Krassowsky 1940", epsg: 7024, semiMajorAxis: 6_378_245, inverseFlattening: 298.3)
    public static let clarke1880RGS = Ellipsoid(
        name: "Clarke 1880 (RGS)", epsg: 7012, semiMajorAxis: 6_378_249.145, inverseFlattening: 293.465)

    /// The ellipsoids GeogEllipsoidGeoKey may name that we know, by EPSG code.
    public static func epsg(_ code: Int) -> Ellipsoid? {
        switch code {
        case 7030: .wgs84
        case 7019: .grs80
        case 7008: .clarke1866
        case 7022: .international1924
        case 7004: .bessel1841
        case 7043: .wgs72
        case 7001: .airy1830
        case 7024: .krassowsky1940
        case 7012: .clarke1880RGS
        case 7035: .sphere(name: "Sphere", epsg: 7035, radius: 6_371_000)
        case 7047: .sphere(name: "GRS 1980 Authalic Sphere", epsg: 7047, radius: 6_370_997)
        case 7048: .sphere(name: "GRS 1980 Authalic Sphere", epsg: 7048, radius: 6_371_007)
        case 7059: .sphere(name: "Popular Visualisation Sphere", epsg: 7059, radius: 6_378_137)
        default: nil
        }
    }

    /// Radius of curvature in the prime vertical, N(φ) = a / √(1 − e² sin²φ).
    @inlinable
    public func primeVerticalRadius(latitudeRadians phi: Double) -> Double {
        let s = sin(phi)
        return semiMajorAxis / (1 - eccentricitySquared * s * s).squareRoot()
    }

    /// Meridional radius of curvature, M(φ) = a(1 − e²) / (1 − e² sin²φ)^1.5.
    @inlinable
    public func meridionalRadius(latitudeRadians phi: Double) -> Double {
        let s = sin(phi)
        let w = 1 - eccentricitySquared * s * s
        return semiMajorAxis * (1 - eccentricitySquared) / (w * w.squareRoot())
    }

    public var description: String {
        isSphere ? "\(name) (sphere r=\(semiMajorAxis) m)" : "\(name) (a=\(semiMajorAxis) m, 1/f=\(inverseFlattening))"
    }
}

/// A unit for linear CRS coordinates (ProjLinearUnitsGeoKey).
public struct LinearUnit: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    public let epsg: Int?
    /// Length of one unit in metres.
    public let metres: Double

    public init(name: String, epsg: Int? = nil, metres: Double) {
        self.name = name
        self.epsg = epsg
        self.metres = metres
    }

    public static let metre = LinearUnit(name: "metre", epsg: 9001, metres: 1)
    public static let foot = LinearUnit(name: "foot", epsg: 9002, metres: 0.3048)
    /// The US survey foot, 1200/3937 m exactly.
    public static let usSurveyFoot = LinearUnit(name: "US survey foot", epsg: 9003, metres: 1200.0 / 3937.0)

    public static func epsg(_ code: Int) -> LinearUnit? {
        switch code {
        case 9001: .metre
        case 9002: .foot
        case 9003: .usSurveyFoot
        case 9005: LinearUnit(name: "Clarke's foot", epsg: 9005, metres: 0.3047972654)
        case 9030: LinearUnit(name: "nautical mile", epsg: 9030, metres: 1852)
        case 9036: LinearUnit(name: "kilometre", epsg: 9036, metres: 1000)
        default: nil
        }
    }

    public var description: String { name }
}

/// A unit for angles (GeogAngularUnitsGeoKey): geographic coordinates and projection
/// parameters are stated in it.
public struct AngularUnit: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    public let epsg: Int?
    /// Size of one unit in radians; nil for the sexagesimal DDD.MMSSsss encoding (EPSG 9110),
    /// which is not a linear scale (see ``degrees(_:)``).
    public let radians: Double?

    public init(name: String, epsg: Int? = nil, radians: Double?) {
        self.name = name
        self.epsg = epsg
        self.radians = radians
    }

    public static let degree = AngularUnit(name: "degree", epsg: 9102, radians: Double.pi / 180)
    public static let radian = AngularUnit(name: "radian", epsg: 9101, radians: 1)

    public static func epsg(_ code: Int) -> AngularUnit? {
        switch code {
        case 9101: .radian
        case 9102, 9122: .degree
        case 9103: AngularUnit(name: "arc-minute", epsg: 9103, radians: Double.pi / 10_800)
        case 9104: AngularUnit(name: "arc-second", epsg: 9104, radians: Double.pi / 648_000)
        case 9105, 9106: AngularUnit(name: code == 9105 ? "grad" : "gon", epsg: code, radians: Double.pi / 200)
        case 9109: AngularUnit(name: "microradian", epsg: 9109, radians: 1e-6)
        case 9110: AngularUnit(name: "sexagesimal DMS", epsg: 9110, radians: nil)
        default: nil
        }
    }

    /// A value in this unit converted to decimal degrees.
    public func degrees(_ value: Double) -> Double {
        guard let radians else {
            // DDD.MMSSsss: degrees, then two digits of minutes, then seconds with decimals.
            let sign: Double = value < 0 ? -1 : 1
            let v = abs(value)
            let d = v.rounded(.towardZero)
            let mmss = (v - d) * 100
            let m = (mmss + 1e-9).rounded(.towardZero)
            let s = (mmss - m) * 100
            return sign * (d + m / 60 + s / 3600)
        }
        // Degrees pass through untouched: × (π/180) × (180/π) would cost the last bit.
        // So do the units defined as exact fractions of a degree (52 grad is 46.8°, not
        // 46.800000000000004° as through radians).
        switch epsg {
        case 9102?, 9122?: return value
        case 9105?, 9106?: return value * 9 / 10
        case 9103?: return value / 60
        case 9104?: return value / 3600
        default: return value * radians * 180 / Double.pi
        }
    }

    public var description: String { name }
}
