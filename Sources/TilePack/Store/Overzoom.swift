import TilePackCore
import TilePackArchive

/// How the tile store answers a tile outside an archive's zooms, so that maps never go blank:
/// beyond the max zoom from the nearest stored ancestor (cropped and upscaled), below the min
/// zoom from the coarsest zoom (downsampled from the descendants), as MapLibre and Leaflet
/// overzoom raster sources. The pure resampling lives here; ``TileStore`` caches the results
/// under the budget like any decoded tile and decides access for the *requested* tile.
///
/// - **Pixels, overzoom: bilinear, premultiplied alpha.** Output pixel centres are mapped
///   into the ancestor (samples at pixel centres, the edge samples held beyond the edge, as
///   ``PointQuery`` reads elevation) and the four pixels around blended with each colour
///   weighted by its alpha, so transparent black at a region's edge never darkens it (straight
///   alpha would). Nearest would keep hard pixel edges; bilinear is what GL's linear filter
///   shows when a viewer scales the ancestor itself.
/// - **Pixels, underzoom: the 2 × 2 box mean, premultiplied**, one zoom at a time (a tile
///   from its four children, which may themselves be downsampled), so a tile k zooms below
///   the min zoom is the mean of 4^k descendants' 2^k × 2^k pixel blocks (to the rounding of
///   each step). At most ``maxUnderzoomLevels`` zooms: a tile costs at most 4 + 16 + 64 reads.
/// - **Elevation: bilinear up, mean of the valid samples down**, NaN (no data) dropped and
///   the remaining weights renormalised; a sample with no valid neighbour of positive weight
///   stays NaN (no data is never invented beyond the data's own edge).
/// - **Classes (``ValueKind/class``, palette archives included): nearest up, the most
///   frequent valid code (or opaque colour) of each 2 × 2 block down**, ties to the first in
///   ``TileID/children`` order as the build's pyramid picks: a code is a category, and a
///   blend of two codes is a third category nobody mapped.
///
/// The GPU payload (``TileStore/tile(_:archive:)``) stays exact-zoom only: PVRTC and ASTC
/// words cannot be cropped or scaled without decoding and re-encoding them (seconds per tile
/// on a phone). A GPU renderer asks ``TileStore/overzoomedTile(_:archive:)``, which decides
/// access for the *requested* tile and hands back the nearest stored ancestor's payload with
/// the rectangle to draw (scaled texture coordinates); never ``TileStore/tile(_:archive:)``
/// of the ancestor, which would ask the policy about the ancestor instead.
public enum Overzoom {
    /// The finest zoom the store makes tiles for: the viewer's max zoom (~4 cm a pixel at the
    /// equator). Beyond it only stored tiles are served.
    public static let maxZoom = 22
    /// How many zooms below an archive's min zoom the store downsamples to.
    public static let maxUnderzoomLevels = 3

    /// The zooms an archive of `zooms` answers pixels and elevation at: from
    /// ``maxUnderzoomLevels`` below its min zoom to ``maxZoom`` (or its own max, if finer).
    public static func reach(of zooms: ClosedRange<Int>) -> ClosedRange<Int> {
        max(0, zooms.lowerBound - maxUnderzoomLevels)...max(zooms.upperBound, maxZoom)
    }

    /// The tile at zoom `z` (≤ `id.z`) that contains `id`.
    static func ancestor(of id: TileID, atZoom z: Int) -> TileID {
        precondition(z >= 0 && z <= id.z, "an ancestor is at a zoom no finer than the tile")
        let k = id.z - z
        return TileID(unchecked: z, id.x >> k, id.y >> k)
    }

    /// Per output column (or row) of a `side`-sample tile `offset` tiles into an ancestor
    /// `scale` = 2^k tiles wide: the two ancestor samples around the output sample's centre
    /// and the weight of the second, edge samples held.
    /// - Cost: O(side), three small arrays.
    static func axis(side: Int, offset: Int, scale: Int) -> (lo: [Int], hi: [Int], t: [Float]) {
        var lo = [Int](repeating: 0, count: side), hi = lo, t = [Float](repeating: 0, count: side)
        let last = Double(side - 1)
        for i in 0..<side {
            // The output sample's centre in ancestor samples: (offset·side + i + ½) / scale − ½.
            let u = (Double(offset) * Double(side) + Double(i) + 0.5) / Double(scale) - 0.5
            let c = min(max(u, 0), last)
            let i0 = Int(c.rounded(.down))
            lo[i] = i0
            hi[i] = min(i0 + 1, side - 1)
            t[i] = Float(c - Double(i0))
        }
        return (lo, hi, t)
    }

