import TilePackCore
import TilePackCodec
/// Encodes RGBA8 images to PVRTC1 4bpp or 2bpp words (Morton order), optimising the
/// reconstruction the hardware produces, wrap-around at the texture edges included.
///
/// Two levels:
/// - ``Level/fast``: per word, the per-channel minimum and maximum of the block (pulled in by
///   1/16 of the range) become colours A and B (quantised to 5/5/4 and 5/5/5 bits); then each
///   pixel takes the modulation value whose exactly decoded colour is nearest (opaque 4bpp:
///   a block row of four pixels at a time in 16-bit SIMD lanes). One pass. A border word's
///   bounds also take in the block across the wrap (see below).
/// - ``Level/quality``: starts from the extremes along each block's principal axis, then alternates (1) a Gauss–Seidel sweep over the
///   words solving, per word, the 2 × 2 least-squares system for its A and B over every pixel
///   its wrapped bilinear footprint reaches (7 × 7 pixels at 4bpp, 15 × 7 at 2bpp), holding the
///   neighbours fixed (pixels within 2 px of a border weigh 4×), and quantising at once so
///   that the neighbours solved later absorb the rounding (opaque images: to the lattice point
///   of A and B that is best in the fit's own quadratic, not each rounded alone; see
///   ``nearestOpaquePair(_:_:a11:a12:a22:b1:b2:)``); with (2) choosing every pixel's modulation again against the exact decode.
///   It stops when a pass gains less than 0.1 % of the squared error (at most ``maximumPasses``)
///   and keeps the best state seen; then up to ``maximumBorderPasses`` passes refine only the
///   words within ``borderRing`` words of an edge, each kept only when it lowers the error; and
///   at 4bpp an exact lattice search moves the border words by the decoded, band-weighted
///   error (``seamSearch(_:layout:)``).
///
/// Wrap: PVRTC1's upscaling blends a tile's first pixel row and column half-and-half with its
/// last words, so the edge words serve two unrelated strips of the image. Each border word's
/// starting colours (principal axis at `quality`, bounds at `fast`) are therefore taken over its
/// own block and the block across the wrap (all four corner blocks for a corner word): started
/// from its own block alone, the alternation settles in a local minimum that edge weighting
/// cannot leave (256² map tiles, seam band 2 px: Mont Blanc colour z13 gap interior − band
/// 6.9 → 3.4 dB, and the interior itself +1 dB; see BENCHMARKS.md, issue 11).
///
/// Alpha: when any pixel is not opaque, each colour may be stored translucent (A3 R4 G4 B3/B4)
/// where that is nearer, and each 4bpp word may switch to punch-through modulation when
/// that lowers its error. 2bpp words use the direct 1-bit modulation mode only.
///
/// One encoder per thread: it owns its scratch buffers, so encoding same-sized images does
/// not allocate. Not thread-safe.
public final class PVRTCEncoder {
    public enum Level: String, Sendable, CaseIterable {
        case fast
        case quality
    }

    /// Upper bound on quality passes (each about the cost of three `fast` encodes). Six (was
    /// three): on the 30 codec-bench 256² tiles 37.45 dB against 37.31 with three, at about
    /// 0.8× the speed (eight gain only 0.02 dB more); see BENCHMARKS.md, issue 11. With the
    /// lattice quantisation 37.47 dB, and eight passes 37.49 at about 0.8× the speed again.
    public var maximumPasses = 6
    /// Upper bound on border-only passes after the full ones: the words within
    /// ``borderRing`` words of an edge are refined again, their wrapped footprints reaching the
    /// opposite edge, while the interior stays fixed. Each costs about an eighth of a full pass
    /// on a 256² tile plus one modulation choice. Two gain 0.1–0.2 dB in the seam band of map
    /// tiles; six only 0.07 dB more.
    public var maximumBorderPasses = 2
    /// Words from each edge that the border passes refine.
    static let borderRing = 2
    /// Rounds of the exact single-word search on the words whose footprints wrap (see
    /// ``seamSearch(_:layout:)``) before the pair moves; 0 turns the whole search off.
    public var maximumSeamRounds = 2
    /// Weight of a pixel within 2 px of a border in the seam search's objective. 4 (the
    /// least-squares passes' edge weight): Mont Blanc colour band +0.22 dB with the interior
    /// kept (+0.005); 8: band +0.33 dB but interior −0.03 dB on all three seam sources; 16
    /// loses the 256² set's 1 dB margin to BC1 (BENCHMARKS.md, issue 11, third pass).
    public var seamBandWeight: Int32 = 4
    /// Fit-and-decode rounds per start of the wrap-pair refit (``seamWrapSolve(_:layout:first:second:originX:originY:wordsAcross:wordsDown:)``);
    /// 0 turns the refit off. More rounds keep finding better pairs (prototype, one pass: 3 → 8
    /// rounds took the Mont Blanc colour gap 3.28 → 3.23 dB; BENCHMARKS.md, issue 11, fifth pass).
    public var seamWrapIterations = 8
    /// Rounds of (the wrap-pair refit of every pair whose footprint changed, then one round of
    /// single moves): 2 gave 3.09 dB on Mont Blanc colour where 1 gave 3.15; 3 with the six
    /// fit weights below 2.97 (BENCHMARKS.md, issue 11, sixth pass).
    public var seamWrapPasses = 3
    /// Band weights the refit fits with, each giving its own three starts per pair; all are
    /// judged by the exact error at ``seamBandWeight`` (a heavier fit finds orderings a lighter
    /// one misses, a lighter one keeps more of the interior). Mont Blanc colour gap, 3 passes:
    /// [4] 3.07, [2, 4, 8, 16] 3.00, [1, 2, 4, 8, 16] 2.99 dB.
    public var seamWrapFitWeights: [Int32] = [1, 2, 4, 8, 16, 32]
    /// A pair whose band-weighted squared error (R + G + B + alpha) averages less than this per
    /// footprint pixel is not refitted: nearly flat strips, where the starts would only repeat
    /// the words. 20 costs 0.001 dB of the Mont Blanc gap and saves about a fifth of the encode.
    public var seamWrapSkipError: Int32 = 20
    /// Extra rounds of single moves after the last refit pass: 1 takes the gap 2.99 → 2.97 dB.
    public var seamWrapFinalRounds = 1
    /// Passes the last `quality` encode ran.
    public private(set) var passesRun = 0

    // Per pixel.
    var residual: [SIMD4<Float>] = []
    var weights: [UInt8] = []
    var upscaledA: [UInt32] = []
    var upscaledB: [UInt32] = []
    // Per word (row-major).
    var colourWords: [UInt32] = []
    var savedWords: [UInt32] = []
    var lanesA: [UInt64] = []
    var lanesB: [UInt64] = []
    var valueA: [SIMD4<Float>] = []
    var valueB: [SIMD4<Float>] = []
    var savedA: [SIMD4<Float>] = []
    var savedB: [SIMD4<Float>] = []
    // Seam search scratch (see ``seamSearch(_:layout:)``).
    var seamPixels: [SeamPixel] = []
    var seamChannels: [SeamChannel] = []
    var seamDirty: [Bool] = []
    var seamWrapPixels: [SeamWrapPixel] = []
    var seamPairDirty: [Bool] = []

    public init() {}

