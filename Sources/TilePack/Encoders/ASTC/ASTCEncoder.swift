import TilePackCore
import TilePackCodec

/// Encodes RGBA8 images to ASTC LDR blocks (4 × 4, 6 × 6, 8 × 8; row-major, 16 bytes a
/// block) that decode identically with ``ASTCDecoder`` and ARM's astcenc. ``Level/fast`` fits
/// one layout per footprint; ``Level/quality`` starts from it and searches ranked layouts,
/// dual plane and two partitions until a block is within astcenc `fastest`'s error limit.
/// How it searches, and which file holds which concept: docs/ASTC.md.
///
/// Cost: no allocation per block; tables (layouts, quantisers, infill taps, partition
/// masks) are built once per encoder. Not thread-safe (scratch is owned by the encoder);
/// the codec pools encoders.
public final class ASTCEncoder {
    public typealias Level = PVRTCEncoder.Level

    /// Footprints the encoder produces (the decoder takes all fourteen).
    public static let supportedFormats: [ASTCFormat] = [.astc4x4, .astc6x6, .astc8x8]

    public let format: ASTCFormat
    let modes: ASTCBlockModes
    let texelCount: Int
    /// Single-partition layouts, ranked (direct, then colour-scaled); `fast` uses ``fastCandidate``.
    let candidates: [Candidate]
    let fastCandidate: Candidate
    /// Layouts only the rate-distortion choice tries (few weight bits, endpoints at the colour
    /// cap: ASTCEncoder+SimpleModes.swift), indexed after `candidates` and `fastCandidate`.
    let simpleCandidates: [Candidate]
    var simpleLayoutBase: Int { candidates.count + 1 }
    /// Two-partition layouts (direct, then colour-scaled), grouped by weight grid.
    let partitionCandidates: [Candidate]
    /// Dual-plane layouts (one partition, opaque), best-ranked first.
    let dualCandidates: [Candidate]
    /// Luminance layouts (one partition), grouped by grid like `screening`; ranked only for grey blocks.
    let luminanceScreening: [Candidate]
    /// `candidates` grouped by weight grid (then weight level, then block mode), so the
    /// estimate decimates the ideal weights once per grid.
    let screening: [Candidate]
    /// Index of the first colour-scaled layout in `screening`.
    let scaledStart: Int
    /// Exact squared error (summed over channels and texels) under which `quality` stops
    /// searching a block, in the manner of astcenc's per-block dB limit for its fastest
    /// preset, `max(85.2 − 35·log10 n, 63.2 − 19·log10 n)` dB of the summed channel error
    /// for n texels: 43.1 dB at 4 × 4, 33.6 dB at 6 × 6, 28.9 dB at 8 × 8. (astcenc's own check
    /// sums four channels' error against that dB, so it accepts 4 × this in RGB: `quality`
    /// stops after one partition at 4 × this.)
    let errorLimit: Int

    /// One block layout: a block mode and the colour level its bits leave.
    struct Candidate {
        var mode: Int
        var gridWidth: Int
        var gridHeight: Int
        var weightLevel: Int
        var weightBits: Int
        /// Colour level for RGB (mode 8) and RGBA (mode 12) endpoints at this partition count.
        var rgbLevel: Int
        var rgbaLevel: Int
        /// Offset (in texels × 4) of this grid's taps in `tapIndex`/`tapWeight`; -1 when the
        /// grid is the footprint.
        var taps: Int
        /// Offset of this grid's per-weight `1 / Σ tap weight` in `inverseCoverage`.
        var coverage: Int
        /// Taps a texel that can be nonzero: 2 when no texel has more (a grid as wide or as high
        /// as the footprint interpolates in one direction only), else 4. The table lists each texel's
        /// nonzero taps first, in ascending grid order, so loops over the first `tapCount`
        /// add the same products in the same order as over all four (the rest add zeros).
        var tapCount = 4
        /// Offset of this grid's `gridCount + 1` entries in `reachStart`; -1 undecimated.
        var reach: Int = -1
        /// Index of this grid's infill table among the encoder's decimated grids (its entry in
        /// the per-block cache of grid errors); -1 undecimated.
        var slot: Int = -1
        /// Colour-scaled endpoints (mode 6: an RGB colour and a scale, the line through black;
        /// opaque blocks only): four values a partition instead of six leave bits for finer
        /// weights or colours. `rgbLevel` is then the level of those four values.
        var scaled = false
        /// Two partitions with different endpoint modes (opaque blocks only): one partition
        /// colour-scaled (mode 6, four values), the other direct (mode 8, six values); which one
        /// is chosen per block (``mixedScaled``). The six-bit class encoding this needs puts two
        /// mode bits below the weights, so `rgbLevel` is the level of ten values in 97 − weight bits.
        var mixed = false
        /// Dual plane (one partition, opaque, direct RGB endpoints): a second weight grid for
        /// one channel (the block's ``Best/plane2``), the first grid for the other two. Two
        /// bits of colour-component selector sit below the weights; `gridCount` is per plane.
        var dual = false
        /// Luminance endpoints (mode 0; one partition, for opaque grey blocks): two values, the
        /// ends `(L0, L0, L0, 255)` and `(L1, L1, L1, 255)`; `rgbLevel` is their colour level.
        var luminance = false
        /// Endpoint kind for grouping and the estimate's arrays: 0 direct, 1 colour-scaled, 2 mixed.
        /// Luminance layouts are kind 0: on the grey blocks they are ranked for, the principal
        /// line is grey, so direct endpoints' ideal weights and grid errors are theirs.
        var kind: Int { scaled ? 1 : mixed ? 2 : 0 }
        /// Colour values of one partition of an opaque single-endpoint-mode layout (2, 4 or 6).
        var valueCount: Int { luminance ? 2 : scaled ? 4 : 6 }
        /// Its endpoint mode (0 luminance, 6 colour-scaled, 8 direct RGB).
        var endpointMode: Int { luminance ? 0 : scaled ? 6 : 8 }
        /// Its lane in per-endpoint-kind vectors of one-partition layouts (the simple layouts'
        /// picks, the reuse index): 0 direct, 1 colour-scaled, 2 luminance.
        var endpointLane: Int { Self.lane(endpointMode: endpointMode) }
        /// The lane of endpoint mode 0, 6 or 8 (``endpointLane``).
        static func lane(endpointMode: Int) -> Int { endpointMode == 0 ? 2 : endpointMode == 6 ? 1 : 0 }
        var gridCount: Int { gridWidth * gridHeight }
    }

