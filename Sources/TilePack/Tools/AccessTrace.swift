import TilePackCore
import TilePackArchive

/// The tiles a region covers, zoom by zoom: one ``TileRange`` per zoom. What the trace
/// generators move a viewport over.
///
/// Cost: O(1) per lookup; memory O(zooms).
public struct TileExtent: Sendable, Equatable {
    public let zooms: ClosedRange<Int>
    /// `ranges[z - zooms.lowerBound]`.
    private let ranges: [TileRange]

    /// An explicit extent: `ranges[i]` covers zoom `zooms.lowerBound + i`. Nil unless there is
    /// one range per zoom, at that zoom and inside its pyramid.
    public init?(zooms: ClosedRange<Int>, ranges: [TileRange]) {
        guard zooms.lowerBound >= 0, zooms.upperBound <= TileID.maxZoom, ranges.count == zooms.count else { return nil }
        for (i, r) in ranges.enumerated() {
            let z = zooms.lowerBound + i, n = 1 << z
            guard r.z == z, r.minX >= 0, r.minY >= 0, r.maxX < n, r.maxY < n else { return nil }
        }
        self.zooms = zooms
        self.ranges = ranges
    }

    /// The tiles covering `bounds` at each zoom (``TileRange/covering(_:zoom:)``, the build's
    /// rule); nil for zooms outside the pyramid.
    public init?(bounds: GeoBounds, zooms: ClosedRange<Int>) {
        guard zooms.lowerBound >= 0, zooms.upperBound <= TileID.maxZoom else { return nil }
        self.init(zooms: zooms, ranges: zooms.map { TileRange.covering(bounds, zoom: $0) })
    }

    /// The bounding rectangle, per zoom, of `tiles` (the tiles an archive stores); zooms
    /// between the lowest and highest without tiles take their parent zoom's rectangle scaled
    /// down. Nil for no tiles.
    /// - Cost: O(tiles).
    public init?(tiles: some Sequence<TileID>) {
        var byZoom: [Int: TileRange] = [:]
        for t in tiles {
            if let r = byZoom[t.z] {
                byZoom[t.z] = TileRange(
                    z: t.z, minX: min(r.minX, t.x), maxX: max(r.maxX, t.x),
                    minY: min(r.minY, t.y), maxY: max(r.maxY, t.y))
            } else {
                byZoom[t.z] = TileRange(z: t.z, minX: t.x, maxX: t.x, minY: t.y, maxY: t.y)
            }
        }
        guard let lo = byZoom.keys.min(), let hi = byZoom.keys.max() else { return nil }
        var ranges: [TileRange] = []
        for z in lo...hi {
            if let r = byZoom[z] {
                ranges.append(r)
            } else if let p = ranges.last {
                ranges.append(
                    TileRange(z: z, minX: p.minX * 2, maxX: p.maxX * 2 + 1, minY: p.minY * 2, maxY: p.maxY * 2 + 1))
            }
        }
        self.init(zooms: lo...hi, ranges: ranges)
    }

    /// The extent an archive declares (its bounds and zooms); nil when it declares no zooms.
    /// An archive without bounds covers the whole world at each of its zooms.
    public init?(summary: TileArchiveSummary) {
        guard let zooms = summary.zoomRange else { return nil }
        self.init(bounds: summary.bounds ?? .webMercatorWorld, zooms: zooms)
    }

    /// The range at zoom `z`, nil outside ``zooms``.
    public func range(atZoom z: Int) -> TileRange? {
        zooms.contains(z) ? ranges[z - zooms.lowerBound] : nil
    }

    public func contains(_ id: TileID) -> Bool {
        range(atZoom: id.z)?.contains(id) ?? false
    }
}

/// A recorded sequence of tile requests, as a map viewer issues them: a viewport of
/// `columns × rows` tiles (256 px each) moves over a region, and every frame requests each
/// tile it shows, row by row from the top-left (so tiles that stay in view are re-requested
/// every frame, and those requests are hits in any cache that holds the view).
///
/// The generators are deterministic: the same extent, parameters and seed give the same
/// requests on every machine. They drive the eviction-policy comparison
/// (``CacheSimulation``) and `tilepack stress --trace`.
public struct AccessTrace: Sendable, Equatable {
    /// The three recorded movements.
    public enum Kind: String, Sendable, CaseIterable, Codable {
        /// A lawnmower sweep over the region at one zoom.
        case pan
        /// Zooming in and out around a slowly moving centre.
        case zoom
        /// A seeded random walk of pans in random directions, with occasional zoom steps.
        case random
    }

