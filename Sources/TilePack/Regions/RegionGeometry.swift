import TilePackCore
import TilePackStore

/// The area a region covers: a lon/lat polygon (the first ring the outer boundary, any further
/// rings holes), validated once and kept in web-mercator unit coordinates for tile tests.
///
/// Edges are straight lines on the web-mercator map (as a map draws them), so validation and
/// intersection both work on the projected points: a tile and a polygon overlap exactly when
/// they overlap on the map. Rings must not cross ±180° (tilepack's `GeoBounds` rule).
///
/// ```swift
/// let area = try RegionPolygon(rings: [[[6.7, 45.7], [7.0, 45.7], [7.0, 46.0], [6.7, 45.7]]])
/// area.intersects(TileID(z: 12, x: 2124, y: 1456)!)
/// area.bounds   // [6.7, 45.7, 7.0, 46.0]
/// ```
///
/// Cost: validation is O(V log V) typically (an x-sorted sweep over edges) and O(V²) at worst,
/// V ≤ ``maxPoints``; ``intersects(_:)`` is O(V) with an O(1) bounding-box reject first.
public struct RegionPolygon: Sendable, Equatable, Encodable {
    /// A vertex in degrees, WGS 84.
    public struct Point: Sendable, Hashable {
        public var lon: Double, lat: Double
        public init(lon: Double, lat: Double) { self.lon = lon; self.lat = lat }
    }

    /// Most vertices over all rings: keeps validation (quadratic at worst) and every uncached
    /// access check (linear) bounded, whatever a catalog file says.
    public static let maxPoints = 10_000

    /// The rings as written, each closed (first point == last).
    public let rings: [[Point]]
    /// West, south, east, north of the outer ring.
    public let bounds: GeoBounds

    // Projected vertices, all rings back to back (closing points included), in web-mercator
    // unit coordinates: x east, y SOUTH, (0,0) the world's north-west corner, as tiles count.
    private let xs: [Double]
    private let ys: [Double]
    /// `ringEnds[r]` is one past the last vertex of ring r in `xs`/`ys`.
    private let ringEnds: [Int]
    private let minX: Double, minY: Double, maxX: Double, maxY: Double

    /// Why a polygon was refused: `subject` says where, as a JSON path suffix (`[1]` for ring 1,
    /// `[1][4]` for its point 4, empty for the polygon as a whole), `detail` is the text after
    /// the field's name (`repeats the point before it`).
    public struct Problem: TilePackError, Equatable {
        /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
        public struct Code: TilePackErrorCode {
            private let name: String
            private init(_ name: String) { self.name = name }
            public var description: String { name }
            public static let noRings = Code("noRings")
            public static let tooManyPoints = Code("tooManyPoints")
            public static let tooFewPoints = Code("tooFewPoints")
            public static let notClosed = Code("notClosed")
            public static let badPoint = Code("badPoint")
            public static let outOfRange = Code("outOfRange")
            public static let repeatedPoint = Code("repeatedPoint")
            public static let selfIntersecting = Code("selfIntersecting")
            public static let ringsCross = Code("ringsCross")
            public static let noArea = Code("noArea")
            public static let holeOutside = Code("holeOutside")
        }

        public let code: Code
        public let subject: String
        public let detail: String
        public var cause: (any Error)? { nil }

        /// `ring` is the ring at fault (nil for the polygon as a whole), `point` the point within it.
        init(kind: Code, ring: Int?, point: Int?, detail: String) {
            self.code = kind
            self.subject = (ring.map { "[\($0)]" } ?? "") + (point.map { "[\($0)]" } ?? "")
            self.detail = detail
        }
    }