    /// Encodes `rgba` (width × height × 4 bytes, rows top first) into new words.
    public func encode(rgba: [UInt8], width: Int, height: Int, format: PVRTCFormat = .pvrtc4,
                       level: Level = .quality) throws(CodecError) -> [UInt8] {
        try format.validate(width: width, height: height)
        guard rgba.count == width * height * 4 else {
            throw .byteCount(what: "RGBA input \(width)x\(height)", expected: width * height * 4, actual: rgba.count)
        }
        var out = [UInt8](repeating: 0, count: format.byteCount(width: width, height: height))
        rgba.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                encodeChecked(src, layout: PVRTCLayout(format: format, width: width, height: height), level: level, into: dst)
            }
        }
        return out
    }

    /// Encodes into caller-owned memory: `words` must hold ``PVRTCFormat/byteCount(width:height:)`` bytes.
    public func encode(rgba: UnsafeRawBufferPointer, width: Int, height: Int, format: PVRTCFormat, level: Level,
                       into words: UnsafeMutableRawBufferPointer) throws(CodecError) {
        try format.validate(width: width, height: height)
        guard rgba.count == width * height * 4 else {
            throw .byteCount(what: "RGBA input \(width)x\(height)", expected: width * height * 4, actual: rgba.count)
        }
        let expected = format.byteCount(width: width, height: height)
        guard words.count == expected else { throw .byteCount(what: "\(format.rawValue) output", expected: expected, actual: words.count) }
        encodeChecked(rgba, layout: PVRTCLayout(format: format, width: width, height: height), level: level, into: words)
    }

    func encodeChecked(_ rgba: UnsafeRawBufferPointer, layout: PVRTCLayout, level: Level, into words: UnsafeMutableRawBufferPointer) {
        let pixelCount = layout.width * layout.height, wordCount = layout.wordsWide * layout.wordsHigh
        if weights.count < pixelCount {
            weights = [UInt8](repeating: 0, count: pixelCount)
            upscaledA = [UInt32](repeating: 0, count: pixelCount)
            upscaledB = [UInt32](repeating: 0, count: pixelCount)
        }
        if level == .quality && residual.count < pixelCount { residual = [SIMD4<Float>](repeating: .zero, count: pixelCount) }
        if colourWords.count < wordCount {
            colourWords = [UInt32](repeating: 0, count: wordCount)
            savedWords = colourWords
            lanesA = [UInt64](repeating: 0, count: wordCount)
            lanesB = lanesA
            valueA = [SIMD4<Float>](repeating: .zero, count: wordCount)
            valueB = valueA
            savedA = valueA
            savedB = valueA
        }
        let source = rgba.baseAddress!
        // Two pixels' alpha bytes at a time (pixel counts are even: sides are powers of two ≥ 8).
        var hasAlpha = false
        let alphaBytes: UInt64 = 0xFF00_0000_FF00_0000
        for i in 0..<(pixelCount / 2) where UInt64(littleEndian: source.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)) & alphaBytes != alphaBytes {
            hasAlpha = true
            break
        }
        if level == .fast {
            initialiseFromBounds(source, layout: layout, hasAlpha: hasAlpha)
        } else {
            initialise(source, layout: layout, hasAlpha: hasAlpha)
        }
        let opaque4 = layout.format == .pvrtc4 && !hasAlpha
        var error = opaque4
            ? chooseModulationOpaque4(source, layout: layout, keepResidual: level == .quality)
            : chooseModulation(source, layout: layout, hasAlpha: hasAlpha, keepResidual: level == .quality)
        passesRun = 0
        if level == .quality {
            /// One refinement pass (all words, or only the border ring), kept when it lowers the
            /// error; returns the gain (0 when the pass was undone).
            func pass(border: Bool) -> Int {
                savedWords.withUnsafeMutableBufferPointer { saved in
                    colourWords.withUnsafeBufferPointer { current in
                        saved.baseAddress!.update(from: current.baseAddress!, count: wordCount)
                    }
                }
                savedA.withUnsafeMutableBufferPointer { saved in
                    valueA.withUnsafeBufferPointer { current in saved.baseAddress!.update(from: current.baseAddress!, count: wordCount) }
                }
                savedB.withUnsafeMutableBufferPointer { saved in
                    valueB.withUnsafeBufferPointer { current in saved.baseAddress!.update(from: current.baseAddress!, count: wordCount) }
                }
                refine(layout: layout, hasAlpha: hasAlpha, borderRing: border ? Self.borderRing : nil)
                let newError = opaque4
                    ? chooseModulationOpaque4(source, layout: layout, keepResidual: true)
                    : chooseModulation(source, layout: layout, hasAlpha: hasAlpha, keepResidual: true)
                if newError >= error {
                    swap(&savedWords, &colourWords)
                    swap(&savedA, &valueA)
                    swap(&savedB, &valueB)
                    error = opaque4
                        ? chooseModulationOpaque4(source, layout: layout, keepResidual: true)
                        : chooseModulation(source, layout: layout, hasAlpha: hasAlpha, keepResidual: true)
                    return 0
                }
                defer { error = newError }
                return error - newError
            }
            while passesRun < maximumPasses && error > 0 {
                passesRun += 1
                let gain = pass(border: false)
                if gain == 0 || Double(gain) < 0.001 * Double(error) { break }
            }
            var borderPasses = 0
            while borderPasses < maximumBorderPasses && error > 0 {
                borderPasses += 1
                if pass(border: true) == 0 { break }
            }
            if maximumSeamRounds > 0 && layout.format == .pvrtc4 {
                seamSearch(source, layout: layout)
                error = opaque4
                    ? chooseModulationOpaque4(source, layout: layout, keepResidual: false)
                    : chooseModulation(source, layout: layout, hasAlpha: hasAlpha, keepResidual: false)
            }
        }
        pack(layout: layout, into: words)
    }

    // MARK: Colours

    /// 8-bit value the decoder gives a flat 5-bit channel: `(16c >> 1) + (16c >> 6)`.
    @inline(__always) static func level5(_ c: Int) -> Float { Float(c * 8 + c >> 2) }

    /// Nearest code: `+ 0.5` then truncation rounds like `rounded()` for every value that is
    /// not clamped to 0 anyway, without the `roundf` call `rounded()` compiles to.
    @inline(__always) static func code(_ value: Float, _ step: Float, _ top: Int) -> Int {
        min(max(Int(value / step + 0.5), 0), top)
    }

    /// Nearest representable colour A (bits 1–15 of the colour word) and its decoded value.
    @inline(__always) static func quantiseA(_ f: SIMD4<Float>, translucentAllowed: Bool) -> (UInt32, SIMD4<Float>) {
        let r = code(f.x, 8.25, 31), g = code(f.y, 8.25, 31), b4 = code(f.z, 17, 15)
        let opaque = SIMD4<Float>(level5(r), level5(g), level5(b4 << 1 | b4 >> 3), 255)
        let opaqueBits = UInt32(0x8000 | r << 10 | g << 5 | b4 << 1)
        guard translucentAllowed else { return (opaqueBits, opaque) }
        let a3 = code(f.w, 34, 7), r4 = code(f.x, 17, 15), g4 = code(f.y, 17, 15), b3 = code(f.z, 255.0 / 7, 7)
        let translucent = SIMD4<Float>(level5(r4 << 1 | r4 >> 3), level5(g4 << 1 | g4 >> 3), level5(b3 << 2 | b3 >> 1), Float(34 * a3))
        let dO = opaque - f, dT = translucent - f
        if (dT * dT).sum() < (dO * dO).sum() {
            return (UInt32(a3 << 12 | r4 << 8 | g4 << 4 | b3 << 1), translucent)
        }
        return (opaqueBits, opaque)
    }

    /// Nearest representable colour B (bits 16–31 of the colour word) and its decoded value.
    @inline(__always) static func quantiseB(_ f: SIMD4<Float>, translucentAllowed: Bool) -> (UInt32, SIMD4<Float>) {
        let r = code(f.x, 8.25, 31), g = code(f.y, 8.25, 31), b = code(f.z, 8.25, 31)
        let opaque = SIMD4<Float>(level5(r), level5(g), level5(b), 255)
        let opaqueBits = UInt32(0x8000 | r << 10 | g << 5 | b) << 16
        guard translucentAllowed else { return (opaqueBits, opaque) }
        let a3 = code(f.w, 34, 7), r4 = code(f.x, 17, 15), g4 = code(f.y, 17, 15), b4 = code(f.z, 17, 15)
        let translucent = SIMD4<Float>(level5(r4 << 1 | r4 >> 3), level5(g4 << 1 | g4 >> 3), level5(b4 << 1 | b4 >> 3), Float(34 * a3))
        let dO = opaque - f, dT = translucent - f
        if (dT * dT).sum() < (dO * dO).sum() {
            return (UInt32(a3 << 12 | r4 << 8 | g4 << 4 | b4) << 16, translucent)
        }
        return (opaqueBits, opaque)
    }

    @inline(__always) static func load(_ source: UnsafeRawPointer, _ offset: Int) -> SIMD4<Float> {
        SIMD4<Float>(SIMD4<UInt8>(source.load(fromByteOffset: offset, as: UInt8.self),
                                  source.load(fromByteOffset: offset + 1, as: UInt8.self),
                                  source.load(fromByteOffset: offset + 2, as: UInt8.self),
                                  source.load(fromByteOffset: offset + 3, as: UInt8.self)))
    }

    /// Colours A and B of every word from the extremes of its block along the block's
    /// principal axis, oriented so that B is the brighter (neighbouring words must agree,
    /// or the bilinear upscaling mixes A of one word with B of the next).
    func initialise(_ source: UnsafeRawPointer, layout: PVRTCLayout, hasAlpha: Bool) {
        let bw = layout.format.blockWidth, width = layout.width
        let lastX = layout.wordsWide - 1, lastY = layout.wordsHigh - 1
        var bases = [Int](repeating: 0, count: 4), columns = [Range<Int>](repeating: 0..<bw, count: 4), rows = [Range<Int>](repeating: 0..<4, count: 4)
        let orientation = SIMD4<Float>(0.299, 0.587, 0.114, 0.5)
        colourWords.withUnsafeMutableBufferPointer { words in
            valueA.withUnsafeMutableBufferPointer { va in
                valueB.withUnsafeMutableBufferPointer { vb in
                    for wy in 0..<layout.wordsHigh {
                        for wx in 0..<layout.wordsWide {
                            // The blocks whose pixels this word's colours must serve: its own, and for
                            // a border word the block across the wrap (both corners' for a corner word).
                            let partnerX = layout.wordsWide < 2 ? -1 : wx == 0 ? lastX : wx == lastX ? 0 : -1
                            let partnerY = layout.wordsHigh < 2 ? -1 : wy == 0 ? lastY : wy == lastY ? 0 : -1
                            // Of a partner block, only the half next to the wrap blends with this word.
                            let nearX = wx == 0 ? (bw / 2)..<bw : 0..<(bw / 2), nearY = wy == 0 ? 2..<4 : 0..<2
                            var blockCount = 1
                            bases[0] = ((wy * 4) * width + wx * bw) * 4; columns[0] = 0..<bw; rows[0] = 0..<4
                            if partnerX >= 0 {
                                bases[blockCount] = ((wy * 4) * width + partnerX * bw) * 4; columns[blockCount] = nearX; rows[blockCount] = 0..<4
                                blockCount += 1
                            }
                            if partnerY >= 0 {
                                bases[blockCount] = ((partnerY * 4) * width + wx * bw) * 4; columns[blockCount] = 0..<bw; rows[blockCount] = nearY
                                blockCount += 1
                            }
                            if partnerX >= 0 && partnerY >= 0 {
                                bases[blockCount] = ((partnerY * 4) * width + partnerX * bw) * 4; columns[blockCount] = nearX; rows[blockCount] = nearY
                                blockCount += 1
                            }
                            var pixelCount: Float = 0
                            for k in 0..<blockCount { pixelCount += Float(columns[k].count * rows[k].count) }
                            var sum = SIMD4<Float>.zero
                            for k in 0..<blockCount {
                                let base = bases[k]
                                for row in rows[k] {
                                    for column in columns[k] { sum += Self.load(source, base + (row * width + column) * 4) }
                                }
                            }
                            let mean = sum / pixelCount
                            var c0 = SIMD4<Float>.zero, c1 = c0, c2 = c0, c3 = c0
                            for k in 0..<blockCount {
                                let base = bases[k]
                                for row in rows[k] {
                                    for column in columns[k] {
                                        let d = Self.load(source, base + (row * width + column) * 4) - mean
                                        c0 += d * d.x; c1 += d * d.y; c2 += d * d.z; c3 += d * d.w
                                    }
                                }
                            }
                            var axis = c0 + c1 + c2 + c3
                            for _ in 0..<3 {
                                axis = c0 * axis.x + c1 * axis.y + c2 * axis.z + c3 * axis.w
                                let scale = max(abs(axis.x), abs(axis.y), abs(axis.z), abs(axis.w))
                                if scale > 1e-12 { axis /= scale }
                            }
                            var lowest = mean, highest = mean
                            let length = (axis * axis).sum().squareRoot()
                            if length > 1e-6 {
                                axis /= length
                                if (axis * orientation).sum() < 0 { axis = -axis }
                                var tMin = Float.greatestFiniteMagnitude, tMax = -Float.greatestFiniteMagnitude
                                for k in 0..<blockCount {
                                    let base = bases[k]
                                    for row in rows[k] {
                                        for column in columns[k] {
                                            let t = ((Self.load(source, base + (row * width + column) * 4) - mean) * axis).sum()
                                            tMin = min(tMin, t); tMax = max(tMax, t)
                                        }
                                    }
                                }
                                lowest = (mean + axis * tMin).clamped(lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                                highest = (mean + axis * tMax).clamped(lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                            }
                            let (bitsA, qa) = Self.quantiseA(lowest, translucentAllowed: hasAlpha)
                            let (bitsB, qb) = Self.quantiseB(highest, translucentAllowed: hasAlpha)
                            let index = wy * layout.wordsWide + wx
                            words[index] = bitsA | bitsB
                            va[index] = qa
                            vb[index] = qb
                        }
                    }
                }
            }
        }
    }

    /// `fast` initialisation: colours A and B of every word are the per-channel minimum and
    /// maximum of its block, pulled in by 1/16 of the range (the extremes are rarely hit
    /// by the modulated blend, and the bilinear upscaling spreads them to the neighbours).
    /// Both corners of the bounding box lie on the dark–bright diagonal, so neighbouring
    /// words agree on which colour is the brighter. Cost: about four SIMD min/max a block
    /// row, against three passes of float work for the principal axis.
    func initialiseFromBounds(_ source: UnsafeRawPointer, layout: PVRTCLayout, hasAlpha: Bool) {
        let bw = layout.format.blockWidth, rowBytes = layout.width * 4
        let lastX = layout.wordsWide - 1, lastY = layout.wordsHigh - 1
        colourWords.withUnsafeMutableBufferPointer { words in
            valueA.withUnsafeMutableBufferPointer { va in
                valueB.withUnsafeMutableBufferPointer { vb in
                    for wy in 0..<layout.wordsHigh {
                        for wx in 0..<layout.wordsWide {
                            var low = SIMD16<UInt8>(repeating: 255), high = SIMD16<UInt8>(repeating: 0)
                            @inline(__always) func bound(_ bx: Int, _ by: Int) {
                                let base = source + (by * 4) * rowBytes + bx * bw * 4
                                for row in 0..<4 {
                                    for half in stride(from: 0, to: bw, by: 4) {
                                        let v = base.loadUnaligned(fromByteOffset: row * rowBytes + half * 4, as: SIMD16<UInt8>.self)
                                        low = pointwiseMin(low, v)
                                        high = pointwiseMax(high, v)
                                    }
                                }
                            }
                            bound(wx, wy)
                            // A border word also bounds the block across the wrap: the upscaling
                            // blends the two into the edge pixels (see `initialise`).
                            let partnerX = layout.wordsWide < 2 ? -1 : wx == 0 ? lastX : wx == lastX ? 0 : -1
                            let partnerY = layout.wordsHigh < 2 ? -1 : wy == 0 ? lastY : wy == lastY ? 0 : -1
                            if partnerX >= 0 { bound(partnerX, wy) }
                            if partnerY >= 0 { bound(wx, partnerY) }
                            if partnerX >= 0 && partnerY >= 0 { bound(partnerX, partnerY) }
                            let low8 = pointwiseMin(low.lowHalf, low.highHalf), high8 = pointwiseMax(high.lowHalf, high.highHalf)
                            let lo = pointwiseMin(low8.lowHalf, low8.highHalf), hi = pointwiseMax(high8.lowHalf, high8.highHalf)
                            let lowest = SIMD4<Float>(Float(lo.x), Float(lo.y), Float(lo.z), Float(lo.w))
                            let highest = SIMD4<Float>(Float(hi.x), Float(hi.y), Float(hi.z), Float(hi.w))
                            let inset = (highest - lowest) * (1.0 / 16)
                            let (bitsA, qa) = Self.quantiseA(lowest + inset, translucentAllowed: hasAlpha)
                            let (bitsB, qb) = Self.quantiseB(highest - inset, translucentAllowed: hasAlpha)
                            let index = wy * layout.wordsWide + wx
                            words[index] = bitsA | bitsB
                            va[index] = qa
                            vb[index] = qb
                        }
                    }
                }
            }
        }
    }

    // MARK: Modulation

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
                            PVRTCQuads.run(layout: layout, a: a.baseAddress!, b: b.baseAddress!, weights: w.baseAddress!,
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
                                            let t = Self.unpack(source.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
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
                                                // Park the punch-through choice in the upper nibble pair until the word decides.
                                                weight[p] = w | (w1 == 4 ? 0x10 : w1 == 0x84 ? 0x20 : w1 == 8 ? 0x40 : 0)
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
                                                    weight[p] = packed & 0x40 != 0 ? 8 : packed & 0x20 != 0 ? 0x84 : packed & 0x10 != 0 ? 4 : 0
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
                                                let t = Self.unpack(source.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
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
        precondition(colourWords.count >= wordCount && lanesA.count >= wordCount && lanesB.count >= wordCount
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
        @inline(__always) func errors(_ a8x8: SIMD16<UInt16>, _ d: SIMD16<UInt16>, _ t: SIMD16<UInt16>, _ w: UInt16) -> SIMD8<Int32> {
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
                        var midA = PVRTCBlocks4.column(a[up], a[own], a[down]), midB = PVRTCBlocks4.column(b[up], b[own], b[down])
                        for wx in 0..<wordsWide {
                            let next = wx == last ? 0 : wx + 1
                            let rightA = PVRTCBlocks4.column(a[up + next], a[own + next], a[down + next])
                            let rightB = PVRTCBlocks4.column(b[up + next], b[own + next], b[down + next])
                            // The four block rows by constant index: a loop indexes the column vectors in memory.
                            @inline(__always) func blockRow(_ r: Int, _ a8: SIMD16<UInt16>, _ b8: SIMD16<UInt16>) {
                                let p = (wy * 4 + r) * width + wx * 4
                                let s = source.loadUnaligned(fromByteOffset: p * 4, as: SIMD16<UInt8>.self)
                                let t = SIMD16<UInt16>(UInt16(s[0]), UInt16(s[1]), UInt16(s[2]), UInt16(s[3]), UInt16(s[4]), UInt16(s[5]),
                                                       UInt16(s[6]), UInt16(s[7]), UInt16(s[8]), UInt16(s[9]), UInt16(s[10]), UInt16(s[11]),
                                                       UInt16(s[12]), UInt16(s[13]), UInt16(s[14]), UInt16(s[15]))
                                let a8x8 = a8 &<< 3, d = b8 &- a8
                                // Error × 4 + code, so one minimum picks both.
                                let e0 = errors(a8x8, d, t, 0) &<< 2, e1 = (errors(a8x8, d, t, 3) &<< 2) | 1
                                let e2 = (errors(a8x8, d, t, 5) &<< 2) | 2, e3 = (errors(a8x8, d, t, 8) &<< 2) | 3
                                // Lanes by constant index: a variable index spills the vectors to
                                // the stack and checks the index on every pixel.
                                let best = smaller(smaller(e0, e1), smaller(e2, e3))
                                let best0 = UInt32(truncatingIfNeeded: best[0]), best1 = UInt32(truncatingIfNeeded: best[2])
                                let best2 = UInt32(truncatingIfNeeded: best[4]), best3 = UInt32(truncatingIfNeeded: best[6])
                                // Each error is below 2^18, so neither the sum nor the conversion can wrap.
                                total &+= Int(truncatingIfNeeded: (best0 >> 2) &+ (best1 >> 2) &+ (best2 >> 2) &+ (best3 >> 2))
                                let codes = (best0 & 3) | (best1 & 3) << 8 | (best2 & 3) << 16 | (best3 & 3) << 24
                                // Per byte: code 0, 1, 2, 3 → weight 0, 3, 5, 8 (no byte carries into the next).
                                let packed = (codes &<< 1) &+ (((codes &+ 0x0101_0101) &>> 1) & 0x7F7F_7F7F)
                                if keepResidual {
                                    for i in 0..<4 {
                                        let w16 = UInt16(truncatingIfNeeded: packed >> (8 * UInt32(i))) & 0xFF
                                        let c = (a8x8 &+ d &* w16) &>> 3
                                        let j = 4 * i
                                        res[p + i] = SIMD4<Float>(Float(Int(t[j]) - Int(c[j])), Float(Int(t[j + 1]) - Int(c[j + 1])),
                                                                  Float(Int(t[j + 2]) - Int(c[j + 2])), Float(Int(t[j + 3]) - Int(c[j + 3])))
                                    }
                                }
                                weightBytes.storeBytes(of: packed, toByteOffset: p, as: UInt32.self)
                            }
                            blockRow(0, PVRTCBlocks4.row8(leftA[0], midA[0], rightA[0], alphaDouble),
                                     PVRTCBlocks4.row8(leftB[0], midB[0], rightB[0], alphaDouble))
                            blockRow(1, PVRTCBlocks4.row8(leftA[1], midA[1], rightA[1], alphaDouble),
                                     PVRTCBlocks4.row8(leftB[1], midB[1], rightB[1], alphaDouble))
                            blockRow(2, PVRTCBlocks4.row8(leftA[2], midA[2], rightA[2], alphaDouble),
                                     PVRTCBlocks4.row8(leftB[2], midB[2], rightB[2], alphaDouble))
                            blockRow(3, PVRTCBlocks4.row8(leftA[3], midA[3], rightA[3], alphaDouble),
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

    // MARK: Least squares

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
                                            let rowInRing = borderRing.map { wy < $0 || wy >= layout.wordsHigh - $0 } ?? true
                                            for wx in 0..<layout.wordsWide {
                                                if let ring = borderRing, !rowInRing, wx >= ring, wx < layout.wordsWide - ring { continue }
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
                                                        var u = SIMD4<Float>(repeating: f - f * m), v = SIMD4<Float>(repeating: f * m)
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
                                                let newA = ((a22 * b1 - suv * b2) / det).clamped(lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                                                let newB = ((a11 * b2 - suv * b1) / det).clamped(lowerBound: .zero, upperBound: SIMD4(repeating: 255))
                                                let bitsA: UInt32, bitsB: UInt32, qa: SIMD4<Float>, qb: SIMD4<Float>
                                                if hasAlpha {
                                                    (bitsA, qa) = Self.quantiseA(newA, translucentAllowed: hasAlpha)
                                                    (bitsB, qb) = Self.quantiseB(newB, translucentAllowed: hasAlpha)
                                                } else {
                                                    (bitsA, qa, bitsB, qb) = Self.nearestOpaquePair(newA, newB, a11: a11, a12: suv, a22: a22, b1: b1, b2: b2)
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
                                                        var u = SIMD4<Float>(repeating: f - f * m), v = SIMD4<Float>(repeating: f * m)
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
    @inline(__always) static func nearestOpaquePair(_ a: SIMD4<Float>, _ b: SIMD4<Float>, a11: SIMD4<Float>, a12: SIMD4<Float>, a22: SIMD4<Float>,
                                                    b1: SIMD4<Float>, b2: SIMD4<Float>) -> (UInt32, SIMD4<Float>, UInt32, SIMD4<Float>) {
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

    // MARK: Output

    /// Modulation code of a weight byte (mode 0: 0,3,5,8 → 0…3; punch-through: 0,4,4+punch,8 → 0…3).
    static let codeOfWeight: [UInt32] = (0..<256).map { w in
        switch w { case 3, 4: 1; case 5, 0x84: 2; case 8: 3; default: 0 }
    }

    func pack(layout: PVRTCLayout, into words: UnsafeMutableRawBufferPointer) {
        let morton = PVRTCMorton(wordsWide: layout.wordsWide, wordsHigh: layout.wordsHigh)
        let bw = layout.format.blockWidth, width = layout.width
        precondition(weights.count >= width * layout.height && colourWords.count >= layout.wordsWide * layout.wordsHigh)
        Self.codeOfWeight.withUnsafeBufferPointer { code in
            weights.withUnsafeBufferPointer { weight in
            colourWords.withUnsafeBufferPointer { colours in
            morton.xPart.withUnsafeBufferPointer { xPart in
            morton.yPart.withUnsafeBufferPointer { yPart in
                for wy in 0..<layout.wordsHigh {
                    for wx in 0..<layout.wordsWide {
                        let base = wy * 4 * width + wx * bw
                        var modulation: UInt32 = 0
                        if bw == 4 {
                            for row in 0..<4 {
                                let p = base + row * width
                                let bits = code[Int(weight[p])] | code[Int(weight[p + 1])] << 2
                                    | code[Int(weight[p + 2])] << 4 | code[Int(weight[p + 3])] << 6
                                modulation |= bits << (8 * UInt32(row))
                            }
                        } else {
                            for row in 0..<4 {
                                for column in 0..<8 where weight[base + row * width + column] == 8 {
                                    modulation |= 1 << UInt32(row * 8 + column)
                                }
                            }
                        }
                        let offset = (xPart[wx] | yPart[wy]) * 8
                        words.storeBytes(of: modulation.littleEndian, toByteOffset: offset, as: UInt32.self)
                        words.storeBytes(of: colours[wy * layout.wordsWide + wx].littleEndian, toByteOffset: offset + 4, as: UInt32.self)
                    }
                }
            }
            }
            }
            }
        }
    }
}

@available(*, unavailable) extension PVRTCEncoder: Sendable {}

// MARK: Seam search

extension PVRTCEncoder {
    /// Per footprint pixel of one search group: the decoded state the moves start from.
    struct SeamPixel {
        /// Bilinear sums (weights total 16) of A and B per lane (R, G, B, alpha doubled).
        var sumA: SIMD4<Int32>
        var sumB: SIMD4<Int32>
        var target: SIMD4<Int32>
        /// The pixel's modulation weights (0, 3, 5, 8, or 0, 4, 4, 8 in a punch-through word).
        var modulation: SIMD4<Int32>
        /// Squared error per modulation value of R, G, B and alpha, and their sum.
        var red: SIMD4<Int32>
        var green: SIMD4<Int32>
        var blue: SIMD4<Int32>
        var total: SIMD4<Int32>
        /// Bilinear weights of the group's first and second word at this pixel.
        var weight0: Int32
        var weight1: Int32
        /// Band weight of the objective.
        var importance: Int32
        /// 0 when the source pixel is fully transparent (its colour error does not count), else 1.
        var visible: Int32
    }

    /// One channel's view of a ``SeamPixel`` for the candidate loop (no variable lane index there).
    struct SeamChannel {
        /// Squared error of the other channels per modulation value.
        var other: SIMD4<Int32>
        var modulation: SIMD4<Int32>
        var sumA: Int32
        var sumB: Int32
        var weight0: Int32
        var weight1: Int32
        var target: Int32
        var importance: Int32
        var visible: Int32
    }

    /// Exact discrete search on the words whose footprints wrap (the first and last row and
    /// column of words), 4bpp only, after the least-squares passes. Those fit a band-weighted
    /// quadratic with the modulation held fixed and then round; here each candidate lattice
    /// point is judged by the decoded error itself, every affected pixel taking its best
    /// modulation again, pixels within 2 px of a border weighing ``seamBandWeight`` and the
    /// colour of pixels the source has fully transparent not counting (only their alpha does).
    /// Moves, per channel (R, G, B, and alpha where a colour is translucent): A and B of one
    /// border word by −1, 0 or +1 code each, in that colour's own bit layout; then A and/or B
    /// by the same ±1 in R, G and B at once (``maximumSeamRounds`` rounds, a word searched
    /// again only when a word its footprint reads has moved); then the pair of words facing
    /// each other across the wrap (last and first of a row or column) together, at most one
    /// value of each word by ±1; then one more round of single words. Opaque, translucent and
    /// punch-through words all move (opaque flags and modes stay). Then, ``seamWrapPasses``
    /// times, every opaque pair across the wrap whose footprint changed since its last refit is
    /// re-fitted from both A/B orderings
    /// (``seamWrapSolve(_:layout:first:second:originX:originY:wordsAcross:wordsDown:)``) and
    /// the single moves run again around the pairs that changed; after the last pass,
    /// ``seamWrapFinalRounds`` more rounds of single moves.
    /// Cost: per group one exact decode of its footprint (49 or 77 pixels), then per channel
    /// and candidate about 15 SIMD operations a pixel, three times that per brightness move;
    /// a 256² tile encodes at about 0.7× the speed without it (BENCHMARKS.md, issue 11, third
    /// and fourth passes: the brightness moves and translucent words cost 1.16× on top).
    func seamSearch(_ source: UnsafeRawPointer, layout: PVRTCLayout) {
        let wordsWide = layout.wordsWide, wordsHigh = layout.wordsHigh
        guard layout.format == .pvrtc4, wordsWide >= 2, wordsHigh >= 2 else { return }
        let wordCount = wordsWide * wordsHigh
        precondition(colourWords.count >= wordCount && lanesA.count >= wordCount && lanesB.count >= wordCount
                      && weights.count >= layout.width * layout.height)
        for i in 0..<wordCount {
            lanesA[i] = PVRTCColour.expandA(colourWords[i])
            lanesB[i] = PVRTCColour.expandB(colourWords[i])
        }
        if seamPixels.count < 11 * 7 {
            seamPixels = [SeamPixel](repeating: SeamPixel(sumA: .zero, sumB: .zero, target: .zero, modulation: .zero, red: .zero, green: .zero,
                                                          blue: .zero, total: .zero, weight0: 0, weight1: 0, importance: 0, visible: 0),
                                         count: 11 * 7)
            seamChannels = [SeamChannel](repeating: SeamChannel(other: .zero, modulation: .zero, sumA: 0, sumB: 0, weight0: 0, weight1: 0,
                                                                target: 0, importance: 0, visible: 0), count: 11 * 7)
        }
        // A word is searched again only when a word its footprint reads (the 3 × 3 around it)
        // moved since its last search: otherwise the same moves would be judged the same.
        if seamDirty.count < wordCount { seamDirty = [Bool](repeating: false, count: wordCount) }
        let lastX = wordsWide - 1, lastY = wordsHigh - 1
        for wy in 0..<wordsHigh {
            for wx in 0..<wordsWide { seamDirty[wy * wordsWide + wx] = wy == 0 || wy == lastY || wx == 0 || wx == lastX }
        }
        // Likewise a wrap pair is re-fitted only when a word its footprint reads (the 3 × 3 around
        // either word) moved since its last refit: row pair k at k, column pair k at wordsHigh + k.
        if seamPairDirty.count < wordsHigh + wordsWide { seamPairDirty = [Bool](repeating: true, count: wordsHigh + wordsWide) }
        for k in 0..<(wordsHigh + wordsWide) { seamPairDirty[k] = true }
        func markAround(_ word: Int) {
            let wx = word % wordsWide, wy = word / wordsWide
            for dy in -1...1 {
                let y = (wy + dy + wordsHigh) % wordsHigh
                for dx in -1...1 {
                    let x = (wx + dx + wordsWide) % wordsWide
                    seamDirty[y * wordsWide + x] = true
                    if x == 0 || x == lastX { seamPairDirty[y] = true }
                    if y == 0 || y == lastY { seamPairDirty[wordsHigh + x] = true }
                }
            }
        }
        func singles() {
            for wy in 0..<wordsHigh {
                for wx in 0..<wordsWide where (wy == 0 || wy == lastY || wx == 0 || wx == lastX) && seamDirty[wy * wordsWide + wx] {
                    let word = wy * wordsWide + wx
                    seamDirty[word] = false
                    if seamMove(source, layout: layout, first: word, second: nil, originX: wx, originY: wy, wordsAcross: 1, wordsDown: 1) {
                        markAround(word)
                    }
                }
            }
        }
        /// Runs `move` on every pair of words facing each other across the wrap (last and first of
        /// row k, then of column k, k ascending) and marks both words' neighbours after a move.
        func forEachWrapPair(onlyDirty: Bool = false, _ move: (_ first: Int, _ second: Int, _ originX: Int, _ originY: Int,
                                                             _ wordsAcross: Int, _ wordsDown: Int) -> Bool) {
            for k in 0..<max(wordsWide, wordsHigh) {
                if k < wordsHigh && (!onlyDirty || seamPairDirty[k]) {
                    if onlyDirty { seamPairDirty[k] = false }
                    if move(k * wordsWide + lastX, k * wordsWide, lastX, k, 2, 1) {
                        markAround(k * wordsWide + lastX); markAround(k * wordsWide)
                    }
                }
                if k < wordsWide && (!onlyDirty || seamPairDirty[wordsHigh + k]) {
                    if onlyDirty { seamPairDirty[wordsHigh + k] = false }
                    if move(lastY * wordsWide + k, k, k, lastY, 1, 2) {
                        markAround(lastY * wordsWide + k); markAround(k)
                    }
                }
            }
        }
        for _ in 0..<maximumSeamRounds { singles() }
        forEachWrapPair { first, second, originX, originY, wordsAcross, wordsDown in
            seamMove(source, layout: layout, first: first, second: second, originX: originX, originY: originY,
                     wordsAcross: wordsAcross, wordsDown: wordsDown)
        }
        singles()
        // The pairs facing each other across the wrap, re-fitted from both A/B orderings; then
        // one more round of single moves around the pairs that changed.
        for _ in 0..<(seamWrapIterations > 0 ? seamWrapPasses : 0) {
            if seamWrapPixels.count < 11 * 7 {
                seamWrapPixels = [SeamWrapPixel](repeating: SeamWrapPixel(words: (0, 0, 0, 0), f: .zero, target: .zero, modulation: .zero,
                                                                          weight0: 0, weight1: 0, importance: 0, visible: 0, chosen: 0, startChosen: 0,
                                                                          restA: .zero, restB: .zero, alpha: .zero),
                                                 count: 11 * 7)
            }
            forEachWrapPair(onlyDirty: true) { first, second, originX, originY, wordsAcross, wordsDown in
                seamWrapSolve(source, layout: layout, first: first, second: second, originX: originX, originY: originY,
                              wordsAcross: wordsAcross, wordsDown: wordsDown)
            }
            singles()
        }
        if seamWrapIterations > 0 && seamWrapPasses > 0 { for _ in 0..<seamWrapFinalRounds { singles() } }
    }

    /// Code layout of colour channel `c` (0 R, 1 G, 2 B) in one half of a colour word:
    /// (shift, bits). Opaque A: R5 G5 B4; opaque B: R5 G5 B5; translucent A: R4 G4 B3;
    /// translucent B: R4 G4 B4 (PVRTC.md).
    @inline(__always) static func seamField(_ word: UInt32, colourB: Bool, _ c: Int) -> (shift: UInt32, bits: Int32) {
        if colourB {
            if word & 0x8000_0000 != 0 { return (c == 0 ? 26 : c == 1 ? 21 : 16, 5) }
            return (c == 0 ? 24 : c == 1 ? 20 : 16, 4)
        }
        if word & 0x8000 != 0 { return (c == 0 ? 10 : c == 1 ? 5 : 1, c == 2 ? 4 : 5) }
        return (c == 0 ? 8 : c == 1 ? 4 : 1, c == 2 ? 3 : 4)
    }

    /// A code of `bits` bits in the decoder's 5-bit units (PVRTC.md: `c<<1 | c>>3`, `c<<2 | c>>1`).
    @inline(__always) static func seamExpand(_ code: Int32, _ bits: Int32) -> Int32 {
        bits == 5 ? code : bits == 4 ? (code << 1) | (code >> 3) : (code << 2) | (code >> 1)
    }

    /// One group (a word, or two words side by side across the wrap): for each colour channel,
    /// the best of every ±1 move of the group's A and B codes by the exact weighted error;
    /// for a single word then the eight moves of A and/or B by the same ±1 code in all three
    /// channels at once (a brightness shift of one end or both, which the per-channel moves
    /// cannot reach when each channel alone costs more than it gains).
    func seamMove(_ source: UnsafeRawPointer, layout: PVRTCLayout, first: Int, second: Int?,
                  originX: Int, originY: Int, wordsAcross: Int, wordsDown: Int) -> Bool {
        var moved = false
        let wordsWide = layout.wordsWide, width = layout.width, height = layout.height
        let xMask = width - 1, yMask = height - 1
        let wordXMask = wordsWide - 1, wordYMask = layout.wordsHigh - 1
        let spanX = 4 * wordsAcross + 3, spanY = 4 * wordsDown + 3
        let pixelCount = spanX * spanY
        let band = seamBandWeight
        let modulationPlain = SIMD4<Int32>(0, 3, 5, 8), modulationPunch = SIMD4<Int32>(0, 4, 4, 8)
        @inline(__always) func channelError(_ ca: Int32, _ cb: Int32, _ m: SIMD4<Int32>, _ t: Int32) -> SIMD4<Int32> {
            let a8 = (ca &>> 1) &+ (ca &>> 6), b8 = (cb &>> 1) &+ (cb &>> 6)
            let d = ((SIMD4(repeating: a8) &* (8 &- m) &+ SIMD4(repeating: b8) &* m) &>> 3) &- t
            return d &* d
        }
        colourWords.withUnsafeMutableBufferPointer { words in
        lanesA.withUnsafeMutableBufferPointer { la in
        lanesB.withUnsafeMutableBufferPointer { lb in
        seamPixels.withUnsafeMutableBufferPointer { px in
        seamChannels.withUnsafeMutableBufferPointer { lane in
            precondition(px.count >= pixelCount && lane.count >= pixelCount)
            // The exact decode of every footprint pixel, once for the group.
            for j in 0..<spanY {
                let y = (originY * 4 - 1 + j) & yMask
                let ym = y - 2, yl = ym >> 2, yr = Int32(ym - 4 * yl)
                let y0 = yl & wordYMask, y1 = (yl + 1) & wordYMask
                for i in 0..<spanX {
                    let x = (originX * 4 - 1 + i) & xMask
                    let xm = x - 2, xl = xm >> 2, xr = Int32(xm - 4 * xl)
                    let x0 = xl & wordXMask, x1 = (xl + 1) & wordXMask
                    let n = (y0 * wordsWide + x0, y0 * wordsWide + x1, y1 * wordsWide + x0, y1 * wordsWide + x1)
                    let f = ((4 - xr) * (4 - yr), xr * (4 - yr), (4 - xr) * yr, xr * yr)
                    @inline(__always) func sum(_ lanes: UnsafeMutableBufferPointer<UInt64>) -> SIMD4<Int32> {
                        Self.unpackLanes(lanes[n.0]) &* f.0 &+ Self.unpackLanes(lanes[n.1]) &* f.1
                            &+ Self.unpackLanes(lanes[n.2]) &* f.2 &+ Self.unpackLanes(lanes[n.3]) &* f.3
                    }
                    let sa = sum(la), sb = sum(lb)
                    let p = y * width + x
                    let t = Self.unpack(source.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
                    let punch = words[(y >> 2) * wordsWide + (x >> 2)] & 1 != 0
                    let m = punch ? modulationPunch : modulationPlain
                    // Alpha is stored doubled: its 8-bit value is (C >> 1) + (C >> 5).
                    let aa = (sa.w &>> 1) &+ (sa.w &>> 5), ab = (sb.w &>> 1) &+ (sb.w &>> 5)
                    var alpha = ((SIMD4(repeating: aa) &* (8 &- m) &+ SIMD4(repeating: ab) &* m) &>> 3)
                    if punch { alpha[2] = 0 }
                    alpha = (alpha &- t.w) &* (alpha &- t.w)
                    // A pixel the source has fully transparent shows no colour: only its alpha
                    // counts, so the colours are free to serve the visible pixels around it.
                    let visible: Int32 = t.w == 0 ? 0 : 1
                    let red = channelError(sa.x, sb.x, m, t.x) &* visible, green = channelError(sa.y, sb.y, m, t.y) &* visible
                    let blue = channelError(sa.z, sb.z, m, t.z) &* visible
                    @inline(__always) func weightOf(_ word: Int) -> Int32 {
                        (n.0 == word ? f.0 : 0) &+ (n.1 == word ? f.1 : 0) &+ (n.2 == word ? f.2 : 0) &+ (n.3 == word ? f.3 : 0)
                    }
                    let inBand = x < 2 || x >= width - 2 || y < 2 || y >= height - 2
                    px[j * spanX + i] = SeamPixel(sumA: sa, sumB: sb, target: t, modulation: m, red: red, green: green, blue: blue,
                                                  total: red &+ green &+ blue &+ alpha, weight0: weightOf(first),
                                                  weight1: second.map(weightOf) ?? 0, importance: inBand ? band : 1, visible: visible)
                }
            }
            let secondWord = second ?? first
            for c in 0..<3 {
                let fieldA0 = Self.seamField(words[first], colourB: false, c), fieldB0 = Self.seamField(words[first], colourB: true, c)
                let fieldA1 = Self.seamField(words[secondWord], colourB: false, c)
                let fieldB1 = Self.seamField(words[secondWord], colourB: true, c)
                @inline(__always) func code(_ word: Int, _ field: (shift: UInt32, bits: Int32)) -> Int32 {
                    Int32(truncatingIfNeeded: (words[word] >> field.shift) & ((1 << UInt32(field.bits)) - 1))
                }
                let codeA0 = code(first, fieldA0), codeB0 = code(first, fieldB0)
                let codeA1 = second == nil ? 0 : code(secondWord, fieldA1), codeB1 = second == nil ? 0 : code(secondWord, fieldB1)
                @inline(__always) func expanded(_ codes: SIMD4<Int32>) -> SIMD4<Int32> {
                    SIMD4(Self.seamExpand(codes.x, fieldA0.bits), Self.seamExpand(codes.y, fieldB0.bits),
                          Self.seamExpand(codes.z, fieldA1.bits), Self.seamExpand(codes.w, fieldB1.bits))
                }
                let start = SIMD4<Int32>(codeA0, codeB0, codeA1, codeB1)
                let own = expanded(start)
                for q in 0..<pixelCount {
                    let s = px[q]
                    let mine = c == 0 ? s.red : c == 1 ? s.green : s.blue
                    lane[q] = SeamChannel(other: s.total &- mine, modulation: s.modulation,
                                          sumA: s.sumA[c] &- s.weight0 &* own.x &- s.weight1 &* own.z,
                                          sumB: s.sumB[c] &- s.weight0 &* own.y &- s.weight1 &* own.w,
                                          weight0: s.weight0, weight1: s.weight1, target: s.target[c], importance: s.importance,
                                          visible: s.visible)
                }
                /// Weighted error with the group's channel-`c` codes replaced (the other channels as decoded).
                @inline(__always) func cost(_ codes: SIMD4<Int32>) -> Int {
                    let e = expanded(codes)
                    var total = 0
                    for q in 0..<pixelCount {
                        let s = lane[q]
                        let d = s.other &+ channelError(s.sumA &+ s.weight0 &* e.x &+ s.weight1 &* e.z,
                                                        s.sumB &+ s.weight0 &* e.y &+ s.weight1 &* e.w, s.modulation, s.target) &* s.visible
                        total &+= Int(min(min(d.x, d.y), min(d.z, d.w)) &* s.importance)
                    }
                    return total
                }
                let top = SIMD4<Int32>((1 << fieldA0.bits) - 1, (1 << fieldB0.bits) - 1, (1 << fieldA1.bits) - 1, (1 << fieldB1.bits) - 1)
                let bestCodes = Self.seamBestMove(start, top: top, pair: second != nil, cost: cost)
                if bestCodes == start { continue }
                moved = true
                Self.seamStore(words, la, lb, first, c, codeA: bestCodes.x, codeB: bestCodes.y)
                if let second { Self.seamStore(words, la, lb, second, c, codeA: bestCodes.z, codeB: bestCodes.w) }
                // The footprint's decode of channel c follows the move.
                let delta = expanded(bestCodes) &- own
                for q in 0..<pixelCount {
                    var s = px[q]
                    s.sumA[c] = s.sumA[c] &+ s.weight0 &* delta.x &+ s.weight1 &* delta.z
                    s.sumB[c] = s.sumB[c] &+ s.weight0 &* delta.y &+ s.weight1 &* delta.w
                    let mine = channelError(s.sumA[c], s.sumB[c], s.modulation, s.target[c]) &* s.visible
                    switch c {
                    case 0: s.total = s.total &- s.red &+ mine; s.red = mine
                    case 1: s.total = s.total &- s.green &+ mine; s.green = mine
                    default: s.total = s.total &- s.blue &+ mine; s.blue = mine
                    }
                    px[q] = s
                }
            }
            // Alpha of translucent colours (an opaque half has none: its alpha is fixed at 15), the
            // same moves as a colour channel; only groups with a translucent half reach here.
            let opaque: UInt32 = 0x8000_8000
            if words[first] & opaque != opaque || words[secondWord] & opaque != opaque {
                /// (shift, bits) of a half's 3-bit alpha; bits 0 for an opaque half.
                @inline(__always) func alphaField(_ word: UInt32, colourB: Bool) -> (shift: UInt32, bits: Int32) {
                    colourB ? (word & 0x8000_0000 != 0 ? (28, 0) : (28, 3)) : (word & 0x8000 != 0 ? (12, 0) : (12, 3))
                }
                let fields = (alphaField(words[first], colourB: false), alphaField(words[first], colourB: true),
                              alphaField(words[secondWord], colourB: false), alphaField(words[secondWord], colourB: true))
                @inline(__always) func code(_ word: Int, _ field: (shift: UInt32, bits: Int32)) -> Int32 {
                    field.bits == 0 ? 0 : Int32(truncatingIfNeeded: (words[word] >> field.shift) & 7)
                }
                let start = SIMD4<Int32>(code(first, fields.0), code(first, fields.1),
                                         second == nil ? 0 : code(secondWord, fields.2), second == nil ? 0 : code(secondWord, fields.3))
                let bits = SIMD4<Int32>(fields.0.bits, fields.1.bits, fields.2.bits, fields.3.bits)
                // Alpha lanes hold the 4-bit alpha doubled: opaque 15 → 30, a 3-bit code a → 4a.
                @inline(__always) func expanded(_ codes: SIMD4<Int32>) -> SIMD4<Int32> {
                    SIMD4(bits.x == 0 ? 30 : codes.x << 2, bits.y == 0 ? 30 : codes.y << 2,
                          bits.z == 0 ? 30 : codes.z << 2, bits.w == 0 ? 30 : codes.w << 2)
                }
                let own = expanded(start)
                @inline(__always) func alphaError(_ ca: Int32, _ cb: Int32, _ m: SIMD4<Int32>, _ t: Int32) -> SIMD4<Int32> {
                    let a8 = (ca &>> 1) &+ (ca &>> 5), b8 = (cb &>> 1) &+ (cb &>> 5)
                    var v = (SIMD4(repeating: a8) &* (8 &- m) &+ SIMD4(repeating: b8) &* m) &>> 3
                    if m.y == 4 { v[2] = 0 }  // punch-through: code 2 is transparent
                    let d = v &- t
                    return d &* d
                }
                for q in 0..<pixelCount {
                    let s = px[q]
                    lane[q] = SeamChannel(other: s.red &+ s.green &+ s.blue, modulation: s.modulation,
                                          sumA: s.sumA.w &- s.weight0 &* own.x &- s.weight1 &* own.z,
                                          sumB: s.sumB.w &- s.weight0 &* own.y &- s.weight1 &* own.w,
                                          weight0: s.weight0, weight1: s.weight1, target: s.target.w, importance: s.importance,
                                          visible: 1)
                }
                @inline(__always) func cost(_ codes: SIMD4<Int32>) -> Int {
                    let e = expanded(codes)
                    var total = 0
                    for q in 0..<pixelCount {
                        let s = lane[q]
                        let d = s.other &+ alphaError(s.sumA &+ s.weight0 &* e.x &+ s.weight1 &* e.z,
                                                      s.sumB &+ s.weight0 &* e.y &+ s.weight1 &* e.w, s.modulation, s.target)
                        total &+= Int(min(min(d.x, d.y), min(d.z, d.w)) &* s.importance)
                    }
                    return total
                }
                // A half without an alpha field cannot move (top 0); the unused second word neither.
                let limit = SIMD4<Int32>(bits.x == 0 ? 0 : 7, bits.y == 0 ? 0 : 7,
                                         second == nil || bits.z == 0 ? 0 : 7, second == nil || bits.w == 0 ? 0 : 7)
                let bestCodes = Self.seamBestMove(start, top: limit, pair: second != nil, cost: cost)
                if bestCodes != start {
                    moved = true
                    @inline(__always) func store(_ index: Int, _ a: Int32, _ b: Int32, _ fa: (shift: UInt32, bits: Int32),
                                                 _ fb: (shift: UInt32, bits: Int32)) {
                        var word = words[index]
                        if fa.bits != 0 { word = (word & ~(7 << fa.shift)) | UInt32(truncatingIfNeeded: a & 7) << fa.shift }
                        if fb.bits != 0 { word = (word & ~(7 << fb.shift)) | UInt32(truncatingIfNeeded: b & 7) << fb.shift }
                        words[index] = word
                        la[index] = PVRTCColour.expandA(word)
                        lb[index] = PVRTCColour.expandB(word)
                    }
                    store(first, bestCodes.x, bestCodes.y, fields.0, fields.1)
                    if let second { store(second, bestCodes.z, bestCodes.w, fields.2, fields.3) }
                    let delta = expanded(bestCodes) &- own
                    for q in 0..<pixelCount {
                        var s = px[q]
                        s.sumA.w = s.sumA.w &+ s.weight0 &* delta.x &+ s.weight1 &* delta.z
                        s.sumB.w = s.sumB.w &+ s.weight0 &* delta.y &+ s.weight1 &* delta.w
                        s.total = s.red &+ s.green &+ s.blue &+ alphaError(s.sumA.w, s.sumB.w, s.modulation, s.target.w)
                        px[q] = s
                    }
                }
            }
            guard second == nil else { return }
            // Brightness moves of one word: A and/or B by the same ±1 code in R, G and B.
            let word = words[first]
            let fA = (Self.seamField(word, colourB: false, 0), Self.seamField(word, colourB: false, 1), Self.seamField(word, colourB: false, 2))
            let fB = (Self.seamField(word, colourB: true, 0), Self.seamField(word, colourB: true, 1), Self.seamField(word, colourB: true, 2))
            @inline(__always) func codes(_ f: ((shift: UInt32, bits: Int32), (shift: UInt32, bits: Int32), (shift: UInt32, bits: Int32))) -> SIMD4<Int32> {
                SIMD4(Int32(truncatingIfNeeded: (word >> f.0.shift) & ((1 << UInt32(f.0.bits)) - 1)),
                      Int32(truncatingIfNeeded: (word >> f.1.shift) & ((1 << UInt32(f.1.bits)) - 1)),
                      Int32(truncatingIfNeeded: (word >> f.2.shift) & ((1 << UInt32(f.2.bits)) - 1)), 0)
            }
            let startA = codes(fA), startB = codes(fB)
            let bitsA = SIMD4<Int32>(fA.0.bits, fA.1.bits, fA.2.bits, 5), bitsB = SIMD4<Int32>(fB.0.bits, fB.1.bits, fB.2.bits, 5)
            let topA = (SIMD4<Int32>(repeating: 1) &<< bitsA) &- 1, topB = (SIMD4<Int32>(repeating: 1) &<< bitsB) &- 1
            @inline(__always) func expandedLanes(_ codes: SIMD4<Int32>, _ bits: SIMD4<Int32>) -> SIMD4<Int32> {
                SIMD4(Self.seamExpand(codes.x, bits.x), Self.seamExpand(codes.y, bits.y), Self.seamExpand(codes.z, bits.z), 0)
            }
            let ownA = expandedLanes(startA, bitsA), ownB = expandedLanes(startB, bitsB)
            var best = 0
            for q in 0..<pixelCount {
                let s = px[q]
                best &+= Int(min(min(s.total.x, s.total.y), min(s.total.z, s.total.w)) &* s.importance)
            }
            var bestMove = SIMD2<Int32>(0, 0)
            for db: Int32 in -1...1 {
                for da: Int32 in -1...1 where da != 0 || db != 0 {
                    // Lane 3 (alpha) stays 0, inside every range.
                    let ca = startA &+ SIMD4(da, da, da, 0), cb = startB &+ SIMD4(db, db, db, 0)
                    if any(ca .< 0) || any(ca .> topA) || any(cb .< 0) || any(cb .> topB) { continue }
                    let deltaA = expandedLanes(ca, bitsA) &- ownA, deltaB = expandedLanes(cb, bitsB) &- ownB
                    var total = 0
                    for q in 0..<pixelCount {
                        let s = px[q]
                        let sa = s.sumA &+ s.weight0 &* deltaA, sb = s.sumB &+ s.weight0 &* deltaB
                        let e = (s.total &- s.red &- s.green &- s.blue)
                            &+ (channelError(sa.x, sb.x, s.modulation, s.target.x) &+ channelError(sa.y, sb.y, s.modulation, s.target.y)
                                &+ channelError(sa.z, sb.z, s.modulation, s.target.z)) &* s.visible
                        total &+= Int(min(min(e.x, e.y), min(e.z, e.w)) &* s.importance)
                        if total >= best { break }
                    }
                    if total < best { best = total; bestMove = SIMD2(da, db) }
                }
            }
            if bestMove == SIMD2(0, 0) { return }
            moved = true
            let ca = startA &+ SIMD4(bestMove.x, bestMove.x, bestMove.x, 0), cb = startB &+ SIMD4(bestMove.y, bestMove.y, bestMove.y, 0)
            for c in 0..<3 { Self.seamStore(words, la, lb, first, c, codeA: ca[c], codeB: cb[c]) }
            // No footprint update: the group is done (the next search decodes afresh).
        }
        }
        }
        }
        }
        return moved
    }

    /// The best of the ±1 moves of `start` (A and B codes of a group's first word, then of its
    /// second) by `cost`, every code kept within 0...`top`, or `start` when none beats it. A
    /// single word (`pair` false; lanes 2 and 3 unused) moves A and/or B; a pair moves at most
    /// one value of each word: the 56 moves that change both A and B of a word with the other
    /// word gained nothing measurable.
    /// Cost: `cost` once for the start and once per move inside the range (8 single, 24 pair).
    @inline(__always) static func seamBestMove(_ start: SIMD4<Int32>, top: SIMD4<Int32>, pair: Bool,
                                               cost: (SIMD4<Int32>) -> Int) -> SIMD4<Int32> {
        var best = cost(start), bestCodes = start
        let span: Int32 = pair ? 1 : 0
        for d3 in -span...span {
            for d2 in -span...span {
                for d1: Int32 in -1...1 {
                    for d0: Int32 in -1...1 where (d0 != 0 || d1 != 0 || d2 != 0 || d3 != 0)
                        && (!pair || ((d0 == 0 || d1 == 0) && (d2 == 0 || d3 == 0))) {
                        let codes = start &+ SIMD4(d0, d1, d2, d3)
                        if any(codes .< 0) || any(codes .> top) { continue }
                        let e = cost(codes)
                        if e < best { best = e; bestCodes = codes }
                    }
                }
            }
        }
        return bestCodes
    }

    /// Writes channel `c`'s A and B codes into `words[index]` (in that half's own layout) and
    /// refreshes the word's expanded lanes.
    @inline(__always) static func seamStore(_ words: UnsafeMutableBufferPointer<UInt32>, _ la: UnsafeMutableBufferPointer<UInt64>,
                                            _ lb: UnsafeMutableBufferPointer<UInt64>, _ index: Int, _ c: Int, codeA: Int32, codeB: Int32) {
        let word = words[index]
        let fieldA = seamField(word, colourB: false, c), fieldB = seamField(word, colourB: true, c)
        let maskA = (UInt32(1) << UInt32(fieldA.bits)) - 1, maskB = (UInt32(1) << UInt32(fieldB.bits)) - 1
        let mask = (maskA << fieldA.shift) | (maskB << fieldB.shift)
        words[index] = (word & ~mask) | (UInt32(truncatingIfNeeded: codeA) & maskA) << fieldA.shift
            | (UInt32(truncatingIfNeeded: codeB) & maskB) << fieldB.shift
        la[index] = PVRTCColour.expandA(words[index])
        lb[index] = PVRTCColour.expandB(words[index])
    }

    /// Expanded colour lanes (R, G, B in 5-bit units, alpha doubled) as four Int32.
    @inline(__always) static func unpackLanes(_ v: UInt64) -> SIMD4<Int32> {
        SIMD4<Int32>(Int32(truncatingIfNeeded: v & 0xFFFF), Int32(truncatingIfNeeded: (v >> 16) & 0xFFFF),
                     Int32(truncatingIfNeeded: (v >> 32) & 0xFFFF), Int32(truncatingIfNeeded: v >> 48))
    }
}

// MARK: Seam wrap solve

extension PVRTCEncoder {
    /// Per footprint pixel of a wrap pair (``seamWrapSolve(_:layout:first:second:originX:originY:wordsAcross:wordsDown:)``).
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
            let c = SIMD4<Double>(Double((8 - m) * s.weight0), Double(m * s.weight0), Double((8 - m) * s.weight1), Double(m * s.weight1))
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
        let wa = 0x8000 | UInt32(truncatingIfNeeded: a.x) << 10 | UInt32(truncatingIfNeeded: a.y) << 5 | UInt32(truncatingIfNeeded: blue) << 1
        let wb = 0x8000_0000 | UInt32(truncatingIfNeeded: b.x) << 26 | UInt32(truncatingIfNeeded: b.y) << 21 | UInt32(truncatingIfNeeded: b.z) << 16
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
    /// 0.9× the speed of the fifth pass's refit (3 starts, 2 passes; BENCHMARKS.md, issue 11,
    /// sixth pass).
    func seamWrapSolve(_ source: UnsafeRawPointer, layout: PVRTCLayout, first: Int, second: Int,
                       originX: Int, originY: Int, wordsAcross: Int, wordsDown: Int) -> Bool {
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
                    let n = (y0 * wordsWide + x0, y0 * wordsWide + x1, y1 * wordsWide + x0, y1 * wordsWide + x1)
                    let f = SIMD4<Int32>((4 - xr) * (4 - yr), xr * (4 - yr), (4 - xr) * yr, xr * yr)
                    @inline(__always) func weightOf(_ word: Int) -> Int32 {
                        (n.0 == word ? f.x : 0) &+ (n.1 == word ? f.y : 0) &+ (n.2 == word ? f.z : 0) &+ (n.3 == word ? f.w : 0)
                    }
                    let p = y * width + x
                    let t = Self.unpack(source.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
                    let punch = words[(y >> 2) * wordsWide + (x >> 2)] & 1 != 0
                    let inBand = x < 2 || x >= width - 2 || y < 2 || y >= height - 2
                    let w0 = weightOf(first), w1 = weightOf(second)
                    let sa = Self.unpackLanes(la[n.0]) &* f.x &+ Self.unpackLanes(la[n.1]) &* f.y
                        &+ Self.unpackLanes(la[n.2]) &* f.z &+ Self.unpackLanes(la[n.3]) &* f.w
                    let sb = Self.unpackLanes(lb[n.0]) &* f.x &+ Self.unpackLanes(lb[n.1]) &* f.y
                        &+ Self.unpackLanes(lb[n.2]) &* f.z &+ Self.unpackLanes(lb[n.3]) &* f.w
                    let m = punch ? modulationPunch : modulationPlain
                    let aa = (sa.w &>> 1) &+ (sa.w &>> 5), ab = (sb.w &>> 1) &+ (sb.w &>> 5)
                    var alpha = ((SIMD4(repeating: aa) &* (8 &- m) &+ SIMD4(repeating: ab) &* m) &>> 3)
                    if punch { alpha[2] = 0 }
                    alpha = (alpha &- t.w) &* (alpha &- t.w)
                    px[j * spanX + i] = SeamWrapPixel(words: n, f: f, target: t, modulation: m,
                                                      weight0: w0, weight1: w1, importance: inBand ? band : 1, visible: t.w == 0 ? 0 : 1,
                                                      chosen: -1, startChosen: -1,
                                                      restA: sa &- Self.unpackLanes(la[first]) &* w0 &- Self.unpackLanes(la[second]) &* w1,
                                                      restB: sb &- Self.unpackLanes(lb[first]) &* w0 &- Self.unpackLanes(lb[second]) &* w1,
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
                    let sa = s.restA &+ a0 &* s.weight0 &+ a1 &* s.weight1, sb = s.restB &+ b0 &* s.weight0 &+ b1 &* s.weight1
                    let m = s.modulation
                    let e = (channelError(sa.x, sb.x, m, s.target.x) &+ channelError(sa.y, sb.y, m, s.target.y)
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
            /// Least-squares R, G, B lanes of the pair for the modulations chosen in the last decode, rounded.
            func fit(band fitBand: Int32) -> Bool {
                // Decoded value ≈ (33/512)·((8−m)·ΣfA + m·ΣfB): the decoder's (s>>1)+(s>>6), then >>3.
                let scale = 33.0 / 512.0, fb = Double(fitBand), matrixScale = scale * scale, rhsScale = scale / 512
                let solved = Self.solveSymmetric4((interiorSums.m0 + fb * bandSums.m0) * matrixScale,
                                                  (interiorSums.m1 + fb * bandSums.m1) * matrixScale,
                                                  (interiorSums.m2 + fb * bandSums.m2) * matrixScale,
                                                  (interiorSums.m3 + fb * bandSums.m3) * matrixScale,
                                                  (interiorSums.r + fb * bandSums.r) * rhsScale, (interiorSums.g + fb * bandSums.g) * rhsScale,
                                                  (interiorSums.b + fb * bandSums.b) * rhsScale)
                @inline(__always) func lane(_ v: Double) -> Int32 { v.isFinite ? Int32(max(0, min(31, v.rounded()))) : 0 }
                @inline(__always) func lanes(_ v: SIMD4<Double>) -> SIMD4<Int32> { SIMD4(lane(v.x), lane(v.y), lane(v.z), 0) }
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
                Self.seamOpaqueWord(Self.unpackLanes(PVRTCColour.expandB(word)), Self.unpackLanes(PVRTCColour.expandA(word)), mode: word)
            }
            let start = (words[first], words[second])
            var best = Int.max, bestWords = start
            starts: for variant in 0..<3 {
                let startWords = (variant == 1 ? swapped(start.0) : start.0, variant == 2 ? swapped(start.1) : start.1)
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
    @inline(__always) static func solveSymmetric4(_ m0: SIMD4<Double>, _ m1: SIMD4<Double>, _ m2: SIMD4<Double>, _ m3: SIMD4<Double>,
                                                  _ r: SIMD4<Double>, _ g: SIMD4<Double>, _ b: SIMD4<Double>) -> (SIMD4<Double>, SIMD4<Double>, SIMD4<Double>, SIMD4<Double>) {
        let ridge = 1e-3, tiny = 1e-300
        let l00 = max(m0.x + ridge, tiny).squareRoot()
        let l10 = m1.x / l00, l20 = m2.x / l00, l30 = m3.x / l00
        let l11 = max(m1.y + ridge - l10 * l10, tiny).squareRoot()
        let l21 = (m2.y - l20 * l10) / l11, l31 = (m3.y - l30 * l10) / l11
        let l22 = max(m2.z + ridge - l20 * l20 - l21 * l21, tiny).squareRoot()
        let l32 = (m3.z - l30 * l20 - l31 * l21) / l22
        let l33 = max(m3.w + ridge - l30 * l30 - l31 * l31 - l32 * l32, tiny).squareRoot()
        // Right-hand sides per unknown, channels in lanes.
        let b0 = SIMD4(r.x, g.x, b.x, 0), b1 = SIMD4(r.y, g.y, b.y, 0), b2 = SIMD4(r.z, g.z, b.z, 0), b3 = SIMD4(r.w, g.w, b.w, 0)
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
