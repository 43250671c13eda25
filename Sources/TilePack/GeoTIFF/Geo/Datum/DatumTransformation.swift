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

    /// A lon/lat box of an operation's area of use (EPSG's bounding box); west > east
    /// crosses ±180°.
    public struct AreaOfUse: Sendable, Equatable {
        public var west, south, east, north: Double
        /// EPSG describes the area as "… - offshore …": PROJ never lets such an operation displace
        /// one already chosen for a point (a coastal point keeps the onshore operation).
        public var offshore: Bool
        public init(west: Double, south: Double, east: Double, north: Double, offshore: Bool = false) {
            self.west = west
            self.south = south
            self.east = east
            self.north = north
            self.offshore = offshore
        }
        /// Longitude intervals without the wrap.
        var spans: [(Double, Double)] { west <= east ? [(west, east)] : [(west, 180), (-180, east)] }
        public func intersects(_ o: AreaOfUse) -> Bool {
            guard south <= o.north && o.south <= north else { return false }
            return spans.contains { a in o.spans.contains { b in a.0 <= b.1 && b.0 <= a.1 } }
        }
        public func contains(_ o: AreaOfUse) -> Bool {
            guard south <= o.south && o.north <= north else { return false }
            return o.spans.allSatisfy { b in spans.contains { a in a.0 <= b.0 && b.1 <= a.1 } }
        }
        /// The common part of two boxes (the first piece when a wrap splits it), nil if none.
        func intersection(_ o: AreaOfUse) -> AreaOfUse? {
            let s = max(south, o.south), n = min(north, o.north)
            guard s <= n else { return nil }
            for a in spans {
                for b in o.spans where max(a.0, b.0) <= min(a.1, b.1) {
                    return AreaOfUse(west: max(a.0, b.0), south: s, east: min(a.1, b.1), north: n)
                }
            }
            return nil
        }
        /// Proportional to the box's area on the sphere: degrees of longitude × the
        /// difference of the sines of the latitudes (how PROJ weighs extents).
        var pseudoArea: Double {
            let width = west <= east ? east - west : east + 360 - west
            return width * (sin(north * .pi / 180) - sin(south * .pi / 180))
        }
        /// Whether the point lies in the box. O(1), allocation-free.
        public func contains(lon: Double, lat: Double) -> Bool {
            guard south <= lat && lat <= north else { return false }
            return west <= east ? (west <= lon && lon <= east) : (west <= lon || lon <= east)
        }
    }

    /// Another operation between the same datums that proj.db lists and tilepack can apply.
    public struct Alternative: Sendable, Equatable {
        public let name: String
        public let code: String
        public let accuracy: Double?
        public let steps: [Step]
        public let target: Target
        /// Its area of use; empty for everywhere.
        public let areas: [AreaOfUse]

        public init(
            name: String, code: String, accuracy: Double?, steps: [Step], target: Target, areas: [AreaOfUse] = []
        ) {
            self.name = name
            self.code = code
            self.accuracy = accuracy
            self.steps = steps
            self.target = target
            self.areas = areas
        }

        var needsGrid: Bool { steps.contains { if case .gridShift = $0 { true } else { false } } }
        /// Accuracy to WGS 84 itself (the operation's plus the null step's), nil if unknown.
        var accuracyToWGS84: Double? {
            guard let a = accuracy, let t = target.accuracyToWGS84 else { return nil }
            return a + t
        }
        func covers(lon: Double, lat: Double) -> Bool {
            areas.isEmpty || areas.contains { $0.contains(lon: lon, lat: lat) }
        }
        /// The box around all its areas, as PROJ compares operations' extents.
        var bounds: AreaOfUse? {
            guard let first = areas.first else { return nil }
            return areas.dropFirst().reduce(first) {
                AreaOfUse(
                    west: min($0.west, $1.west), south: min($0.south, $1.south), east: max($0.east, $1.east),
                    north: max($0.north, $1.north))
            }
        }
        /// Whether `self`'s box lies strictly inside `other`'s (PROJ's tie-break between
        /// operations of equal accuracy).
        func strictlyInside(_ other: Alternative) -> Bool {
            guard let a = bounds, let b = other.bounds else { return false }
            return a.west > b.west && a.south > b.south && a.east < b.east && a.north < b.north
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
    /// The main operation's area of use; empty for everywhere.
    public let areas: [AreaOfUse]
    /// The other operations tilepack can apply, in the order PROJ lists them after the main
    /// one. A point goes through the operation PROJ's `proj_trans` would pick among them:
    /// of those whose area of use holds the point, the best accuracy (of equal ones, the one
    /// strictly inside the other's box; unknown accuracies, and offshore areas, only when
    /// listed before any other that holds it);
    /// when that one cannot compute the point (outside a grid), the next; with none, the
    /// first that needs no grid. So S-JTSK points in Czechia take S-JTSK to WGS 84 (5), 1 m,
    /// and in Slovakia (4), 1 m, beside (3), 6 m, over both — as gdalwarp does; and because
    /// the choice depends on the point alone, rasters built apart still meet.
    public let alternatives: [Alternative]
    /// One line when accuracy was lost, e.g. "grid OSTN15_NTv2_OSGBtoETRS.gsb not found:
    /// Helmert EPSG:1314 used (accuracy 2 m instead of 1 m)".
    public let note: String?

    public init(
        name: String, code: String, accuracy: Double?, steps: [Step], target: Target = .wgs84,
        areas: [AreaOfUse] = [], alternatives: [Alternative] = [], note: String? = nil
    ) {
        self.name = name
        self.code = code
        self.accuracy = accuracy
        self.steps = steps
        self.target = target
        self.areas = areas
        self.alternatives = alternatives
        self.note = note
        main = Alternative(name: name, code: code, accuracy: accuracy, steps: steps, target: target, areas: areas)
    }

    /// The main operation as one of the list PROJ chooses from.
    private let main: Alternative

    /// What answers outside the grids of a grid operation when no other operation's area
    /// holds the point: the first listed operation that needs no grid (nil for a Helmert).
    public var fallback: Alternative? {
        main.needsGrid ? alternatives.first { !$0.needsGrid } : nil
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

    /// Datum lon/lat degrees → WGS 84 lon/lat degrees, through the operation PROJ would pick
    /// for the point (see ``alternatives``); non-finite when none can compute it.
    /// Cost: O(operations) box tests, then one operation (up to three when grids miss).
    public func toWGS84(lon: Double, lat: Double) -> (lon: Double, lat: Double) {
        apply(lon: lon, lat: lat) { Self.forward($0.steps, lon: lon, lat: lat) }
    }

    /// WGS 84 lon/lat degrees → datum lon/lat degrees (the inverse of ``toWGS84(lon:lat:)``);
    /// the operation is picked by the WGS 84 point, as PROJ picks in the inverse direction.
    public func fromWGS84(lon: Double, lat: Double) -> (lon: Double, lat: Double) {
        apply(lon: lon, lat: lat) { Self.inverse($0.steps, lon: lon, lat: lat) }
    }

    /// The operation at index `i`: 0 the main one, then ``alternatives``.
    private func operation(_ i: Int) -> Alternative { i == 0 ? main : alternatives[i - 1] }

    /// PROJ's per-point choice: up to three operations whose area holds the point, best
    /// first, then the first that needs no grid.
    private func apply(
        lon: Double, lat: Double,
        _ run: (Alternative) -> (lon: Double, lat: Double)?
    ) -> (lon: Double, lat: Double) {
        if alternatives.isEmpty {  // the common case: one operation, no choice to make
            return run(main) ?? (.nan, .nan)
        }
        var excluded = (-1, -1)
        for attempt in 0..<3 {
            guard let i = suggested(lon: lon, lat: lat, excluding: excluded) else { break }
            if let p = run(operation(i)) { return p }
            if attempt == 0 { excluded.0 = i } else { excluded.1 = i }
        }
        for i in 0...alternatives.count where !operation(i).needsGrid {
            return run(operation(i)) ?? (.nan, .nan)
        }
        return (.nan, .nan)
    }

    /// The index of the operation PROJ's `pj_get_suggested_operation` picks for the point.
    private func suggested(lon: Double, lat: Double, excluding excluded: (Int, Int)) -> Int? {
        var best: Int?
        var bestAccuracy = Double.greatestFiniteMagnitude
        for i in 0...alternatives.count where i != excluded.0 && i != excluded.1 {
            let op = operation(i)
            guard op.covers(lon: lon, lat: lat) else { continue }
            guard let b = best else {
                best = i
                bestAccuracy = op.accuracyToWGS84 ?? .greatestFiniteMagnitude
                continue
            }
            guard let a = op.accuracyToWGS84, op.areas.first?.offshore != true else { continue }
            if a < bestAccuracy || (a == bestAccuracy && op.strictlyInside(operation(b))) {
                best = i
                bestAccuracy = a
            }
        }
        return best
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
    /// WGS 84 when the operation ends on one ("…, to ETRS89 = WGS 84 ±1 m]"), then the
    /// more accurate ``alternatives`` ("; inside their areas EPSG:5239 (1 m), …").
    public var summary: String {
        var parts = [code]
        parts += gridNames
        if gridNames.isEmpty && !steps.isEmpty { parts.append("Helmert") }
        parts.append(accuracy.map { "\(Self.metres($0)) m" } ?? "accuracy unknown")
        if !target.isWGS84 {
            parts.append("\(target.name) as WGS 84" + (target.accuracyToWGS84.map { " ±\(Self.metres($0)) m" } ?? ""))
        }
        let text = "\(name) [\(parts.joined(separator: ", "))]"
        let better = alternatives.filter { a in
            guard let x = a.accuracyToWGS84 else { return false }
            return x < (accuracyToWGS84 ?? .infinity)
        }
        guard !better.isEmpty else { return text }
        return text + "; inside their areas "
            + better.map { a in
                "\(a.code) (\(a.accuracy.map { "\(Self.metres($0)) m" } ?? "accuracy unknown"))"
            }.joined(separator: ", ")
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
