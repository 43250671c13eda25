import TilePackCore
import TilePackCodec

// Modulation: each pixel's 2-bit value against the exactly decoded colours (opaque 4bpp four pixels a lane).
// The encoder's levels and per-image driver are in PVRTCEncoder.swift; docs/PVRTC.md tells the algorithm.
extension PVRTCEncoder {
    @inline(__always) static func unpack(_ v: UInt32) -> SIMD4<Int32> {
        SIMD4<Int32>(truncatingIfNeeded: unsafeBitCast(UInt32(littleEndian: v), to: SIMD4<UInt8>.self))
    }

    @inline(__always) static func blend(_ a: SIMD4<Int32>, _ b: SIMD4<Int32>, _ w: Int32) -> SIMD4<Int32> {
        (a &* (8 &- w) &+ b &* w) &>> 3
    }

    @inline(__always) static func distance(_ c: SIMD4<Int32>, _ t: SIMD4<Int32>) -> Int32 {
        let d = c &- t
        return (d &* d).wrappedSum()
    }

    /// Upscales A and B exactly as the decoder does, then gives every pixel the modulation
    /// whose decoded colour is nearest (per 4bpp word choosing punch-through when the image has
    /// alpha and that is better). Stores the weights, optionally the residual, and returns the
    /// summed squared RGBA error of the decoded image.
    func chooseModulation(_ source: UnsafeRawPointer, layout: PVRTCLayout, hasAlpha: Bool, keepResidual: Bool) -> Int {
        let wordCount = layout.wordsWide * layout.wordsHigh
        for i in 0..<wordCount {
            lanesA[i] = PVRTCColour.expandA(colourWords[i])
            lanesB[i] = PVRTCColour.expandB(colourWords[i])
        }
        lanesA.withUnsafeBufferPointer { a in
            lanesB.withUnsafeBufferPointer { b in
                weights.withUnsafeBufferPointer { w in
                    upscaledA.withUnsafeMutableBufferPointer { ua in
                        upscaledB.withUnsafeMutableBufferPointer { ub in
                            PVRTCQuads.run(
                                layout: layout, a: a.baseAddress!, b: b.baseAddress!, weights: w.baseAddress!,
                                quadRows: 0..<layout.wordsHigh, output: .upscaled(ua.baseAddress!, ub.baseAddress!))
                        }
                    }
                }
            }
        }
        let bw = layout.format.blockWidth, width = layout.width
        let is4 = layout.format == .pvrtc4, tryPunch = is4 && hasAlpha
        var total = 0
        upscaledA.withUnsafeBufferPointer { ua in
            upscaledB.withUnsafeBufferPointer { ub in
                weights.withUnsafeMutableBufferPointer { weight in
                    residual.withUnsafeMutableBufferPointer { res in
                        colourWords.withUnsafeMutableBufferPointer { words in
                            for wy in 0..<layout.wordsHigh {
                                for wx in 0..<layout.wordsWide {
                                    let base = wy * 4 * width + wx * bw
                                    var error0: Int32 = 0, error1: Int32 = 0
                                    for row in 0..<4 {
                                        for column in 0..<bw {
                                            let p = base + row * width + column
                                            let a = Self.unpack(ua[p]), b = Self.unpack(ub[p])
                                            let t = Self.unpack(
                                                source.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
                                            let e0 = Self.distance(a, t), e8 = Self.distance(b, t)
                                            var best = e0, w: UInt8 = 0
                                            if e8 < best { best = e8; w = 8 }
                                            if is4 {
                                                let e3 = Self.distance(Self.blend(a, b, 3), t)
                                                let e5 = Self.distance(Self.blend(a, b, 5), t)
                                                if e3 < best { best = e3; w = 3 }
                                                if e5 < best { best = e5; w = 5 }
                                            }
                                            error0 &+= best
                                            weight[p] = w
                                            if tryPunch {
                                                var half = Self.blend(a, b, 4)
                                                var best1 = min(e0, e8), w1: UInt8 = e0 <= e8 ? 0 : 8
                                                let e4 = Self.distance(half, t)
                                                if e4 < best1 { best1 = e4; w1 = 4 }
                                                half.w = 0
                                                let eP = Self.distance(half, t)
                                                if eP < best1 { best1 = eP; w1 = 0x84 }
                                                error1 &+= best1
                                                // Park the punch-through choice in the upper nibble pair until the word
                                                // decides.
                                                weight[p] =
                                                    w | (w1 == 4 ? 0x10 : w1 == 0x84 ? 0x20 : w1 == 8 ? 0x40 : 0)
                                            }
                                        }
                                    }
                                    let index = wy * layout.wordsWide + wx
                                    let punch = tryPunch && error1 < error0
                                    words[index] = (words[index] & ~1) | (punch ? 1 : 0)
                                    total += Int(punch ? error1 : error0)
                                    if tryPunch {
                                        for row in 0..<4 {
                                            for column in 0..<bw {
                                                let p = base + row * width + column
                                                let packed = weight[p]
                                                if punch {
                                                    weight[p] =
                                                        packed & 0x40 != 0
                                                        ? 8 : packed & 0x20 != 0 ? 0x84 : packed & 0x10 != 0 ? 4 : 0
                                                } else {
                                                    weight[p] = packed & 0x0F
                                                }
                                            }
                                        }
                                    }
                                    if keepResidual {
                                        for row in 0..<4 {
                                            for column in 0..<bw {
                                                let p = base + row * width + column
                                                let a = Self.unpack(ua[p]), b = Self.unpack(ub[p])
                                                let t = Self.unpack(
                                                    source.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
                                                let w = weight[p]
                                                var c = Self.blend(a, b, Int32(w & 0x0F))
                                                if w & 0x80 != 0 { c.w = 0 }
                                                res[p] = SIMD4<Float>(t &- c)
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
        return total
    }

    /// The same exact nearest-of-four choice as ``chooseModulation`` for opaque 4bpp images
    /// without a residual, computed the way ``PVRTCBlocks4`` decodes: a block row of four
    /// pixels at a time in 16-bit lanes, A and B rebuilt from the 3 × 3 word neighbourhood
    /// instead of read from two upscaled planes. Squared differences fit 16 bits (the low
    /// 16 bits of a wrapped difference squared are the true square, at most 255²); the
    /// per-pixel sums are formed in 32- and 64-bit lanes. Ties go to the lower code.
    /// Optionally stores the residual (source − decoded) for ``refine(layout:hasAlpha:)``.
    /// Returns the summed squared RGBA error.
    func chooseModulationOpaque4(_ source: UnsafeRawPointer, layout: PVRTCLayout, keepResidual: Bool) -> Int {
        let wordsWide = layout.wordsWide, wordsHigh = layout.wordsHigh, width = layout.width
        let wordCount = wordsWide * wordsHigh, pixelCount = width * layout.height
        // The scratch sizes are set by `encodeChecked` from the same layout; checked once here
        // so that the pointer loops below need no per-access bounds checks.
        precondition(
            colourWords.count >= wordCount && lanesA.count >= wordCount && lanesB.count >= wordCount
                && weights.count >= pixelCount && (!keepResidual || residual.count >= pixelCount))
        colourWords.withUnsafeBufferPointer { words in
            lanesA.withUnsafeMutableBufferPointer { a in
                lanesB.withUnsafeMutableBufferPointer { b in
                    let words = words.baseAddress!, a = a.baseAddress!, b = b.baseAddress!
                    for i in 0..<wordCount {
                        a[i] = PVRTCColour.expandA(words[i])
                        b[i] = PVRTCColour.expandB(words[i])
                    }
                }
            }
        }
        let alphaDouble = SIMD16<UInt16>(1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 2)
        // Squared error of each pixel in lane 2k of the result (lane 2k + 1 is spare): at most
        // 4 × 255² < 2^18, so 32-bit signed lanes hold error × 4 + code and compare with
        // SSE2's signed 32-bit compare (64-bit lanes need a five-instruction emulation).
        @inline(__always) func errors(
            _ a8x8: SIMD16<UInt16>, _ d: SIMD16<UInt16>, _ t: SIMD16<UInt16>, _ w: UInt16
        ) -> SIMD8<Int32> {
            let diff = ((a8x8 &+ d &* w) &>> 3) &- t
            let pairs = unsafeBitCast(diff &* diff, to: SIMD8<UInt32>.self)
            let quads = unsafeBitCast((pairs & 0xFFFF) &+ (pairs &>> 16), to: SIMD4<UInt64>.self)
            return unsafeBitCast(quads &+ (quads &>> 32), to: SIMD8<Int32>.self)
        }
        /// Lane-wise minimum of non-negative lanes without a mask type: `y − x` is negative exactly where y is smaller.
        @inline(__always) func smaller(_ x: SIMD8<Int32>, _ y: SIMD8<Int32>) -> SIMD8<Int32> {
            let difference = y &- x
            return x &+ (difference & (difference &>> 31))
        }
        var total = 0
        lanesA.withUnsafeBufferPointer { a in
            lanesB.withUnsafeBufferPointer { b in
                residual.withUnsafeMutableBufferPointer { res in
                    weights.withUnsafeMutableBufferPointer { weight in
                        let weightBytes = UnsafeMutableRawPointer(weight.baseAddress!)
                        for wy in 0..<wordsHigh {
                            let up = ((wy + wordsHigh - 1) & (wordsHigh - 1)) * wordsWide, own = wy * wordsWide
                            let down = ((wy + 1) & (wordsHigh - 1)) * wordsWide, last = wordsWide - 1
                            var leftA = PVRTCBlocks4.column(a[up + last], a[own + last], a[down + last])
                            var leftB = PVRTCBlocks4.column(b[up + last], b[own + last], b[down + last])
                            var midA = PVRTCBlocks4.column(a[up], a[own], a[down]),
                                midB = PVRTCBlocks4.column(b[up], b[own], b[down])
                            for wx in 0..<wordsWide {
                                let next = wx == last ? 0 : wx + 1
                                let rightA = PVRTCBlocks4.column(a[up + next], a[own + next], a[down + next])
                                let rightB = PVRTCBlocks4.column(b[up + next], b[own + next], b[down + next])
                                // The four block rows by constant index: a loop indexes the column vectors in memory.
                                @inline(__always) func blockRow(_ r: Int, _ a8: SIMD16<UInt16>, _ b8: SIMD16<UInt16>) {
                                    let p = (wy * 4 + r) * width + wx * 4
                                    let s = source.loadUnaligned(fromByteOffset: p * 4, as: SIMD16<UInt8>.self)
                                    let t = SIMD16<UInt16>(
                                        UInt16(s[0]), UInt16(s[1]), UInt16(s[2]), UInt16(s[3]), UInt16(s[4]),
                                        UInt16(s[5]),
                                        UInt16(s[6]), UInt16(s[7]), UInt16(s[8]), UInt16(s[9]), UInt16(s[10]),
                                        UInt16(s[11]),
                                        UInt16(s[12]), UInt16(s[13]), UInt16(s[14]), UInt16(s[15]))
                                    let a8x8 = a8 &<< 3, d = b8 &- a8
                                    // Error × 4 + code, so one minimum picks both.
                                    let e0 = errors(a8x8, d, t, 0) &<< 2, e1 = (errors(a8x8, d, t, 3) &<< 2) | 1
                                    let e2 = (errors(a8x8, d, t, 5) &<< 2) | 2, e3 = (errors(a8x8, d, t, 8) &<< 2) | 3
                                    // Lanes by constant index: a variable index spills the vectors to
                                    // the stack and checks the index on every pixel.
                                    let best = smaller(smaller(e0, e1), smaller(e2, e3))
                                    let best0 = UInt32(truncatingIfNeeded: best[0]),
                                        best1 = UInt32(truncatingIfNeeded: best[2])
                                    let best2 = UInt32(truncatingIfNeeded: best[4]),
                                        best3 = UInt32(truncatingIfNeeded: best[6])
                                    // Each error is below 2^18, so neither the sum nor the conversion can wrap.
                                    total &+= Int(
                                        truncatingIfNeeded: (best0 >> 2) &+ (best1 >> 2) &+ (best2 >> 2) &+ (best3 >> 2)
                                    )
                                    let codes = (best0 & 3) | (best1 & 3) << 8 | (best2 & 3) << 16 | (best3 & 3) << 24
                                    // Per byte: code 0, 1, 2, 3 → weight 0, 3, 5, 8 (no byte carries into the next).
                                    let packed = (codes &<< 1) &+ (((codes &+ 0x0101_0101) &>> 1) & 0x7F7F_7F7F)
                                    if keepResidual {
                                        for i in 0..<4 {
                                            let w16 = UInt16(truncatingIfNeeded: packed >> (8 * UInt32(i))) & 0xFF
                                            let c = (a8x8 &+ d &* w16) &>> 3
                                            let j = 4 * i
                                            res[p + i] = SIMD4<Float>(
                                                Float(Int(t[j]) - Int(c[j])), Float(Int(t[j + 1]) - Int(c[j + 1])),
                                                Float(Int(t[j + 2]) - Int(c[j + 2])),
                                                Float(Int(t[j + 3]) - Int(c[j + 3])))
                                        }
                                    }
                                    weightBytes.storeBytes(of: packed, toByteOffset: p, as: UInt32.self)
                                }
                                blockRow(
                                    0, PVRTCBlocks4.row8(leftA[0], midA[0], rightA[0], alphaDouble),
                                    PVRTCBlocks4.row8(leftB[0], midB[0], rightB[0], alphaDouble))
                                blockRow(
                                    1, PVRTCBlocks4.row8(leftA[1], midA[1], rightA[1], alphaDouble),
                                    PVRTCBlocks4.row8(leftB[1], midB[1], rightB[1], alphaDouble))
                                blockRow(
                                    2, PVRTCBlocks4.row8(leftA[2], midA[2], rightA[2], alphaDouble),
                                    PVRTCBlocks4.row8(leftB[2], midB[2], rightB[2], alphaDouble))
                                blockRow(
                                    3, PVRTCBlocks4.row8(leftA[3], midA[3], rightA[3], alphaDouble),
                                    PVRTCBlocks4.row8(leftB[3], midB[3], rightB[3], alphaDouble))
                                leftA = midA; leftB = midB
                                midA = rightA; midB = rightB
                            }
                        }
                    }
                }
            }
        }
        return total
    }
}