    // Tables (built in init, read-only after).
    let partitionMasks: UnsafeMutablePointer<UInt64>  // 1024 seeds: bit t set when texel t is in partition 1
    let tapIndex: UnsafeMutablePointer<Int32>  // per decimated grid: texelCount × 4 grid indices
    let tapWeight: UnsafeMutablePointer<Int32>  // … and their weights (sum 16)
    let tapWeightF: UnsafeMutablePointer<Float>  // … as Float
    let inverseCoverage: UnsafeMutablePointer<Float>  // per decimated grid: per grid weight
    let colourQuant: UnsafeMutablePointer<UInt8>  // level × 256: 0…255 → nearest scrambled value
    let colourValue: UnsafeMutablePointer<UInt8>  // level × 256: scrambled → 0…255
    let weightQuant: UnsafeMutablePointer<UInt8>  // level × 65: 0…64 → nearest scrambled value
    let weightValue: UnsafeMutablePointer<Int32>  // level × 32: scrambled → 0…64
    let weightStep: UnsafeMutablePointer<UInt8>  // level × 32 × 2: scrambled → next value down / up
    let tritPack: UnsafeMutablePointer<UInt8>  // 3^5 trit tuples → 8-bit field
    let quintPack: UnsafeMutablePointer<UInt8>  // 5^3 quint tuples → 7-bit field
    /// ``ASTCIntegerSequence``'s plain bits and kind (1, 3, 5) per level, copied: its static
    /// arrays, read from another module, cost a lazy-initialisation check (`swift_once`) and
    /// bounds checks in every ``writeSequence(_:count:level:start:into:)`` (two a packed block).
    let sequenceBits: UnsafeMutablePointer<UInt8>
    let sequenceKinds: UnsafeMutablePointer<UInt8>
    /// Base + offset endpoints (mode 9), per colour level: for a wanted base 0…255, the
    /// scrambled first value and the top bit the second must carry (`value | top << 8`,
    /// level × 256); for that top bit and a wanted offset −32…31, the scrambled second value
    /// (level × 2 × 64). The decoder builds the base from the first value's top seven bits and
    /// the second's top bit, the offset from the second's bits 1…6
    /// (``quantiseOffsetEnds(partitions:level:)``).
    let offsetBase: UnsafeMutablePointer<UInt16>
    let offsetValue: UnsafeMutablePointer<UInt8>
    /// Distinct 2-partition maps (both partitions used; a map and its complement once) and
    /// the first seed giving each.
    /// The maps eight a vector as low and high 32-bit halves (`distinctHalves[2k]`,
    /// `[2k + 1]`; the last vector padded with empty maps), so seed matching counts bits eight
    /// maps a lane: the build targets baseline x86-64, where `nonzeroBitCount` is a scalar
    /// bit-trick sequence per map.
    let distinctHalves: UnsafeMutablePointer<SIMD8<UInt32>>
    let distinctSeeds: UnsafeMutablePointer<Int>
    let distinctCount: Int
    /// Seed matching's per-map distances (scratch, one vector per eight maps).
    let seedDistance: UnsafeMutablePointer<SIMD8<UInt32>>
    let colourRounding: UnsafeMutablePointer<Float>  // per colour level: mean squared rounding error × ⅔
    let weightRounding: UnsafeMutablePointer<Float>  // per weight level: mean squared rounding error (0…1 scale)
    var lineTotal: Float = 0
    /// Per decimated grid (offset `taps / 4 · 2`… see `reachStart`): for each grid weight the
    /// texels its taps reach and the tap weights, so a weight step re-infills only those.
    let reachStart: UnsafeMutablePointer<Int32>  // per grid: gridCount + 1 offsets into reach*
    let reachTexel: UnsafeMutablePointer<Int32>
    let reachWeight: UnsafeMutablePointer<Int32>
    let reachWeightF: UnsafeMutablePointer<Float>

    // Per-block scratch.
    /// The block's texels channel by channel (structure of arrays, for the single-partition
    /// fit every level starts with): channel `c`'s texels `4k…4k+3` at `planes[16·c + k]`, so
    /// projections and sums run four texels a lane with no horizontal adds per texel.
    let planes: UnsafeMutablePointer<SIMD4<Float>>  // 4 × 16
    /// Per-channel texel sums (for the refit), and the block's RGBA words as read.
    var channelSums = SIMD4<Float>()
    let words: UnsafeMutablePointer<UInt32>
    /// Weights four texels a lane: ideal (0…1) during the fit, decoded (0…64) after.
    let weightChunks: UnsafeMutablePointer<SIMD4<Float>>  // 16
    let chunkCount: Int
    /// ``fastCandidate``'s grid (when decimated) as four-texel blocks of its infill matrix:
    /// grid weight `i` reaches chunks `fastChunk[fastStart[i]..<fastStart[i + 1]]` with tap
    /// weights `fastInfill` (summing to 16 per texel over the grid) and averaging weights
    /// `fastAverage` (the same × the grid weight's `1 / Σ tap weight`), so both directions run
    /// four texels a lane and skip the chunks a grid weight does not reach.
    let fastStart: UnsafeMutablePointer<Int32>
    let fastChunk: UnsafeMutablePointer<Int32>
    let fastInfill: UnsafeMutablePointer<SIMD4<Float>>
    let fastAverage: UnsafeMutablePointer<SIMD4<Float>>
    let gridValueF: UnsafeMutablePointer<Float>  // decoded grid weights (0…64) as Float
    let gridValue: UnsafeMutablePointer<Int32>  // decoded grid weights (0…64), ``infill(_:)``'s
    let nearestWeight: UnsafeMutablePointer<Float>  // level × 65: 0…64 → nearest decoded weight value
    let texels: UnsafeMutablePointer<SIMD4<Float>>
    let texelInts: UnsafeMutablePointer<SIMD4<Int32>>
    let partitionOf: UnsafeMutablePointer<Int>
    let ideal: UnsafeMutablePointer<Float>
    let gridIdeal: UnsafeMutablePointer<Float>  // 128: grid values, then texel residuals (``backProject``)
    let gridQ: UnsafeMutablePointer<UInt8>
    let texelW: UnsafeMutablePointer<Int32>
    let texelSum: UnsafeMutablePointer<Int32>  // Σ weight value × tap weight (infill before rounding)
    let screenIdeal: UnsafeMutablePointer<Float>
    let lineLength2: UnsafeMutablePointer<Float>
    /// The same for the line through black (colour-scaled layouts), and its ends per partition.
    let screenIdealScaled: UnsafeMutablePointer<Float>
    let lineLength2Scaled: UnsafeMutablePointer<Float>
    var lineTotalScaled: Float = 0
    /// Per texel, the ideal weight of each endpoint kind in one vector (direct, colour-scaled,
    /// mixed, unused) and the squared line lengths alike: one pass over a grid's taps
    /// estimates every kind (``decimateKinds(_:)``). Mixed takes each texel from the scaled
    /// kind when its partition is ``mixedScaled``, from the direct kind otherwise.
    let screenKinds: UnsafeMutablePointer<SIMD4<Float>>
    let lengthKinds: UnsafeMutablePointer<SIMD4<Float>>
    let gridKinds: UnsafeMutablePointer<SIMD4<Float>>  // 128: grid values, then texel residuals (``backProject``)
    var lineTotalMixed: Float = 0
    /// Per decimated grid (``Candidate/slot``): its grid errors for the current partitioning
    /// (by kind), valid when its stamp equals `generation`.
    let slotError: UnsafeMutablePointer<SIMD4<Float>>
    let slotStamp: UnsafeMutablePointer<Int>
    let slotCount: Int
    var generation = 0
    /// Counts ``encodeBlock(opaque:level:)`` calls, so state it leaves can be told to be this block's.
    var blockSerial = 0
    /// The exact decoded squared error of the block ``encodeBlock(opaque:level:)`` last returned
    /// (the search's own, in the decoder's arithmetic); -1 when it did not measure it (`fast`).
    /// The rate-distortion choice reads it rather than decoding the block to measure it again.
    var searchedError = -1
    /// Whether the block ``encodeBlock(opaque:level:)`` last returned came from past `fast`'s
    /// block (whose error was over the limit): the rate-distortion choice then skips the
    /// weight-reuse trials (``rateDistortionChoice(_:error:level:lambda:recent:decoded:)``).
    var searchedPastFast = false
    /// The RDO choice's ``standardSettledBits`` (0: no choice settles before every candidate is tried).
    var settledBits = ASTCEncoder.standardSettledBits
    /// The block (``blockSerial``) whose one-partition lines the search left: the principal
    /// line's ideal weights in `screenIdeal` and `lineLength2` (`fast`'s line, `fastAxisEnds`),
    /// the line through black in `chromaEnds`, `screenIdealScaled` and `lineLength2Scaled`,
    /// both packed by ``fillKinds(mixed:)`` with the grid errors cached since, and their off-line
    /// errors and squared length sums (``idealWeights(_:partitions:into:lengths:)``); -1 once
    /// two partitions overwrite them. The simple layouts read it (ASTCEncoder+SimpleModes.swift).
    var oneLineSerial = -1
    var oneLineDirectOffLine: Float = 0
    var oneLineScaledOffLine: Float = 0
    var oneLineScaledTotal: Float = 0
    /// ``fitFast(opaque:scored:)``'s one-partition principal line for the current block (its
    /// `axisEnds`): the simple layouts fit from it after the search may have replaced
    /// `axisEnds` (ASTCEncoder+SimpleModes.swift).
    var fastAxisEnds = (SIMD4<Float>(), SIMD4<Float>())
    /// The partition (0 or 1) that a mixed layout gives colour-scaled endpoints.
    var mixedScaled = 0
    let chromaEnds: UnsafeMutablePointer<SIMD4<Float>>  // 2 × 2
    /// Per partition: principal-axis endpoints, working endpoints, decoded endpoints.
    let axisEnds: UnsafeMutablePointer<SIMD4<Float>>  // 2 × 2
    let ends: UnsafeMutablePointer<SIMD4<Float>>  // 2 × 2
    let decodedEnds: UnsafeMutablePointer<SIMD4<Float>>  // 2 × 2
    let base: UnsafeMutablePointer<SIMD4<Int32>>  // 2: 257·64·e0 + 32
    /// Per partition, the decoded colour `(base + slope · w) >> 14` at each weight 0…64 (2 × 65).
    let decodedColours: UnsafeMutablePointer<SIMD4<Int32>>
    let slope: UnsafeMutablePointer<SIMD4<Int32>>  // 2: 257·(e1 − e0)
    let colourQ: UnsafeMutablePointer<UInt8>  // 16 scrambled colour values in block order
    // The best layout so far.
    let bestGridQ: UnsafeMutablePointer<UInt8>
    let bestColourQ: UnsafeMutablePointer<UInt8>