    /// Validates and projects. Each ring: at least 4 points, closed, every point `[lon, lat]`
    /// finite with lon in −180…180 and lat within web mercator's ±85.0511°, no point repeated
    /// back to back, no edge crossing or touching another (adjacent edges share only their
    /// vertex), and an area. Holes lie inside the outer ring, and no two rings cross or touch.
    public init(rings raw: [[[Double]]]) throws {
        guard !raw.isEmpty else { throw Problem(kind: .noRings, ring: nil, point: nil, detail: "has no rings") }
        let total = raw.reduce(0) { $0 + $1.count }
        guard total <= Self.maxPoints else {
            throw Problem(
                kind: .tooManyPoints, ring: nil, point: nil,
                detail: "has \(total) points (at most \(Self.maxPoints))")
        }
        var rings: [[Point]] = []
        var xs: [Double] = [], ys: [Double] = [], ends: [Int] = []
        xs.reserveCapacity(total); ys.reserveCapacity(total)
        for (r, ring) in raw.enumerated() {
            guard ring.count >= 4 else {
                throw Problem(
                    kind: .tooFewPoints, ring: r, point: nil,
                    detail: "has \(ring.count) points (a closed ring needs at least 4)")
            }
            var points: [Point] = []
            points.reserveCapacity(ring.count)
            for (i, pair) in ring.enumerated() {
                guard pair.count == 2 else {
                    throw Problem(
                        kind: .badPoint, ring: r, point: i, detail: "must be [lon, lat] (\(pair.count) numbers)")
                }
                let p = Point(lon: pair[0], lat: pair[1])
                guard p.lon.isFinite, p.lat.isFinite, p.lon >= -180, p.lon <= 180,
                    abs(p.lat) <= WebMercator.maxLatitude
                else {
                    throw Problem(
                        kind: .outOfRange, ring: r, point: i,
                        detail: "[\(p.lon), \(p.lat)] is outside lon −180…180, lat −85.0511…85.0511")
                }
                points.append(p)
            }
            guard let first = points.first, let last = points.last, first == last else {
                throw Problem(
                    kind: .notClosed, ring: r, point: nil,
                    detail: "is not closed (the last point must repeat the first)")
            }
            for i in 1..<points.count where points[i] == points[i - 1] {
                throw Problem(kind: .repeatedPoint, ring: r, point: i, detail: "repeats the point before it")
            }
            for p in points {
                let u = WebMercator.unitPosition(lon: p.lon, lat: p.lat)
                xs.append(u.x); ys.append(u.y)
            }
            ends.append(xs.count)
            rings.append(points)
        }
        self.rings = rings
        self.xs = xs; self.ys = ys; self.ringEnds = ends
        let outer = rings[0]
        bounds = GeoBounds(
            west: outer.map(\.lon).min() ?? 0, south: outer.map(\.lat).min() ?? 0,
            east: outer.map(\.lon).max() ?? 0, north: outer.map(\.lat).max() ?? 0)
        let outerEnd = ends[0]
        minX = xs[..<outerEnd].min() ?? 0; maxX = xs[..<outerEnd].max() ?? 0
        minY = ys[..<outerEnd].min() ?? 0; maxY = ys[..<outerEnd].max() ?? 0
        try checkEdges()
        for r in ends.indices {
            let start = r == 0 ? 0 : ends[r - 1]
            guard signedArea(start, ends[r]) != 0 else {
                throw Problem(kind: .noArea, ring: r, point: nil, detail: "encloses no area")
            }
            // Rings do not cross (checked above), so one vertex tells whether a hole is inside.
            if r > 0, !ringContains(0, ends[0], xs[start], ys[start]) {
                throw Problem(kind: .holeOutside, ring: r, point: nil, detail: "is a hole outside the outer ring")
            }
        }
    }

    /// Whether any part of the tile overlaps the polygon's interior (sharing only an edge or a
    /// corner does not count, so a region drawn along tile lines does not leak into the
    /// neighbouring row).
    ///
    /// Either some polygon edge passes through the open tile box (which covers a polygon
    /// vertex inside the tile and edges crossing tile edges), or no boundary lies in the box
    /// and it is wholly inside or wholly outside: then the tile's centre decides (which covers
    /// a tile deep inside the region).
    ///
    /// Cost: O(V), no allocation; O(1) when the bounding boxes miss.
    public func intersects(_ tile: TileID) -> Bool {
        let n = Double(1 << tile.z)
        return intersects(
            minX: Double(tile.x) / n, minY: Double(tile.y) / n,
            maxX: Double(tile.x + 1) / n, maxY: Double(tile.y + 1) / n)
    }

    /// Whether the open box (web-mercator unit coordinates, y south) overlaps the interior.
    func intersects(minX bx0: Double, minY by0: Double, maxX bx1: Double, maxY by1: Double) -> Bool {
        guard bx1 > minX, bx0 < maxX, by1 > minY, by0 < maxY else { return false }
        var start = 0
        for end in ringEnds {
            for i in start..<(end - 1)
            where Self.segment(xs[i], ys[i], xs[i + 1], ys[i + 1], entersOpenBox: bx0, by0, bx1, by1) {
                return true
            }
            start = end
        }
        return contains(unitX: (bx0 + bx1) / 2, unitY: (by0 + by1) / 2)
    }

