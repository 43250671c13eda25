import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A coordinate operation from a CRS's geodetic datum to WGS 84, chosen from proj.db (see
/// ``best(fromGeodeticCRS:in:gridDirectories:areaOfInterest:)``): a Helmert transform or a
/// horizontal grid shift, with the name, EPSG code and accuracy the registry gives it.
///
/// The operation may end on a frame EPSG relates to WGS 84 by a null transformation
/// (ETRS89, NZGD2000, RGF93, GDA94, NAD83 …): tilepack treats that frame as WGS 84, as it
/// does for files on those datums, and ``target`` says which and the accuracy EPSG gives
/// the null step. When the best listed operation needs a grid that is not installed, the
/// one PROJ would fall back to is used and ``note`` says what was lost.
///
/// Coordinates are lon/lat degrees, Greenwich-based (a CRS's prime meridian is applied
/// before and after). Cost: each conversion is O(1) and allocation-free — a Helmert is a
/// geocentric round trip, a grid shift one subgrid search and a bilinear interpolation
/// (the inverse up to 10 of them).
public struct DatumTransformation: Sendable, Equatable, CustomStringConvertible {
    /// One step of the operation, in the direction source datum → target.
    public enum Step: Sendable, Equatable, CustomStringConvertible {
        /// A Helmert transform through geocentric coordinates in the position-vector
        /// convention (coordinate-frame rotations are negated when read), between the
        /// `source` and `target` ellipsoids.
        case helmert(Helmert, source: Ellipsoid, target: Ellipsoid)
        /// The exact inverse of a Helmert that proj.db lists from `target` to `source`.
        case inverseHelmert(Helmert, source: Ellipsoid, target: Ellipsoid)
        /// A horizontal grid shift; `inverse` applies the grid from its target to its source.
        case gridShift(HorizontalShiftGrid, inverse: Bool)

        public static func == (a: Step, b: Step) -> Bool {
            switch (a, b) {
            case let (.helmert(h1, s1, t1), .helmert(h2, s2, t2)): h1 == h2 && s1 == s2 && t1 == t2
            case let (.inverseHelmert(h1, s1, t1), .inverseHelmert(h2, s2, t2)): h1 == h2 && s1 == s2 && t1 == t2
            case let (.gridShift(g1, i1), .gridShift(g2, i2)): g1 === g2 && i1 == i2
            default: false
            }
        }

        public var description: String {
            switch self {
            case let .helmert(h, _, _): Self.text(h)
            case let .inverseHelmert(h, _, _): "inverse of " + Self.text(h)
            case let .gridShift(g, inverse): inverse ? "\(g.fileName) (inverse)" : g.fileName
            }
        }

        private static func text(_ h: Helmert) -> String {
            h.rx == 0 && h.ry == 0 && h.rz == 0 && h.ppm == 0
                ? "Helmert [\(h.tx), \(h.ty), \(h.tz)]"
                : "Helmert [\(h.tx), \(h.ty), \(h.tz), \(h.rx), \(h.ry), \(h.rz), \(h.ppm)]"
        }

        /// Source → target, degrees; nil outside a grid.
        func forward(lon: Double, lat: Double) -> (lon: Double, lat: Double)? {
            switch self {
            case let .helmert(h, source, target):
                let p = Geocentric.fromGeodetic(lon: lon * .pi / 180, lat: lat * .pi / 180, on: source)
                let g = Geocentric.toGeodetic(h.apply(p), on: target)
                return (g.lon * 180 / .pi, g.lat * 180 / .pi)
            case let .inverseHelmert(h, source, target):
                let p = Geocentric.fromGeodetic(lon: lon * .pi / 180, lat: lat * .pi / 180, on: source)
                let g = Geocentric.toGeodetic(h.invert(p), on: target)
                return (g.lon * 180 / .pi, g.lat * 180 / .pi)
            case let .gridShift(grid, inverse):
                return inverse ? grid.inverse(lon: lon, lat: lat) : grid.forward(lon: lon, lat: lat)
            }
        }

        /// Target → source, degrees; nil outside a grid.
        func inverse(lon: Double, lat: Double) -> (lon: Double, lat: Double)? {
            switch self {
            case let .helmert(h, source, target):
                let p = Geocentric.fromGeodetic(lon: lon * .pi / 180, lat: lat * .pi / 180, on: target)
                let g = Geocentric.toGeodetic(h.invert(p), on: source)
                return (g.lon * 180 / .pi, g.lat * 180 / .pi)
            case let .inverseHelmert(h, source, target):
                let p = Geocentric.fromGeodetic(lon: lon * .pi / 180, lat: lat * .pi / 180, on: target)
                let g = Geocentric.toGeodetic(h.apply(p), on: source)
                return (g.lon * 180 / .pi, g.lat * 180 / .pi)
            case let .gridShift(grid, inverse):
                return inverse ? grid.forward(lon: lon, lat: lat) : grid.inverse(lon: lon, lat: lat)
            }
        }
    }

    /// Where the operation ends: WGS 84 itself, or a frame treated as WGS 84.
    public struct Target: Sendable, Equatable {
        public let name: String
        public let epsg: Int
        /// Accuracy (metres) of EPSG's null transformation from this frame to WGS 84; 0 for
        /// WGS 84 itself, nil when EPSG gives none.
        public let accuracyToWGS84: Double?

