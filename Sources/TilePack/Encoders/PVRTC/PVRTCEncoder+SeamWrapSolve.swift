import TilePackCore
import TilePackCodec

// MARK: Seam wrap solve

extension PVRTCEncoder {
    /// Per footprint pixel of a wrap pair
    /// (``seamWrapSolve(_:layout:first:second:originX:originY:wordsAcross:wordsDown:)``).
    struct SeamWrapPixel {
        /// Row-major indices of the four words the pixel's bilinear sum reads, and their weights (total 16).
        var words: (Int, Int, Int, Int)
        var f: SIMD4<Int32>
        var target: SIMD4<Int32>
        /// 0, 3, 5, 8 (or 0, 4, 4, 8 when the pixel's own word is punch-through).
        var modulation: SIMD4<Int32>
        /// Bilinear weights of the pair's first and second word at this pixel.
        var weight0: Int32
        var weight1: Int32
        var importance: Int32
        var visible: Int32
        /// The modulation weight the pixel chose in the last exact decode (−1 before the first).
        var chosen: Int32
        /// `chosen` after the decode of the current start, restored for each fit weight.
        var startChosen: Int32
        /// The bilinear sums of A and B without the pair's share (the other words never move here).
        var restA: SIMD4<Int32>
        var restB: SIMD4<Int32>
        /// Squared alpha error per modulation value: the pair stays opaque, so it never changes here.
        var alpha: SIMD4<Int32>
    }

    /// Normal-equation sums of the pair fit over one class of pixels (band or not), in integer
    /// units: rows of Σ c cᵀ and Σ c·r per channel, c = ((8−m)·w0, m·w0, (8−m)·w1, m·w1) and
    /// r = 512·target − 33·((8−m)·restA + m·restB). Every term is an integer below 2³², so sums
    /// in Double are exact and a pixel's share can be taken out again when its modulation changes.
    struct SeamFitSums {
        var m0 = SIMD4<Double>(), m1 = SIMD4<Double>(), m2 = SIMD4<Double>(), m3 = SIMD4<Double>()
        var r = SIMD4<Double>(), g = SIMD4<Double>(), b = SIMD4<Double>()

        @inline(__always) mutating func add(_ s: SeamWrapPixel, modulation m: Int32, sign: Double) {
            let c = SIMD4<Double>(
                Double((8 - m) * s.weight0), Double(m * s.weight0), Double((8 - m) * s.weight1), Double(m * s.weight1))
            let r = SIMD4<Double>(512 &* s.target &- 33 &* ((8 &- m) &* s.restA &+ m &* s.restB))
            let sc = c * sign
            m0 += sc * c.x; m1 += sc * c.y; m2 += sc * c.z; m3 += sc * c.w
            self.r += sc * r.x; g += sc * r.y; b += sc * r.z
        }
    }

    /// The opaque colour word with expanded lanes `a` (R5 G5 B, A's blue rounded to its 4-bit
    /// code) and `b` (R5 G5 B5), keeping `mode` (bit 0, punch-through).
    @inline(__always) static func seamOpaqueWord(_ a: SIMD4<Int32>, _ b: SIMD4<Int32>, mode: UInt32) -> UInt32 {
        // The 4-bit code whose expansion c<<1 | c>>3 is nearest the lane.
        var blue: Int32 = 0, nearest = Int32.max
        for c in max(0, (a.z >> 1) - 1)...min(15, (a.z >> 1) + 1) {
            let d = abs(((c << 1) | (c >> 3)) - a.z)
            if d < nearest { nearest = d; blue = c }
        }
        let wa =
            0x8000 | UInt32(truncatingIfNeeded: a.x) << 10 | UInt32(truncatingIfNeeded: a.y) << 5 | UInt32(
                truncatingIfNeeded: blue) << 1
        let wb =
            0x8000_0000 | UInt32(truncatingIfNeeded: b.x) << 26 | UInt32(truncatingIfNeeded: b.y) << 21 | UInt32(
                truncatingIfNeeded: b.z) << 16
        return wa | wb | (mode & 1)
    }