    public init(format: ASTCFormat) throws(CodecError) {
        guard Self.supportedFormats.contains(format) else {
            throw .byteCount(
                what: "\(format.rawValue) encoder (encodes astc4x4, astc6x6, astc8x8)", expected: 0, actual: 0)
        }
        self.format = format
        let modes = ASTCBlockModes.table(for: format)
        self.modes = modes
        let count = format.blockWidth * format.blockHeight
        texelCount = count

        // Decimation tables, one per distinct infill table.
        var taps: [Int32] = [], weights: [Int32] = [], coverage: [Float] = []
        var reachStarts: [Int32] = [], reachTexels: [Int32] = [], reachWeights: [Int32] = []
        var placed: [Int32: (Int, Int, Int, Int, Int)] = [:]
        func place(_ infill: Int32, gridCount: Int) -> (Int, Int, Int, Int, Int) {
            if infill < 0 { return (-1, -1, -1, -1, 4) }
            if let known = placed[infill] { return known }
            let start = (taps.count, coverage.count, reachStarts.count, placed.count)
            var sums = [Float](repeating: 0, count: gridCount)
            var reached = [[(Int32, Int32)]](repeating: [], count: gridCount)
            var mostNonzero = 0
            for t in 0..<count {
                let i = modes.infillTaps[Int(infill) + 2 * t], w = modes.infillTaps[Int(infill) + 2 * t + 1]
                var texelTaps: [(grid: Int32, weight: Int32)] = []
                for k in 0..<4 {
                    let shift = UInt32(8 * k)
                    texelTaps.append((Int32((i >> shift) & 0xFF), Int32((w >> shift) & 0xFF)))
                }
                // Nonzero taps first (the decoder's order, top-left … below-right, is ascending).
                let nonzero = texelTaps.filter { $0.weight != 0 }
                mostNonzero = max(mostNonzero, nonzero.count)
                for (g, v) in nonzero + texelTaps.filter({ $0.weight == 0 }) {
                    taps.append(g); weights.append(v)
                    sums[Int(g)] += Float(v)
                    if v != 0 { reached[Int(g)].append((Int32(t), v)) }
                }
            }
            coverage += sums.map { $0 > 0 ? 1 / $0 : 0 }
            for g in 0..<gridCount {
                reachStarts.append(Int32(reachTexels.count))
                // Taps of one texel may name the same grid weight twice: merge them.
                var merged: [(Int32, Int32)] = []
                for (t, v) in reached[g] {
                    if let last = merged.last, last.0 == t {
                        merged[merged.count - 1].1 += v
                    } else {
                        merged.append((t, v))
                    }
                }
                for (t, v) in merged { reachTexels.append(t); reachWeights.append(v) }
            }
            reachStarts.append(Int32(reachTexels.count))
            let at = (start.0, start.1, start.2, start.3, mostNonzero <= 2 ? 2 : 4)
            placed[infill] = at
            return at
        }
        let ranked = Self.rankCandidates(format: format, modes: modes, partitions: 1)
        let rankedTwo = Self.rankCandidates(format: format, modes: modes, partitions: 2)
        let rankedScaled = Self.rankCandidates(format: format, modes: modes, partitions: 1, scaled: true)
        let rankedScaledTwo = Self.rankCandidates(format: format, modes: modes, partitions: 2, scaled: true)
        let rankedMixedTwo = Self.rankCandidates(format: format, modes: modes, partitions: 2, mixed: true)
        func withTables(_ list: [Candidate]) -> [Candidate] {
            list.map { c in
                var c = c
                (c.taps, c.coverage, c.reach, c.slot, c.tapCount) = place(Int32(c.taps), gridCount: c.gridCount)
                return c
            }
        }
        candidates = withTables(ranked.list + rankedScaled.list)
        let fastLayout = withTables([ranked.fast])[0]
        fastCandidate = fastLayout
        simpleCandidates = withTables(Self.simpleLayouts(format: format, modes: modes))
        var starts: [Int32] = [0], chunks: [Int32] = [], infills: [SIMD4<Float>] = [], averages: [SIMD4<Float>] = []
        if fastLayout.taps >= 0 {
            var matrix = [[Float]](repeating: [Float](repeating: 0, count: count), count: fastLayout.gridCount)
            for t in 0..<count {
                for k in 0..<4 {
                    matrix[Int(taps[fastLayout.taps + 4 * t + k])][t] += Float(weights[fastLayout.taps + 4 * t + k])
                }
            }
            for g in 0..<fastLayout.gridCount {
                for k in 0..<count / 4 {
                    let w = SIMD4<Float>(
                        matrix[g][4 * k], matrix[g][4 * k + 1], matrix[g][4 * k + 2], matrix[g][4 * k + 3])
                    guard w != SIMD4<Float>() else { continue }
                    chunks.append(Int32(k)); infills.append(w); averages.append(w * coverage[fastLayout.coverage + g])
                }
                starts.append(Int32(chunks.count))
            }
        }
        // Direct layouts first (a non-opaque block stops at the first scaled one), each kind
        // grouped by grid so the estimate decimates once per grid and kind.
        func grouped(_ list: [Candidate]) -> [Candidate] {
            list.sorted {
                ($0.kind, $0.taps, $0.gridCount, $0.weightLevel, $0.mode) < (
                    $1.kind, $1.taps, $1.gridCount, $1.weightLevel, $1.mode
                )
            }
        }
        partitionCandidates = grouped(withTables(rankedTwo.list + rankedScaledTwo.list + rankedMixedTwo.list))
        dualCandidates = withTables(Self.rankCandidates(format: format, modes: modes, partitions: 1, dual: true).list)
        screening = grouped(candidates)
        luminanceScreening = grouped(
            withTables(Self.rankCandidates(format: format, modes: modes, partitions: 1, luminance: true).list))
        slotCount = placed.count
        scaledStart = screening.firstIndex { $0.scaled } ?? screening.count
        // 65025 · 10^(−dB/10) per texel (precomputed: the stdlib has no log10).
        errorLimit = count * (count <= 16 ? 321 : count <= 36 ? 2822 : 8411) / 100
        func copy<T>(_ array: [T], minimum: Int = 1) -> UnsafeMutablePointer<T> {
            let p = UnsafeMutablePointer<T>.allocate(capacity: max(array.count, minimum))
            _ = UnsafeMutableBufferPointer(start: p, count: array.count).initialize(from: array)
            return p
        }
        tapIndex = copy(taps)
        fastStart = copy(starts)
        fastChunk = copy(chunks)
        fastInfill = copy(infills)
        fastAverage = copy(averages)
        gridValueF = .filled(64, with: 0)
        gridValue = .filled(64, with: 0)
        tapWeight = copy(weights)
        tapWeightF = copy(weights.map { Float($0) })
        inverseCoverage = copy(coverage)
        reachStart = copy(reachStarts)
        reachTexel = copy(reachTexels)
        reachWeight = copy(reachWeights)
        reachWeightF = copy(reachWeights.map { Float($0) })

        let small = count < 32
        partitionMasks = copy(
            (0..<1024).map { seed in
                var mask: UInt64 = 0
                for y in 0..<format.blockHeight {
                    for x in 0..<format.blockWidth
                    where ASTCPartition.select(seed: seed, x: x, y: y, count: 2, smallBlock: small) == 1 {
                        mask |= 1 << UInt64(y * format.blockWidth + x)
                    }
                }
                return mask
            })

        var cq = [UInt8](repeating: 0, count: 21 * 256)
        for level in ASTCIntegerSequence.minimumColourLevel..<21 {
            for v in 0..<256 {
                var best = 0, bestError = Int.max
                for s in 0..<ASTCIntegerSequence.ranges[level] {
                    let e = abs(Int(ASTCIntegerSequence.colourUnquantised[level * 256 + s]) - v)
                    if e < bestError { bestError = e; best = s }
                }
                cq[level * 256 + v] = UInt8(best)
            }
        }
        colourQuant = copy(cq)
        var ob = [UInt16](repeating: 0, count: 21 * 256), ov = [UInt8](repeating: 0, count: 21 * 128)
        for level in ASTCIntegerSequence.minimumColourLevel..<21 {
            let values = ASTCIntegerSequence.colourUnquantised[(level * 256)...].prefix(
                ASTCIntegerSequence.ranges[level])
            for v in 0..<256 {
                var best = 0, bestError = Int.max
                for top in [v >> 7, 1 - v >> 7] {
                    for (s, u) in values.enumerated() where abs((Int(u) >> 1 | top << 7) - v) < bestError {
                        bestError = abs((Int(u) >> 1 | top << 7) - v); best = s | top << 8
                    }
                }
                ob[level * 256 + v] = UInt16(best)
            }
            for top in 0..<2 {
                for offset in -32..<32 {
                    var best = 0, bestError = Int.max
                    for (s, u) in values.enumerated() where Int(u) >> 7 == top {
                        let o = (Int(u) >> 1) & 0x3F, signed = o & 0x20 != 0 ? o - 0x40 : o
                        if abs(signed - offset) < bestError { bestError = abs(signed - offset); best = s }
                    }
                    ov[(level * 2 + top) * 64 + offset + 32] = UInt8(best)
                }
            }
        }
        offsetBase = copy(ob)
        offsetValue = copy(ov)
        weightRounding = copy(
            (0..<12).map { level -> Float in
                let step = 1 / Float(ASTCIntegerSequence.ranges[level] - 1)
                return step * step / 12
            })
        colourRounding = copy(
            (0..<21).map { level -> Float in
                let step = 255 / Float(ASTCIntegerSequence.ranges[level] - 1)
                return step * step / 12 * (2 / 3)
            })
        colourValue = copy(ASTCIntegerSequence.colourUnquantised)
        var wq = [UInt8](repeating: 0, count: 12 * 65)
        var steps = [UInt8](repeating: 0, count: 12 * 64)
        for level in 0..<12 {
            let range = ASTCIntegerSequence.ranges[level]
            func value(_ s: Int) -> Int { Int(ASTCIntegerSequence.weightUnquantised[level * 32 + s]) }
            for v in 0...64 {
                var best = 0, bestError = Int.max
                for s in 0..<range where abs(value(s) - v) < bestError { bestError = abs(value(s) - v); best = s }
                wq[level * 65 + v] = UInt8(best)
            }
            for s in 0..<range {
                var down = s, up = s
                for o in 0..<range {
                    if value(o) < value(s), down == s || value(o) > value(down) { down = o }
                    if value(o) > value(s), up == s || value(o) < value(up) { up = o }
                }
                steps[(level * 32 + s) * 2] = UInt8(down)
                steps[(level * 32 + s) * 2 + 1] = UInt8(up)
            }
        }
        weightQuant = copy(wq)
        nearestWeight = copy(
            (0..<(12 * 65)).map { i in Float(ASTCIntegerSequence.weightUnquantised[i / 65 * 32 + Int(wq[i])]) })
        weightValue = copy(ASTCIntegerSequence.weightUnquantised.map { Int32($0) })
        weightStep = copy(steps)
        var tp = [UInt8](repeating: 0, count: 243), qp = [UInt8](repeating: 0, count: 125)
        for t in (0..<256).reversed() {
            let r = ASTCIntegerSequence.tritTable[(t * 5)..<(t * 5 + 5)].map(Int.init)
            tp[r[0] + 3 * r[1] + 9 * r[2] + 27 * r[3] + 81 * r[4]] = UInt8(t)
        }
        for q in (0..<128).reversed() {
            let r = ASTCIntegerSequence.quintTable[(q * 3)..<(q * 3 + 3)].map(Int.init)
            qp[r[0] + 5 * r[1] + 25 * r[2]] = UInt8(q)
        }
        tritPack = copy(tp)
        quintPack = copy(qp)
        sequenceBits = copy(ASTCIntegerSequence.bitCounts)
        sequenceKinds = copy(ASTCIntegerSequence.kinds)

        var masks: [UInt64] = [], maskSeeds: [Int] = [], seenMasks = Set<UInt64>()
        let all = UInt64.max >> UInt64(64 - count)
        for seed in 0..<1024 {
            let m = partitionMasks[seed]
            if m != 0, m != all, seenMasks.insert(m).inserted, seenMasks.insert(m ^ all).inserted {
                masks.append(m); maskSeeds.append(seed)
            }
        }
        let vectors = (masks.count + 7) / 8
        var halves = [SIMD8<UInt32>](repeating: SIMD8(), count: 2 * vectors)
        for (j, m) in masks.enumerated() {
            halves[2 * (j / 8)][j % 8] = UInt32(truncatingIfNeeded: m)
            halves[2 * (j / 8) + 1][j % 8] = UInt32(truncatingIfNeeded: m >> 32)
        }
        distinctHalves = copy(halves)
        distinctSeeds = copy(maskSeeds)
        distinctCount = masks.count
        seedDistance = .filled(max(vectors, 1), with: SIMD8())
        texelSum = .filled(64, with: 0)
        screenIdeal = .filled(64, with: 0)
        lineLength2 = .filled(64, with: 0)
        screenIdealScaled = .filled(64, with: 0)
        lineLength2Scaled = .filled(64, with: 0)
        screenKinds = .filled(64, with: SIMD4<Float>())
        lengthKinds = .filled(64, with: SIMD4<Float>())
        gridKinds = .filled(128, with: SIMD4<Float>())
        slotError = .allocate(capacity: max(slotCount, 1))
        slotStamp = .filled(max(slotCount, 1), with: -1)
        chromaEnds = .filled(4, with: SIMD4<Float>(0, 0, 0, 255))
        texels = .allocate(capacity: 64)
        planes = .filled(64, with: SIMD4<Float>())
        weightChunks = .filled(16, with: SIMD4<Float>())
        words = .filled(64, with: 0)
        chunkCount = count / 4
        texelInts = .allocate(capacity: 64)
        partitionOf = .filled(64, with: 0)
        ideal = .allocate(capacity: 64)
        gridIdeal = .filled(128, with: 0)
        gridQ = .filled(64, with: 0)
        // Dual plane: the second plane's at 64; else `error(partitions:)`'s per texel there.
        texelW = .allocate(capacity: 128)
        axisEnds = .filled(4, with: SIMD4<Float>())
        ends = .allocate(capacity: 4)
        decodedEnds = .allocate(capacity: 4)
        base = .allocate(capacity: 2)
        decodedColours = .filled(2 * 65, with: SIMD4<Int32>())
        slope = .allocate(capacity: 2)
        colourQ = .filled(16, with: 0)
        bestGridQ = .filled(64, with: 0)
        bestColourQ = .filled(16, with: 0)
    }