    /// How the polygon lies over a tile: wholly ``TileCover/outside`` (no interior in the open
    /// tile box), wholly ``TileCover/inside`` (no boundary in the box, the centre inside), or
    /// crossed by an ``TileCover/edge``.
    public enum TileCover: Sendable, Equatable { case outside, inside, edge }

    /// See ``TileCover``. Cost: O(V), no allocation; O(1) when the bounding boxes miss.
    public func cover(_ tile: TileID) -> TileCover {
        let n = Double(1 << tile.z)
        let bx0 = Double(tile.x) / n, by0 = Double(tile.y) / n, bx1 = Double(tile.x + 1) / n,
            by1 = Double(tile.y + 1) / n
        guard bx1 > minX, bx0 < maxX, by1 > minY, by0 < maxY else { return .outside }
        var start = 0
        for end in ringEnds {
            for i in start..<(end - 1)
            where Self.segment(xs[i], ys[i], xs[i + 1], ys[i + 1], entersOpenBox: bx0, by0, bx1, by1) {
                return .edge
            }
            start = end
        }
        return contains(unitX: (bx0 + bx1) / 2, unitY: (by0 + by1) / 2) ? .inside : .outside
    }

    /// Owns in `mask` every pixel of `tile` (`mask.side` pixels a side) whose centre lies
    /// inside the polygon, and leaves the others as they are (so several areas add up).
    ///
    /// A pixel's centre is the web-mercator point ((x·side + i + ½) / (side·2^z), (y·side + j
    /// + ½) / (side·2^z)) in unit coordinates, exact in binary when the side is a power of
    /// two. Inside is ``contains(lon:lat:)``'s even-odd rule over all rings, with the same
    /// arithmetic, so the mask equals asking `contains` at every centre. **Ties:** a centre
    /// exactly on the boundary is decided as the point displaced an infinitesimal step east
    /// and south (+x, +y): on a west-facing edge it is inside, on an east-facing edge outside;
    /// on a horizontal edge, inside when the polygon lies south of the edge.
    ///
    /// A scanline fill: per pixel row, the x where each edge crosses the row's centre line
    /// (edges counted over half-open y ranges [min, max), so a vertex on the line counts once),
    /// sorted; pixels between the 1st and 2nd crossing, the 3rd and 4th, … are inside.
    ///
    /// Cost: O(V) to pick the edges near the tile, then per row O(E log E) for the E edges
    /// crossing it and O(runs) words set; no per-pixel polygon test.
    public func ownPixels(of tile: TileID, in mask: inout TileMask.Builder) {
        let side = mask.side
        let n = Double(1 << tile.z)
        let ty0 = Double(tile.y) / n, ty1 = Double(tile.y + 1) / n
        guard Double(tile.x + 1) / n > minX, Double(tile.x) / n < maxX, ty1 > minY, ty0 < maxY else { return }
        // Edges whose y range meets the tile's rows, kept in their stored direction so the
        // crossing arithmetic is exactly contains()'s.
        var ex0: [Double] = [], ey0: [Double] = [], ex1: [Double] = [], ey1: [Double] = []
        var start = 0
        for end in ringEnds {
            for i in start..<(end - 1) {
                let ay = ys[i], by = ys[i + 1]
                if max(ay, by) <= ty0 || min(ay, by) > ty1 { continue }
                ex0.append(xs[i]); ey0.append(ay); ex1.append(xs[i + 1]); ey1.append(by)
            }
            start = end
        }
        guard !ex0.isEmpty else { return }
        let scale = Double(side) * n  // pixels per unit at this zoom
        let column0 = tile.x * side, row0 = tile.y * side
        @inline(__always) func centreX(_ i: Int) -> Double { (Double(column0 + i) + 0.5) / scale }
        /// The first column whose centre is at or east of `c` (0…side).
        func firstColumn(atOrEastOf c: Double) -> Int {
            let guess = (c * scale - 0.5 - Double(column0)).rounded(.up)
            var i = Int(min(max(guess, 0), Double(side)))
            while i > 0, centreX(i - 1) >= c { i -= 1 }
            while i < side, centreX(i) < c { i += 1 }
            return i
        }
        var crossings: [Double] = []
        crossings.reserveCapacity(ex0.count)
        for j in 0..<side {
            let py = (Double(row0 + j) + 0.5) / scale
            crossings.removeAll(keepingCapacity: true)
            for e in ex0.indices {
                let ax = ex0[e], ay = ey0[e], bx = ex1[e], by = ey1[e]
                if (ay > py) != (by > py) { crossings.append(ax + (py - ay) * (bx - ax) / (by - ay)) }
            }
            guard crossings.count >= 2 else { continue }
            crossings.sort()
            // A centre px is inside when an odd number of crossings lie east of it (px < x),
            // as in ringContains: that is px in [c0, c1), [c2, c3), …
            var k = 0
            while k + 1 < crossings.count {
                let from = firstColumn(atOrEastOf: crossings[k]), to = firstColumn(atOrEastOf: crossings[k + 1])
                if from < to { mask.own(row: j, columns: from..<to) }
                k += 2
            }
        }
    }

