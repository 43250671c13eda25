/// The source window a grid's bilinear samples come from: its place in the source, its
/// samples (pixel-interleaved, `bands` per pixel) and each pixel's validity (1/0). The buffers
/// are borrowed for one ``Resampler/bilinearGrid(_:cols:rows:into:valid:)`` call.
struct BilinearWindow {
    let x0: Int, y0: Int, width: Int, height: Int, bands: Int
    let samples: UnsafeBufferPointer<Float>
    let valid: UnsafeBufferPointer<UInt8>
    /// Every pixel valid and every sample finite (a source without nodata, NaN or ±∞, as most
    /// are): then an interior pixel of ``Resampler/bilinearSeparable(_:columns:rows:into:valid:)``
    /// needs no validity read and no zero-weight test.
    let plain: Bool

    /// `plain`: whether ``isPlain(samples:valid:count:bands:)`` holds for these buffers, which
    /// the caller's own pass over the window knows (debug builds check it).
    init(
        x0: Int, y0: Int, width: Int, height: Int, bands: Int, samples: UnsafeBufferPointer<Float>,
        valid: UnsafeBufferPointer<UInt8>, plain: Bool
    ) {
        (self.x0, self.y0, self.width, self.height, self.bands) = (x0, y0, width, height, bands)
        (self.samples, self.valid, self.plain) = (samples, valid, plain)
        assert(
            !plain || Self.isPlain(samples: samples, valid: valid, count: width * height, bands: bands),
            "a plain bilinear window has an invalid pixel or a sample that is not finite")
    }

    /// Whether the first `count` pixels of `valid` are all 1 and their samples all finite.
    /// Cost: one pass over the samples.
    static func isPlain(
        samples: UnsafeBufferPointer<Float>, valid: UnsafeBufferPointer<UInt8>, count: Int, bands: Int
    ) -> Bool {
        guard samples.count >= count * bands, valid.count >= count else { return false }
        for p in 0..<count where valid[p] == 0 { return false }
        for i in 0..<(count * bands) where !samples[i].isFinite { return false }
        return true
    }
}

extension Resampler {
    /// Bilinear samples of `window` at every mapped pixel centre (`cols`/`rows`, NaN where
    /// unmapped) into `out` (`bands` per pixel) and `valid` (1 where sampled, untouched
    /// elsewhere); returns whether any pixel was sampled.
    ///
    /// Same bits as ``bilinearSample(_:_:_:into:at:)`` at every pixel: the interior case (the
    /// four taps inside the window and valid, as everywhere in a source without nodata) runs
    /// the same Double operations in the same order, with the band loop as one `SIMD4<Double>`
    /// for 1, 3 and 4 bands and no per-tap branches on bounds or validity; edges, nodata and
    /// other band counts take the general kernel.
    /// - Cost: O(pixels · bands); under half the general kernel's time per pixel
    ///   (BENCHMARKS.md "Build speed and memory against peers": the stages).
    static func bilinearGrid(
        _ window: BilinearWindow, cols: UnsafeBufferPointer<Double>, rows: UnsafeBufferPointer<Double>,
        into out: UnsafeMutableBufferPointer<Float>, valid: UnsafeMutableBufferPointer<UInt8>
    ) -> Bool {
        let n = cols.count, bands = window.bands
        precondition(
            rows.count == n && valid.count >= n && out.count >= n * bands
                && window.samples.count >= window.width * window.height * bands
                && window.valid.count >= window.width * window.height,
            "bilinear buffers do not match the grid and window")
        switch bands {
        case 1: return bilinearGrid(window, lanes: OneBand.self, cols: cols, rows: rows, into: out, valid: valid)
        case 3: return bilinearGrid(window, lanes: ThreeBands.self, cols: cols, rows: rows, into: out, valid: valid)
        case 4: return bilinearGrid(window, lanes: FourBands.self, cols: cols, rows: rows, into: out, valid: valid)
        default:
            var any = false
            for k in 0..<n where bilinearSample(cols[k], rows[k], window, into: out, at: k) {
                valid[k] = 1
                any = true
            }
            return any
        }
    }