    /// The part of `ancestor`'s decoded tile (`side`² RGBA8, rows top first) that `id` covers,
    /// scaled up bilinearly (premultiplied alpha) to `side`² pixels in `out`.
    /// - Precondition: `ancestor` is an ancestor of `id`; `src` and `out` hold `side`² × 4 bytes.
    /// - Cost: O(side²), 4 taps a pixel; three O(side) tables a call.
    static func upscaleRGBA(
        _ src: UnsafeRawBufferPointer, side: Int, from ancestor: TileID, to id: TileID,
        into out: UnsafeMutableRawBufferPointer
    ) {
        let n = side * side * 4
        precondition(ancestor.z <= id.z && src.count >= n && out.count >= n, "upscale buffers")
        let k = id.z - ancestor.z, scale = 1 << k
        let xs = axis(side: side, offset: id.x - (ancestor.x << k), scale: scale)
        let ys = axis(side: side, offset: id.y - (ancestor.y << k), scale: scale)
        let s = src, o = out  // byte subscripts, bounds-checked in debug builds
        for y in 0..<side {
            let r0 = ys.lo[y] * side, r1 = ys.hi[y] * side, ty = ys.t[y]
            for x in 0..<side {
                let tx = xs.t[x]
                let taps = ((r0 + xs.lo[x]) * 4, (r0 + xs.hi[x]) * 4, (r1 + xs.lo[x]) * 4, (r1 + xs.hi[x]) * 4)
                let w = ((1 - tx) * (1 - ty), tx * (1 - ty), (1 - tx) * ty, tx * ty)
                let a0 = w.0 * Float(s[taps.0 + 3]), a1 = w.1 * Float(s[taps.1 + 3])
                let a2 = w.2 * Float(s[taps.2 + 3]), a3 = w.3 * Float(s[taps.3 + 3])
                let alpha = a0 + a1 + a2 + a3
                let d = (y * side + x) * 4
                guard alpha > 0 else {
                    o[d] = 0; o[d + 1] = 0; o[d + 2] = 0; o[d + 3] = 0
                    continue
                }
                for c in 0..<3 {
                    let v =
                        (a0 * Float(s[taps.0 + c]) + a1 * Float(s[taps.1 + c]) + a2 * Float(s[taps.2 + c])
                            + a3 * Float(s[taps.3 + c])) / alpha
                    o[d + c] = byte(v)
                }
                o[d + 3] = byte(alpha)
            }
        }
    }

    /// A float rounded to the nearest byte, clamped to 0…255.
    @inline(__always)
    static func byte(_ v: Float) -> UInt8 {
        UInt8(min(255, max(0, v + 0.5)).rounded(.down))
    }

    /// Quadrant `quadrant` (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right: the order
    /// of ``TileID/children``) of `out` (`side`² RGBA8) from one child's decoded tile: each
    /// output pixel the premultiplied mean of a 2 × 2 block (alpha the plain mean, rounded).
    /// - Precondition: `side` even; both buffers `side`² × 4 bytes.
    /// - Cost: O(side²/4).
    static func downsampleRGBA(
        _ src: UnsafeRawBufferPointer, side: Int, quadrant: Int, into out: UnsafeMutableRawBufferPointer
    ) {
        let n = side * side * 4
        precondition(
            side % 2 == 0 && (0..<4).contains(quadrant) && src.count >= n && out.count >= n, "downsample buffers")
        let half = side / 2, ox = (quadrant & 1) * half, oy = (quadrant >> 1) * half
        let s = src, o = out  // byte subscripts, bounds-checked in debug builds
        for y in 0..<half {
            for x in 0..<half {
                let p = ((2 * y) * side + 2 * x) * 4
                let taps = (p, p + 4, p + side * 4, p + side * 4 + 4)
                let a = (Int(s[taps.0 + 3]), Int(s[taps.1 + 3]), Int(s[taps.2 + 3]), Int(s[taps.3 + 3]))
                let alpha = a.0 + a.1 + a.2 + a.3
                let d = ((oy + y) * side + ox + x) * 4
                guard alpha > 0 else {
                    o[d] = 0; o[d + 1] = 0; o[d + 2] = 0; o[d + 3] = 0
                    continue
                }
                for c in 0..<3 {
                    let sum =
                        a.0 * Int(s[taps.0 + c]) + a.1 * Int(s[taps.1 + c]) + a.2 * Int(s[taps.2 + c]) + a.3
                        * Int(s[taps.3 + c])
                    o[d + c] = UInt8((sum + alpha / 2) / alpha)  // ≤ 255: a weighted mean of bytes
                }
                o[d + 3] = UInt8((alpha + 2) / 4)
            }
        }
    }