    deinit {
        partitionMasks.deallocate(); tapIndex.deallocate(); tapWeight.deallocate(); tapWeightF.deallocate();
        inverseCoverage.deallocate()
        colourQuant.deallocate(); colourValue.deallocate(); weightQuant.deallocate(); weightValue.deallocate()
        weightStep.deallocate(); tritPack.deallocate(); quintPack.deallocate()
        sequenceBits.deallocate(); sequenceKinds.deallocate()
        offsetBase.deallocate(); offsetValue.deallocate()
        distinctHalves.deallocate(); distinctSeeds.deallocate(); seedDistance.deallocate(); colourRounding.deallocate();
        weightRounding.deallocate(); reachStart.deallocate(); reachTexel.deallocate(); reachWeight.deallocate();
        reachWeightF.deallocate()
        texelSum.deallocate(); screenIdeal.deallocate(); lineLength2.deallocate()
        screenIdealScaled.deallocate(); lineLength2Scaled.deallocate(); chromaEnds.deallocate()
        fastStart.deallocate(); fastChunk.deallocate(); fastInfill.deallocate(); fastAverage.deallocate();
        gridValueF.deallocate(); gridValue.deallocate(); nearestWeight.deallocate()
        screenKinds.deallocate(); lengthKinds.deallocate(); gridKinds.deallocate(); slotError.deallocate();
        slotStamp.deallocate()
        texels.deallocate(); planes.deallocate(); weightChunks.deallocate(); words.deallocate(); texelInts.deallocate();
        partitionOf.deallocate(); ideal.deallocate(); gridIdeal.deallocate()
        gridQ.deallocate(); texelW.deallocate(); axisEnds.deallocate(); ends.deallocate(); decodedEnds.deallocate()
        base.deallocate(); decodedColours.deallocate(); slope.deallocate(); colourQ.deallocate();
        bestGridQ.deallocate(); bestColourQ.deallocate()
    }

