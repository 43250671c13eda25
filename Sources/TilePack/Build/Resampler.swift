import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Buffers one worker reuses from tile to tile, so resampling allocates only the window the
/// source returns. Unchecked Sendable: the pipeline hands each workspace to one thread at a
/// time (worker w of a phase owns workspace w).
final class ResampleWorkspace: @unchecked Sendable {
    /// Source pixel coordinates per grid pixel, row-major; NaN where not projectable. After a
    /// separable mapping (``separable``) they are made from ``columnOf``/``rowOf`` on the first
    /// read, so a bilinear resample, which reads only those, never writes a value per pixel.
    /// Cost: O(pixels) on that first read, else an array copy-on-write reference.
    var cols: [Double] { expandSeparable(); return pixelCols }
    var rows: [Double] { expandSeparable(); return pixelRows }
    /// What `cols`/`rows` read: the mapper's per-pixel output, stale after a separable mapping
    /// until they are read.
    var pixelCols: [Double] = []
    var pixelRows: [Double] = []
    /// Whether the last mapping was separable: each pixel's source column a function of its
    /// grid column alone (``columnOf``, one a grid column) and its source row of its grid row
    /// alone (``rowOf``), the same values ``CoordinateMapper`` would give per pixel. A source in
    /// web mercator or in longitude and latitude, its pixel grid along their axes, maps so.
    private(set) var separable = false
    var columnOf: [Double] = []
    var rowOf: [Double] = []
    /// `pixelCols`/`pixelRows` hold the last mapping.
    private var expanded = true
    var lons: [Double] = []
    var lats: [Double] = []
    /// Resampled samples (grid pixel-interleaved, `bands` per pixel) and 1/0 validity.
    var values: [Float] = []
    var valid: [UInt8] = []
    /// Validity of each pixel of the last source window.
    var windowValid: [UInt8] = []
    /// Approximation cells that had to be computed exactly (a diagnostic for tests).
    var exactCells = 0
    /// Size of the last source window read (diagnostic).
    var lastWindow = (x: 0, y: 0, width: 0, height: 0)
    /// The buffers of a ``LayeredResampler`` (a mosaic across grids); nil otherwise.
    var layered: LayeredWorkspace?

    init() {}

    /// Records how the mapper left the coordinates: per pixel (`separable` false), or in
    /// ``columnOf``/``rowOf`` only.
    func mapped(separable: Bool) {
        self.separable = separable
        expanded = !separable
    }

    /// Fills `pixelCols`/`pixelRows` from ``columnOf``/``rowOf`` after a separable mapping.
    /// Cost: O(pixels), once a mapping.
    private func expandSeparable() {
        guard !expanded else { return }
        expanded = true
        let w = columnOf.count, h = rowOf.count
        if pixelCols.count != w * h {
            pixelCols = [Double](repeating: .nan, count: w * h)
            pixelRows = [Double](repeating: .nan, count: w * h)
        }
        for j in 0..<h {
            for i in 0..<w {
                pixelCols[j * w + i] = columnOf[i]
                pixelRows[j * w + i] = rowOf[j]
            }
        }
    }
}

/// Maps output pixel centres to source pixels the way GDAL's approximate transformer does:
/// exactly on a grid of nodes every ``step`` pixels (plus the last row/column), bilinearly in
/// between. Each cell's centre and edge midpoints are also computed exactly; a cell whose
/// interpolation misses one by more than `maxError` source pixels, or that touches an
/// unprojectable node, is computed exactly pixel by pixel.
///
/// Cost: about 6 exact projections per 16×16 cell (≈ 2 % of W·H) for smooth mappings.
struct CoordinateMapper: Sendable {
    static let step = 16
    let georeference: any SourceGeoreference
    /// 0 computes every pixel exactly.
    let maxError: Double

