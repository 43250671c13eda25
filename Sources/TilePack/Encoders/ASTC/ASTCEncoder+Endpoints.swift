import TilePackCore
import TilePackCodec

// Endpoints: fitting (fast, exact, dual plane, colour-scaled) and least-squares refits of the endpoints to the decoded
// weights.
// The encoder's state and search are in ASTCEncoder.swift; docs/ASTC.md tells the algorithm.
extension ASTCEncoder {
    /// The line through black that best fits each partition's RGB (the dominant direction of
    /// the texels' uncentred second moments), its ends at the texels' extreme projections
    /// (the dark end not below black), in `chromaEnds` with alpha 255: colour-scaled
    /// endpoints can only lie on such a line. Cost: one pass over the texels, power iteration
    /// on a 3 × 3 matrix.
    func setChromaEnds(partitions: Int, mask: UInt64) {
        let all = UInt64.max >> UInt64(64 - texelCount)
        let rgb = SIMD4<Float>(1, 1, 1, 0)
        for p in 0..<partitions {
            let m = partitions == 1 ? all : (p == 0 ? all & ~mask : mask)
            var r0 = SIMD4<Float>(), r1 = SIMD4<Float>(), r2 = SIMD4<Float>(), sum = SIMD4<Float>()
            for t in 0..<texelCount where m >> UInt64(t) & 1 == 1 {
                let x = texels[t] * rgb
                r0 += x * x[0]; r1 += x * x[1]; r2 += x * x[2]; sum += x
            }
            var axis = sum
            for _ in 0..<4 {
                var next: SIMD4<Float> = r0 * axis[0]
                next += r1 * axis[1]
                next += r2 * axis[2]
                let biggest: Float = next.max()
                if !(biggest > 1e-6) { break }
                axis = next / biggest
            }
            let len2 = (axis * axis).sum()
            var lo: Float = 0, hi: Float = 0
            if len2 > 0 {
                axis /= len2.squareRoot()
                lo = .greatestFiniteMagnitude
                for t in 0..<texelCount where m >> UInt64(t) & 1 == 1 {
                    let s = (texels[t] * axis).sum()
                    lo = min(lo, s); hi = max(hi, s)
                }
                lo = max(lo, 0)
            }
            let opaque = SIMD4<Float>(0, 0, 0, 255)
            chromaEnds[2 * p] = axis * lo + opaque
            chromaEnds[2 * p + 1] = axis * hi + opaque
        }
    }

    /// Fits dual-plane layout `c` (one partition, opaque; channel `ch` on the second plane):
    /// `axisEnds` with channel `ch` replaced by its range, quantised; both planes' weights
    /// (plane 1 projected on the ends' line without `ch`, plane 2 along `ch` alone), then
    /// `refits` rounds of per-plane least-squares ends and weights again. Leaves plane 1 in
    /// `gridQ`/`texelW`, plane 2 in `gridQ + 32`/`texelW + 64` (a plane has at most 32 grid
    /// weights), the ends in `colourQ`, `base`/`slope`. Returns the exact decoded error.
    /// Cost: (refits + 1) × two weight passes and two refits over the texels.
    func fitDual(_ c: Candidate, channel ch: Int, refits: Int) -> Int {
        var lo: Float = 255, hi: Float = 0
        for t in 0..<texelCount { lo = min(lo, texels[t][ch]); hi = max(hi, texels[t][ch]) }
        ends[0] = axisEnds[0]; ends[1] = axisEnds[1]
        ends[0][ch] = lo; ends[1][ch] = hi
        var mask = SIMD4<Float>(1, 1, 1, 0)
        mask[ch] = 0
        var round = 0
        while true {
            quantiseEnds(partitions: 0..<1, level: c.rgbLevel, opaque: true)
            let o = decodedEnds[0], d = (decodedEnds[1] - o) * mask
            let len = (d * d).sum(), dn = len > 0 ? d / len : SIMD4<Float>()
            for t in 0..<texelCount { ideal[t] = min(max(((texels[t] - o) * dn).sum(), 0), 1) }
            quantiseGrid(c, ideal, into: gridQ)
            let span = decodedEnds[1][ch] - o[ch], inverse: Float = span != 0 ? 1 / span : 0
            for t in 0..<texelCount { ideal[t] = min(max((texels[t][ch] - o[ch]) * inverse, 0), 1) }
            quantiseGrid(c, ideal, into: gridQ + 32)
            infillPlane(c, from: gridQ, into: texelW)
            infillPlane(c, from: gridQ + 32, into: texelW + 64)
            if round == refits { break }
            round += 1
            if let (e0, e1) = leastSquaresEnds(weights: texelW) {
                ends[0] = e0; ends[1] = e1
            }
            if let (e0, e1) = leastSquaresEnds(weights: texelW + 64) {
                ends[0][ch] = e0[ch]; ends[1][ch] = e1[ch]
            }
        }
        var sum = 0
        for t in 0..<texelCount { sum += Int(dualTexelError(t, texelW[t], texelW[64 + t], channel: ch)) }
        return sum
    }