    /// Whether the point (degrees) lies inside: in the outer ring and in no hole.
    ///
    /// Cost: O(V).
    public func contains(lon: Double, lat: Double) -> Bool {
        let u = WebMercator.unitPosition(lon: lon, lat: lat)
        return contains(unitX: u.x, unitY: u.y)
    }

    /// Even-odd over all rings at once: a hole's crossings cancel the outer ring's.
    func contains(unitX px: Double, unitY py: Double) -> Bool {
        var inside = false
        var start = 0
        for end in ringEnds {
            if ringContains(start, end, px, py) { inside.toggle() }
            start = end
        }
        return inside
    }

    private func ringContains(_ start: Int, _ end: Int, _ px: Double, _ py: Double) -> Bool {
        var inside = false
        for i in start..<(end - 1) {
            let ax = xs[i], ay = ys[i], bx = xs[i + 1], by = ys[i + 1]
            if (ay > py) != (by > py), px < ax + (py - ay) * (bx - ax) / (by - ay) { inside.toggle() }
        }
        return inside
    }

    private func signedArea(_ start: Int, _ end: Int) -> Double {
        var twice = 0.0
        for i in start..<(end - 1) { twice += xs[i] * ys[i + 1] - xs[i + 1] * ys[i] }
        return twice / 2
    }

    /// Liang–Barsky: clip the segment to the closed box; it enters the open box when the
    /// clipped part has length and its midpoint is strictly inside (a part lying along a box
    /// edge, or a single touching point, does not).
    @inline(__always)
    private static func segment(
        _ ax: Double, _ ay: Double, _ bx: Double, _ by: Double,
        entersOpenBox x0: Double, _ y0: Double, _ x1: Double, _ y1: Double
    ) -> Bool {
        let dx = bx - ax, dy = by - ay
        var t0 = 0.0, t1 = 1.0
        @inline(__always) func clip(_ p: Double, _ q: Double) -> Bool {
            if p == 0 { return q >= 0 }
            let r = q / p
            if p < 0 {
                if r > t1 { return false }
                if r > t0 { t0 = r }
            } else {
                if r < t0 { return false }
                if r < t1 { t1 = r }
            }
            return true
        }
        guard clip(-dx, ax - x0), clip(dx, x1 - ax), clip(-dy, ay - y0), clip(dy, y1 - ay), t0 < t1 else {
            return false
        }
        let t = (t0 + t1) / 2
        let mx = ax + t * dx, my = ay + t * dy
        return mx > x0 && mx < x1 && my > y0 && my < y1
    }

    // MARK: - Validation

    private struct Edge { var ring: Int, index: Int, flat: Int, minX: Double, maxX: Double }

    /// No two edges meet except adjacent edges of one ring at their shared vertex. An x-sorted
    /// sweep compares only edges whose x-ranges overlap.
    private func checkEdges() throws(Problem) {
        var edges: [Edge] = []
        var start = 0
        for (r, end) in ringEnds.enumerated() {
            for i in start..<(end - 1) {
                edges.append(
                    Edge(
                        ring: r, index: i - start, flat: i,
                        minX: min(xs[i], xs[i + 1]), maxX: max(xs[i], xs[i + 1])))
            }
            start = end
        }
        edges.sort { $0.minX < $1.minX }
        for a in edges.indices {
            var b = a + 1
            while b < edges.count, edges[b].minX <= edges[a].maxX {
                try check(edges[a], edges[b])
                b += 1
            }
        }
    }