    /// The two opaque words facing each other across the wrap (last and first of a row or
    /// column), re-fitted together: started from the words as they are, with A and B of the
    /// first swapped, and with those of the second swapped (which end carries which side's
    /// colour decides which colours the band pixels between them mix, and no ±1 move crosses
    /// that), each start alternates, for each of ``seamWrapFitWeights``, an exact decode (every
    /// footprint pixel choosing its best modulation) with a least-squares fit of the pair's R,
    /// G, B lanes to those modulations with the band weighted so, rounded; the best exact error
    /// (band weighted ``seamBandWeight``) seen is kept if it beats the words' own. A pair below
    /// ``seamWrapSkipError`` is left as it is.
    /// Cost: per start and fit weight at most ``seamWrapIterations`` exact decodes of 77 pixels
    /// (a start stops at a fixed point; its first decode is shared by the fit weights); the
    /// fit's normal equations follow the decode incrementally (only pixels whose modulation
    /// changed are taken out and put back), so a fit is one 4 × 4 Cholesky solve for the three
    /// channels. With the defaults the whole `quality` encode of a 256² tile runs at about
    /// 0.9× the speed of the fifth pass's refit (3 starts, 2 passes; docs/history/BENCHMARKS-history.md, issue 11,
    /// sixth pass).
    func seamWrapSolve(
        _ source: UnsafeRawPointer, layout: PVRTCLayout, first: Int, second: Int,
        originX: Int, originY: Int, wordsAcross: Int, wordsDown: Int
    ) -> Bool {
        let opaque: UInt32 = 0x8000_8000
        guard colourWords[first] & opaque == opaque, colourWords[second] & opaque == opaque else { return false }
        let wordsWide = layout.wordsWide, width = layout.width, height = layout.height
        let xMask = width - 1, yMask = height - 1
        let wordXMask = wordsWide - 1, wordYMask = layout.wordsHigh - 1
        let spanX = 4 * wordsAcross + 3, spanY = 4 * wordsDown + 3
        let pixelCount = spanX * spanY
        let band = seamBandWeight, iterations = seamWrapIterations
        let modulationPlain = SIMD4<Int32>(0, 3, 5, 8), modulationPunch = SIMD4<Int32>(0, 4, 4, 8)
        @inline(__always) func channelError(_ ca: Int32, _ cb: Int32, _ m: SIMD4<Int32>, _ t: Int32) -> SIMD4<Int32> {
            let a8 = (ca &>> 1) &+ (ca &>> 6), b8 = (cb &>> 1) &+ (cb &>> 6)
            let d = ((SIMD4(repeating: a8) &* (8 &- m) &+ SIMD4(repeating: b8) &* m) &>> 3) &- t
            return d &* d
        }
        var improved = false
        colourWords.withUnsafeMutableBufferPointer { words in
            lanesA.withUnsafeMutableBufferPointer { la in
                lanesB.withUnsafeMutableBufferPointer { lb in
                    seamWrapPixels.withUnsafeMutableBufferPointer { px in
                        precondition(px.count >= pixelCount)
                        for j in 0..<spanY {
                            let y = (originY * 4 - 1 + j) & yMask
                            let ym = y - 2, yl = ym >> 2, yr = Int32(ym - 4 * yl)
                            let y0 = yl & wordYMask, y1 = (yl + 1) & wordYMask
                            for i in 0..<spanX {
                                let x = (originX * 4 - 1 + i) & xMask
                                let xm = x - 2, xl = xm >> 2, xr = Int32(xm - 4 * xl)
                                let x0 = xl & wordXMask, x1 = (xl + 1) & wordXMask
                                let n = (
                                    y0 * wordsWide + x0, y0 * wordsWide + x1, y1 * wordsWide + x0, y1 * wordsWide + x1
                                )
                                let f = SIMD4<Int32>((4 - xr) * (4 - yr), xr * (4 - yr), (4 - xr) * yr, xr * yr)
                                @inline(__always) func weightOf(_ word: Int) -> Int32 {
                                    (n.0 == word ? f.x : 0) &+ (n.1 == word ? f.y : 0) &+ (n.2 == word ? f.z : 0)
                                        &+ (n.3 == word ? f.w : 0)
                                }
                                let p = y * width + x
                                let t = Self.unpack(source.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
                                let punch = words[(y >> 2) * wordsWide + (x >> 2)] & 1 != 0
                                let inBand = x < 2 || x >= width - 2 || y < 2 || y >= height - 2
                                let w0 = weightOf(first), w1 = weightOf(second)
                                let sa =
                                    Self.unpackLanes(la[n.0]) &* f.x &+ Self.unpackLanes(la[n.1]) &* f.y
                                    &+ Self.unpackLanes(la[n.2]) &* f.z &+ Self.unpackLanes(la[n.3]) &* f.w
                                let sb =
                                    Self.unpackLanes(lb[n.0]) &* f.x &+ Self.unpackLanes(lb[n.1]) &* f.y
                                    &+ Self.unpackLanes(lb[n.2]) &* f.z &+ Self.unpackLanes(lb[n.3]) &* f.w
                                let m = punch ? modulationPunch : modulationPlain
                                let aa = (sa.w &>> 1) &+ (sa.w &>> 5), ab = (sb.w &>> 1) &+ (sb.w &>> 5)
                                var alpha = ((SIMD4(repeating: aa) &* (8 &- m) &+ SIMD4(repeating: ab) &* m) &>> 3)
                                if punch { alpha[2] = 0 }
                                alpha = (alpha &- t.w) &* (alpha &- t.w)
                                px[j * spanX + i] = SeamWrapPixel(
                                    words: n, f: f, target: t, modulation: m,
                                    weight0: w0, weight1: w1, importance: inBand ? band : 1, visible: t.w == 0 ? 0 : 1,
                                    chosen: -1, startChosen: -1,
                                    restA: sa &- Self.unpackLanes(la[first]) &* w0 &- Self.unpackLanes(la[second])
                                        &* w1,
                                    restB: sb &- Self.unpackLanes(lb[first]) &* w0 &- Self.unpackLanes(lb[second])
                                        &* w1,
                                    alpha: alpha)
                            }
                        }
                        var interiorSums = SeamFitSums(), bandSums = SeamFitSums()
                        /// Exact weighted error of the footprint under the current words; each pixel keeps its
                        /// best modulation, and the fit's sums follow the pixels whose modulation changed.
                        func decode() -> Int {
                            var total = 0
                            let a0 = Self.unpackLanes(la[first]), b0 = Self.unpackLanes(lb[first])
                            let a1 = Self.unpackLanes(la[second]), b1 = Self.unpackLanes(lb[second])
                            for q in 0..<pixelCount {
                                let s = px[q]
                                let sa = s.restA &+ a0 &* s.weight0 &+ a1 &* s.weight1,
                                    sb = s.restB &+ b0 &* s.weight0 &+ b1 &* s.weight1
                                let m = s.modulation
                                let e =
                                    (channelError(sa.x, sb.x, m, s.target.x) &+ channelError(sa.y, sb.y, m, s.target.y)
                                        &+ channelError(sa.z, sb.z, m, s.target.z)) &* s.visible &+ s.alpha
                                // The first smallest error and its modulation, by fixed lanes (selects, not
                                // a loop over lane indices, which went through memory and mispredicted).
                                var least = e.x, chosen = m.x
                                if e.y < least { least = e.y; chosen = m.y }
                                if e.z < least { least = e.z; chosen = m.z }
                                if e.w < least { least = e.w; chosen = m.w }
                                total &+= Int(least &* s.importance)
                                if chosen != s.chosen {
                                    if s.visible != 0 {
                                        if s.importance == 1 {
                                            if s.chosen >= 0 { interiorSums.add(s, modulation: s.chosen, sign: -1) }
                                            interiorSums.add(s, modulation: chosen, sign: 1)
                                        } else {
                                            if s.chosen >= 0 { bandSums.add(s, modulation: s.chosen, sign: -1) }
                                            bandSums.add(s, modulation: chosen, sign: 1)
                                        }
                                    }
                                    px[q].chosen = chosen
                                }
                            }
                            return total
                        }
                        /// Least-squares R, G, B lanes of the pair for the modulations chosen in the last decode,
                        /// rounded.
                        func fit(band fitBand: Int32) -> Bool {
                            // Decoded value ≈ (33/512)·((8−m)·ΣfA + m·ΣfB): the decoder's (s>>1)+(s>>6), then >>3.
                            let scale = 33.0 / 512.0, fb = Double(fitBand), matrixScale = scale * scale,
                                rhsScale = scale / 512
                            let solved = Self.solveSymmetric4(
                                (interiorSums.m0 + fb * bandSums.m0) * matrixScale,
                                (interiorSums.m1 + fb * bandSums.m1) * matrixScale,
                                (interiorSums.m2 + fb * bandSums.m2) * matrixScale,
                                (interiorSums.m3 + fb * bandSums.m3) * matrixScale,
                                (interiorSums.r + fb * bandSums.r) * rhsScale,
                                (interiorSums.g + fb * bandSums.g) * rhsScale,
                                (interiorSums.b + fb * bandSums.b) * rhsScale)
                            @inline(__always) func lane(_ v: Double) -> Int32 {
                                v.isFinite ? Int32(max(0, min(31, v.rounded()))) : 0
                            }
                            @inline(__always) func lanes(_ v: SIMD4<Double>) -> SIMD4<Int32> {
                                SIMD4(lane(v.x), lane(v.y), lane(v.z), 0)
                            }
                            let wordA = Self.seamOpaqueWord(lanes(solved.0), lanes(solved.1), mode: words[first])
                            let wordB = Self.seamOpaqueWord(lanes(solved.2), lanes(solved.3), mode: words[second])
                            if wordA == words[first] && wordB == words[second] { return false }
                            set(first, wordA); set(second, wordB)
                            return true
                        }
                        @inline(__always) func set(_ index: Int, _ word: UInt32) {
                            words[index] = word
                            la[index] = PVRTCColour.expandA(word)
                            lb[index] = PVRTCColour.expandB(word)
                        }
                        @inline(__always) func swapped(_ word: UInt32) -> UInt32 {
                            Self.seamOpaqueWord(
                                Self.unpackLanes(PVRTCColour.expandB(word)),
                                Self.unpackLanes(PVRTCColour.expandA(word)), mode: word)
                        }
                        let start = (words[first], words[second])
                        var best = Int.max, bestWords = start
                        starts: for variant in 0..<3 {
                            let startWords = (
                                variant == 1 ? swapped(start.0) : start.0, variant == 2 ? swapped(start.1) : start.1
                            )
                            var startError = 0, startSums = (SeamFitSums(), SeamFitSums())
                            for (index, fitWeight) in seamWrapFitWeights.enumerated() {
                                set(first, startWords.0); set(second, startWords.1)
                                for iteration in 0...iterations {
                                    let e: Int
                                    if iteration == 0 && index > 0 {
                                        // The start decodes the same for every fit weight: restore its decode.
                                        e = startError
                                        (interiorSums, bandSums) = startSums
                                        for q in 0..<pixelCount { px[q].chosen = px[q].startChosen }
                                    } else {
                                        e = decode()
                                        if iteration == 0 {
                                            startError = e
                                            startSums = (interiorSums, bandSums)
                                            for q in 0..<pixelCount { px[q].startChosen = px[q].chosen }
                                        }
                                    }
                                    // A pair that is already close needs no refit (see ``seamWrapSkipError``).
                                    if best == Int.max && e < Int(seamWrapSkipError) * pixelCount { break starts }
                                    if e < best { best = e; bestWords = (words[first], words[second]) }
                                    // A fit that returns the same words is a fixed point: the next decode would repeat.
                                    if iteration == iterations || !fit(band: fitWeight) { break }
                                }
                            }
                        }
                        set(first, bestWords.0); set(second, bestWords.1)
                        improved = bestWords != start
                    }
                }
            }
        }
        return improved
    }

    /// Solves the symmetric 4 × 4 system with rows `m0`…`m3` for the three right-hand sides
    /// `r`, `g`, `b` (lane u of each is row u's), with a small ridge (a word reaching few
    /// footprint pixels leaves the system near singular): one Cholesky factorisation, the three
    /// channels solved together in the lanes of the result (x: R, y: G, z: B) per unknown.
    /// Cost: about 60 scalar and 30 SIMD4 operations.
    @inline(__always) static func solveSymmetric4(
        _ m0: SIMD4<Double>, _ m1: SIMD4<Double>, _ m2: SIMD4<Double>, _ m3: SIMD4<Double>,
        _ r: SIMD4<Double>, _ g: SIMD4<Double>, _ b: SIMD4<Double>
    ) -> (SIMD4<Double>, SIMD4<Double>, SIMD4<Double>, SIMD4<Double>) {
        let ridge = 1e-3, tiny = 1e-300
        let l00 = max(m0.x + ridge, tiny).squareRoot()
        let l10 = m1.x / l00, l20 = m2.x / l00, l30 = m3.x / l00
        let l11 = max(m1.y + ridge - l10 * l10, tiny).squareRoot()
        let l21 = (m2.y - l20 * l10) / l11, l31 = (m3.y - l30 * l10) / l11
        let l22 = max(m2.z + ridge - l20 * l20 - l21 * l21, tiny).squareRoot()
        let l32 = (m3.z - l30 * l20 - l31 * l21) / l22
        let l33 = max(m3.w + ridge - l30 * l30 - l31 * l31 - l32 * l32, tiny).squareRoot()
        // Right-hand sides per unknown, channels in lanes.
        let b0 = SIMD4(r.x, g.x, b.x, 0), b1 = SIMD4(r.y, g.y, b.y, 0), b2 = SIMD4(r.z, g.z, b.z, 0),
            b3 = SIMD4(r.w, g.w, b.w, 0)
        let y0 = b0 / l00
        let y1 = (b1 - l10 * y0) / l11
        let y2 = (b2 - l20 * y0 - l21 * y1) / l22
        let y3 = (b3 - l30 * y0 - l31 * y1 - l32 * y2) / l33
        let x3 = y3 / l33
        let x2 = (y2 - l32 * x3) / l22
        let x1 = (y1 - l21 * x2 - l31 * x3) / l11
        let x0 = (y0 - l10 * x1 - l20 * x2 - l30 * x3) / l00
        return (x0, x1, x2, x3)
    }
}