    /// Maps `grid`'s pixel centres into `ws`: per pixel (`pixelCols`/`pixelRows`), or, when
    /// `separable` allows it and the mapping is separable, into `columnOf`/`rowOf` alone
    /// (``ResampleWorkspace/separable``): every node of the grid below has its column's source
    /// column and its row's source row exactly, and every cell interpolates (no exact cell), so
    /// each pixel's interpolated coordinates are its column's and its row's (the other node
    /// pair's difference is 0); those are computed once a column and once a row.
    /// Cost: as the type says; a separable mapping writes O(width + height) values, not O(pixels).
    func map(_ grid: MapFrame, into ws: ResampleWorkspace, separable: Bool = false) {
        let w = grid.width, h = grid.height, n = w * h
        ws.mapped(separable: false)
        if ws.pixelCols.count != n {
            ws.pixelCols = [Double](repeating: .nan, count: n)
            ws.pixelRows = [Double](repeating: .nan, count: n)
        }
        ws.lons = (0..<w).map { grid.lon(column: $0) }
        ws.lats = (0..<h).map { grid.lat(row: $0) }
        ws.exactCells = 0
        let lons = ws.lons, lats = ws.lats
        let georef = georeference
        func exact(_ i: Int, _ j: Int) -> (Double, Double) {
            if let p = georef.sourcePixel(lon: lons[i], lat: lats[j]), p.col.isFinite, p.row.isFinite {
                return (p.col, p.row)
            }
            return (.nan, .nan)
        }
        ws.pixelCols.withUnsafeMutableBufferPointer { cols in
            ws.pixelRows.withUnsafeMutableBufferPointer { rows in
                func exactRange(_ x0: Int, _ x1: Int, _ y0: Int, _ y1: Int) {
                    for j in y0...y1 {
                        for i in x0...x1 {
                            let p = exact(i, j)
                            cols[j * w + i] = p.0
                            rows[j * w + i] = p.1
                        }
                    }
                }
                guard maxError > 0, w >= 2, h >= 2 else {
                    exactRange(0, w - 1, 0, h - 1)
                    return
                }
                func nodes(_ size: Int) -> [Int] {
                    var out = Array(stride(from: 0, to: size - 1, by: Self.step))
                    out.append(size - 1)
                    return out
                }
                let xs = nodes(w), ys = nodes(h)
                var node = [(Double, Double)]()
                node.reserveCapacity(xs.count * ys.count)
                for y in ys { for x in xs { node.append(exact(x, y)) } }
                let nx = xs.count, ny = ys.count
                /// Whether cell (kx, ky) may be interpolated: its nodes projectable, and its
                /// centre and edge midpoints within `maxError` of the interpolation (a
                /// saddle-shaped error, x² − y² as curved projections have, cancels at the
                /// centre but not on the edges).
                func interpolates(_ kx: Int, _ ky: Int) -> Bool {
                    let x0 = xs[kx], x1 = xs[kx + 1], y0 = ys[ky], y1 = ys[ky + 1]
                    let a = node[ky * nx + kx], b = node[ky * nx + kx + 1]
                    let c = node[(ky + 1) * nx + kx], d = node[(ky + 1) * nx + kx + 1]
                    guard !(a.0.isNaN || b.0.isNaN || c.0.isNaN || d.0.isNaN) else { return false }
                    let fx = 1 / Double(x1 - x0), fy = 1 / Double(y1 - y0)
                    let ci = (x0 + x1) / 2, cj = (y0 + y1) / 2
                    for (pi, pj) in [(ci, cj), (ci, y0), (ci, y1), (x0, cj), (x1, cj)] {
                        let e = exact(pi, pj)
                        let tx = Double(pi - x0) * fx, ty = Double(pj - y0) * fy
                        let ic = (a.0 * (1 - tx) + b.0 * tx) * (1 - ty) + (c.0 * (1 - tx) + d.0 * tx) * ty
                        let ir = (a.1 * (1 - tx) + b.1 * tx) * (1 - ty) + (c.1 * (1 - tx) + d.1 * tx) * ty
                        guard !e.0.isNaN && abs(e.0 - ic) <= maxError && abs(e.1 - ir) <= maxError else { return false }
                    }
                    return true
                }
                if separable && Self.separates(node, nx: nx, ny: ny) {
                    var all = true
                    for ky in 0..<(ny - 1) { for kx in 0..<(nx - 1) where all { all = interpolates(kx, ky) } }
                    if all {
                        Self.fillSeparable(node, xs: xs, ys: ys, into: ws)
                        return
                    }
                }
                for ky in 0..<(ny - 1) {
                    let y0 = ys[ky], y1 = ys[ky + 1]
                    let yEnd = ky == ny - 2 ? y1 : y1 - 1
                    for kx in 0..<(nx - 1) {
                        let x0 = xs[kx], x1 = xs[kx + 1]
                        let xEnd = kx == nx - 2 ? x1 : x1 - 1
                        let a = node[ky * nx + kx], b = node[ky * nx + kx + 1]
                        let c = node[(ky + 1) * nx + kx], d = node[(ky + 1) * nx + kx + 1]
                        let fx = 1 / Double(x1 - x0), fy = 1 / Double(y1 - y0)
                        if !interpolates(kx, ky) {
                            ws.exactCells += 1
                            exactRange(x0, xEnd, y0, yEnd)
                            continue
                        }
                        for j in y0...yEnd {
                            let ty = Double(j - y0) * fy
                            let lc = a.0 + (c.0 - a.0) * ty, rc = b.0 + (d.0 - b.0) * ty
                            let lr = a.1 + (c.1 - a.1) * ty, rr = b.1 + (d.1 - b.1) * ty
                            for i in x0...xEnd {
                                let tx = Double(i - x0) * fx
                                cols[j * w + i] = lc + (rc - lc) * tx
                                rows[j * w + i] = lr + (rr - lr) * tx
                            }
                        }
                    }
                }
            }
        }
    }
}