    private func check(_ e: Edge, _ f: Edge) throws(Problem) {
        let (a, b) = (e.ring, e.index) < (f.ring, f.index) ? (e, f) : (f, e)
        let p0x = xs[a.flat], p0y = ys[a.flat], p1x = xs[a.flat + 1], p1y = ys[a.flat + 1]
        let q0x = xs[b.flat], q0y = ys[b.flat], q1x = xs[b.flat + 1], q1y = ys[b.flat + 1]
        guard a.ring == b.ring else {
            if Self.segmentsMeet(p0x, p0y, p1x, p1y, q0x, q0y, q1x, q1y) {
                throw Problem(
                    kind: .ringsCross, ring: b.ring, point: nil,
                    detail: "crosses or touches ring \(a.ring) (its edge \(b.index) meets edge \(a.index))")
            }
            return
        }
        let edgeCount = ringEnds[a.ring] - (a.ring == 0 ? 0 : ringEnds[a.ring - 1]) - 1
        let selfHit: Bool
        if b.index == a.index + 1 {
            // Share a.end == b.start: they may only meet there, so they must not fold back.
            selfHit = Self.foldsBack(p0x, p0y, p1x, p1y, q1x, q1y)
        } else if a.index == 0, b.index == edgeCount - 1 {
            // The closing edge ends where edge 0 starts.
            selfHit = Self.foldsBack(q0x, q0y, q1x, q1y, p1x, p1y)
        } else {
            selfHit = Self.segmentsMeet(p0x, p0y, p1x, p1y, q0x, q0y, q1x, q1y)
        }
        if selfHit {
            throw Problem(
                kind: .selfIntersecting, ring: a.ring, point: nil,
                detail: "intersects itself (edge \(a.index) meets edge \(b.index))")
        }
    }

    @inline(__always)
    private static func orient(
        _ ax: Double, _ ay: Double, _ bx: Double, _ by: Double, _ cx: Double, _ cy: Double
    ) -> Double {
        (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    }

    /// Edges a→b and b→c overlap beyond b: collinear and c heads back along a→b.
    private static func foldsBack(
        _ ax: Double, _ ay: Double, _ bx: Double, _ by: Double, _ cx: Double, _ cy: Double
    ) -> Bool {
        orient(ax, ay, bx, by, cx, cy) == 0 && (bx - ax) * (cx - bx) + (by - ay) * (cy - by) < 0
    }

    /// Whether two closed segments share any point (crossing, touching or overlapping).
    private static func segmentsMeet(
        _ p0x: Double, _ p0y: Double, _ p1x: Double, _ p1y: Double,
        _ q0x: Double, _ q0y: Double, _ q1x: Double, _ q1y: Double
    ) -> Bool {
        let d1 = orient(q0x, q0y, q1x, q1y, p0x, p0y), d2 = orient(q0x, q0y, q1x, q1y, p1x, p1y)
        let d3 = orient(p0x, p0y, p1x, p1y, q0x, q0y), d4 = orient(p0x, p0y, p1x, p1y, q1x, q1y)
        if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) { return true }
        func within(_ ax: Double, _ ay: Double, _ bx: Double, _ by: Double, _ cx: Double, _ cy: Double) -> Bool {
            min(ax, bx) <= cx && cx <= max(ax, bx) && min(ay, by) <= cy && cy <= max(ay, by)
        }
        return (d1 == 0 && within(q0x, q0y, q1x, q1y, p0x, p0y))
            || (d2 == 0 && within(q0x, q0y, q1x, q1y, p1x, p1y))
            || (d3 == 0 && within(p0x, p0y, p1x, p1y, q0x, q0y))
            || (d4 == 0 && within(p0x, p0y, p1x, p1y, q1x, q1y))
    }

    // MARK: - Codable

    /// As written: `[[[lon, lat], …], …]`, GeoJSON Polygon coordinates.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(rings.map { $0.map { [$0.lon, $0.lat] } })
    }

    public static func == (a: RegionPolygon, b: RegionPolygon) -> Bool { a.rings == b.rings }
}