    /// Single-plane layouts worth trying for `partitions` (1 or 2), ranked, and the one
    /// `fast` uses. A layout is a weight grid with a weight quantisation; its colour level is
    /// what the remaining bits allow. Per grid, the three finest weight levels (two at two
    /// partitions) whose RGB endpoints keep at least colour range 20 (12 at two partitions)
    /// are kept; grids under a third of the footprint, or more than one step from square, are
    /// not, nor grids that are neither square nor as wide or as high as the footprint (at
    /// 6 × 6: 3 × 4, 3 × 5, 4 × 5 and their transposes, which astcenc `fastest`'s mode cut also
    /// leaves out; since the decimated weights are back-projected, 5 × 5 takes most of their
    /// blocks: −6 of 13 grids to estimate, terrain1024 +0.05 dB, astronaut512 −0.02 dB).
    /// At two partitions only the eight best-ranked layouts of each endpoint kind.
    /// A layout's rank: weight count × weight precision first, colour precision as the
    /// tie-break; equal scores go by block mode (``rankCandidates(format:modes:partitions:)``).
    static func rankScore(_ c: Candidate) -> Double {
        Double(c.gridCount) * Double(ASTCIntegerSequence.ranges[c.weightLevel]).squareRoot() + Double(c.rgbLevel)
    }

    /// `scaled`: colour-scaled layouts (endpoint mode 6, four values a partition), ranked the
    /// same way with their colour level. `mixed` (two partitions): one partition mode 6, the
    /// other mode 8, ten values in two bits fewer (the per-partition mode bits). `luminance`
    /// (one partition): mode 0, two values, ranked the same way with their colour level.
    static func rankCandidates(
        format: ASTCFormat, modes: ASTCBlockModes, partitions: Int,
        scaled: Bool = false, mixed: Bool = false, dual: Bool = false, luminance: Bool = false
    ) -> (list: [Candidate], fast: Candidate) {
        let bw = format.blockWidth, bh = format.blockHeight
        let colourBitsTotal = dual ? 109 : partitions == 1 ? 111 : mixed ? 97 : 99
        let values = luminance ? 2 : mixed ? 10 : (scaled ? 4 : 6) * partitions
        func level(count: Int, bits: Int) -> Int {
            bits < 0 ? -1 : Int(ASTCIntegerSequence.colourLevels[(count >> 1) * 128 + min(bits, 127)])
        }
        let minimumRGB = partitions == 1 ? 9 : 7, minimumRGBA = partitions == 1 ? 7 : 5
        var byGrid: [Int: [Candidate]] = [:]
        var seen = Set<Int>()
        for mode in 0..<2048 {
            let e = modes.entries[mode]
            guard e.valid, e.dualPlane == dual, mode & 0x1FF != 0x1FC else { continue }
            let gw = Int(e.gridWidth), gh = Int(e.gridHeight), wbits = Int(e.weightBits)
            let key = (gw * 16 + gh) * 16 + Int(e.weightLevel)
            guard !seen.contains(key) else { continue }
            let c = Candidate(
                mode: mode, gridWidth: gw, gridHeight: gh, weightLevel: Int(e.weightLevel), weightBits: wbits,
                rgbLevel: level(count: values, bits: colourBitsTotal - wbits),
                rgbaLevel: scaled || mixed || dual || luminance
                    ? 0 : level(count: 8 * partitions, bits: colourBitsTotal - wbits),
                taps: Int(e.infill), coverage: -1, scaled: scaled, mixed: mixed, dual: dual, luminance: luminance)
            guard c.rgbLevel >= minimumRGB, scaled || mixed || dual || luminance || c.rgbaLevel >= minimumRGBA,
                gw * gh * 3 >= bw * bh, abs(gw - gh) <= 2,
                gw == gh || gw == bw || gh == bh
            else { continue }
            seen.insert(key)
            byGrid[gw * 16 + gh, default: []].append(c)
        }
        // Grids in key order and ties broken by block mode: the ranking (and so every encoded
        // block) must not depend on Dictionary order, which Swift seeds per process.
        var list: [Candidate] = []
        for grid in byGrid.keys.sorted() {
            guard let options = byGrid[grid] else { continue }
            list += options.sorted { ($0.weightLevel, $1.mode) > ($1.weightLevel, $0.mode) }.prefix(
                partitions == 1 ? 3 : 2)
        }
        list.sort { (rankScore($0), $1.mode) > (rankScore($1), $0.mode) }
        if dual {
            // Dual-plane layouts are fitted, not estimated: one, the most weight levels over the
            // most grid weights (grid weights × levels, then colour level). The single-plane
            // score's √levels ranked 1- and 2-bit weights first, which a second plane wastes:
            // each of the eleven 6 × 6 dual layouts fitted alone on terrain1024, the first by
            // this score (4 × 4, 5 levels) gained most (+0.24 dB; the √levels first +0.01).
            list.sort {
                (Double($0.gridCount * ASTCIntegerSequence.ranges[$0.weightLevel]), $0.rgbLevel, $1.mode)
                    > (Double($1.gridCount * ASTCIntegerSequence.ranges[$1.weightLevel]), $1.rgbLevel, $0.mode)
            }
            return (
                Array(list.prefix(1)), list.first ?? rankCandidates(format: format, modes: modes, partitions: 1).fast
            )
        }
        return (partitions == 1 ? list : Array(list.prefix(8)), list[0])
    }