extension CoordinateMapper {
    /// Whether every node (`nx` × `ny`, row-major) has the source column of the nodes above it
    /// and the source row of the nodes beside it, exactly (an unprojectable node: no).
    /// Cost: one pass over the nodes.
    fileprivate static func separates(_ node: [(Double, Double)], nx: Int, ny: Int) -> Bool {
        for ky in 0..<ny {
            for kx in 0..<nx where node[ky * nx + kx].0 != node[kx].0 || node[ky * nx + kx].1 != node[ky * nx].1 {
                return false
            }
        }
        return true
    }

    /// `ws.columnOf`/`ws.rowOf` of a separable node grid (``separates(_:nx:ny:)``, every cell
    /// interpolated): the per-pixel interpolation of ``map(_:into:separable:)`` on the first row
    /// and column of cells, which is every row's and column's (the node pair along the other
    /// axis differs by 0, which adds +0 there as here).
    /// Cost: O(width + height).
    fileprivate static func fillSeparable(_ node: [(Double, Double)], xs: [Int], ys: [Int], into ws: ResampleWorkspace)
    {
        let nx = xs.count, w = (xs.last ?? 0) + 1, h = (ys.last ?? 0) + 1
        if ws.columnOf.count != w { ws.columnOf = [Double](repeating: .nan, count: w) }
        if ws.rowOf.count != h { ws.rowOf = [Double](repeating: .nan, count: h) }
        for kx in 0..<(nx - 1) {
            let x0 = xs[kx], x1 = xs[kx + 1], xEnd = kx == nx - 2 ? x1 : x1 - 1
            let a = node[kx], b = node[kx + 1], c = node[nx + kx], d = node[nx + kx + 1]
            let fx = 1 / Double(x1 - x0), ty = 0.0
            let lc = a.0 + (c.0 - a.0) * ty, rc = b.0 + (d.0 - b.0) * ty
            for i in x0...xEnd { ws.columnOf[i] = lc + (rc - lc) * (Double(i - x0) * fx) }
        }
        for ky in 0..<(ys.count - 1) {
            let y0 = ys[ky], y1 = ys[ky + 1], yEnd = ky == ys.count - 2 ? y1 : y1 - 1
            let a = node[ky * nx], b = node[ky * nx + 1], c = node[(ky + 1) * nx], d = node[(ky + 1) * nx + 1]
            let fy = 1 / Double(y1 - y0), tx = 0.0
            for j in y0...yEnd {
                let ty = Double(j - y0) * fy
                let lr = a.1 + (c.1 - a.1) * ty, rr = b.1 + (d.1 - b.1) * ty
                ws.rowOf[j] = lr + (rr - lr) * tx
            }
        }
        ws.mapped(separable: true)
    }
}

