import TilePackCore
import TilePackCodec

// Colour quantisation: endpoints to the layout's colour level: direct, base + offset, and colour-scaled (base + scale).
// The encoder's state and search are in ASTCEncoder.swift; docs/ASTC.md tells the algorithm.
extension ASTCEncoder {
    @inline(__always)
    func quantise(_ c: Candidate, partitions: Int, level: Int, opaque: Bool) {
        if c.luminance {
            quantiseLuminanceEnds(level: level)
        } else if c.mixed {
            // Partition 0's values first: four (scaled) or six (direct).
            let p = mixedScaled
            quantiseScaledEnds(partitions: p..<p + 1, level: level, valuesAt: p == 0 ? 0 : 6)
            quantiseEnds(partitions: 1 - p..<2 - p, level: level, opaque: true, valuesAt: p == 0 ? 4 : 0)
        } else if c.scaled {
            quantiseScaledEnds(partitions: 0..<partitions, level: level)
        } else {
            quantiseEnds(partitions: 0..<partitions, level: level, opaque: opaque)
        }
    }

    /// Rounds `ends` (one partition) to luminance endpoints (mode 0): each end's mean of R, G
    /// and B at the colour level. Fills `colourQ` (two values), `decodedEnds` and the
    /// interpolation constants. Cost: two table reads.
    @inline(__always)
    func quantiseLuminanceEnds(level: Int) {
        let table = colourQuant + level * 256, values = colourValue + level * 256
        let rgb = SIMD4<Float>(1, 1, 1, 0)
        for k in 0..<2 {
            let l = min(max((clampColour(ends[k]) * rgb).sum() / 3 + 0.5, 0), 255)
            let v = table[Int(l)]
            colourQ[k] = v
            let q = Int32(values[Int(v)])
            decodedEnds[k] = SIMD4<Float>(SIMD4<Int32>(q, q, q, 255))
        }
        let q0 = SIMD4<Int32>(decodedEnds[0]), q1 = SIMD4<Int32>(decodedEnds[1])
        base[0] = 257 &* 64 &* q0 &+ 32
        slope[0] = 257 &* (q1 &- q0)
    }

    /// Rounds `ends` to colour-scaled endpoints (mode 6) at the colour level: both ends are
    /// projected on the line through black along their sum, the bright end rounded per
    /// channel, then the scale that brings the decoder's `(colour × scale) >> 8` nearest the
    /// dark end (least squares, the shift's mean ½ added back). Fills `colourQ` (R, G, B,
    /// scale per partition), `decodedEnds` and the interpolation constants.
    /// `valuesAt`: where the first partition's values go in `colourQ` (mixed layouts).
    /// Cost: a few vector operations a partition.
    @inline(__always)
    func quantiseScaledEnds(partitions: Range<Int>, level: Int, valuesAt start: Int = 0) {
        let table = colourQuant + level * 256, values = colourValue + level * 256
        let rgb = SIMD4<Float>(1, 1, 1, 0)
        for p in partitions {
            let a = clampColour(ends[2 * p]) * rgb, b = clampColour(ends[2 * p + 1]) * rgb
            var d = a + b
            let n2 = (d * d).sum()
            var lo: Float = 0, hi: Float = 0
            if n2 > 0 {
                d /= n2.squareRoot()
                lo = (a * d).sum(); hi = (b * d).sum()
                if lo > hi { swap(&lo, &hi) }
                lo = max(lo, 0)
            }
            let bright = clampColour(d * hi + 0.5)
            var q1 = SIMD4<Int32>(0, 0, 0, 255)
            let out = colourQ + start + (p - partitions.lowerBound) * 4
            for ch in 0..<3 {
                let v = table[Int(bright[ch])]
                out[ch] = v
                q1[ch] = Int32(values[Int(v)])
            }
            let qf: SIMD4<Float> = SIMD4<Float>(q1) * rgb
            let qq: Float = (qf * qf).sum()
            let dark: SIMD4<Float> = d * lo + 0.5
            let scale: Float = qq > 0 ? 256 * (qf * dark).sum() / qq : 0
            let s = table[Int(scale >= 0 ? min(scale + 0.5, 255) : 0)]
            out[3] = s
            let sv = Int32(values[Int(s)])
            let q0 = SIMD4<Int32>((q1[0] &* sv) >> 8, (q1[1] &* sv) >> 8, (q1[2] &* sv) >> 8, 255)
            decodedEnds[2 * p] = SIMD4<Float>(q0)
            decodedEnds[2 * p + 1] = SIMD4<Float>(q1)
            base[p] = 257 &* 64 &* q0 &+ 32
            slope[p] = 257 &* (q1 &- q0)
        }
    }