    /// Encodes `rgba` (`width × height × 4` bytes, rows top first); edge blocks repeat the
    /// last row and column. `rdo` other than ``ASTCRateDistortion/off`` chooses each opaque
    /// block for error and deflated size together (ASTCEncoder+RateDistortion.swift).
    /// - Throws: ``CodecError`` for a size outside 1…16384 or a wrong byte count.
    /// - Cost: the search per block (see the type); `rdo` adds a decode, a rate estimate and a
    ///   few trial fits per opaque block, and the tile's bytes once more in memory.
    public func encode(
        rgba: [UInt8], width: Int, height: Int, level: Level = .quality, rdo: ASTCRateDistortion = .off
    ) throws(CodecError) -> [UInt8] {
        try format.validateSize(width: width, height: height)
        guard rgba.count == width * height * 4 else {
            throw .byteCount(what: "RGBA input", expected: width * height * 4, actual: rgba.count)
        }
        let grid = format.blockGrid(width: width, height: height)
        let bw = format.blockWidth, bh = format.blockHeight
        var out = [UInt8](repeating: 0, count: format.byteCount(width: width, height: height))
        let quality = level == .quality
        let recent = rdo.isOff ? nil : recentBlocks(blockCount: grid.wide * grid.high, columns: grid.wide)
        var tile = ASTCTileLambda(base: rdo.lambda, texelCount: texelCount)
        rgba.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                for by in 0..<grid.high {
                    for bx in 0..<grid.wide {
                        recent?.column = bx
                        // Edge blocks repeat the last row and column, so every offset is
                        // inside the `width × height × 4` bytes checked above.
                        var differ: UInt32 = 0, alpha: UInt32 = 0xFF00_0000
                        let first = UInt32(
                            littleEndian: src.loadUnaligned(
                                fromByteOffset: (min(by * bh, height - 1) * width + min(bx * bw, width - 1)) * 4,
                                as: UInt32.self))
                        if (bx + 1) * bw <= width && (by + 1) * bh <= height {
                            for y in 0..<bh {
                                let row = ((by * bh + y) * width + bx * bw) * 4
                                for x in 0..<bw {
                                    let word = UInt32(
                                        littleEndian: src.loadUnaligned(fromByteOffset: row + 4 * x, as: UInt32.self))
                                    words[y * bw + x] = word
                                    differ |= word ^ first
                                    alpha &= word
                                }
                            }
                        } else {
                            for y in 0..<bh {
                                let row = min(by * bh + y, height - 1) * width
                                for x in 0..<bw {
                                    let word = UInt32(
                                        littleEndian: src.loadUnaligned(
                                            fromByteOffset: (row + min(bx * bw + x, width - 1)) * 4, as: UInt32.self))
                                    words[y * bw + x] = word
                                    differ |= word ^ first
                                    alpha &= word
                                }
                            }
                        }
                        if differ == 0 {
                            let c =
                                SIMD4<UInt64>(
                                    UInt64(first & 0xFF), UInt64(first >> 8 & 0xFF), UInt64(first >> 16 & 0xFF),
                                    UInt64(first >> 24)) &* 257
                            let offset = (by * grid.wide + bx) * 16
                            dst.storeBytes(
                                of: (0xDFC | ((1 << 52) - 1) << 12 as UInt64).littleEndian, toByteOffset: offset,
                                as: UInt64.self)
                            dst.storeBytes(
                                of: (c[0] | c[1] << 16 | c[2] << 32 | c[3] << 48).littleEndian,
                                toByteOffset: offset + 8, as: UInt64.self)
                            if let recent { recordConstant(dst, at: offset, tile: &tile, in: recent) }
                            continue
                        }
                        loadPlanes(aos: quality || recent != nil)
                        let opaque = alpha == 0xFF00_0000
                        var bits: ASTCBits
                        if let recent, opaque, let copy = repeatBeforeSearch(tile: &tile, in: recent) {
                            bits = copy
                        } else {
                            bits = encodeBlock(opaque: opaque, level: level)
                            if let recent {
                                bits = rateDistortion(bits, opaque: opaque, level: level, tile: &tile, in: recent)
                            }
                        }
                        let offset = (by * grid.wide + bx) * 16
                        dst.storeBytes(of: bits.lo.littleEndian, toByteOffset: offset, as: UInt64.self)
                        dst.storeBytes(of: bits.hi.littleEndian, toByteOffset: offset + 8, as: UInt64.self)
                    }
                }
            }
        }
        return out
    }

    /// Splits the RGBA words in `words` (little-endian bytes R, G, B, A) into `planes`, four
    /// texels a lane; with `aos`, also into `texels`/`texelInts` (what `quality`'s search reads).
    /// Cost: one pass over the texels, vector conversions.
    @inline(__always)
    func loadPlanes(aos: Bool) {
        for k in 0..<chunkCount {
            let v = SIMD4<Int32>(
                truncatingIfNeeded: SIMD4<UInt32>(words[4 * k], words[4 * k + 1], words[4 * k + 2], words[4 * k + 3]))
            planes[k] = SIMD4<Float>(v & 0xFF)
            planes[16 + k] = SIMD4<Float>((v &>> 8) & 0xFF)
            planes[32 + k] = SIMD4<Float>((v &>> 16) & 0xFF)
            planes[48 + k] = SIMD4<Float>((v &>> 24) & 0xFF)
        }
        guard aos else { return }
        for t in 0..<texelCount {
            let w = words[t]
            let v = SIMD4<Int32>(Int32(w & 0xFF), Int32(w >> 8 & 0xFF), Int32(w >> 16 & 0xFF), Int32(w >> 24))
            texelInts[t] = v
            texels[t] = SIMD4<Float>(v)
        }
    }

    /// The best block for the (not constant) texels in `planes` (and, at `quality`, in
    /// `texels`/`texelInts`).
    func encodeBlock(opaque: Bool, level: Level) -> ASTCBits {
        blockSerial &+= 1
        searchedPastFast = false
        fitFast(opaque: opaque, scored: level != .fast)
        if level == .fast {
            searchedError = -1
            return pack(fastCandidate, partitions: 1, seed: 0, opaque: opaque, gridValues: gridQ, colourValues: colourQ)
        }
        // `fast`'s block is the baseline, so `quality` never loses to it; a block already
        // under the error limit stops here (smooth and upsampled blocks, most of a map).
        for t in 0..<texelCount { partitionOf[t] = 0 }
        var best = Best(candidate: fastCandidate, partitions: 1, seed: 0, error: Int.max)
        keep(&best, fastCandidate, partitions: 1, seed: 0, error: error(partitions: 1))
        if best.error <= errorLimit { return packBest(best, opaque: opaque) }
        searchedPastFast = true

        // Rank every layout by an estimate in weight space; fully fit the best two. Each
        // estimate includes its line's off-line error: the principal line for direct
        // endpoints, the line through black for colour-scaled ones (opaque blocks only).
        let all = UInt64.max >> UInt64(64 - texelCount)
        let direct = idealWeights(axisEnds, partitions: 1, into: screenIdeal, lengths: lineLength2)
        lineTotal = direct.total
        var scaledOffLine = Float.infinity
        if opaque {
            setChromaEnds(partitions: 1, mask: all)
            let line = idealWeights(chromaEnds, partitions: 1, into: screenIdealScaled, lengths: lineLength2Scaled)
            (scaledOffLine, lineTotalScaled) = (line.offLine, line.total)
            (oneLineSerial, oneLineScaledOffLine, oneLineScaledTotal) = (blockSerial, line.offLine, line.total)
            oneLineDirectOffLine = direct.offLine
        }
        fillKinds(mixed: false)
        var first1 = -1, first2 = -1
        var estimate1 = Float.infinity, estimate2 = Float.infinity
        /// Layout `i` of the ranking (`screening`, then `luminanceScreening`) with its off-line
        /// error `line`, entered among the best two estimates when it beats one.
        @inline(__always) func rank(_ i: Int, _ c: Candidate, line: Float) {
            let rounding = estimate(c, opaque: opaque)
            guard line + rounding < estimate2 else { return }
            let e = line + gridError(c) + rounding
            if e < estimate1 {
                (first2, estimate2) = (first1, estimate1)
                (first1, estimate1) = (i, e)
            } else if e < estimate2 {
                (first2, estimate2) = (i, e)
            }
        }
        // Opaque blocks rank the colour-scaled layouts first (usually the better kind there), so
        // the bound below skips more: a layout whose line and rounding terms alone reach the
        // second-best estimate cannot enter the best two, and its grid is not decimated.
        // Grey blocks (R = G = B in every texel) rank the luminance layouts instead: their line
        // is the principal one (grey), and two colour values where colour-scaled endpoints
        // spend four and direct six leave the bits for finer weights and colours, so a block
        // mode's luminance layout is the finer one (ranking the others as well kept 68 of 7,353
        // grey blocks colour-scaled, for the same PSNR at 0.01 dB and 6 % less speed;
        // docs/ASTC.md, the thirteenth round).
        let grey = opaque && isGrey()
        if grey {
            for (j, c) in luminanceScreening.enumerated() { rank(screening.count + j, c, line: direct.offLine) }
        } else {
            let count = opaque ? screening.count : scaledStart
            for step in 0..<count {
                let i = opaque ? (step + scaledStart) % screening.count : step
                let c = screening[i]
                rank(i, c, line: c.scaled ? scaledOffLine : direct.offLine)
            }
        }
        // One refit round per fit (a second bought nothing measurable); the second pick is not
        // fitted when the first came within 1.5 × the limit (1.25 × cost ~6 % more time for
        // +0.01 dB on terrain1024: that time buys more at two partitions, below).
        for pick in 0..<2 {
            let i = pick == 0 ? first1 : first2
            guard i >= 0, pick == 0 || best.error * 2 > errorLimit * 3 else { break }
            let c = i < screening.count ? screening[i] : luminanceScreening[i - screening.count]
            let previous = best.error
            var e = fit(c, partitions: 1, opaque: opaque, refits: 1)
            if e < best.error * 2 {
                e = refineWeights(c, partitions: 1, error: e)
                if e < best.error { keep(&best, c, partitions: 1, seed: 0, error: e) }
                let before = e
                e = refitToWeights(c, partitions: 1, opaque: opaque)
                if e < before { e = refineWeights(c, partitions: 1, error: e) }
            }
            if e < best.error { keep(&best, c, partitions: 1, seed: 0, error: e) }
            if opaque && c.kind == 0 && !c.luminance && best.error < previous {
                tryOffsetEnds(c, partitions: 1, seed: 0, best: &best)
            }
        }
        // A block within 4 × the limit after one partition stops here, as astcenc `fastest`
        // stops a block once its error is under its dB limit: that limit counts four channels
        // (alpha's error too), so at the same dB it accepts 4 × ours in summed RGB error. Dual
        // plane and two partitions are then for the hard blocks only (terrain1024 −0.02 dB,
        // astronaut512 −0.04 dB, for 0.56 / 0.74 of the time; 3 × and 5 × lie on the same
        // dB-for-time line, and `fast`'s block is too poor to accept on a looser limit).
        if best.error <= errorLimit * 4 { return packBest(best, opaque: opaque) }
        // Dual plane (opaque): the channel that correlates least with the other two gets its
        // own weight grid, unless it correlates with one of them at 0.95 or more (then a
        // second plane rarely wins: skipping those cut ~7 % of the time for −0.00 dB on
        // terrain1024; trying all three channels instead of the least correlated one gained
        // nothing measurable at +17 % time).
        if opaque, let c = dualCandidates.first {
            let (channel, correlation) = leastCorrelatedChannel()
            if correlation < 0.95 {
                let e = fitDual(c, channel: channel, refits: 2)
                if e < best.error { keep(&best, c, partitions: 1, seed: 0, error: e, plane2: channel) }
            }
        }
        if best.error <= errorLimit || partitionCandidates.isEmpty { return packBest(best, opaque: opaque) }

        // Two partitions: the seeds whose maps best match a 2-means clustering of the texels,
        // each (seed, layout) ranked by the estimate (its off-line error included, which one
        // partition's ranking could leave out); the best five pairs whose estimate is under
        // the best exact error so far are fitted exactly, the rounding term counted at a
        // tenth. The estimate ranks poorly at two partitions (the refit moves each line off
        // the principal one its off-line term assumes, and the endpoint refit and weight steps
        // win back much of the rounding it charges): fitting every layout of the three seeds
        // exactly would reach 35.73 dB on terrain1024 at a fifth of the speed, so more pairs
        // with less rounding charged is where time buys most. Measured on terrain1024 /
        // astronaut512 (one thread, CPU time, same run): three pairs at a quarter (before)
        // 35.44 / 36.24 dB; five at a tenth 35.51 dB for ~8 % more time, which the looser
        // second one-partition pick above (1.5 ×) and weight steps only for a fit within
        // 1.25 × the best (below) pay back on terrain1024: 35.49 / 36.25 dB at the same
        // terrain1024 speed, astronaut512 ~11 % slower (more of its blocks reach two partitions).
        let seeds = clusterSeeds()
        oneLineSerial = -1  // two partitions' lines replace the one-partition line through black
        let fits = 5  // of the eight lanes below
        var pickSeed = SIMD8<Int>(repeating: -1), pickLayout = SIMD8<Int>(repeating: 0)
        var pickEstimate = SIMD8<Float>(repeating: Float(best.error)), pickMixed = SIMD8<Int>(repeating: 0)
        for k in 0..<3 where seeds[k] >= 0 {
            setPartitions(count: 2, mask: partitionMasks[seeds[k]])
            let line = idealWeights(axisEnds, partitions: 2, into: screenIdeal, lengths: lineLength2)
            lineTotal = line.total
            var scaledOffLine = Float.infinity, mixedOffLine = Float.infinity
            if opaque {
                setChromaEnds(partitions: 2, mask: partitionMasks[seeds[k]])
                let scaledLine = idealWeights(
                    chromaEnds, partitions: 2, into: screenIdealScaled, lengths: lineLength2Scaled)
                (scaledOffLine, lineTotalScaled) = (scaledLine.offLine, scaledLine.total)
                mixedOffLine = setMixed(direct: line.split, scaled: scaledLine.split)
            }
            fillKinds(mixed: opaque)
            guard min(line.offLine, scaledOffLine, mixedOffLine) < pickEstimate[fits - 1] else { continue }
            for (i, c) in partitionCandidates.enumerated() {
                if c.kind != 0 && !opaque { break }
                let offLine = c.scaled ? scaledOffLine : c.mixed ? mixedOffLine : line.offLine
                let rounding = estimate(c, opaque: opaque) * 0.1
                guard offLine + rounding < pickEstimate[fits - 1] else { continue }
                let e = offLine + gridError(c) + rounding
                guard e < pickEstimate[fits - 1] else { continue }
                var j = fits - 1
                while j > 0 && pickEstimate[j - 1] > e {
                    (pickSeed[j], pickLayout[j], pickEstimate[j], pickMixed[j]) = (
                        pickSeed[j - 1], pickLayout[j - 1], pickEstimate[j - 1], pickMixed[j - 1]
                    )
                    j -= 1
                }
                (pickSeed[j], pickLayout[j], pickEstimate[j], pickMixed[j]) = (seeds[k], i, e, mixedScaled)
            }
        }
        // Picks often share a seed: its partitions and lines are set once.
        var partitionedBy = -1, chromaBy = -1
        for j in 0..<fits where pickSeed[j] >= 0 {
            let c = partitionCandidates[pickLayout[j]], seed = pickSeed[j]
            if partitionedBy != seed { setPartitions(count: 2, mask: partitionMasks[seed]); partitionedBy = seed }
            if c.kind != 0 && chromaBy != seed {
                setChromaEnds(partitions: 2, mask: partitionMasks[seed])
                chromaBy = seed
            }
            mixedScaled = pickMixed[j]
            let previous = best.error
            var e = fit(c, partitions: 2, opaque: opaque, refits: 2)
            // Weight steps and the second refit only for a fit within 1.25 × the best (2 ×, as at
            // one partition: the same dB on terrain1024 and astronaut512 with five fits, more time).
            if e * 4 < best.error * 5 {
                e = refineWeights(c, partitions: 2, error: e)
                if e < best.error { keep(&best, c, partitions: 2, seed: seed, error: e) }
                let before = e
                e = refitToWeights(c, partitions: 2, opaque: opaque)
                if e < before { e = refineWeights(c, partitions: 2, error: e) }
            }
            if e < best.error { keep(&best, c, partitions: 2, seed: seed, error: e) }
            if opaque && c.kind == 0 && best.error < previous {
                tryOffsetEnds(c, partitions: 2, seed: seed, best: &best)
            }
        }
        return packBest(best, opaque: opaque)
    }

    /// Whether every texel of the block in `planes` has R = G = B (a grey block, which
    /// luminance endpoints fit exactly in colour).
    /// Cost: two vector compares per four texels.
    func isGrey() -> Bool {
        for k in 0..<chunkCount where any(planes[k] .!= planes[16 + k]) || any(planes[k] .!= planes[32 + k]) {
            return false
        }
        return true
    }

    func packBest(_ best: Best, opaque: Bool) -> ASTCBits {
        searchedError = best.error
        return pack(
            best.candidate, partitions: best.partitions, seed: best.seed, opaque: opaque,
            gridValues: bestGridQ, colourValues: bestColourQ, mixedScaled: best.mixedScaled, plane2: best.plane2,
            offset: best.offset)
    }

    /// Direct RGB layout `c`, just fitted and now the best (its least-squares ends still in
    /// `ends`), tried again with base + offset endpoints (mode 9: the same values and bits, finer when the ends are
    /// close and the colour level coarse); kept when its exact error after the weight steps
    /// beats `best`. Cost: at most one weight pass, one error pass and the weight steps.
    func tryOffsetEnds(_ c: Candidate, partitions: Int, seed: Int, best: inout Best) {
        guard c.rgbLevel < 20, quantiseOffsetEnds(partitions: partitions, level: c.rgbLevel) else { return }
        computeWeights(c, partitions: partitions)
        var e = error(partitions: partitions)
        guard e < best.error * 2 else { return }
        e = refineWeights(c, partitions: partitions, error: e)
        if e < best.error { keep(&best, c, partitions: partitions, seed: seed, error: e, offset: true) }
    }

    func keep(
        _ best: inout Best, _ c: Candidate, partitions: Int, seed: Int, error: Int, plane2: Int = 0,
        offset: Bool = false
    ) {
        best = Best(
            candidate: c, partitions: partitions, seed: seed, error: error, mixedScaled: mixedScaled, plane2: plane2,
            offset: offset)
        if c.dual {
            // The block stores the planes interleaved, grid weight by grid weight.
            for i in 0..<c.gridCount { bestGridQ[2 * i] = gridQ[i]; bestGridQ[2 * i + 1] = gridQ[32 + i] }
        } else {
            bestGridQ.update(from: gridQ, count: c.gridCount)
        }
        bestColourQ.update(from: colourQ, count: 16)
    }

}

