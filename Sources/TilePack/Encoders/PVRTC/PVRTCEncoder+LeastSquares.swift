import TilePackCore
import TilePackCodec

// Least squares: the Gauss–Seidel sweep over colours A and B given the modulation, the hardware's bilinear upscale
// included.
// The encoder's levels and per-image driver are in PVRTCEncoder.swift; docs/PVRTC.md tells the algorithm.
extension PVRTCEncoder {
    /// One Gauss–Seidel sweep: every word's A and B re-solved (2 × 2 normal equations per
    /// channel over its wrapped footprint, neighbours fixed), quantised, and the residual updated.
    /// With `borderRing` set, only the words within that many words of an edge are re-solved.
    func refine(layout: PVRTCLayout, hasAlpha: Bool, borderRing: Int? = nil) {
        let bw = layout.format.blockWidth, width = layout.width
        let spanX = 2 * bw - 1, spanY = 7
        let xMask = layout.width - 1, yMask = layout.height - 1
        // Footprint weights: (bw − |dx|)(4 − |dy|) / (4 bw), the decoder's bilinear weights.
        var phi = [Float](repeating: 0, count: 15 * 7)
        for j in 0..<spanY {
            for i in 0..<spanX {
                phi[j * spanX + i] = Float((bw - abs(i - (bw - 1))) * (4 - abs(j - 3))) / Float(4 * bw)
            }
        }
        var xs = [Int](repeating: 0, count: 15), ys = [Int](repeating: 0, count: 7)
        var xe = [Float](repeating: 1, count: 15), ye = [Float](repeating: 1, count: 7)
        // Pixels within 2 px of a border count 4× in the fit: the wrapped upscaling blends
        // opposite borders, and the figure of merit is per-region PSNR, so a little interior
        // error is worth much less edge error (terrain1024: edge +0.7 dB, interior −0.03 dB;
        // 16× adds only 0.2 dB more at the edge and costs interior).
        let edgeWeight: Float = 4
        let lambda: Float = 0.02
        let punchMask = SIMD4<Float>(1, 1, 1, 0)
        phi.withUnsafeBufferPointer { phi in
            xs.withUnsafeMutableBufferPointer { xs in
                ys.withUnsafeMutableBufferPointer { ys in
                    residual.withUnsafeMutableBufferPointer { res in
                        weights.withUnsafeBufferPointer { weight in
                            colourWords.withUnsafeMutableBufferPointer { words in
                                valueA.withUnsafeMutableBufferPointer { va in
                                    valueB.withUnsafeMutableBufferPointer { vb in
                                        for wy in 0..<layout.wordsHigh {
                                            for j in 0..<spanY {
                                                let y = (wy * 4 - 1 + j) & yMask
                                                ys[j] = y * width
                                                ye[j] = y < 2 || y >= layout.height - 2 ? edgeWeight : 1
                                            }
                                            let rowInRing =
                                                borderRing.map { wy < $0 || wy >= layout.wordsHigh - $0 } ?? true
                                            for wx in 0..<layout.wordsWide {
                                                if let ring = borderRing, !rowInRing, wx >= ring,
                                                    wx < layout.wordsWide - ring
                                                {
                                                    continue
                                                }
                                                let left = wx * bw + bw / 2 - (bw - 1)
                                                for i in 0..<spanX {
                                                    xs[i] = (left + i) & xMask
                                                    xe[i] = xs[i] < 2 || xs[i] >= layout.width - 2 ? edgeWeight : 1
                                                }
                                                var suu = SIMD4<Float>.zero, suv = suu, svv = suu, sur = suu, svr = suu
                                                for j in 0..<spanY {
                                                    let rowBase = ys[j]
                                                    for i in 0..<spanX {
                                                        let p = rowBase + xs[i]
                                                        let f = phi[j * spanX + i]
                                                        let w = weight[p]
                                                        let m = Float(w & 0x0F) * 0.125
                                                        var u = SIMD4<Float>(repeating: f - f * m),
                                                            v = SIMD4<Float>(repeating: f * m)
                                                        if w & 0x80 != 0 { u *= punchMask; v *= punchMask }
                                                        let r = res[p]
                                                        let e = max(xe[i], ye[j])
                                                        let eu = u * e, ev = v * e
                                                        suu += eu * u; suv += eu * v; svv += ev * v
                                                        sur += eu * r; svr += ev * r
                                                    }
                                                }
                                                let index = wy * layout.wordsWide + wx
                                                let oldA = va[index], oldB = vb[index]
                                                // Right-hand side with this word's own contribution added back.
                                                let b1 = sur + suu * oldA + suv * oldB + lambda * oldA
                                                let b2 = svr + suv * oldA + svv * oldB + lambda * oldB
                                                let a11 = suu + lambda, a22 = svv + lambda
                                                let det = a11 * a22 - suv * suv
                                                let newA = ((a22 * b1 - suv * b2) / det).clamped(
                                                    lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                                                let newB = ((a11 * b2 - suv * b1) / det).clamped(
                                                    lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                                                let bitsA: UInt32, bitsB: UInt32, qa: SIMD4<Float>, qb: SIMD4<Float>
                                                if hasAlpha {
                                                    (bitsA, qa) = Self.quantiseA(newA, translucentAllowed: hasAlpha)
                                                    (bitsB, qb) = Self.quantiseB(newB, translucentAllowed: hasAlpha)
                                                } else {
                                                    (bitsA, qa, bitsB, qb) = Self.nearestOpaquePair(
                                                        newA, newB, a11: a11, a12: suv, a22: a22, b1: b1, b2: b2)
                                                }
                                                words[index] = bitsA | bitsB | (words[index] & 1)
                                                let dA = qa - oldA, dB = qb - oldB
                                                if dA == .zero && dB == .zero { continue }
                                                va[index] = qa
                                                vb[index] = qb
                                                for j in 0..<spanY {
                                                    let rowBase = ys[j]
                                                    for i in 0..<spanX {
                                                        let p = rowBase + xs[i]
                                                        let f = phi[j * spanX + i]
                                                        let w = weight[p]
                                                        let m = Float(w & 0x0F) * 0.125
                                                        var u = SIMD4<Float>(repeating: f - f * m),
                                                            v = SIMD4<Float>(repeating: f * m)
                                                        if w & 0x80 != 0 { u *= punchMask; v *= punchMask }
                                                        res[p] -= u * dA + v * dB
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Opaque colours A and B nearest the least-squares optimum in the fit's own metric: per
    /// channel, the quadratic `a11 a² + 2 a12 a b + a22 b² − 2 b1 a − 2 b2 b` over the decoded
    /// levels, A's code among the four around the optimum and B's the two around its best value
    /// given A. Rounding A and B separately ignores that the two are strongly correlated in a
    /// word's footprint (a12 is large), so a lattice point one step off in both can be better.
    /// Cost: 8 quadratic evaluations per channel, against 49 pixels of accumulation per word.
    @inline(__always) static func nearestOpaquePair(
        _ a: SIMD4<Float>, _ b: SIMD4<Float>, a11: SIMD4<Float>, a12: SIMD4<Float>, a22: SIMD4<Float>,
        b1: SIMD4<Float>, b2: SIMD4<Float>
    ) -> (UInt32, SIMD4<Float>, UInt32, SIMD4<Float>) {
        var codeA = SIMD4<Int32>(0, 0, 0, 0), codeB = codeA
        var valueA = SIMD4<Float>(0, 0, 0, 255), valueB = valueA
        for c in 0..<3 {
            let fourBitA = c == 2
            let stepA: Float = fourBitA ? 17 : 8.25, topA = fourBitA ? 15 : 31
            @inline(__always) func levelA(_ k: Int) -> Float { fourBitA ? level5(k << 1 | k >> 3) : level5(k) }
            let q11 = a11[c], q12 = a12[c], q22 = a22[c], r1 = b1[c], r2 = b2[c]
            let start = a[c].isFinite ? Int(min(max(a[c] / stepA, 0), Float(topA))) : 0
            var best = Float.greatestFiniteMagnitude, bestA = start, bestB = 0, bestVA: Float = 0, bestVB: Float = 0
            for k in max(start - 1, 0)...min(start + 2, topA) {
                let va = levelA(k)
                let vbOpt = (r2 - q12 * va) / q22  // q22 ≥ the fit's λ > 0
                // Clamped as a float first: the conversion traps outside Int's range (and on NaN).
                let low = vbOpt.isFinite ? Int(min(max(vbOpt / 8.25, 0), 31)) : 0
                for m in low...min(low + 1, 31) {
                    let vb = level5(m)
                    let e = q11 * va * va + 2 * q12 * va * vb + q22 * vb * vb - 2 * r1 * va - 2 * r2 * vb
                    if e < best { best = e; bestA = k; bestB = m; bestVA = va; bestVB = vb }
                }
            }
            codeA[c] = Int32(bestA); codeB[c] = Int32(bestB)
            valueA[c] = bestVA; valueB[c] = bestVB
        }
        let bitsA = UInt32(0x8000) | UInt32(codeA[0]) << 10 | UInt32(codeA[1]) << 5 | UInt32(codeA[2]) << 1
        let bitsB = (UInt32(0x8000) | UInt32(codeB[0]) << 10 | UInt32(codeB[1]) << 5 | UInt32(codeB[2])) << 16
        return (bitsA, valueA, bitsB, valueB)
    }
}