        public init(name: String, epsg: Int, accuracyToWGS84: Double?) {
            self.name = name
            self.epsg = epsg
            self.accuracyToWGS84 = accuracyToWGS84
        }

        public static let wgs84 = Target(name: "WGS 84", epsg: 4326, accuracyToWGS84: 0)
        public var isWGS84: Bool { epsg == 4326 }
    }

    /// A Helmert used outside the grids of a grid operation (PROJ, too, answers there with
    /// the next operation it lists), so imagery past a national grid's edge still lands.
    public struct Fallback: Sendable, Equatable {
        public let name: String
        public let code: String
        public let accuracy: Double?
        public let steps: [Step]
        public let target: Target

        public init(name: String, code: String, accuracy: Double?, steps: [Step], target: Target) {
            self.name = name
            self.code = code
            self.accuracy = accuracy
            self.steps = steps
            self.target = target
        }
    }

    /// EPSG's name, e.g. "DHDN to WGS 84 (4)".
    public let name: String
    /// Authority and code, e.g. "EPSG:15949".
    public let code: String
    /// Accuracy in metres as proj.db states it (to ``target``), nil when it gives none.
    public let accuracy: Double?
    public let steps: [Step]
    public let target: Target
    public let fallback: Fallback?
    /// One line when accuracy was lost, e.g. "grid OSTN15_NTv2_OSGBtoETRS.gsb not found:
    /// Helmert EPSG:1314 used (accuracy 2 m instead of 1 m)".
    public let note: String?

    public init(name: String, code: String, accuracy: Double?, steps: [Step], target: Target = .wgs84,
                fallback: Fallback? = nil, note: String? = nil) {
        self.name = name
        self.code = code
        self.accuracy = accuracy
        self.steps = steps
        self.target = target
        self.fallback = fallback
        self.note = note
    }

    /// Accuracy to WGS 84 itself: the operation's plus the null step's; nil if either is unknown.
    public var accuracyToWGS84: Double? {
        guard let a = accuracy, let t = target.accuracyToWGS84 else { return nil }
        return a + t
    }

    /// The grid files the steps read.
    public var gridNames: [String] {
        steps.compactMap { if case let .gridShift(g, _) = $0 { g.fileName } else { nil } }
    }

    /// Datum lon/lat degrees → WGS 84 lon/lat degrees; non-finite outside every grid when
    /// there is no fallback.
    public func toWGS84(lon: Double, lat: Double) -> (lon: Double, lat: Double) {
        if let p = Self.forward(steps, lon: lon, lat: lat) { return p }
        if let fallback, let p = Self.forward(fallback.steps, lon: lon, lat: lat) { return p }
        return (.nan, .nan)
    }

    /// WGS 84 lon/lat degrees → datum lon/lat degrees (the inverse of ``toWGS84(lon:lat:)``).
    public func fromWGS84(lon: Double, lat: Double) -> (lon: Double, lat: Double) {
        if let p = Self.inverse(steps, lon: lon, lat: lat) { return p }
        if let fallback, let p = Self.inverse(fallback.steps, lon: lon, lat: lat) { return p }
        return (.nan, .nan)
    }

    private static func forward(_ steps: [Step], lon: Double, lat: Double) -> (lon: Double, lat: Double)? {
        var p = (lon: lon, lat: lat)
        for step in steps {
            guard let q = step.forward(lon: p.lon, lat: p.lat) else { return nil }
            p = q
        }
        return p
    }

    private static func inverse(_ steps: [Step], lon: Double, lat: Double) -> (lon: Double, lat: Double)? {
        var p = (lon: lon, lat: lat)
        for step in steps.reversed() {
            guard let q = step.inverse(lon: p.lon, lat: p.lat) else { return nil }
            p = q
        }
        return p
    }

    /// The value of the build summary and of the `tilepack:datum_transform` metadata key:
    /// "DHDN to WGS 84 (4) [EPSG:15949, BETA2007.gsb, 1 m]", with the frame treated as
    /// WGS 84 when the operation ends on one ("…, to ETRS89 = WGS 84 ±1 m]").
    public var summary: String {
        var parts = [code]
        parts += gridNames
        if gridNames.isEmpty && !steps.isEmpty { parts.append("Helmert") }
        parts.append(accuracy.map { "\(Self.metres($0)) m" } ?? "accuracy unknown")
        if !target.isWGS84 {
            parts.append("\(target.name) as WGS 84" + (target.accuracyToWGS84.map { " ±\(Self.metres($0)) m" } ?? ""))
        }
        return "\(name) [\(parts.joined(separator: ", "))]"
    }

    public var description: String {
        var s = summary
        if let fallback { s += "; outside the grid \(fallback.name) [\(fallback.code)]" }
        if let note { s += "; \(note)" }
        return s
    }

    /// Shortest decimal text of a metre figure as proj.db writes it (1, 0.9, 0.03).
    static func metres(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v)
    }

    /// The summary value for a CRS that needs no operation.
    public static let noneSummary = "none (WGS 84)"
}