    /// Rounds `ends` to the colour level, filling `colourQ` (from `valuesAt`), `decodedEnds` and the
    /// integer interpolation constants. Stored as they are (swapped so that the decoder does not
    /// blue-contract them) or, opaque under 256 colour values, blue-contracted when that decodes
    /// closer to `ends` (``contractIfCloser(_:level:q0:q1:s0:s1:)``).
    @inline(__always)
    func quantiseEnds(partitions: Range<Int>, level: Int, opaque: Bool, valuesAt start: Int = 0) {
        let channels = opaque ? 3 : 4
        let table = colourQuant + level * 256, values = colourValue + level * 256
        for p in partitions {
            var q0 = SIMD4<Int32>(0, 0, 0, 255), q1 = q0, s0 = SIMD4<Int32>(), s1 = s0
            let e0 = clampColour(ends[2 * p] + 0.5), e1 = clampColour(ends[2 * p + 1] + 0.5)
            for ch in 0..<channels {
                let a = table[Int(e0[ch])], b = table[Int(e1[ch])]
                s0[ch] = Int32(a); s1[ch] = Int32(b)
                q0[ch] = Int32(values[Int(a)]); q1[ch] = Int32(values[Int(b)])
            }
            if q0[0] + q0[1] + q0[2] > q1[0] + q1[1] + q1[2] { swap(&q0, &q1); swap(&s0, &s1) }
            if channels == 3 && level < 20 {
                contractIfCloser(p, level: level, q0: &q0, q1: &q1, s0: &s0, s1: &s1)
            }
            let out = colourQ + start + (p - partitions.lowerBound) * 2 * channels
            for ch in 0..<channels {
                out[2 * ch] = UInt8(truncatingIfNeeded: s0[ch])
                out[2 * ch + 1] = UInt8(truncatingIfNeeded: s1[ch])
            }
            decodedEnds[2 * p] = SIMD4<Float>(q0)
            decodedEnds[2 * p + 1] = SIMD4<Float>(q1)
            base[p] = 257 &* 64 &* q0 &+ 32
            slope[p] = 257 &* (q1 &- q0)
        }
    }

    /// Blue contraction for direct RGB endpoints (mode 8) of partition `p`: when the second end's
    /// stored R + G + B is the smaller, the decoder swaps the ends and decodes each as
    /// `((r + b) >> 1, (g + b) >> 1, b)`, so R and G stored as `2x − b` land on a grid twice as fine
    /// as their colour level's. Replaces the plain rounding (`q0`, `q1` decoded, `s0`, `s1` the
    /// colour-level indices of the first and second slot) when the contracted ends are closer to
    /// `ends` (summed squared RGB distance, either pairing of the plain ends) and the two stored
    /// sums differ. astcenc stores direct endpoints this way whenever they fit; measured on
    /// astronaut512 `quality` 6×6 +0.10 dB, 4×4 +0.16 dB, `fast` 4×4 +0.42 dB (docs/ASTC.md).
    /// Cost: six table reads and a few vector operations.
    @inline(__always)
    func contractIfCloser(
        _ p: Int, level: Int, q0: inout SIMD4<Int32>, q1: inout SIMD4<Int32>, s0: inout SIMD4<Int32>,
        s1: inout SIMD4<Int32>
    ) {
        let table = colourQuant + level * 256, values = colourValue + level * 256
        let f0 = clampColour(ends[2 * p]), f1 = clampColour(ends[2 * p + 1])
        // One end stored contracted: blue rounded as it is, then R and G as 2x − b (+ 1: the
        // decoder's shift rounds down), clamped to the stored range.
        func contracted(_ e: SIMD4<Float>) -> (sum: Int32, index: SIMD4<Int32>, decoded: SIMD4<Int32>) {
            let vb = table[Int(e[2] + 0.5)], ub = Int32(values[Int(vb)])
            var stored = SIMD4<Int32>(0, 0, ub, 255), index = SIMD4<Int32>(0, 0, Int32(vb), 0)
            for ch in 0..<2 {
                let v = table[Int(min(max(2 * e[ch] - Float(ub) + 1, 0), 255))]
                index[ch] = Int32(v)
                stored[ch] = Int32(values[Int(v)])
            }
            return (stored[0] + stored[1] + ub, index, ASTCEndpoints.uncontract(stored))
        }
        let a = contracted(f0), b = contracted(f1)
        guard a.sum != b.sum else { return }
        let rgb = SIMD4<Float>(1, 1, 1, 0)
        func distance(_ x: SIMD4<Int32>, _ e: SIMD4<Float>) -> Float {
            let d = (SIMD4<Float>(x) - e) * rgb
            return (d * d).sum()
        }
        let plain = min(distance(q0, f0) + distance(q1, f1), distance(q0, f1) + distance(q1, f0))
        guard distance(a.decoded, f0) + distance(b.decoded, f1) < plain else { return }
        // The end with the smaller stored sum goes in the second slot and decodes first.
        let (first, second) = a.sum < b.sum ? (b, a) : (a, b)
        q0 = second.decoded
        q1 = first.decoded
        s0 = first.index
        s1 = second.index
    }