    /// The viewport in tiles. A viewport `columns` tiles wide shows `columns + 1` columns
    /// whenever it is not aligned to the tile grid.
    public struct Viewport: Sendable, Equatable {
        public var columns: Int, rows: Int
        public init(columns: Int, rows: Int) {
            self.columns = max(1, columns); self.rows = max(1, rows)
        }
        /// 1024 × 768 px: a tablet.
        public static let tablet = Viewport(columns: 4, rows: 3)
    }

    public let kind: Kind
    /// The requests in order.
    public let requests: [TileID]
    /// How many frames the viewport showed.
    public let frames: Int

    public init(kind: Kind, requests: [TileID], frames: Int) {
        self.kind = kind; self.requests = requests; self.frames = frames
    }

    /// The trace `kind` with its default movement parameters (what `tilepack stress --trace`
    /// runs). `zoom` for `pan` defaults to the deepest zoom of the extent.
    /// - Cost: O(frames × tiles per frame).
    public static func make(
        _ kind: Kind, over extent: TileExtent, frames: Int, seed: UInt64 = 1,
        viewport: Viewport = .tablet
    ) -> AccessTrace {
        switch kind {
        case .pan: pan(over: extent, frames: frames, viewport: viewport)
        case .zoom: zoom(over: extent, frames: frames, seed: seed, viewport: viewport)
        case .random: random(over: extent, frames: frames, seed: seed, viewport: viewport)
        }
    }

    /// Only the requests for tiles in `tiles` (those an archive actually stores; a viewer asks
    /// for the rest too, but a store answers them without touching its cache).
    /// - Cost: O(requests).
    public func restricted(to tiles: Set<TileID>) -> AccessTrace {
        AccessTrace(kind: kind, requests: requests.filter(tiles.contains), frames: frames)
    }

    // MARK: - Generators

    /// A lawnmower sweep at zoom `zoom` (default: the extent's deepest): the viewport starts at
    /// the top-left, pans east by `step` tiles a frame to the region's edge, moves down by
    /// `rows − 1` tiles (keeping one row of the previous pass in view, as someone scanning a
    /// map does), pans back west, and so on; from the bottom it sweeps back up.
    /// Stops after `frames` frames.
    /// - Cost: O(frames × (columns + 1) × (rows + 1)).
    public static func pan(
        over extent: TileExtent, zoom: Int? = nil, frames: Int, step: Double = 0.25,
        viewport: Viewport = .tablet
    ) -> AccessTrace {
        let z = zoom.map { min(max($0, extent.zooms.lowerBound), extent.zooms.upperBound) } ?? extent.zooms.upperBound
        guard let rect = extent.range(atZoom: z), frames > 0 else {
            return AccessTrace(kind: .pan, requests: [], frames: 0)
        }
        var out = FrameWriter(viewport: viewport, capacity: frames)
        let step = step > 0 && step.isFinite ? step : 0.25
        let xMax = out.maxOrigin(rect.minX, rect.width, viewport.columns)
        let yMax = out.maxOrigin(rect.minY, rect.height, viewport.rows)
        let rowStep = Double(max(1, viewport.rows - 1))
        let minX = Double(rect.minX), minY = Double(rect.minY)
        var x = minX, y = minY, east = true, down = true
        // Set while the viewport moves down (or up) to the next pass: the turn is drawn too.
        var turningTo: Double?
        while out.frames < frames {
            out.frame(z, x, y, rect)
            if let t = turningTo {
                y = y < t ? min(t, y + step) : max(t, y - step)
                if y == t { turningTo = nil; east.toggle() }
                continue
            }
            let targetX = east ? xMax : minX
            if x != targetX {
                x = east ? min(targetX, x + step) : max(targetX, x - step)
                continue
            }
            // A pass is done. At the bottom the sweep comes back up the same passes (no jump).
            if down && y >= yMax { down = false } else if !down && y <= minY { down = true }
            let t = down ? min(yMax, y + rowStep) : max(minY, y - rowStep)
            if t == y { east.toggle() } else { turningTo = t }  // one pass tall: back and forth
        }
        return AccessTrace(kind: .pan, requests: out.requests, frames: out.frames)
    }