    /// The part of `ancestor`'s grid that `id` covers, scaled up bilinearly to the grid's own
    /// size; NaN neighbours dropped and the rest renormalised.
    /// - Cost: O(width × height); allocates the result (the store counts it before).
    static func upscaleElevation(_ grid: ElevationTile, from ancestor: TileID, to id: TileID) -> ElevationTile {
        let k = id.z - ancestor.z, scale = 1 << k, w = grid.width, h = grid.height
        let xs = axis(side: w, offset: id.x - (ancestor.x << k), scale: scale)
        let ys = axis(side: h, offset: id.y - (ancestor.y << k), scale: scale)
        var values = [Float](repeating: .nan, count: w * h)
        grid.values.withUnsafeBufferPointer { s in
            values.withUnsafeMutableBufferPointer { o in
                for y in 0..<h {
                    let r0 = ys.lo[y] * w, r1 = ys.hi[y] * w, ty = Double(ys.t[y])
                    for x in 0..<w {
                        let tx = Double(xs.t[x])
                        let taps = (r0 + xs.lo[x], r0 + xs.hi[x], r1 + xs.lo[x], r1 + xs.hi[x])
                        let w4 = ((1 - tx) * (1 - ty), tx * (1 - ty), (1 - tx) * ty, tx * ty)
                        var sum = 0.0, weight = 0.0
                        // Unrolled: an array literal here would allocate per sample.
                        func tap(_ i: Int, _ wt: Double) {
                            let v = Double(s[i])
                            if v.isFinite && wt > 0 { sum += v * wt; weight += wt }
                        }
                        tap(taps.0, w4.0); tap(taps.1, w4.1); tap(taps.2, w4.2); tap(taps.3, w4.3)
                        if weight > 1e-9 { o[y * w + x] = Float(sum / weight) }
                    }
                }
            }
        }
        return ElevationTile(width: w, height: h, values: values)
    }