    /// ``bilinearGrid(_:cols:rows:into:valid:)`` for `Lanes.count` (= bands, 1, 3 or 4),
    /// specialised per count (see ``BilinearLanes``).
    private static func bilinearGrid<Lanes: BilinearLanes>(
        _ window: BilinearWindow, lanes: Lanes.Type, cols: UnsafeBufferPointer<Double>,
        rows: UnsafeBufferPointer<Double>, into out: UnsafeMutableBufferPointer<Float>,
        valid: UnsafeMutableBufferPointer<UInt8>
    ) -> Bool {
        let ww = window.width, wh = window.height, x0 = window.x0, y0 = window.y0
        let wv = window.valid
        // The last column and row whose right/lower neighbour is still in the window.
        let lastU = Double(ww - 1), lastV = Double(wh - 1)
        let dx0 = Double(x0), dy0 = Double(y0)
        var any = false
        for k in 0..<cols.count {
            let c = cols[k], r = rows[k]
            // As the general kernel: u, v are the position among pixel centres.
            let u = c - 0.5 - dx0, v = r - 0.5 - dy0
            // Interior: both taps of each axis in the window (false for NaN, so the Int
            // conversions below see only 0 ≤ u < width − 1, where Int(u) is floor(u), and
            // c, r ≥ 0.5, where Int(c) is floor(c)).
            if u >= 0, v >= 0, u < lastU, v < lastV {
                let ci = Int(u), ri = Int(v)
                let p = ri * ww + ci
                // The nearest source pixel decides transparency, as in the general kernel.
                let nc = Int(c) - x0, nr = Int(r) - y0
                if nc >= 0, nr >= 0, nc < ww, nr < wh, wv[nr * ww + nc] != 0,
                    wv[p] != 0, wv[p + 1] != 0, wv[p + ww] != 0, wv[p + ww + 1] != 0
                {
                    let tx = u - Double(ci), ty = v - Double(ri)
                    if interior(
                        window, lanes: lanes, at: p, (1 - tx, tx), (1 - ty, ty), testingWeights: true, into: out, at: k)
                    {
                        valid[k] = 1
                        any = true
                    }
                    continue
                }
            }
            if bilinearSample(c, r, window, into: out, at: k) {
                valid[k] = 1
                any = true
            }
        }
        return any
    }

    /// ``bilinearGrid(_:cols:rows:into:valid:)`` for a separable mapping: pixel (i, j) of the
    /// `columns.count` × `rows.count` grid at source column `columns[i]` and row `rows[j]`
    /// (``ResampleWorkspace/separable``), with that kernel's bits on the expanded arrays.
    /// What a column or a row decides (its tap, fraction, one minus the fraction, whether it is
    /// interior) is worked out once for it, not at each pixel; in a ``BilinearWindow/plain``
    /// window an interior pixel reads no validity and tests no weight (a zero weight adds
    /// 0 · x = ±0 to a sum that starts at +0 and is never −0, so it changes nothing for finite
    /// x; and its first weight, (1 − tx)(1 − ty) with tx, ty < 1, is above 0). Other pixels
    /// take the general kernel, as there.
    /// - Cost: O(pixels · bands) and O(width + height) of set-up, no per-pixel coordinates;
    ///   one temporary allocation of a tap per column (on the stack for tiles).
    static func bilinearSeparable(
        _ window: BilinearWindow, columns: UnsafeBufferPointer<Double>, rows: UnsafeBufferPointer<Double>,
        into out: UnsafeMutableBufferPointer<Float>, valid: UnsafeMutableBufferPointer<UInt8>
    ) -> Bool {
        let n = columns.count * rows.count, bands = window.bands
        precondition(
            valid.count >= n && out.count >= n * bands
                && window.samples.count >= window.width * window.height * bands
                && window.valid.count >= window.width * window.height,
            "bilinear buffers do not match the grid and window")
        switch bands {
        case 1:
            return bilinearSeparable(window, lanes: OneBand.self, columns: columns, rows: rows, into: out, valid: valid)
        case 3:
            return bilinearSeparable(
                window, lanes: ThreeBands.self, columns: columns, rows: rows, into: out, valid: valid)
        case 4:
            return bilinearSeparable(
                window, lanes: FourBands.self, columns: columns, rows: rows, into: out, valid: valid)
        default:
            var any = false
            for j in 0..<rows.count {
                for i in 0..<columns.count
                where bilinearSample(columns[i], rows[j], window, into: out, at: j * columns.count + i) {
                    valid[j * columns.count + i] = 1
                    any = true
                }
            }
            return any
        }
    }

    /// A column's share of ``bilinearSeparable(_:columns:rows:into:valid:)``: its left tap in
    /// the window (-1 where not interior), fraction tx, 1 − tx, and nearest window column.
    private struct ColumnTap {
        var left: Int, tx: Double, rest: Double, nearest: Int
    }