    /// Rounds `ends` to base + offset endpoints (mode 9, opaque): the darker end (smaller
    /// R + G + B) is the base, the other its offset, −32…31 a channel. At a colour level under
    /// 256 values the base and the offset each land on a grid twice as fine as direct
    /// endpoints' (the decoder halves both values and moves one bit across), so ends close
    /// together round more finely. Fills `colourQ`, `decodedEnds` and the interpolation
    /// constants as ``quantiseEnds(partitions:level:opaque:valuesAt:)`` does. Returns false
    /// (leaving them partly written) when a partition's ends are more than 32 apart in a
    /// channel, or its rounded offsets sum below zero (the decoder would then swap the ends
    /// and blue-contract them).
    /// Cost: a few table reads a channel.
    func quantiseOffsetEnds(partitions: Int, level: Int) -> Bool {
        let values = colourValue + level * 256
        for p in 0..<partitions {
            var e0 = clampColour(ends[2 * p]), e1 = clampColour(ends[2 * p + 1])
            let rgb = SIMD4<Float>(1, 1, 1, 0)
            if (e0 * rgb).sum() > (e1 * rgb).sum() { swap(&e0, &e1) }
            let spread = (e1 - e0) * rgb
            guard spread.max() <= 32, spread.min() >= -33 else { return false }
            var q0 = SIMD4<Int32>(0, 0, 0, 255), q1 = q0, offsetSum: Int32 = 0
            let out = colourQ + 6 * p
            for ch in 0..<3 {
                let entry = Int(offsetBase[level * 256 + Int(e0[ch] + 0.5)])
                let first = entry & 0xFF, top = entry >> 8
                let b = Int32(values[first]) >> 1 | Int32(top) << 7
                let wanted = min(max(Int((e1[ch] - Float(b) + 32.5).rounded(.down)), 0), 63)
                let second = Int(offsetValue[(level * 2 + top) * 64 + wanted])
                var o = (Int32(values[second]) >> 1) & 0x3F
                if o & 0x20 != 0 { o -= 0x40 }
                out[2 * ch] = UInt8(truncatingIfNeeded: first)
                out[2 * ch + 1] = UInt8(truncatingIfNeeded: second)
                q0[ch] = b
                q1[ch] = min(max(b + o, 0), 255)
                offsetSum += o
            }
            guard offsetSum >= 0 else { return false }
            decodedEnds[2 * p] = SIMD4<Float>(q0)
            decodedEnds[2 * p + 1] = SIMD4<Float>(q1)
            base[p] = 257 &* 64 &* q0 &+ 32
            slope[p] = 257 &* (q1 &- q0)
        }
        return true
    }
}