/// Resamples a source onto a ``MapFrame``: maps pixel centres with ``CoordinateMapper``,
/// reads the one source window they need (plus a 1–2 pixel margin) and samples it.
///
/// A source pixel is invalid when any band is NaN or all its data bands equal `nodata`.
/// Output pixels outside the source or on invalid pixels are invalid (transparent).
/// Cost: one `readFloats` per grid, O(grid pixels · bands) work (average: · footprint).
struct Resampler: Sendable {
    /// Largest window (samples, all bands) one tile may read: 16 Mi floats, 64 MiB.
    static let maxWindowSamples = 1 << 24

    let source: any RasterSource
    let mapper: CoordinateMapper
    let method: Resampling

    /// Fills `ws.values`/`ws.valid` for `grid`; returns whether any pixel is valid.
    /// `tile` names the tile in errors.
    func resample(_ grid: MapFrame, tile: TileID, into ws: ResampleWorkspace) throws -> Bool {
        mapper.map(grid, into: ws, separable: method == .bilinear)
        let bands = source.bands, n = grid.width * grid.height
        if ws.values.count != n * bands { ws.values = [Float](repeating: 0, count: n * bands) }
        if ws.valid.count != n { ws.valid = [UInt8](repeating: 0, count: n) }
        ws.valid.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }

        // The window every mapped centre (and, for average, its footprint) needs.
        var minC = Double.infinity, maxC = -Double.infinity, minR = Double.infinity, maxR = -Double.infinity
        if method == .average {
            for j in 0..<grid.height {
                for i in 0..<grid.width {
                    let k = j * grid.width + i
                    let c = ws.pixelCols[k], r = ws.pixelRows[k]
                    if c.isNaN { continue }
                    let (hx, hy) = footprint(i, j, grid.width, grid.height, ws)
                    minC = min(minC, c - hx); maxC = max(maxC, c + hx)
                    minR = min(minR, r - hy); maxR = max(maxR, r + hy)
                }
            }
        } else {
            // Selects, not a `continue` on NaN (unmapped: c and r both NaN, and every comparison
            // with NaN false keeps the extremes): the loops have no branch. A separable mapping
            // has the same values a column and a row at a time.
            let (cs, rs) = ws.separable ? (ws.columnOf, ws.rowOf) : (ws.pixelCols, ws.pixelRows)
            cs.withUnsafeBufferPointer { cols in
                for c in cols { minC = c < minC ? c : minC; maxC = c > maxC ? c : maxC }
            }
            rs.withUnsafeBufferPointer { rows in
                for r in rows { minR = r < minR ? r : minR; maxR = r > maxR ? r : maxR }
            }
            minC -= 0.5; maxC += 0.5; minR -= 0.5; maxR += 0.5
        }
        let sw = Double(source.width), sh = Double(source.height)
        guard minC.isFinite, maxC.isFinite, minR.isFinite, maxR.isFinite else { return false }
        // Clamp in Double first: a wild coordinate must not trap in Int conversion.
        let x0 = Int(min(max(floor(minC) - 1, 0), sw)), x1 = Int(min(max(ceil(maxC) + 1, 0), sw))
        let y0 = Int(min(max(floor(minR) - 1, 0), sh)), y1 = Int(min(max(ceil(maxR) + 1, 0), sh))
        guard x0 < x1, y0 < y1 else { return false }
        let ww = x1 - x0, wh = y1 - y0
        guard ww * wh * bands <= Self.maxWindowSamples else {
            throw BuildError.windowTooLarge(tile: tile, width: ww, height: wh)
        }
        let window = try source.readFloats(x: x0, y: y0, width: ww, height: wh)
        guard window.count == ww * wh * bands else {
            throw BuildError.sourceReadMismatch(expected: ww * wh * bands, got: window.count)
        }
        ws.lastWindow = (x0, y0, ww, wh)
        let plain = markValid(window, count: ww * wh, into: ws)