    /// Zooming in and out around a moving centre: from the shallowest zoom of `zooms`
    /// (default: the extent's) to the deepest and back, `framesPerZoom` frames at each zoom
    /// while the centre drifts by `step` tiles (at the zoom shown) a frame along a seeded random
    /// compass heading; after each out-and-in cycle the centre jumps to a random point of the region.
    /// - Cost: O(frames × (columns + 1) × (rows + 1)).
    public static func zoom(
        over extent: TileExtent, zooms: ClosedRange<Int>? = nil, frames: Int, seed: UInt64 = 1,
        framesPerZoom: Int = 6, step: Double = 0.25, viewport: Viewport = .tablet
    ) -> AccessTrace {
        let zr = zooms.map { $0.clamped(to: extent.zooms) } ?? extent.zooms
        guard frames > 0 else { return AccessTrace(kind: .zoom, requests: [], frames: 0) }
        var rng = SplitMix64(seed: seed)
        var out = FrameWriter(viewport: viewport, capacity: frames)
        var centre = UnitPoint.random(in: extent, &rng)
        let perZoom = max(1, framesPerZoom)
        // In, then out: lo…hi, hi−1…lo+1, then a new centre.
        let cycle = Array(zr) + Array(zr.dropFirst().dropLast().reversed())
        while out.frames < frames {
            for z in cycle {
                let heading = rng.below(UnitPoint.headings.count)
                for _ in 0..<perZoom where out.frames < frames {
                    out.frame(z, centre, extent)
                    centre = centre.moved(heading: heading, tiles: step, zoom: z, in: extent)
                }
            }
            centre = UnitPoint.random(in: extent, &rng)
        }
        return AccessTrace(kind: .zoom, requests: out.requests, frames: out.frames)
    }

    /// A seeded random walk: gestures of 4–15 frames, each a pan by `step` tiles a frame along
    /// one of eight random compass headings, or (with probability `zoomChance`) one zoom step in or out within
    /// `zooms` (default: the extent's three deepest zooms, where people browse), starting at
    /// a random point at the middle of those zooms.
    /// - Cost: O(frames × (columns + 1) × (rows + 1)).
    public static func random(
        over extent: TileExtent, zooms: ClosedRange<Int>? = nil, frames: Int, seed: UInt64 = 1,
        step: Double = 0.25, zoomChance: Double = 0.1, viewport: Viewport = .tablet
    ) -> AccessTrace {
        let deep = max(extent.zooms.lowerBound, extent.zooms.upperBound - 2)...extent.zooms.upperBound
        let zr = zooms.map { $0.clamped(to: extent.zooms) } ?? deep
        guard frames > 0 else { return AccessTrace(kind: .random, requests: [], frames: 0) }
        var rng = SplitMix64(seed: seed)
        var out = FrameWriter(viewport: viewport, capacity: frames)
        var centre = UnitPoint.random(in: extent, &rng)
        var z = (zr.lowerBound + zr.upperBound) / 2
        while out.frames < frames {
            if rng.unit() < zoomChance {
                // Zoom towards the middle more often at the edges of the range, so the walk
                // does not stick to one end.
                let inward = z == zr.lowerBound ? true : z == zr.upperBound ? false : rng.below(2) == 0
                z += inward ? 1 : -1
                z = min(max(z, zr.lowerBound), zr.upperBound)
                out.frame(z, centre, extent)
                continue
            }
            let heading = rng.below(UnitPoint.headings.count)
            for _ in 0..<(4 + rng.below(12)) where out.frames < frames {
                out.frame(z, centre, extent)
                centre = centre.moved(heading: heading, tiles: step, zoom: z, in: extent)
            }
        }
        return AccessTrace(kind: .random, requests: out.requests, frames: out.frames)
    }
}

/// A point on the unit square of the world, so a centre keeps its place across zooms.
private struct UnitPoint {
    var x: Double, y: Double