@available(*, unavailable) extension ASTCEncoder: Sendable {}

/// `v` rounded to the nearest integer in every lane (ties to even), for `|v| < 2²²`: adding
/// 1.5 · 2²³ leaves the integer in the low mantissa bits (SSE2 has no vector round, and the
/// generic `SIMD4<Int32>(_:rounding:)` converts lane by lane through the stdlib).
/// Cost: one add, one subtract.
@inline(__always) func roundedInts(_ v: SIMD4<Float>) -> SIMD4<Int32> {
    unsafeBitCast(v + 12_582_912, to: SIMD4<Int32>.self) &- 0x4B40_0000
}

/// `v` limited to 0…255 in every lane (NaN becomes 0; callers add ½ and truncate to round).
@inline(__always) func clampColour(_ v: SIMD4<Float>) -> SIMD4<Float> {
    v.replacing(with: 0, where: .!(v .>= 0)).replacing(with: 255, where: v .> 255)
}

extension UnsafeMutablePointer {
    /// A new buffer of `count` elements, each `value` (the encoder's scratch and tables).
    /// Cost: one allocation, one pass.
    fileprivate static func filled(_ count: Int, with value: Pointee) -> UnsafeMutablePointer {
        let buffer = allocate(capacity: count)
        buffer.initialize(repeating: value, count: count)
        return buffer
    }
}