    /// Squared error of texel `t` decoded with weight `w1` in every channel but `ch`, `w2` in `ch`.
    @inline(__always)
    func dualTexelError(_ t: Int, _ w1: Int32, _ w2: Int32, channel ch: Int) -> Int32 {
        var w = SIMD4<Int32>(repeating: w1)
        w[ch] = w2
        let d = ((base[0] &+ slope[0] &* w) &>> 14) &- texelInts[t]
        return (d &* d).wrappedSum()
    }

    /// Least-squares endpoints of all texels (one partition) for decoded `weights` (0…64);
    /// nil when the weights are too nearly constant to solve.
    /// Cost: one pass over the texels.
    func leastSquaresEnds(weights: UnsafeMutablePointer<Int32>) -> (SIMD4<Float>, SIMD4<Float>)? {
        var a00: Float = 0, a01: Float = 0, a11: Float = 0
        var b0 = SIMD4<Float>(), b1 = SIMD4<Float>()
        for t in 0..<texelCount {
            let w = Float(weights[t]) * (1 / 64), v = 1 - w
            a00 += v * v; a01 += v * w; a11 += w * w
            b0 += texels[t] * v; b1 += texels[t] * w
        }
        let det = a00 * a11 - a01 * a01
        guard abs(det) > 1e-3 else { return nil }
        let inverse = 1 / det
        return (clampColour((b0 * a11 - b1 * a01) * inverse), clampColour((b1 * a00 - b0 * a01) * inverse))
    }