    /// ``bilinearSeparable(_:columns:rows:into:valid:)`` for `Lanes.count` (= bands, 1, 3 or 4),
    /// specialised per count (see ``BilinearLanes``).
    private static func bilinearSeparable<Lanes: BilinearLanes>(
        _ window: BilinearWindow, lanes _: Lanes.Type, columns: UnsafeBufferPointer<Double>,
        rows: UnsafeBufferPointer<Double>, into out: UnsafeMutableBufferPointer<Float>,
        valid: UnsafeMutableBufferPointer<UInt8>
    ) -> Bool {
        let w = columns.count
        let ww = window.width, wh = window.height, x0 = window.x0, y0 = window.y0
        let wv = window.valid, plain = window.plain
        let lastU = Double(ww - 1), lastV = Double(wh - 1), dx0 = Double(x0), dy0 = Double(y0)
        return withUnsafeTemporaryAllocation(of: ColumnTap.self, capacity: w) { taps in
            // As ``bilinearGrid``: u is the position among pixel centres; interior when both taps
            // are in the window (false for NaN), where Int(u) and Int(c) are floors.
            for i in 0..<w {
                let c = columns[i], u = c - 0.5 - dx0
                if u >= 0, u < lastU {
                    let ci = Int(u), tx = u - Double(ci)
                    taps[i] = ColumnTap(left: ci, tx: tx, rest: 1 - tx, nearest: Int(c) - x0)
                } else {
                    taps[i] = ColumnTap(left: -1, tx: 0, rest: 0, nearest: 0)
                }
            }
            var any = false
            for j in 0..<rows.count {
                let r = rows[j], v = r - 0.5 - dy0, rowStart = j * w
                guard v >= 0, v < lastV else {
                    for i in 0..<w where bilinearSample(columns[i], r, window, into: out, at: rowStart + i) {
                        valid[rowStart + i] = 1
                        any = true
                    }
                    continue
                }
                let ri = Int(v), ty = v - Double(ri), restY = 1 - ty, nr = Int(r) - y0
                for i in 0..<w {
                    let k = rowStart + i, t = taps[i]
                    if t.left >= 0 {
                        let p = ri * ww + t.left
                        // The general interior's validity test, needless in a plain window.
                        if plain
                            || (t.nearest >= 0 && nr >= 0 && t.nearest < ww && nr < wh
                                && wv[nr * ww + t.nearest] != 0 && wv[p] != 0 && wv[p + 1] != 0 && wv[p + ww] != 0
                                && wv[p + ww + 1] != 0)
                        {
                            if interior(
                                window, lanes: Lanes.self, at: p, (t.rest, t.tx), (restY, ty), testingWeights: !plain,
                                into: out, at: k)
                            {
                                valid[k] = 1
                                any = true
                            }
                            continue
                        }
                    }
                    if bilinearSample(columns[i], r, window, into: out, at: k) {
                        valid[k] = 1
                        any = true
                    }
                }
            }
            return any
        }
    }

    /// An interior pixel (all four taps in the window and valid) from its taps at `p`, `p + 1`,
    /// `p + width` and `p + width + 1`, with (1 − tx, tx) and (1 − ty, ty) as given: the weights
    /// (1 − tx)(1 − ty), tx(1 − ty), (1 − tx)ty and tx·ty, the taps summed in that order and
    /// divided by the weights' sum, written as `Lanes.count` samples at `out[k · count]`; false
    /// (nothing written) when the sum is not above 0. `testingWeights`: a zero weight is
    /// skipped, not multiplied (0 · ∞ would be NaN); without it (a plain window: finite samples)
    /// it adds 0 · x = ±0 to a sum that starts at +0 and is never −0, which leaves it unchanged.
    /// Both kernels' interiors are this, so their bits agree with each other and with
    /// ``bilinearSample(_:_:_:into:at:)``'s.
    @inline(__always)
    private static func interior<Lanes: BilinearLanes>(
        _ window: BilinearWindow, lanes _: Lanes.Type, at p: Int, _ x: (rest: Double, t: Double),
        _ y: (rest: Double, t: Double), testingWeights: Bool, into out: UnsafeMutableBufferPointer<Float>, at k: Int
    ) -> Bool {
        let lanes = Lanes.count, win = window.samples, ww = window.width
        @inline(__always) func load(_ p: Int) -> SIMD4<Double> {
            let i = p * lanes
            switch lanes {
            case 1: return SIMD4(Double(win[i]), 0, 0, 0)
            case 3: return SIMD4(Double(win[i]), Double(win[i + 1]), Double(win[i + 2]), 0)
            default: return SIMD4(Double(win[i]), Double(win[i + 1]), Double(win[i + 2]), Double(win[i + 3]))
            }
        }
        let w0 = x.rest * y.rest, w1 = x.t * y.rest, w2 = x.rest * y.t, w3 = x.t * y.t
        let sum = w0 + w1 + w2 + w3
        guard sum > 0 else { return false }
        var acc = SIMD4<Double>()
        if !testingWeights || w0 > 0 { acc += w0 * load(p) }
        if !testingWeights || w1 > 0 { acc += w1 * load(p + 1) }
        if !testingWeights || w2 > 0 { acc += w2 * load(p + ww) }
        if !testingWeights || w3 > 0 { acc += w3 * load(p + ww + 1) }
        let inv = 1 / sum
        let o = k * lanes
        out[o] = Float(acc[0] * inv)
        if lanes >= 3 {
            out[o + 1] = Float(acc[1] * inv)
            out[o + 2] = Float(acc[2] * inv)
        }
        if lanes == 4 { out[o + 3] = Float(acc[3] * inv) }
        return true
    }