    /// Quadrant `quadrant` of `out` (a `width × height` grid, both even) from one child's grid
    /// of the same size: each sample the mean of the valid samples of a 2 × 2 block (NaN when
    /// none is valid).
    /// - Cost: O(width × height / 4).
    static func downsampleElevation(_ child: ElevationTile, quadrant: Int, into out: inout [Float]) {
        let w = child.width, h = child.height
        precondition(w % 2 == 0 && h % 2 == 0 && out.count == w * h && (0..<4).contains(quadrant), "downsample grids")
        let hw = w / 2, hh = h / 2, ox = (quadrant & 1) * hw, oy = (quadrant >> 1) * hh
        child.values.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o in
                for y in 0..<hh {
                    for x in 0..<hw {
                        let p = 2 * y * w + 2 * x
                        var sum = 0.0, count = 0
                        func tap(_ i: Int) { if s[i].isFinite { sum += Double(s[i]); count += 1 } }
                        tap(p); tap(p + 1); tap(p + w); tap(p + w + 1)
                        o[(oy + y) * w + ox + x] = count == 0 ? .nan : Float(sum / Double(count))
                    }
                }
            }
        }
    }

    // MARK: Classes

    /// Per output column (or row) of a `side`-sample tile `offset` tiles into an ancestor
    /// `scale` tiles wide: the ancestor sample holding the output sample's centre.
    /// - Cost: O(side).
    static func nearest(side: Int, offset: Int, scale: Int) -> [Int] {
        (0..<side).map { i in min(side - 1, (offset * side + i) / scale) }
    }

    /// ``upscaleRGBA(_:side:from:to:into:)`` by nearest: every output pixel a copy of the
    /// ancestor pixel holding its centre (class and palette archives).
    /// - Cost: O(side²); two O(side) tables.
    static func upscaleRGBANearest(
        _ src: UnsafeRawBufferPointer, side: Int, from ancestor: TileID, to id: TileID,
        into out: UnsafeMutableRawBufferPointer
    ) {
        let n = side * side * 4
        precondition(ancestor.z <= id.z && src.count >= n && out.count >= n, "upscale buffers")
        let k = id.z - ancestor.z, scale = 1 << k
        let xs = nearest(side: side, offset: id.x - (ancestor.x << k), scale: scale)
        let ys = nearest(side: side, offset: id.y - (ancestor.y << k), scale: scale)
        for y in 0..<side {
            for x in 0..<side {
                let s = (ys[y] * side + xs[x]) * 4, d = (y * side + x) * 4
                out[d] = src[s]; out[d + 1] = src[s + 1]; out[d + 2] = src[s + 2]; out[d + 3] = src[s + 3]
            }
        }
    }

    /// ``downsampleRGBA(_:side:quadrant:into:)`` for classes: each output pixel the most
    /// frequent colour among the block's pixels with alpha above 0 (ties: the first in
    /// reading order), transparent when none has; never a blend.
    /// - Cost: O(side²/4).
    static func downsampleRGBAMode(
        _ src: UnsafeRawBufferPointer, side: Int, quadrant: Int, into out: UnsafeMutableRawBufferPointer
    ) {
        let n = side * side * 4
        precondition(
            side % 2 == 0 && (0..<4).contains(quadrant) && src.count >= n && out.count >= n, "downsample buffers")
        let half = side / 2, ox = (quadrant & 1) * half, oy = (quadrant >> 1) * half
        @inline(__always) func colour(_ p: Int) -> UInt32 {
            UInt32(src[p]) | UInt32(src[p + 1]) << 8 | UInt32(src[p + 2]) << 16 | UInt32(src[p + 3]) << 24
        }
        for y in 0..<half {
            for x in 0..<half {
                let p = ((2 * y) * side + 2 * x) * 4
                let taps = (p, p + 4, p + side * 4, p + side * 4 + 4)
                let c = (colour(taps.0), colour(taps.1), colour(taps.2), colour(taps.3))
                let d = ((oy + y) * side + ox + x) * 4
                var best = -1, bestCount = 0
                for (i, v) in [c.0, c.1, c.2, c.3].enumerated() where v >> 24 != 0 {
                    let count = (c.0 == v ? 1 : 0) + (c.1 == v ? 1 : 0) + (c.2 == v ? 1 : 0) + (c.3 == v ? 1 : 0)
                    if count > bestCount { best = i; bestCount = count }
                }
                let s: Int
                switch best {
                case 0: s = taps.0
                case 1: s = taps.1
                case 2: s = taps.2
                case 3: s = taps.3
                default:
                    out[d] = 0; out[d + 1] = 0; out[d + 2] = 0; out[d + 3] = 0
                    continue
                }
                out[d] = src[s]; out[d + 1] = src[s + 1]; out[d + 2] = src[s + 2]; out[d + 3] = src[s + 3]
            }
        }
    }

    /// ``upscaleElevation(_:from:to:)`` by nearest: class codes are copied, never blended.
    /// - Cost: O(width × height); allocates the result (the store counts it before).
    static func upscaleElevationNearest(_ grid: ElevationTile, from ancestor: TileID, to id: TileID) -> ElevationTile {
        let k = id.z - ancestor.z, scale = 1 << k, w = grid.width, h = grid.height
        let xs = nearest(side: w, offset: id.x - (ancestor.x << k), scale: scale)
        let ys = nearest(side: h, offset: id.y - (ancestor.y << k), scale: scale)
        var values = [Float](repeating: .nan, count: w * h)
        for y in 0..<h { for x in 0..<w { values[y * w + x] = grid.values[ys[y] * w + xs[x]] } }
        return ElevationTile(width: w, height: h, values: values)
    }

    /// ``downsampleElevation(_:quadrant:into:)`` for class codes: each sample the most
    /// frequent valid code of its 2 × 2 block (ties: the first, as the build's
    /// `Pyramid.downsampleClasses`), NaN when none is valid.
    /// - Cost: O(width × height / 4).
    static func downsampleElevationMode(_ child: ElevationTile, quadrant: Int, into out: inout [Float]) {
        let w = child.width, h = child.height
        precondition(w % 2 == 0 && h % 2 == 0 && out.count == w * h && (0..<4).contains(quadrant), "downsample grids")
        let hw = w / 2, hh = h / 2, ox = (quadrant & 1) * hw, oy = (quadrant >> 1) * hh
        let s = child.values
        for y in 0..<hh {
            for x in 0..<hw {
                let p = 2 * y * w + 2 * x
                let v = (s[p], s[p + 1], s[p + w], s[p + w + 1])
                var best = Float.nan, bestCount = 0
                for c in [v.0, v.1, v.2, v.3] where c.isFinite {
                    let count = (v.0 == c ? 1 : 0) + (v.1 == c ? 1 : 0) + (v.2 == c ? 1 : 0) + (v.3 == c ? 1 : 0)
                    if count > bestCount { best = c; bestCount = count }
                }
                out[(oy + y) * w + ox + x] = best
            }
        }
    }
}

extension TileArchiveSummary {
    /// Whether the tile store answers pixels or elevation of tile `id` from this archive,
    /// stored or made from another zoom: its zoom is within ``Overzoom/reach(of:)`` of the
    /// archive's zooms and its square meets the archive's bounds. ``mayContain(_:)`` is the
    /// exact-zoom question (the GPU payload's).
    /// - Cost: O(1), no I/O.
    public func reaches(_ id: TileID) -> Bool {
        guard let zooms = zoomRange, Overzoom.reach(of: zooms).contains(id.z) else { return false }
        return meets(id)
    }
}