    /// `fast`'s fit of ``fastCandidate`` (one partition), four texels a lane from `planes`:
    /// principal axis from one pass of sums (the texels are integers, so the Float sums of
    /// values and products are exact up to 64 texels), ends at the extreme projections
    /// (`axisEnds`), quantised; weights against them; one least-squares refit; weights again.
    /// Leaves `gridQ`, `colourQ`, `texelW`, `base`/`slope` as ``fit(_:partitions:opaque:refits:scored:)``
    /// does, for `quality` to score and build on.
    /// Cost: three passes over `planes` and two weight passes (plus the infill taps twice when
    /// the layout's grid is decimated); no per-texel division or horizontal add.
    func fitFast(opaque: Bool, scored: Bool) {
        let n = chunkCount
        let r = planes, g = planes + 16, b = planes + 32, a = planes + 48
        var sr = SIMD4<Float>(), sg = SIMD4<Float>(), sb = SIMD4<Float>(), sa = SIMD4<Float>()
        var rr = SIMD4<Float>(), rg = SIMD4<Float>(), rb = SIMD4<Float>(), gg = SIMD4<Float>(), gb = SIMD4<Float>(),
            bb = SIMD4<Float>()
        var ra = SIMD4<Float>(), ga = SIMD4<Float>(), ba = SIMD4<Float>(), aa = SIMD4<Float>()
        for k in 0..<n {
            let x = r[k], y = g[k], z = b[k]
            sr += x; sg += y; sb += z
            rr += x * x; rg += x * y; rb += x * z; gg += y * y; gb += y * z; bb += z * z
        }
        if !opaque {
            for k in 0..<n {
                let w = a[k]
                sa += w; ra += r[k] * w; ga += g[k] * w; ba += b[k] * w; aa += w * w
            }
        }
        let sums = SIMD4<Float>(sr.sum(), sg.sum(), sb.sum(), opaque ? 255 * Float(texelCount) : sa.sum())
        channelSums = sums
        let mean = sums * (1 / Float(texelCount))
        // Covariance rows: Σxy − mean_x·Σy (no alpha column when alpha is constant).
        let centred = opaque ? sums * SIMD4<Float>(1, 1, 1, 0) : sums
        let c0 = SIMD4<Float>(rr.sum(), rg.sum(), rb.sum(), ra.sum()) - mean[0] * centred
        let c1 = SIMD4<Float>(rg.sum(), gg.sum(), gb.sum(), ga.sum()) - mean[1] * centred
        let c2 = SIMD4<Float>(rb.sum(), gb.sum(), bb.sum(), ba.sum()) - mean[2] * centred
        let c3 = opaque ? SIMD4<Float>() : SIMD4<Float>(ra.sum(), ga.sum(), ba.sum(), aa.sum()) - mean[3] * centred
        // Power iteration from the row of the largest variance (already one step along the axis).
        var axis = c0, largest = c0[0]
        if c1[1] > largest { axis = c1; largest = c1[1] }
        if c2[2] > largest { axis = c2; largest = c2[2] }
        if c3[3] > largest { axis = c3 }
        for _ in 0..<4 {
            var next: SIMD4<Float> = c0 * axis[0]
            next += c1 * axis[1]
            next += c2 * axis[2]
            next += c3 * axis[3]
            let magnitude = next.replacing(with: -next, where: next .< 0)
            let m = max(max(magnitude[0], magnitude[1]), max(magnitude[2], magnitude[3]))
            if !(m >= 1e-6) { break }
            axis = next * (1 / m)
        }
        let len2 = (axis * axis).sum()
        var tmin: Float = 0, tmax: Float = 0
        if len2 > 0 {
            var lo = SIMD4<Float>(repeating: .greatestFiniteMagnitude), hi = -lo
            if opaque {
                for k in 0..<n {
                    var s: SIMD4<Float> = r[k] * axis[0] + g[k] * axis[1]
                    s += b[k] * axis[2]
                    lo = lo.replacing(with: s, where: s .< lo); hi = hi.replacing(with: s, where: s .> hi)
                }
            } else {
                for k in 0..<n {
                    var s: SIMD4<Float> = r[k] * axis[0] + g[k] * axis[1]
                    s += b[k] * axis[2] + a[k] * axis[3]
                    lo = lo.replacing(with: s, where: s .< lo); hi = hi.replacing(with: s, where: s .> hi)
                }
            }
            let centre = (mean * axis).sum(), inverse = 1 / len2
            let least = min(min(lo[0], lo[1]), min(lo[2], lo[3])), most = max(max(hi[0], hi[1]), max(hi[2], hi[3]))
            tmin = (least - centre) * inverse; tmax = (most - centre) * inverse
        }
        axisEnds[0] = mean + axis * tmin
        axisEnds[1] = mean + axis * tmax
        fastAxisEnds = (axisEnds[0], axisEnds[1])

        let c = fastCandidate
        let level = opaque ? c.rgbLevel : c.rgbaLevel
        ends[0] = axisEnds[0]; ends[1] = axisEnds[1]
        quantiseEnds(partitions: 0..<1, level: level, opaque: opaque)
        computeWeightsFast(c, opaque: opaque)
        // Least squares for e0·(1 − w) + e1·w with the decoded weights:
        // Σ(1−w)² = n − 2Σw + Σw², Σ(1−w)w = Σw − Σw², Σx(1−w) = Σx − Σxw.
        var sw = SIMD4<Float>(), sww = SIMD4<Float>(), srw = SIMD4<Float>(), sgw = SIMD4<Float>(), sbw = SIMD4<Float>(),
            saw = SIMD4<Float>()
        for k in 0..<n {
            let w = weightChunks[k]
            sw += w; sww += w * w; srw += r[k] * w; sgw += g[k] * w; sbw += b[k] * w
        }
        if !opaque { for k in 0..<n { saw += a[k] * weightChunks[k] } }
        let s1 = sw.sum() * (1 / 64), s2 = sww.sum() * (1 / 4096)
        let a11 = s2, a01 = s1 - s2, a00 = Float(texelCount) - 2 * s1 + s2
        let b1 = SIMD4<Float>(srw.sum(), sgw.sum(), sbw.sum(), opaque ? 255 * s1 * 64 : saw.sum()) * (1 / 64)
        let b0 = sums - b1
        let det = a00 * a11 - a01 * a01
        if abs(det) > 1e-3 {
            let inverse = 1 / det
            ends[0] = clampColour((b0 * a11 - b1 * a01) * inverse)
            ends[1] = clampColour((b1 * a00 - b0 * a01) * inverse)
        }
        quantiseEnds(partitions: 0..<1, level: level, opaque: opaque)
        computeWeightsFast(c, opaque: opaque, decoded: scored)
    }