    static func random(in extent: TileExtent, _ rng: inout SplitMix64) -> UnitPoint {
        // Chosen at the deepest zoom so the point lies inside the region's finest tiles.
        let z = extent.zooms.upperBound
        guard let r = extent.range(atZoom: z) else { return UnitPoint(x: 0.5, y: 0.5) }
        let n = Double(1 << z)
        return UnitPoint(
            x: (Double(r.minX) + rng.unit() * Double(r.width)) / n,
            y: (Double(r.minY) + rng.unit() * Double(r.height)) / n)
    }

    /// The eight compass headings as unit vectors. A table rather than sin/cos of a random
    /// angle: libm may differ in the last bit between platforms, and a seed must give the
    /// same trace everywhere.
    static let headings: [(dx: Double, dy: Double)] = [
        (1, 0), (0.7071067811865476, 0.7071067811865476), (0, 1), (-0.7071067811865476, 0.7071067811865476),
        (-1, 0), (-0.7071067811865476, -0.7071067811865476), (0, -1), (0.7071067811865476, -0.7071067811865476),
    ]

    /// Moved by `tiles` tiles of zoom `zoom` along heading `heading`, bounced back into the
    /// region's deepest rectangle (so a walk reflects off the edges instead of sticking).
    func moved(heading: Int, tiles: Double, zoom: Int, in extent: TileExtent) -> UnitPoint {
        let d = tiles / Double(1 << zoom)
        let h = Self.headings[heading % Self.headings.count]
        var p = UnitPoint(x: x + d * h.dx, y: y + d * h.dy)
        let z = extent.zooms.upperBound
        if let r = extent.range(atZoom: z) {
            let n = Double(1 << z)
            p.x = Self.reflect(p.x, Double(r.minX) / n, Double(r.maxX + 1) / n)
            p.y = Self.reflect(p.y, Double(r.minY) / n, Double(r.maxY + 1) / n)
        }
        return p
    }

    private static func reflect(_ v: Double, _ lo: Double, _ hi: Double) -> Double {
        if v < lo { return min(hi, 2 * lo - v) }
        if v > hi { return max(lo, 2 * hi - v) }
        return v
    }
}

/// Appends the tiles one frame shows.
private struct FrameWriter {
    let viewport: AccessTrace.Viewport
    var requests: [TileID] = []
    var frames = 0

    init(viewport: AccessTrace.Viewport, capacity: Int) {
        self.viewport = viewport
        requests.reserveCapacity(capacity * (viewport.columns + 1) * (viewport.rows + 1))
    }

    /// The largest viewport origin on an axis: the region's far edge minus the viewport, or
    /// the region's near edge when the region is smaller than the viewport.
    func maxOrigin(_ lo: Int, _ length: Int, _ span: Int) -> Double {
        Double(lo + max(0, length - span))
    }

    /// The frame whose top-left corner is at tile position (x, y) of zoom z, clipped to `rect`.
    mutating func frame(_ z: Int, _ x: Double, _ y: Double, _ rect: TileRange) {
        frames += 1
        let x0 = max(rect.minX, Int(x.rounded(.down)))
        let y0 = max(rect.minY, Int(y.rounded(.down)))
        // A viewport edge exactly on a tile edge does not show the next tile.
        let x1 = min(rect.maxX, Int((x + Double(viewport.columns)).rounded(.up)) - 1)
        let y1 = min(rect.maxY, Int((y + Double(viewport.rows)).rounded(.up)) - 1)
        guard x0 <= x1, y0 <= y1 else { return }
        for ty in y0...y1 {
            for tx in x0...x1 { requests.append(TileID(unchecked: z, tx, ty)) }
        }
    }

    /// The frame centred on `centre` at zoom z, kept inside the extent's rectangle at z.
    mutating func frame(_ z: Int, _ centre: UnitPoint, _ extent: TileExtent) {
        guard let rect = extent.range(atZoom: z) else { frames += 1; return }
        let n = Double(1 << z)
        let w = Double(viewport.columns), h = Double(viewport.rows)
        let x = min(max(centre.x * n - w / 2, Double(rect.minX)), maxOrigin(rect.minX, rect.width, viewport.columns))
        let y = min(max(centre.y * n - h / 2, Double(rect.minY)), maxOrigin(rect.minY, rect.height, viewport.rows))
        frame(z, x, y, rect)
    }
}