    /// The general bilinear kernel at one pixel centre (`c`, `r` in source pixels): the four
    /// nearest source pixel centres weighted by distance, invalid or outside ones dropped and
    /// the rest renormalised; false (nothing written) where the nearest source pixel is
    /// invalid or outside the window, or `c` is NaN. Writes `bands` samples at `out[k · bands]`.
    /// - Cost: O(bands), Double arithmetic.
    @inline(__always)
    static func bilinearSample(
        _ c: Double, _ r: Double, _ window: BilinearWindow, into out: UnsafeMutableBufferPointer<Float>, at k: Int
    ) -> Bool {
        let x0 = window.x0, y0 = window.y0, ww = window.width, wh = window.height, bands = window.bands
        let win = window.samples, wv = window.valid
        if c.isNaN { return false }
        // The nearest source pixel decides transparency (so edges stay where the source ends).
        let fc = fastFloor(c) - Double(x0), fr = fastFloor(r) - Double(y0)
        guard fc >= 0, fr >= 0, fc < Double(ww), fr < Double(wh), wv[Int(fr) * ww + Int(fc)] != 0 else { return false }
        let u = c - 0.5 - Double(x0), v = r - 0.5 - Double(y0)
        let cu = fastFloor(u), cv = fastFloor(v)
        let tx = u - cu, ty = v - cv
        let ci = Int(cu), ri = Int(cv)
        var weights = (0.0, 0.0, 0.0, 0.0)
        var idx = (0, 0, 0, 0)
        var sum = 0.0
        func take(_ dc: Int, _ dr: Int, _ w: Double) -> (Double, Int) {
            let cc = ci + dc, rr = ri + dr
            guard w > 0, cc >= 0, rr >= 0, cc < ww, rr < wh else { return (0, 0) }
            let p = rr * ww + cc
            return wv[p] != 0 ? (w, p) : (0, 0)
        }
        (weights.0, idx.0) = take(0, 0, (1 - tx) * (1 - ty))
        (weights.1, idx.1) = take(1, 0, tx * (1 - ty))
        (weights.2, idx.2) = take(0, 1, (1 - tx) * ty)
        (weights.3, idx.3) = take(1, 1, tx * ty)
        sum = weights.0 + weights.1 + weights.2 + weights.3
        guard sum > 0 else { return false }
        let inv = 1 / sum
        for b in 0..<bands {
            var acc = 0.0
            if weights.0 > 0 { acc += weights.0 * Double(win[idx.0 * bands + b]) }
            if weights.1 > 0 { acc += weights.1 * Double(win[idx.1 * bands + b]) }
            if weights.2 > 0 { acc += weights.2 * Double(win[idx.2 * bands + b]) }
            if weights.3 > 0 { acc += weights.3 * Double(win[idx.3 * bands + b]) }
            out[k * bands + b] = Float(acc * inv)
        }
        return true
    }
}

/// A band count the bilinear kernels are specialised for: a type, so that each count gets its
/// own loop with the band loop unrolled into SIMD lanes.
protocol BilinearLanes { static var count: Int { get } }
enum OneBand: BilinearLanes { static var count: Int { 1 } }
enum ThreeBands: BilinearLanes { static var count: Int { 3 } }
enum FourBands: BilinearLanes { static var count: Int { 4 } }