    /// Fits layout `c` to the current partitioning: principal-axis endpoints quantised,
    /// weights against them, then `refits` rounds of least-squares endpoints and weights
    /// again. Leaves the result in `gridQ`, `colourQ`, `texelW`, `base`/`slope`.
    /// Returns the exact decoded squared error (0 when not `scored`: `fast` never compares).
    /// Cost: (refits + 1) × (one pass over the texels for weights, the infill taps twice).
    func fit(_ c: Candidate, partitions: Int, opaque: Bool, refits: Int, scored: Bool = true) -> Int {
        let level = opaque ? c.rgbLevel : c.rgbaLevel
        ends.update(from: c.scaled ? chromaEnds : axisEnds, count: 2 * partitions)
        if c.mixed { (ends + 2 * mixedScaled).update(from: chromaEnds + 2 * mixedScaled, count: 2) }
        quantise(c, partitions: partitions, level: level, opaque: opaque)
        var round = 0
        while true {
            computeWeights(c, partitions: partitions)
            if round == refits { break }
            round += 1
            refitEnds(partitions: partitions)
            if c.scaled { for p in 0..<partitions { refitScaledEnds(partition: p) } }
            if c.mixed { refitScaledEnds(partition: mixedScaled) }
            quantise(c, partitions: partitions, level: level, opaque: opaque)
        }
        return scored ? error(partitions: partitions) : 0
    }

    /// After the weight steps: the endpoints refitted (least squares) to the stepped weights and
    /// quantised again, weights kept; returns the exact error, which the caller keeps only when
    /// it is lower (the steps moved weights the last refit did not see).
    /// Cost: one refit and one error pass over the texels.
    func refitToWeights(_ c: Candidate, partitions: Int, opaque: Bool) -> Int {
        refitEnds(partitions: partitions)
        if c.scaled { for p in 0..<partitions { refitScaledEnds(partition: p) } }
        if c.mixed { refitScaledEnds(partition: mixedScaled) }
        quantise(c, partitions: partitions, level: opaque ? c.rgbLevel : c.rgbaLevel, opaque: opaque)
        return error(partitions: partitions)
    }

    /// Least-squares endpoints of each partition for the decoded weights in `texelW`.
    @inline(__always)
    func refitEnds(partitions: Int) {
        for p in 0..<partitions {
            var a00: Float = 0, a01: Float = 0, a11: Float = 0
            var b0 = SIMD4<Float>(), b1 = SIMD4<Float>()
            for t in 0..<texelCount where partitionOf[t] == p {
                let w = Float(texelW[t]) * (1 / 64), v = 1 - w
                a00 += v * v; a01 += v * w; a11 += w * w
                b0 += texels[t] * v; b1 += texels[t] * w
            }
            let det = a00 * a11 - a01 * a01
            guard abs(det) > 1e-3 else { continue }
            let inverse = 1 / det
            ends[2 * p] = clampColour((b0 * a11 - b1 * a01) * inverse)
            ends[2 * p + 1] = clampColour((b1 * a00 - b0 * a01) * inverse)
        }
    }

    /// Least-squares colour-scaled endpoints of partition `p` for the decoded weights in
    /// `texelW`: texels are modelled as `bright × (s + (1 − s)·w)`, so the bright end and the
    /// scale `s` are solved in turn (one round from the decoded ends' scale: a second round,
    /// as before the fourth pass, bought 0.02 dB on terrain1024 for ~5 % of `quality`'s time). An
    /// unconstrained refit projected on the line through black later loses the ends' ratio.
    /// Leaves `ends[2p] = s · bright`, `ends[2p + 1] = bright`.
    /// Cost: two passes over the partition's texels.
    func refitScaledEnds(partition p: Int) {
        let rgb = SIMD4<Float>(1, 1, 1, 0)
        let d0 = decodedEnds[2 * p] * rgb, d1 = decodedEnds[2 * p + 1] * rgb
        let n1 = (d1 * d1).sum()
        guard n1 > 0 else { return }
        var s = min(max((d0 * d1).sum() / n1, 0), 1)
        var ff: Float = 0, fx = SIMD4<Float>()
        for t in 0..<texelCount where partitionOf[t] == p {
            let w = Float(texelW[t]) * (1 / 64)
            let f = s + (1 - s) * w
            ff += f * f; fx += texels[t] * f
        }
        guard ff > 0 else { return }
        let bright = clampColour(fx / ff) * rgb
        let bb = (bright * bright).sum()
        guard bb > 0 else { return }
        var vr: Float = 0, vv: Float = 0
        for t in 0..<texelCount where partitionOf[t] == p {
            let w = Float(texelW[t]) * (1 / 64), v = 1 - w
            vr += v * ((texels[t] * rgb - bright * w) * bright).sum()
            vv += v * v
        }
        if vv > 0 { s = min(max(vr / (vv * bb), 0), 1) }
        let opaque = SIMD4<Float>(0, 0, 0, 255)
        ends[2 * p] = bright * s + opaque
        ends[2 * p + 1] = bright + opaque
    }
}
