import TilePackCore
import TilePackCodec
/// Encodes RGBA8 images to PVRTC1 4bpp or 2bpp words (Morton order), optimising the
/// reconstruction the hardware produces, wrap-around at the texture edges included.
/// ``Level/fast`` takes each block's bounds and one modulation pass; ``Level/quality``
/// alternates least-squares colours and modulation from the principal axis, with a seam
/// search at tile edges. How, and which file holds which concept: docs/PVRTC.md.
///
/// Cost: O(pixels) per pass; scratch is owned by the encoder (not thread-safe).
public final class PVRTCEncoder {
    public enum Level: String, Sendable, CaseIterable {
        case fast
        case quality
    }

    /// Upper bound on quality passes (each about the cost of three `fast` encodes). Six (was
    /// three): on the 30 codec-bench 256² tiles 37.45 dB against 37.31 with three, at about
    /// 0.8× the speed (eight gain only 0.02 dB more); see docs/history/BENCHMARKS-history.md, issue 11. With the
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
    /// loses the 256² set's 1 dB margin to BC1 (docs/history/BENCHMARKS-history.md, issue 11, third pass).
    public var seamBandWeight: Int32 = 4
    /// Fit-and-decode rounds per start of the wrap-pair refit
    /// (``seamWrapSolve(_:layout:first:second:originX:originY:wordsAcross:wordsDown:)``);
    /// 0 turns the refit off. More rounds keep finding better pairs (prototype, one pass: 3 → 8
    /// rounds took the Mont Blanc colour gap 3.28 → 3.23 dB; docs/history/BENCHMARKS-history.md, issue 11, fifth pass).
    public var seamWrapIterations = 8
    /// Rounds of (the wrap-pair refit of every pair whose footprint changed, then one round of
    /// single moves): 2 gave 3.09 dB on Mont Blanc colour where 1 gave 3.15; 3 with the six
    /// fit weights below 2.97 (docs/history/BENCHMARKS-history.md, issue 11, sixth pass).
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
    public func encode(
        rgba: [UInt8], width: Int, height: Int, format: PVRTCFormat = .pvrtc4,
        level: Level = .quality
    ) throws(CodecError) -> [UInt8] {
        try format.validateSize(width: width, height: height)
        guard rgba.count == width * height * 4 else {
            throw .byteCount(what: "RGBA input \(width)x\(height)", expected: width * height * 4, actual: rgba.count)
        }
        var out = [UInt8](repeating: 0, count: format.byteCount(width: width, height: height))
        rgba.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                encodeChecked(
                    src, layout: PVRTCLayout(format: format, width: width, height: height), level: level, into: dst)
            }
        }
        return out
    }

    /// Encodes into caller-owned memory: `words` must hold ``PVRTCFormat/byteCount(width:height:)`` bytes.
    public func encode(
        rgba: UnsafeRawBufferPointer, width: Int, height: Int, format: PVRTCFormat, level: Level,
        into words: UnsafeMutableRawBufferPointer
    ) throws(CodecError) {
        try format.validateSize(width: width, height: height)
        guard rgba.count == width * height * 4 else {
            throw .byteCount(what: "RGBA input \(width)x\(height)", expected: width * height * 4, actual: rgba.count)
        }
        let expected = format.byteCount(width: width, height: height)
        guard words.count == expected else {
            throw .byteCount(what: "\(format.rawValue) output", expected: expected, actual: words.count)
        }
        encodeChecked(
            rgba, layout: PVRTCLayout(format: format, width: width, height: height), level: level, into: words)
    }

    func encodeChecked(
        _ rgba: UnsafeRawBufferPointer, layout: PVRTCLayout, level: Level, into words: UnsafeMutableRawBufferPointer
    ) {
        let pixelCount = layout.width * layout.height, wordCount = layout.wordsWide * layout.wordsHigh
        if weights.count < pixelCount {
            weights = [UInt8](repeating: 0, count: pixelCount)
            upscaledA = [UInt32](repeating: 0, count: pixelCount)
            upscaledB = [UInt32](repeating: 0, count: pixelCount)
        }
        if level == .quality && residual.count < pixelCount {
            residual = [SIMD4<Float>](repeating: .zero, count: pixelCount)
        }
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
        for i in 0..<(pixelCount / 2)
        where UInt64(littleEndian: source.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)) & alphaBytes
            != alphaBytes
        {
            hasAlpha = true
            break
        }
        if level == .fast {
            initialiseFromBounds(source, layout: layout, hasAlpha: hasAlpha)
        } else {
            initialise(source, layout: layout, hasAlpha: hasAlpha)
        }
        let opaque4 = layout.format == .pvrtc4 && !hasAlpha
        var error =
            opaque4
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
                    valueA.withUnsafeBufferPointer { current in
                        saved.baseAddress!.update(from: current.baseAddress!, count: wordCount)
                    }
                }
                savedB.withUnsafeMutableBufferPointer { saved in
                    valueB.withUnsafeBufferPointer { current in
                        saved.baseAddress!.update(from: current.baseAddress!, count: wordCount)
                    }
                }
                refine(layout: layout, hasAlpha: hasAlpha, borderRing: border ? Self.borderRing : nil)
                let newError =
                    opaque4
                    ? chooseModulationOpaque4(source, layout: layout, keepResidual: true)
                    : chooseModulation(source, layout: layout, hasAlpha: hasAlpha, keepResidual: true)
                if newError >= error {
                    swap(&savedWords, &colourWords)
                    swap(&savedA, &valueA)
                    swap(&savedB, &valueB)
                    error =
                        opaque4
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
                error =
                    opaque4
                    ? chooseModulationOpaque4(source, layout: layout, keepResidual: false)
                    : chooseModulation(source, layout: layout, hasAlpha: hasAlpha, keepResidual: false)
            }
        }
        pack(layout: layout, into: words)
    }
}

@available(*, unavailable) extension PVRTCEncoder: Sendable {}