        if method == .bilinear {
            let separable = ws.separable
            let (cs, rs) = separable ? (ws.columnOf, ws.rowOf) : (ws.pixelCols, ws.pixelRows)
            return window.withUnsafeBufferPointer { win in
                ws.windowValid.withUnsafeBufferPointer { wv in
                    ws.values.withUnsafeMutableBufferPointer { out in
                        ws.valid.withUnsafeMutableBufferPointer { valid in
                            cs.withUnsafeBufferPointer { cols in
                                rs.withUnsafeBufferPointer { rows in
                                    let window = BilinearWindow(
                                        x0: x0, y0: y0, width: ww, height: wh, bands: bands, samples: win, valid: wv,
                                        plain: plain)
                                    return separable
                                        ? Self.bilinearSeparable(
                                            window, columns: cols, rows: rows, into: out, valid: valid)
                                        : Self.bilinearGrid(window, cols: cols, rows: rows, into: out, valid: valid)
                                }
                            }
                        }
                    }
                }
            }
        }
        var any = false
        let gw = grid.width
        window.withUnsafeBufferPointer { win in
            ws.windowValid.withUnsafeBufferPointer { wv in
                ws.values.withUnsafeMutableBufferPointer { out in
                    ws.valid.withUnsafeMutableBufferPointer { valid in
                        ws.pixelCols.withUnsafeBufferPointer { cols in
                            ws.pixelRows.withUnsafeBufferPointer { rows in
                                for k in 0..<n {
                                    let c = cols[k], r = rows[k]
                                    if c.isNaN { continue }
                                    let ok: Bool
                                    switch method {
                                    case .nearest:
                                        ok = nearest(c, r, x0, y0, ww, wh, bands, win, wv, out, k)
                                    case .bilinear:
                                        preconditionFailure("bilinear runs in bilinearGrid")
                                    case .average:
                                        let (hx, hy) = footprint(k % gw, k / gw, gw, grid.height, ws)
                                        ok = average(c, r, hx, hy, x0, y0, ww, wh, bands, win, wv, out, k)
                                    }
                                    if ok { valid[k] = 1; any = true }
                                }
                            }
                        }
                    }
                }
            }
        }
        return any
    }

    /// Marks source pixels of the window valid (1) or not (0); returns whether every pixel is
    /// valid and every sample finite (``BilinearWindow/plain``).
    /// Cost: one pass over the window on unsafe buffers (bounds checked once).
    private func markValid(_ window: [Float], count: Int, into ws: ResampleWorkspace) -> Bool {
        let bands = source.bands, alpha = source.alphaBand ?? -1
        if ws.windowValid.count < count { ws.windowValid = [UInt8](repeating: 0, count: count) }
        let nodata = source.nodata.map { Float($0) }
        return ws.windowValid.withUnsafeMutableBufferPointer { wv in
            window.withUnsafeBufferPointer { win in
                precondition(win.count >= count * bands && wv.count >= count)
                // The largest exponent field seen: all ones only for NaN and ±∞ (an integer
                // max, no branch).
                var exponent: UInt32 = 0
                let infinite: UInt32 = 0x7F80_0000
                guard let nd = nodata else {
                    for p in 0..<count {
                        var ok: UInt8 = 1
                        for b in 0..<bands {
                            let v = win[p * bands + b]
                            if v.isNaN { ok = 0 }
                            exponent = max(exponent, v.bitPattern & infinite)
                        }
                        wv[p] = ok
                    }
                    // Every sample finite: none NaN, so every pixel valid.
                    return exponent < infinite
                }
                var invalid: UInt8 = 0
                for p in 0..<count {
                    var nan = false, allNodata = true
                    for b in 0..<bands {
                        let v = win[p * bands + b]
                        if v.isNaN { nan = true }
                        exponent = max(exponent, v.bitPattern & infinite)
                        if b != alpha, v != nd { allNodata = false }
                    }
                    let ok: UInt8 = nan || allNodata ? 0 : 1
                    wv[p] = ok
                    invalid |= ok ^ 1
                }
                return exponent < infinite && invalid == 0
            }
        }
    }

    /// Half extents (source pixels) of an output pixel's footprint, from the mapping's local
    /// derivatives; at least half a pixel.
    private func footprint(_ i: Int, _ j: Int, _ w: Int, _ h: Int, _ ws: ResampleWorkspace) -> (Double, Double) {
        let k = j * w + i
        let ki = i + 1 < w ? k + 1 : k - 1, kj = j + 1 < h ? k + w : k - w
        let cols = ws.pixelCols, rows = ws.pixelRows
        guard ki >= 0, kj >= 0, ki < cols.count, kj < cols.count else { return (0.5, 0.5) }
        let dci = abs(cols[ki] - cols[k]), dcj = abs(cols[kj] - cols[k])
        let dri = abs(rows[ki] - rows[k]), drj = abs(rows[kj] - rows[k])
        let hx = 0.5 * (dci + dcj), hy = 0.5 * (dri + drj)
        return (hx.isFinite ? max(0.5, hx) : 0.5, hy.isFinite ? max(0.5, hy) : 0.5)
    }

    @inline(__always)
    private func nearest(
        _ c: Double, _ r: Double, _ x0: Int, _ y0: Int, _ ww: Int, _ wh: Int, _ bands: Int,
        _ win: UnsafeBufferPointer<Float>, _ wv: UnsafeBufferPointer<UInt8>,
        _ out: UnsafeMutableBufferPointer<Float>, _ k: Int
    ) -> Bool {
        let fc = Self.fastFloor(c) - Double(x0), fr = Self.fastFloor(r) - Double(y0)
        guard fc >= 0, fr >= 0, fc < Double(ww), fr < Double(wh) else { return false }
        let p = Int(fr) * ww + Int(fc)
        guard wv[p] != 0 else { return false }
        for b in 0..<bands { out[k * bands + b] = win[p * bands + b] }
        return true
    }

    /// `floor` without the libm call (x86-64's baseline has no rounding
    /// instruction): exact for |x| < 2^52 (NaN and beyond: `rounded(.down)`).
    @inline(__always)
    static func fastFloor(_ x: Double) -> Double {
        guard abs(x) < 4.0e15 else { return x.rounded(.down) }
        let t = Double(Int(x))
        return t > x ? t - 1 : t
    }

    @inline(__always)
    private func average(
        _ c: Double, _ r: Double, _ hx: Double, _ hy: Double, _ x0: Int, _ y0: Int,
        _ ww: Int, _ wh: Int, _ bands: Int,
        _ win: UnsafeBufferPointer<Float>, _ wv: UnsafeBufferPointer<UInt8>,
        _ out: UnsafeMutableBufferPointer<Float>, _ k: Int
    ) -> Bool {
        // Box [c−hx, c+hx] × [r−hy, r+hy] in window coordinates; each pixel weighs its overlap.
        let bx0 = c - hx - Double(x0), bx1 = c + hx - Double(x0)
        let by0 = r - hy - Double(y0), by1 = r + hy - Double(y0)
        let ca = max(0, Int(floor(bx0))), cb = min(ww - 1, Int(ceil(bx1)) - 1)
        let ra = max(0, Int(floor(by0))), rb = min(wh - 1, Int(ceil(by1)) - 1)
        guard ca <= cb, ra <= rb else { return false }
        return withUnsafeTemporaryAllocation(of: Double.self, capacity: bands) { acc in
            acc.initialize(repeating: 0)
            var sum = 0.0
            for rr in ra...rb {
                let oy = min(Double(rr + 1), by1) - max(Double(rr), by0)
                if oy <= 0 { continue }
                for cc in ca...cb {
                    let p = rr * ww + cc
                    guard wv[p] != 0 else { continue }
                    let ox = min(Double(cc + 1), bx1) - max(Double(cc), bx0)
                    if ox <= 0 { continue }
                    let w = ox * oy
                    sum += w
                    for b in 0..<bands { acc[b] += w * Double(win[p * bands + b]) }
                }
            }
            guard sum > 0 else { return false }
            for b in 0..<bands { out[k * bands + b] = Float(acc[b] / sum) }
            return true
        }
    }
}
