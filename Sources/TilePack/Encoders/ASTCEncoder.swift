import TilePackCore
import TilePackCodec

/// Encodes RGBA8 images to ASTC LDR blocks (4 × 4, 6 × 6, 8 × 8; row-major, 16 bytes a
/// block) that decode identically with ``ASTCDecoder`` and ARM's astcenc.
///
/// Every block: endpoints from the principal axis of its texels (RGB, or RGBA when any
/// texel is not opaque: endpoint modes 8 and 12), quantised; weights projected on the
/// quantised endpoints, averaged onto the weight grid through its infill taps and quantised;
/// then a least-squares refit of the endpoints to the decoded weights, and weights again.
/// - ``Level/fast``: one layout per footprint (weight grid and quantisations fixed), one refit,
///   computed four texels a lane on the block's channels stored apart (``fitFast(opaque:scored:)``).
/// - ``Level/quality``: starts from `fast`'s block (so it never loses to it) and stops there
///   when its exact error is under ``errorLimit`` (astcenc's `fastest` dB limit: smooth and
///   upsampled blocks, most of a map's max zoom). Otherwise every ranked single-plane layout
///   is ranked by an estimate, not by decoding: ideal weights (projections on the principal
///   line) once per block, averaged onto each weight grid once per grid (one back-projection
///   step toward the least-squares grid weights, as in every fit), the grid's own error
///   in weight space × squared line length, plus the uniform rounding error of the layout's
///   weight and colour levels. The best two get an exact fit (one refit, a ±1 step search per
///   grid weight, re-infilling only the texels that weight reaches, then the endpoints refitted
///   to the stepped weights and the steps again when that helped); the second only when the
///   first is over 1.25 × the limit. A block now within 4 × the limit stops (astcenc's limit
///   counts alpha's error too, so at the same dB it accepts 4 × ours in summed RGB error).
///   Otherwise opaque blocks whose least-correlated channel correlates under 0.95 with the
///   others fit one dual-plane layout, that channel on its own weight grid
///   (``fitDual(_:channel:refits:)``, no weight steps), and blocks still over the limit try
///   two partitions: the three seeds whose maps best match a 2-means clustering of the
///   texels, each layout estimated the same way plus the off-line error, the best fitted
///   exactly. Opaque blocks also rank colour-scaled endpoints (mode 6, refitted on the line
///   through black) and, at two partitions, mixed modes (one partition mode 6, the other
///   mode 8); one pass over a grid's taps estimates every kind. Only exact decoded errors
///   (the decoder's integer interpolation) pick the block.
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
    /// Two-partition layouts (direct, then colour-scaled), grouped by weight grid.
    let partitionCandidates: [Candidate]
    /// Dual-plane layouts (one partition, opaque), best-ranked first.
    let dualCandidates: [Candidate]
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
        /// Endpoint kind for grouping and the estimate's arrays: 0 direct, 1 colour-scaled, 2 mixed.
        var kind: Int { scaled ? 1 : mixed ? 2 : 0 }
        var gridCount: Int { gridWidth * gridHeight }
    }

    // Tables (built in init, read-only after).
    private let partitionMasks: UnsafeMutablePointer<UInt64>   // 1024 seeds: bit t set when texel t is in partition 1
    private let tapIndex: UnsafeMutablePointer<Int32>          // per decimated grid: texelCount × 4 grid indices
    private let tapWeight: UnsafeMutablePointer<Int32>         // … and their weights (sum 16)
    private let tapWeightF: UnsafeMutablePointer<Float>        // … as Float
    private let inverseCoverage: UnsafeMutablePointer<Float>   // per decimated grid: per grid weight
    private let colourQuant: UnsafeMutablePointer<UInt8>       // level × 256: 0…255 → nearest scrambled value
    private let colourValue: UnsafeMutablePointer<UInt8>       // level × 256: scrambled → 0…255
    private let weightQuant: UnsafeMutablePointer<UInt8>       // level × 65: 0…64 → nearest scrambled value
    private let weightValue: UnsafeMutablePointer<Int32>       // level × 32: scrambled → 0…64
    private let weightStep: UnsafeMutablePointer<UInt8>        // level × 32 × 2: scrambled → next value down / up
    private let tritPack: UnsafeMutablePointer<UInt8>          // 3^5 trit tuples → 8-bit field
    private let quintPack: UnsafeMutablePointer<UInt8>         // 5^3 quint tuples → 7-bit field
    /// Distinct 2-partition maps (both partitions used; a map and its complement once) and
    /// the first seed giving each.
    /// The maps eight a vector as low and high 32-bit halves (`distinctHalves[2k]`,
    /// `[2k + 1]`; the last vector padded with empty maps), so seed matching counts bits eight
    /// maps a lane: the build targets baseline x86-64, where `nonzeroBitCount` is a scalar
    /// bit-trick sequence per map.
    private let distinctHalves: UnsafeMutablePointer<SIMD8<UInt32>>
    private let distinctSeeds: UnsafeMutablePointer<Int>
    private let distinctCount: Int
    /// Seed matching's per-map distances (scratch, one vector per eight maps).
    private let seedDistance: UnsafeMutablePointer<SIMD8<UInt32>>
    private let colourRounding: UnsafeMutablePointer<Float>    // per colour level: mean squared rounding error × ⅔
    private let weightRounding: UnsafeMutablePointer<Float>    // per weight level: mean squared rounding error (0…1 scale)
    private var lineTotal: Float = 0
    /// Per decimated grid (offset `taps / 4 · 2`… see `reachStart`): for each grid weight the
    /// texels its taps reach and the tap weights, so a weight step re-infills only those.
    private let reachStart: UnsafeMutablePointer<Int32>        // per grid: gridCount + 1 offsets into reach*
    private let reachTexel: UnsafeMutablePointer<Int32>
    private let reachWeight: UnsafeMutablePointer<Int32>
    private let reachWeightF: UnsafeMutablePointer<Float>

    // Per-block scratch.
    /// The block's texels channel by channel (structure of arrays, for the single-partition
    /// fit every level starts with): channel `c`'s texels `4k…4k+3` at `planes[16·c + k]`, so
    /// projections and sums run four texels a lane with no horizontal adds per texel.
    private let planes: UnsafeMutablePointer<SIMD4<Float>>     // 4 × 16
    /// Per-channel texel sums (for the refit), and the block's RGBA words as read.
    private var channelSums = SIMD4<Float>()
    private let words: UnsafeMutablePointer<UInt32>
    /// Weights four texels a lane: ideal (0…1) during the fit, decoded (0…64) after.
    private let weightChunks: UnsafeMutablePointer<SIMD4<Float>>  // 16
    private let chunkCount: Int
    /// ``fastCandidate``'s grid (when decimated) as four-texel blocks of its infill matrix:
    /// grid weight `i` reaches chunks `fastChunk[fastStart[i]..<fastStart[i + 1]]` with tap
    /// weights `fastInfill` (summing to 16 per texel over the grid) and averaging weights
    /// `fastAverage` (the same × the grid weight's `1 / Σ tap weight`), so both directions run
    /// four texels a lane and skip the chunks a grid weight does not reach.
    private let fastStart: UnsafeMutablePointer<Int32>
    private let fastChunk: UnsafeMutablePointer<Int32>
    private let fastInfill: UnsafeMutablePointer<SIMD4<Float>>
    private let fastAverage: UnsafeMutablePointer<SIMD4<Float>>
    private let gridValueF: UnsafeMutablePointer<Float>       // decoded grid weights (0…64) as Float
    private let nearestWeight: UnsafeMutablePointer<Float>    // level × 65: 0…64 → nearest decoded weight value
    let texels: UnsafeMutablePointer<SIMD4<Float>>
    private let texelInts: UnsafeMutablePointer<SIMD4<Int32>>
    private let partitionOf: UnsafeMutablePointer<Int>
    private let ideal: UnsafeMutablePointer<Float>
    private let gridIdeal: UnsafeMutablePointer<Float>        // 128: grid values, then texel residuals (``backProject``)
    private let gridQ: UnsafeMutablePointer<UInt8>
    private let texelW: UnsafeMutablePointer<Int32>
    private let texelSum: UnsafeMutablePointer<Int32>        // Σ weight value × tap weight (infill before rounding)
    private let screenIdeal: UnsafeMutablePointer<Float>
    private let lineLength2: UnsafeMutablePointer<Float>
    /// The same for the line through black (colour-scaled layouts), and its ends per partition.
    private let screenIdealScaled: UnsafeMutablePointer<Float>
    private let lineLength2Scaled: UnsafeMutablePointer<Float>
    private var lineTotalScaled: Float = 0
    /// Per texel, the ideal weight of each endpoint kind in one vector (direct, colour-scaled,
    /// mixed, unused) and the squared line lengths alike: one pass over a grid's taps
    /// estimates every kind (``decimateKinds(_:)``). Mixed takes each texel from the scaled
    /// kind when its partition is ``mixedScaled``, from the direct kind otherwise.
    private let screenKinds: UnsafeMutablePointer<SIMD4<Float>>
    private let lengthKinds: UnsafeMutablePointer<SIMD4<Float>>
    private let gridKinds: UnsafeMutablePointer<SIMD4<Float>>  // 128: grid values, then texel residuals (``backProject``)
    private var lineTotalMixed: Float = 0
    /// Per decimated grid (``Candidate/slot``): its grid errors for the current partitioning
    /// (by kind), valid when its stamp equals `generation`.
    private let slotError: UnsafeMutablePointer<SIMD4<Float>>
    private let slotStamp: UnsafeMutablePointer<Int>
    private let slotCount: Int
    private var generation = 0
    /// The partition (0 or 1) that a mixed layout gives colour-scaled endpoints.
    private var mixedScaled = 0
    private let chromaEnds: UnsafeMutablePointer<SIMD4<Float>>  // 2 × 2
    /// Per partition: principal-axis endpoints, working endpoints, decoded endpoints.
    private let axisEnds: UnsafeMutablePointer<SIMD4<Float>>   // 2 × 2
    private let ends: UnsafeMutablePointer<SIMD4<Float>>       // 2 × 2
    private let decodedEnds: UnsafeMutablePointer<SIMD4<Float>>  // 2 × 2
    private let base: UnsafeMutablePointer<SIMD4<Int32>>      // 2: 257·64·e0 + 32
    private let slope: UnsafeMutablePointer<SIMD4<Int32>>     // 2: 257·(e1 − e0)
    private let colourQ: UnsafeMutablePointer<UInt8>           // 16 scrambled colour values in block order
    // The best layout so far.
    private let bestGridQ: UnsafeMutablePointer<UInt8>
    private let bestColourQ: UnsafeMutablePointer<UInt8>

    public init(format: ASTCFormat) throws(CodecError) {
        guard Self.supportedFormats.contains(format) else {
            throw .byteCount(what: "\(format.rawValue) encoder (encodes astc4x4, astc6x6, astc8x8)", expected: 0, actual: 0)
        }
        self.format = format
        let modes = ASTCBlockModes.table(for: format)
        self.modes = modes
        let count = format.blockWidth * format.blockHeight
        texelCount = count

        // Decimation tables, one per distinct infill table.
        var taps: [Int32] = [], weights: [Int32] = [], coverage: [Float] = []
        var reachStarts: [Int32] = [], reachTexels: [Int32] = [], reachWeights: [Int32] = []
        var placed: [Int32: (Int, Int, Int, Int)] = [:]
        func place(_ infill: Int32, gridCount: Int) -> (Int, Int, Int, Int) {
            if infill < 0 { return (-1, -1, -1, -1) }
            if let known = placed[infill] { return known }
            let at = (taps.count, coverage.count, reachStarts.count, placed.count)
            var sums = [Float](repeating: 0, count: gridCount)
            var reached = [[(Int32, Int32)]](repeating: [], count: gridCount)
            for t in 0..<count {
                let i = modes.infillTaps[Int(infill) + 2 * t], w = modes.infillTaps[Int(infill) + 2 * t + 1]
                for k in 0..<4 {
                    let g = Int32((i >> UInt32(8 * k)) & 0xFF), v = Int32((w >> UInt32(8 * k)) & 0xFF)
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
                    if let last = merged.last, last.0 == t { merged[merged.count - 1].1 += v } else { merged.append((t, v)) }
                }
                for (t, v) in merged { reachTexels.append(t); reachWeights.append(v) }
            }
            reachStarts.append(Int32(reachTexels.count))
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
                (c.taps, c.coverage, c.reach, c.slot) = place(Int32(c.taps), gridCount: c.gridCount)
                return c
            }
        }
        candidates = withTables(ranked.list + rankedScaled.list)
        let fastLayout = withTables([ranked.fast])[0]
        fastCandidate = fastLayout
        var starts: [Int32] = [0], chunks: [Int32] = [], infills: [SIMD4<Float>] = [], averages: [SIMD4<Float>] = []
        if fastLayout.taps >= 0 {
            var matrix = [[Float]](repeating: [Float](repeating: 0, count: count), count: fastLayout.gridCount)
            for t in 0..<count {
                for k in 0..<4 { matrix[Int(taps[fastLayout.taps + 4 * t + k])][t] += Float(weights[fastLayout.taps + 4 * t + k]) }
            }
            for g in 0..<fastLayout.gridCount {
                for k in 0..<count / 4 {
                    let w = SIMD4<Float>(matrix[g][4 * k], matrix[g][4 * k + 1], matrix[g][4 * k + 2], matrix[g][4 * k + 3])
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
                ($0.kind, $0.taps, $0.gridCount, $0.weightLevel, $0.mode) < ($1.kind, $1.taps, $1.gridCount, $1.weightLevel, $1.mode)
            }
        }
        partitionCandidates = grouped(withTables(rankedTwo.list + rankedScaledTwo.list + rankedMixedTwo.list))
        dualCandidates = withTables(Self.rankCandidates(format: format, modes: modes, partitions: 1, dual: true).list)
        screening = grouped(candidates)
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
        tapWeight = copy(weights)
        tapWeightF = copy(weights.map { Float($0) })
        inverseCoverage = copy(coverage)
        reachStart = copy(reachStarts)
        reachTexel = copy(reachTexels)
        reachWeight = copy(reachWeights)
        reachWeightF = copy(reachWeights.map { Float($0) })

        let small = count < 32
        partitionMasks = copy((0..<1024).map { seed in
            var mask: UInt64 = 0
            for y in 0..<format.blockHeight {
                for x in 0..<format.blockWidth where ASTCPartition.select(seed: seed, x: x, y: y, count: 2, smallBlock: small) == 1 {
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
        weightRounding = copy((0..<12).map { level -> Float in
            let step = 1 / Float(ASTCIntegerSequence.ranges[level] - 1)
            return step * step / 12
        })
        colourRounding = copy((0..<21).map { level -> Float in
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
        nearestWeight = copy((0..<(12 * 65)).map { i in Float(ASTCIntegerSequence.weightUnquantised[i / 65 * 32 + Int(wq[i])]) })
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
        texelW = .allocate(capacity: 128)  // dual plane: the second plane's at 64; else `error()`'s per texel
        axisEnds = .filled(4, with: SIMD4<Float>())
        ends = .allocate(capacity: 4)
        decodedEnds = .allocate(capacity: 4)
        base = .allocate(capacity: 2)
        slope = .allocate(capacity: 2)
        colourQ = .filled(16, with: 0)
        bestGridQ = .filled(64, with: 0)
        bestColourQ = .filled(16, with: 0)
    }

    deinit {
        partitionMasks.deallocate(); tapIndex.deallocate(); tapWeight.deallocate(); tapWeightF.deallocate(); inverseCoverage.deallocate()
        colourQuant.deallocate(); colourValue.deallocate(); weightQuant.deallocate(); weightValue.deallocate()
        weightStep.deallocate(); tritPack.deallocate(); quintPack.deallocate()
        distinctHalves.deallocate(); distinctSeeds.deallocate(); seedDistance.deallocate(); colourRounding.deallocate(); weightRounding.deallocate(); reachStart.deallocate(); reachTexel.deallocate(); reachWeight.deallocate(); reachWeightF.deallocate()
        texelSum.deallocate(); screenIdeal.deallocate(); lineLength2.deallocate()
        screenIdealScaled.deallocate(); lineLength2Scaled.deallocate(); chromaEnds.deallocate()
        fastStart.deallocate(); fastChunk.deallocate(); fastInfill.deallocate(); fastAverage.deallocate(); gridValueF.deallocate(); nearestWeight.deallocate()
        screenKinds.deallocate(); lengthKinds.deallocate(); gridKinds.deallocate(); slotError.deallocate(); slotStamp.deallocate()
        texels.deallocate(); planes.deallocate(); weightChunks.deallocate(); words.deallocate(); texelInts.deallocate(); partitionOf.deallocate(); ideal.deallocate(); gridIdeal.deallocate()
        gridQ.deallocate(); texelW.deallocate(); axisEnds.deallocate(); ends.deallocate(); decodedEnds.deallocate()
        base.deallocate(); slope.deallocate(); colourQ.deallocate(); bestGridQ.deallocate(); bestColourQ.deallocate()
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
    /// other mode 8, ten values in two bits fewer (the per-partition mode bits).
    static func rankCandidates(format: ASTCFormat, modes: ASTCBlockModes, partitions: Int,
                               scaled: Bool = false, mixed: Bool = false, dual: Bool = false) -> (list: [Candidate], fast: Candidate) {
        let bw = format.blockWidth, bh = format.blockHeight
        let colourBitsTotal = dual ? 109 : partitions == 1 ? 111 : mixed ? 97 : 99
        let values = mixed ? 10 : (scaled ? 4 : 6) * partitions
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
            let c = Candidate(mode: mode, gridWidth: gw, gridHeight: gh, weightLevel: Int(e.weightLevel), weightBits: wbits,
                              rgbLevel: level(count: values, bits: colourBitsTotal - wbits),
                              rgbaLevel: scaled || mixed || dual ? 0 : level(count: 8 * partitions, bits: colourBitsTotal - wbits),
                              taps: Int(e.infill), coverage: -1, scaled: scaled, mixed: mixed, dual: dual)
            guard c.rgbLevel >= minimumRGB, scaled || mixed || dual || c.rgbaLevel >= minimumRGBA,
                  gw * gh * 3 >= bw * bh, abs(gw - gh) <= 2,
                  gw == gh || gw == bw || gh == bh else { continue }
            seen.insert(key)
            byGrid[gw * 16 + gh, default: []].append(c)
        }
        // Grids in key order and ties broken by block mode: the ranking (and so every encoded
        // block) must not depend on Dictionary order, which Swift seeds per process.
        var list: [Candidate] = []
        for grid in byGrid.keys.sorted() {
            guard let options = byGrid[grid] else { continue }
            list += options.sorted { ($0.weightLevel, $1.mode) > ($1.weightLevel, $0.mode) }.prefix(partitions == 1 ? 3 : 2)
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
            return (Array(list.prefix(1)), list.first ?? rankCandidates(format: format, modes: modes, partitions: 1).fast)
        }
        return (partitions == 1 ? list : Array(list.prefix(8)), list[0])
    }

    /// Encodes `rgba` (`width × height × 4` bytes, rows top first); edge blocks repeat the
    /// last row and column.
    /// - Throws: ``CodecError`` for a size outside 1…16384 or a wrong byte count.
    public func encode(rgba: [UInt8], width: Int, height: Int, level: Level = .quality) throws(CodecError) -> [UInt8] {
        try format.validate(width: width, height: height)
        guard rgba.count == width * height * 4 else {
            throw .byteCount(what: "RGBA input", expected: width * height * 4, actual: rgba.count)
        }
        let grid = format.blockGrid(width: width, height: height)
        let bw = format.blockWidth, bh = format.blockHeight
        var out = [UInt8](repeating: 0, count: format.byteCount(width: width, height: height))
        let quality = level == .quality
        rgba.withUnsafeBytes { src in
            out.withUnsafeMutableBytes { dst in
                for by in 0..<grid.high {
                    for bx in 0..<grid.wide {
                        // Edge blocks repeat the last row and column, so every offset is
                        // inside the `width × height × 4` bytes checked above.
                        var differ: UInt32 = 0, alpha: UInt32 = 0xFF00_0000
                        let first = UInt32(littleEndian: src.loadUnaligned(fromByteOffset: (min(by * bh, height - 1) * width + min(bx * bw, width - 1)) * 4, as: UInt32.self))
                        if (bx + 1) * bw <= width && (by + 1) * bh <= height {
                            for y in 0..<bh {
                                let row = ((by * bh + y) * width + bx * bw) * 4
                                for x in 0..<bw {
                                    let word = UInt32(littleEndian: src.loadUnaligned(fromByteOffset: row + 4 * x, as: UInt32.self))
                                    words[y * bw + x] = word
                                    differ |= word ^ first
                                    alpha &= word
                                }
                            }
                        } else {
                            for y in 0..<bh {
                                let row = min(by * bh + y, height - 1) * width
                                for x in 0..<bw {
                                    let word = UInt32(littleEndian: src.loadUnaligned(fromByteOffset: (row + min(bx * bw + x, width - 1)) * 4, as: UInt32.self))
                                    words[y * bw + x] = word
                                    differ |= word ^ first
                                    alpha &= word
                                }
                            }
                        }
                        if differ == 0 {
                            let c = SIMD4<UInt64>(UInt64(first & 0xFF), UInt64(first >> 8 & 0xFF), UInt64(first >> 16 & 0xFF), UInt64(first >> 24)) &* 257
                            let offset = (by * grid.wide + bx) * 16
                            dst.storeBytes(of: (0xDFC | ((1 << 52) - 1) << 12 as UInt64).littleEndian, toByteOffset: offset, as: UInt64.self)
                            dst.storeBytes(of: (c[0] | c[1] << 16 | c[2] << 32 | c[3] << 48).littleEndian, toByteOffset: offset + 8, as: UInt64.self)
                            continue
                        }
                        loadPlanes(aos: quality)
                        let bits = encodeBlock(opaque: alpha == 0xFF00_0000, level: level)
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
    private func loadPlanes(aos: Bool) {
        for k in 0..<chunkCount {
            let v = SIMD4<Int32>(truncatingIfNeeded: SIMD4<UInt32>(words[4 * k], words[4 * k + 1], words[4 * k + 2], words[4 * k + 3]))
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
        fitFast(opaque: opaque, scored: level != .fast)
        if level == .fast {
            return pack(fastCandidate, partitions: 1, seed: 0, opaque: opaque, gridValues: gridQ, colourValues: colourQ)
        }
        // `fast`'s block is the baseline, so `quality` never loses to it; a block already
        // under the error limit stops here (smooth and upsampled blocks, most of a map).
        for t in 0..<texelCount { partitionOf[t] = 0 }
        var best = Best(candidate: fastCandidate, partitions: 1, seed: 0, error: Int.max)
        keep(&best, fastCandidate, partitions: 1, seed: 0, error: error())
        if best.error <= errorLimit { return packBest(best, opaque: opaque) }

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
        }
        fillKinds(mixed: false)
        var first1 = -1, first2 = -1
        var estimate1 = Float.infinity, estimate2 = Float.infinity
        // Opaque blocks rank the colour-scaled layouts first (usually the better kind there), so
        // the bound below skips more: a layout whose line and rounding terms alone reach the
        // second-best estimate cannot enter the best two, and its grid is not decimated.
        let count = opaque ? screening.count : scaledStart
        for step in 0..<count {
            let i = opaque ? (step + scaledStart) % screening.count : step
            let c = screening[i]
            let line = c.scaled ? scaledOffLine : direct.offLine, rounding = estimate(c, opaque: opaque)
            guard line + rounding < estimate2 else { continue }
            let e = line + gridError(c) + rounding
            if e < estimate1 {
                (first2, estimate2) = (first1, estimate1)
                (first1, estimate1) = (i, e)
            } else if e < estimate2 {
                (first2, estimate2) = (i, e)
            }
        }
        // One refit round per fit (a second bought nothing measurable); the second pick is not
        // fitted when the first came within 1.25 × the limit (1.5 ×: −0.013 dB on terrain1024
        // for ~6 % less time; 1 ×: +0.007 dB for ~4 % more).
        for pick in 0..<2 {
            let i = pick == 0 ? first1 : first2
            guard i >= 0, pick == 0 || best.error * 4 > errorLimit * 5 else { break }
            let c = screening[i]
            var e = fit(c, partitions: 1, opaque: opaque, refits: 1)
            if e < best.error * 2 {
                e = refineWeights(c, partitions: 1, error: e)
                if e < best.error { keep(&best, c, partitions: 1, seed: 0, error: e) }
                let before = e
                e = refitToWeights(c, partitions: 1, opaque: opaque)
                if e < before { e = refineWeights(c, partitions: 1, error: e) }
            }
            if e < best.error { keep(&best, c, partitions: 1, seed: 0, error: e) }
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
        // each ranked by the estimate (its off-line error included, which one partition's
        // ranking could leave out); the best pair is fitted exactly when its estimate is under
        // 1.5 × the best exact error so far: the estimate runs high at two partitions (the
        // refit moves each line off the principal one that its off-line term assumes), and
        // gating at 1 × skipped fits that won (terrain1024 +0.07 dB, astronaut512 +0.09 dB).
        let seeds = clusterSeeds()
        var pickSeed = -1, pickLayout = 0, pickEstimate = Float(best.error) * 1.5, pickMixed = 0
        for k in 0..<3 where seeds[k] >= 0 {
            setPartitions(count: 2, mask: partitionMasks[seeds[k]])
            let line = idealWeights(axisEnds, partitions: 2, into: screenIdeal, lengths: lineLength2)
            lineTotal = line.total
            var scaledOffLine = Float.infinity, mixedOffLine = Float.infinity
            if opaque {
                setChromaEnds(partitions: 2, mask: partitionMasks[seeds[k]])
                let scaledLine = idealWeights(chromaEnds, partitions: 2, into: screenIdealScaled, lengths: lineLength2Scaled)
                (scaledOffLine, lineTotalScaled) = (scaledLine.offLine, scaledLine.total)
                mixedOffLine = setMixed(direct: line.split, scaled: scaledLine.split)
            }
            fillKinds(mixed: opaque)
            guard min(line.offLine, scaledOffLine, mixedOffLine) < pickEstimate else { continue }
            for (i, c) in partitionCandidates.enumerated() {
                if c.kind != 0 && !opaque { break }
                let offLine = c.scaled ? scaledOffLine : c.mixed ? mixedOffLine : line.offLine
                let rounding = estimate(c, opaque: opaque)
                guard offLine + rounding < pickEstimate else { continue }
                let e = offLine + gridError(c) + rounding
                if e < pickEstimate { (pickSeed, pickLayout, pickEstimate, pickMixed) = (seeds[k], i, e, mixedScaled) }
            }
        }
        if pickSeed >= 0 {
            let c = partitionCandidates[pickLayout]
            setPartitions(count: 2, mask: partitionMasks[pickSeed])
            if c.kind != 0 { setChromaEnds(partitions: 2, mask: partitionMasks[pickSeed]) }
            mixedScaled = pickMixed
            var e = fit(c, partitions: 2, opaque: opaque, refits: 2)
            if e < best.error * 2 {
                e = refineWeights(c, partitions: 2, error: e)
                if e < best.error { keep(&best, c, partitions: 2, seed: pickSeed, error: e) }
                let before = e
                e = refitToWeights(c, partitions: 2, opaque: opaque)
                if e < before { e = refineWeights(c, partitions: 2, error: e) }
            }
            if e < best.error { keep(&best, c, partitions: 2, seed: pickSeed, error: e) }
        }
        return packBest(best, opaque: opaque)
    }

    private func packBest(_ best: Best, opaque: Bool) -> ASTCBits {
        pack(best.candidate, partitions: best.partitions, seed: best.seed, opaque: opaque,
             gridValues: bestGridQ, colourValues: bestColourQ, mixedScaled: best.mixedScaled, plane2: best.plane2)
    }

    /// Ideal weights of every texel on its partition's line (`lineEnds`: two per partition) in
    /// `weights` (0…1), with each texel's squared line length in `lengths`.
    /// Returns the squared distance of the texels from their lines (the error no weight can
    /// remove) and the sum of `lengths`, each in total and per partition (`offLine` of
    /// partitions 0 and 1, then `total` of each: mixed endpoint modes take one of each kind).
    /// Cost: one pass over the texels.
    private func idealWeights(_ lineEnds: UnsafeMutablePointer<SIMD4<Float>>, partitions: Int,
                              into weights: UnsafeMutablePointer<Float>, lengths: UnsafeMutablePointer<Float>)
        -> (offLine: Float, total: Float, split: SIMD4<Float>) {
        var origin = (lineEnds[0], lineEnds[0]), direction = (lineEnds[1] - lineEnds[0], SIMD4<Float>())
        if partitions == 2 { origin.1 = lineEnds[2]; direction.1 = lineEnds[3] - lineEnds[2] }
        let len = ((direction.0 * direction.0).sum(), (direction.1 * direction.1).sum())
        let scale = (len.0 > 0 ? 1 / len.0 : 0, len.1 > 0 ? 1 / len.1 : 0)
        if partitions == 1 {
            let o = origin.0, d = direction.0, s = scale.0
            var off: Float = 0
            for t in 0..<texelCount {
                let w = min(max(((texels[t] - o) * d).sum() * s, 0), 1)
                weights[t] = w
                lengths[t] = len.0
                let r = texels[t] - (o + d * w)
                off += (r * r).sum()
            }
            let total = len.0 * Float(texelCount)
            return (off, total, SIMD4(off, 0, total, 0))
        }
        var off0: Float = 0, off1: Float = 0, count1: Float = 0
        for t in 0..<texelCount {
            let second = partitionOf[t] == 1
            let o = second ? origin.1 : origin.0, d = second ? direction.1 : direction.0
            let w = min(max(((texels[t] - o) * d).sum() * (second ? scale.1 : scale.0), 0), 1)
            weights[t] = w
            lengths[t] = second ? len.1 : len.0
            let r = texels[t] - (o + d * w)
            let off = (r * r).sum()
            off0 += second ? 0 : off
            off1 += second ? off : 0
            count1 += second ? 1 : 0
        }
        let total0 = len.0 * (Float(texelCount) - count1), total1 = len.1 * count1
        return (off0 + off1, total0 + total1, SIMD4(off0, off1, total0, total1))
    }

    /// Mixed endpoint modes for the current two partitions: the partition whose line through
    /// black costs least over its principal line gets colour-scaled endpoints (``mixedScaled``).
    /// `direct`/`scaled` are ``idealWeights``' per-partition figures for the two kinds.
    /// Returns the off-line error. Cost: a few scalar operations.
    private func setMixed(direct: SIMD4<Float>, scaled: SIMD4<Float>) -> Float {
        let p = scaled[0] - direct[0] <= scaled[1] - direct[1] ? 0 : 1
        mixedScaled = p
        lineTotalMixed = scaled[2 + p] + direct[3 - p]
        return scaled[p] + direct[1 - p]
    }

    /// Packs the kinds' ideal weights and line lengths per texel (`screenKinds`,
    /// `lengthKinds`; the mixed lane only when `mixed`) and forgets the cached grid errors.
    /// Cost: one pass over the texels.
    private func fillKinds(mixed: Bool) {
        generation += 1
        let p = mixed ? mixedScaled : -1
        for t in 0..<texelCount {
            let fromScaled = partitionOf[t] == p
            let d = screenIdeal[t], s = screenIdealScaled[t], dl = lineLength2[t], sl = lineLength2Scaled[t]
            screenKinds[t] = SIMD4(d, s, fromScaled ? s : d, 0)
            lengthKinds[t] = SIMD4(dl, sl, fromScaled ? sl : dl, 0)
        }
    }

    /// The line through black that best fits each partition's RGB (the dominant direction of
    /// the texels' uncentred second moments), its ends at the texels' extreme projections
    /// (the dark end not below black), in `chromaEnds` with alpha 255: colour-scaled
    /// endpoints can only lie on such a line. Cost: one pass over the texels, power iteration
    /// on a 3 × 3 matrix.
    private func setChromaEnds(partitions: Int, mask: UInt64) {
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

    /// Per-texel values averaged onto layout `c`'s weight grid (`gridIdeal`) with the infill
    /// tap weights, each grid weight gathering the texels its taps reach.
    /// Cost: one multiply-add per tap that reaches a grid weight.
    @inline(__always)
    private func average(_ values: UnsafeMutablePointer<Float>, onto c: Candidate) {
        let count = c.gridCount
        if c.reach < 0 {
            for i in 0..<count { gridIdeal[i] = values[i] }
            return
        }
        let inverse = inverseCoverage + c.coverage, starts = reachStart + c.reach
        for i in 0..<count {
            var sum: Float = 0
            for r in Int(starts[i])..<Int(starts[i + 1]) { sum += reachWeightF[r] * values[Int(reachTexel[r])] }
            gridIdeal[i] = sum * inverse[i]
        }
    }

    /// Improves the grid weights `average(values, onto: c)` left in `gridIdeal` by one
    /// back-projection step: the texels' residuals (`values` minus the grid infilled back in
    /// Float) averaged onto the grid the same way and added at twice their size. A plain
    /// average blurs: each grid weight is pulled toward texels its neighbours also cover, so a
    /// grid much coarser than the footprint in both directions (5 × 5 at 6 × 6) was estimated,
    /// and fitted, worse than it is; the step moves the weights toward the least-squares ones
    /// (×2: the averaging operator's own gain is below 1; ×1.5–2.5 measured alike, ×1 less).
    /// Rounding clamps later. Cost: the infill taps once and one pass over the grid's reach.
    @inline(__always)
    private func backProject(_ values: UnsafeMutablePointer<Float>, onto c: Candidate) {
        guard c.reach >= 0 else { return }
        let residual = gridIdeal + 64
        let index = tapIndex + c.taps, weight = tapWeightF + c.taps
        for t in 0..<texelCount {
            var v = weight[4 * t] * gridIdeal[Int(index[4 * t])]
            v += weight[4 * t + 1] * gridIdeal[Int(index[4 * t + 1])]
            v += weight[4 * t + 2] * gridIdeal[Int(index[4 * t + 2])]
            v += weight[4 * t + 3] * gridIdeal[Int(index[4 * t + 3])]
            residual[t] = values[t] - v * (1 / 16)
        }
        let inverse = inverseCoverage + c.coverage, starts = reachStart + c.reach
        for i in 0..<c.gridCount {
            var sum: Float = 0
            for r in Int(starts[i])..<Int(starts[i + 1]) { sum += reachWeightF[r] * residual[Int(reachTexel[r])] }
            gridIdeal[i] += sum * inverse[i] * 2
        }
    }

    /// The error layout `c`'s weight grid alone leaves for its endpoint kind, from the
    /// per-block cache (``decimateKinds(_:)`` on a grid's first use after ``fillKinds(mixed:)``).
    @inline(__always)
    private func gridError(_ c: Candidate) -> Float {
        guard c.slot >= 0 else { return 0 }
        if slotStamp[c.slot] != generation {
            slotError[c.slot] = decimateKinds(c)
            slotStamp[c.slot] = generation
        }
        return slotError[c.slot][c.kind]
    }

    /// Every kind's ideal weights (`screenKinds`) averaged onto layout `c`'s weight grid
    /// through its infill taps; returns per kind the error the grid alone leaves (unquantised
    /// grid weights infilled back, their distance from each texel's ideal weight scaled by
    /// its squared line length), after one back-projection step (``backProject(_:onto:)``).
    /// Cost: the taps three times, the grid's reach twice, four kinds a lane each.
    private func decimateKinds(_ c: Candidate) -> SIMD4<Float> {
        guard c.taps >= 0 else { return SIMD4() }
        let inverse = inverseCoverage + c.coverage, starts = reachStart + c.reach
        for i in 0..<c.gridCount {
            var sum = SIMD4<Float>()
            for r in Int(starts[i])..<Int(starts[i + 1]) { sum += reachWeightF[r] * screenKinds[Int(reachTexel[r])] }
            gridKinds[i] = sum * inverse[i]
        }
        let index = tapIndex + c.taps, weight = tapWeightF + c.taps
        // One back-projection step (see ``backProject(_:onto:)``), every kind a lane.
        let residualKinds = gridKinds + 64
        for t in 0..<texelCount {
            var v = weight[4 * t] * gridKinds[Int(index[4 * t])]
            v += weight[4 * t + 1] * gridKinds[Int(index[4 * t + 1])]
            v += weight[4 * t + 2] * gridKinds[Int(index[4 * t + 2])]
            v += weight[4 * t + 3] * gridKinds[Int(index[4 * t + 3])]
            residualKinds[t] = screenKinds[t] - v * (1 / 16)
        }
        for i in 0..<c.gridCount {
            var sum = SIMD4<Float>()
            for r in Int(starts[i])..<Int(starts[i + 1]) { sum += reachWeightF[r] * residualKinds[Int(reachTexel[r])] }
            let g = gridKinds[i] + sum * (inverse[i] * 2)
            gridKinds[i] = g.replacing(with: 0, where: .!(g .>= 0)).replacing(with: 1, where: g .> 1)
        }
        var total = SIMD4<Float>()
        for t in 0..<texelCount {
            var v = weight[4 * t] * gridKinds[Int(index[4 * t])]
            v += weight[4 * t + 1] * gridKinds[Int(index[4 * t + 1])]
            v += weight[4 * t + 2] * gridKinds[Int(index[4 * t + 2])]
            v += weight[4 * t + 3] * gridKinds[Int(index[4 * t + 3])]
            let d = screenKinds[t] - v * (1 / 16)
            total += d * d * lengthKinds[t]
        }
        return total
    }

    /// Estimated squared error layout `c` adds to its grid's (``gridError(_:)``): uniform
    /// rounding of the weights at `c`'s weight level over the squared line lengths, and of
    /// the endpoints at its colour level (interpolated between two independent roundings).
    /// Cost: two table reads.
    @inline(__always)
    private func estimate(_ c: Candidate, opaque: Bool) -> Float {
        let level = opaque ? c.rgbLevel : c.rgbaLevel
        return weightRounding[c.weightLevel] * (c.scaled ? lineTotalScaled : c.mixed ? lineTotalMixed : lineTotal)
            + colourRounding[level] * Float(texelCount * (opaque ? 3 : 4))
    }

    /// Up to three partition seeds (2 partitions) whose texel maps differ least from a
    /// 2-means clustering of the block (either labelling), started from the ends of the
    /// principal line. Cost: three assignment passes, then one vector bit count per eight
    /// distinct maps (of the 1024 seeds) and a scalar scan of the distances.
    private func clusterSeeds() -> SIMD4<Int> {
        var centre0 = axisEnds[0], centre1 = axisEnds[1]
        var split: UInt64 = 0
        for _ in 0..<3 {
            split = 0
            var sum0 = SIMD4<Float>(), sum1 = SIMD4<Float>(), n0: Float = 0, n1: Float = 0
            for t in 0..<texelCount {
                let a = texels[t] - centre0, b = texels[t] - centre1
                if (b * b).sum() < (a * a).sum() {
                    split |= 1 << UInt64(t); sum1 += texels[t]; n1 += 1
                } else {
                    sum0 += texels[t]; n0 += 1
                }
            }
            if n0 == 0 || n1 == 0 { break }
            centre0 = sum0 / n0; centre1 = sum1 / n1
        }
        // Differing texels per map, eight maps a lane (bit counts by the halving sums:
        // per byte, then the two halves' bytes added, then the bytes folded).
        let splitLo = SIMD8<UInt32>(repeating: UInt32(truncatingIfNeeded: split))
        let splitHi = SIMD8<UInt32>(repeating: UInt32(truncatingIfNeeded: split >> 32))
        let n = SIMD8<UInt32>(repeating: UInt32(texelCount))
        @inline(__always) func byteCounts(_ x: SIMD8<UInt32>) -> SIMD8<UInt32> {
            var v = x &- ((x &>> 1) & 0x5555_5555)
            v = (v & 0x3333_3333) &+ ((v &>> 2) & 0x3333_3333)
            return (v &+ (v &>> 4)) & 0x0F0F_0F0F
        }
        for k in 0..<(distinctCount + 7) / 8 {
            var v = byteCounts(distinctHalves[2 * k] ^ splitLo) &+ byteCounts(distinctHalves[2 * k + 1] ^ splitHi)
            v = v &+ (v &>> 8)
            v = (v &+ (v &>> 16)) & 0x7F
            seedDistance[k] = pointwiseMin(v, n &- v)
        }
        var seeds = SIMD4<Int>(repeating: -1), distances = SIMD4<Int>(repeating: Int.max)
        for j in 0..<distinctCount {
            let d = Int(seedDistance[j >> 3][j & 7])
            if d < distances[2] {
                let seed = distinctSeeds[j]
                var k = 2
                while k > 0 && distances[k - 1] > d {
                    distances[k] = distances[k - 1]; seeds[k] = seeds[k - 1]; k -= 1
                }
                distances[k] = d; seeds[k] = seed
            }
        }
        return seeds
    }

    struct Best {
        var candidate: Candidate
        var partitions: Int
        var seed: Int
        var error: Int
        /// For a mixed layout, the partition with colour-scaled endpoints.
        var mixedScaled = 0
        /// For a dual-plane layout, the channel on the second plane.
        var plane2 = 0
    }

    private func keep(_ best: inout Best, _ c: Candidate, partitions: Int, seed: Int, error: Int, plane2: Int = 0) {
        best = Best(candidate: c, partitions: partitions, seed: seed, error: error, mixedScaled: mixedScaled, plane2: plane2)
        if c.dual {
            // The block stores the planes interleaved, grid weight by grid weight.
            for i in 0..<c.gridCount { bestGridQ[2 * i] = gridQ[i]; bestGridQ[2 * i + 1] = gridQ[32 + i] }
        } else {
            bestGridQ.update(from: gridQ, count: c.gridCount)
        }
        bestColourQ.update(from: colourQ, count: 16)
    }

    /// The channel (0…2) whose texels correlate least with the other two, for a dual-plane
    /// layout's second plane, and that channel's largest absolute correlation with another
    /// (1 when the channel is flat: a second plane would not help it).
    /// Cost: one pass over the texels, a 3 × 3 covariance.
    private func leastCorrelatedChannel() -> (channel: Int, correlation: Float) {
        var sum = SIMD4<Float>(), sq = SIMD4<Float>(), cross = SIMD4<Float>()
        for t in 0..<texelCount {
            let x = texels[t]
            sum += x; sq += x * x
            cross += x * SIMD4(x[1], x[2], x[0], 0)  // RG, GB, BR
        }
        let n = Float(texelCount)
        let variance = sq - sum * sum / n
        let covariance = cross - sum * SIMD4(sum[1], sum[2], sum[0], 0) / n
        func r(_ i: Int, _ j: Int, _ k: Int) -> Float {
            let v = variance[i] * variance[j]
            return v > 1e-3 ? abs(covariance[k]) / v.squareRoot() : 1
        }
        let rg = r(0, 1, 0), gb = r(1, 2, 1), br = r(2, 0, 2)
        let worst = SIMD3<Float>(max(rg, br), max(rg, gb), max(gb, br))
        var channel = 0
        for c in 1..<3 where worst[c] < worst[channel] { channel = c }
        return (channel, worst[channel])
    }

    /// Fits dual-plane layout `c` (one partition, opaque; channel `ch` on the second plane):
    /// `axisEnds` with channel `ch` replaced by its range, quantised; both planes' weights
    /// (plane 1 projected on the ends' line without `ch`, plane 2 along `ch` alone), then
    /// `refits` rounds of per-plane least-squares ends and weights again. Leaves plane 1 in
    /// `gridQ`/`texelW`, plane 2 in `gridQ + 32`/`texelW + 64` (a plane has at most 32 grid
    /// weights), the ends in `colourQ`, `base`/`slope`. Returns the exact decoded error.
    /// Cost: (refits + 1) × two weight passes and two refits over the texels.
    private func fitDual(_ c: Candidate, channel ch: Int, refits: Int) -> Int {
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
    private func dualTexelError(_ t: Int, _ w1: Int32, _ w2: Int32, channel ch: Int) -> Int32 {
        var w = SIMD4<Int32>(repeating: w1)
        w[ch] = w2
        let d = ((base[0] &+ slope[0] &* w) &>> 14) &- texelInts[t]
        return (d &* d).wrappedSum()
    }

    /// `values` (0…1 per texel) averaged onto `c`'s grid with one back-projection step,
    /// rounded to scrambled weights in `grid`. Cost: as ``computeWeights(_:partitions:)``'s grid part.
    @inline(__always)
    private func quantiseGrid(_ c: Candidate, _ values: UnsafeMutablePointer<Float>, into grid: UnsafeMutablePointer<UInt8>) {
        average(values, onto: c)
        backProject(values, onto: c)
        let table = weightQuant + c.weightLevel * 65
        for i in 0..<c.gridCount {
            let v = Int(gridIdeal[i] * 64 + 0.5)
            grid[i] = table[min(max(v, 0), 64)]
        }
    }

    /// Decoded texel weights (0…64) of `grid` through `c`'s infill taps, as the decoder does.
    /// Cost: four taps a texel.
    @inline(__always)
    private func infillPlane(_ c: Candidate, from grid: UnsafeMutablePointer<UInt8>, into out: UnsafeMutablePointer<Int32>) {
        let values = weightValue + c.weightLevel * 32
        if c.taps < 0 {
            for t in 0..<texelCount { out[t] = values[Int(grid[t])] }
            return
        }
        let index = tapIndex + c.taps, weight = tapWeight + c.taps
        for t in 0..<texelCount {
            var sum: Int32 = 0
            for k in 0..<4 { sum &+= values[Int(grid[Int(index[4 * t + k])])] &* weight[4 * t + k] }
            out[t] = (sum &+ 8) >> 4
        }
    }

    /// Least-squares endpoints of all texels (one partition) for decoded `weights` (0…64);
    /// nil when the weights are too nearly constant to solve.
    /// Cost: one pass over the texels.
    private func leastSquaresEnds(weights: UnsafeMutablePointer<Int32>) -> (SIMD4<Float>, SIMD4<Float>)? {
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

    /// Sets each texel's partition (bit t of `mask`) and the principal-axis endpoints of
    /// each partition in `axisEnds`.
    private func setPartitions(count: Int, mask: UInt64) {
        let all = UInt64.max >> UInt64(64 - texelCount)
        for t in 0..<texelCount { partitionOf[t] = count == 1 ? 0 : Int((mask >> UInt64(t)) & 1) }
        for p in 0..<count {
            let m = count == 1 ? all : (p == 0 ? all & ~mask : mask)
            let (mean, axis) = principalAxis(mask: m)
            let len2 = (axis * axis).sum()
            var tmin: Float = 0, tmax: Float = 0
            if len2 > 0 {
                tmin = .greatestFiniteMagnitude; tmax = -.greatestFiniteMagnitude
                for t in 0..<texelCount where m >> UInt64(t) & 1 == 1 {
                    let s = ((texels[t] - mean) * axis).sum() / len2
                    tmin = min(tmin, s); tmax = max(tmax, s)
                }
            }
            axisEnds[2 * p] = mean + axis * tmin
            axisEnds[2 * p + 1] = mean + axis * tmax
        }
    }

    /// Mean and principal axis (power iteration on the covariance) of the texels in `mask`.
    @inline(__always)
    func principalAxis(mask: UInt64) -> (SIMD4<Float>, SIMD4<Float>) {
        var sum = SIMD4<Float>(), count: Float = 0
        var lo = SIMD4<Float>(repeating: 255), hi = SIMD4<Float>(repeating: 0)
        for t in 0..<texelCount where mask >> UInt64(t) & 1 == 1 {
            sum += texels[t]; count += 1
            let x = texels[t]
            lo = lo.replacing(with: x, where: x .< lo); hi = hi.replacing(with: x, where: x .> hi)
        }
        let mean = sum / max(count, 1)
        // Covariance rows.
        var c0 = SIMD4<Float>(), c1 = SIMD4<Float>(), c2 = SIMD4<Float>(), c3 = SIMD4<Float>()
        for t in 0..<texelCount where mask >> UInt64(t) & 1 == 1 {
            let d = texels[t] - mean
            c0 += d * d[0]; c1 += d * d[1]; c2 += d * d[2]; c3 += d * d[3]
        }
        var axis = hi - lo
        for _ in 0..<4 {
            var next: SIMD4<Float> = c0 * axis[0]
            next += c1 * axis[1]
            next += c2 * axis[2]
            next += c3 * axis[3]
            let magnitude = next.replacing(with: -next, where: next .< 0)
            let m: Float = magnitude.max()
            if m < 1e-6 { break }
            axis = next / m
        }
        return (mean, axis)
    }

    /// `fast`'s fit of ``fastCandidate`` (one partition), four texels a lane from `planes`:
    /// principal axis from one pass of sums (the texels are integers, so the Float sums of
    /// values and products are exact up to 64 texels), ends at the extreme projections
    /// (`axisEnds`), quantised; weights against them; one least-squares refit; weights again.
    /// Leaves `gridQ`, `colourQ`, `texelW`, `base`/`slope` as ``fit(_:partitions:opaque:refits:scored:)``
    /// does, for `quality` to score and build on.
    /// Cost: three passes over `planes` and two weight passes (plus the infill taps twice when
    /// the layout's grid is decimated); no per-texel division or horizontal add.
    private func fitFast(opaque: Bool, scored: Bool) {
        let n = chunkCount
        let r = planes, g = planes + 16, b = planes + 32, a = planes + 48
        var sr = SIMD4<Float>(), sg = SIMD4<Float>(), sb = SIMD4<Float>(), sa = SIMD4<Float>()
        var rr = SIMD4<Float>(), rg = SIMD4<Float>(), rb = SIMD4<Float>(), gg = SIMD4<Float>(), gb = SIMD4<Float>(), bb = SIMD4<Float>()
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

        let c = fastCandidate
        let level = opaque ? c.rgbLevel : c.rgbaLevel
        ends[0] = axisEnds[0]; ends[1] = axisEnds[1]
        quantiseEnds(partitions: 0..<1, level: level, opaque: opaque)
        computeWeightsFast(c, opaque: opaque)
        // Least squares for e0·(1 − w) + e1·w with the decoded weights:
        // Σ(1−w)² = n − 2Σw + Σw², Σ(1−w)w = Σw − Σw², Σx(1−w) = Σx − Σxw.
        var sw = SIMD4<Float>(), sww = SIMD4<Float>(), srw = SIMD4<Float>(), sgw = SIMD4<Float>(), sbw = SIMD4<Float>(), saw = SIMD4<Float>()
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

    /// One partition's weights against `decodedEnds`, four texels a lane: ideal projections
    /// (0…1), onto the grid, quantised to `gridQ`, decoded to `texelW` (0…64, also as Float in
    /// `weightChunks`). Cost: one pass over `planes`; a decimated grid adds the infill taps twice.
    @inline(__always)
    private func computeWeightsFast(_ c: Candidate, opaque: Bool, decoded: Bool = true) {
        let n = chunkCount
        let r = planes, g = planes + 16, b = planes + 32, a = planes + 48
        let o = decodedEnds[0], d = decodedEnds[1] - o
        let len = (d * d).sum()
        let dd = d * (len > 0 ? 1 / len : 0), offset = (o * dd).sum()
        for k in 0..<n {
            var w: SIMD4<Float> = r[k] * dd[0] + g[k] * dd[1]
            w += b[k] * dd[2] - offset
            if !opaque { w += a[k] * dd[3] }
            weightChunks[k] = w.replacing(with: 0, where: .!(w .>= 0)).replacing(with: 1, where: w .> 1)
        }
        let table = weightQuant + c.weightLevel * 65, values = weightValue + c.weightLevel * 32
        if c.taps < 0 {
            for k in 0..<n {
                let v = roundedInts(weightChunks[k] * 64)
                var decodedW = SIMD4<Int32>()
                for j in 0..<4 {
                    let q = table[Int(v[j])]
                    gridQ[4 * k + j] = q
                    decodedW[j] = values[Int(q)]
                    texelW[4 * k + j] = decodedW[j]
                }
                weightChunks[k] = SIMD4<Float>(decodedW)
            }
            return
        }
        // Average onto the grid, then quantise four grid weights a lane (`gridIdeal` has room
        // for the last group's spare lanes; clamping keeps their table index in 0…64).
        for i in 0..<c.gridCount {
            var sum = SIMD4<Float>()
            for e in Int(fastStart[i])..<Int(fastStart[i + 1]) { sum += fastAverage[e] * weightChunks[Int(fastChunk[e])] }
            gridIdeal[i] = sum.sum()
        }
        let nearest = nearestWeight + c.weightLevel * 65
        for k in 0..<(c.gridCount + 3) / 4 {
            let w = SIMD4<Float>(gridIdeal[4 * k], gridIdeal[4 * k + 1], gridIdeal[4 * k + 2], gridIdeal[4 * k + 3]) * 64
            let v = roundedInts(w.replacing(with: 0, where: .!(w .>= 0)).replacing(with: 64, where: w .> 64))
            for j in 0..<4 {
                gridQ[4 * k + j] = table[Int(v[j])]
                gridValueF[4 * k + j] = nearest[Int(v[j])]
            }
        }
        guard decoded else { return }
        // Infill exactly as the decoder: Σ value × tap weight (integers, exact in Float), + 8, >> 4.
        for k in 0..<n { weightChunks[k] = SIMD4<Float>() }
        for i in 0..<c.gridCount {
            let v = SIMD4<Float>(repeating: gridValueF[i])
            for e in Int(fastStart[i])..<Int(fastStart[i + 1]) { weightChunks[Int(fastChunk[e])] += fastInfill[e] * v }
        }
        for k in 0..<n {
            let w = (roundedInts(weightChunks[k]) &+ 8) &>> 4
            for j in 0..<4 { texelW[4 * k + j] = w[j] }
            weightChunks[k] = SIMD4<Float>(w)
        }
    }

    /// Fits layout `c` to the current partitioning: principal-axis endpoints quantised,
    /// weights against them, then `refits` rounds of least-squares endpoints and weights
    /// again. Leaves the result in `gridQ`, `colourQ`, `texelW`, `base`/`slope`.
    /// Returns the exact decoded squared error (0 when not `scored`: `fast` never compares).
    /// Cost: (refits + 1) × (one pass over the texels for weights, the infill taps twice).
    private func fit(_ c: Candidate, partitions: Int, opaque: Bool, refits: Int, scored: Bool = true) -> Int {
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
        return scored ? error() : 0
    }

    /// After the weight steps: the endpoints refitted (least squares) to the stepped weights and
    /// quantised again, weights kept; returns the exact error, which the caller keeps only when
    /// it is lower (the steps moved weights the last refit did not see).
    /// Cost: one refit and one error pass over the texels.
    private func refitToWeights(_ c: Candidate, partitions: Int, opaque: Bool) -> Int {
        refitEnds(partitions: partitions)
        if c.scaled { for p in 0..<partitions { refitScaledEnds(partition: p) } }
        if c.mixed { refitScaledEnds(partition: mixedScaled) }
        quantise(c, partitions: partitions, level: opaque ? c.rgbLevel : c.rgbaLevel, opaque: opaque)
        return error()
    }

    @inline(__always)
    private func quantise(_ c: Candidate, partitions: Int, level: Int, opaque: Bool) {
        if c.mixed {
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

    /// Rounds `ends` to colour-scaled endpoints (mode 6) at the colour level: both ends are
    /// projected on the line through black along their sum, the bright end rounded per
    /// channel, then the scale that brings the decoder's `(colour × scale) >> 8` nearest the
    /// dark end (least squares, the shift's mean ½ added back). Fills `colourQ` (R, G, B,
    /// scale per partition), `decodedEnds` and the interpolation constants.
    /// `valuesAt`: where the first partition's values go in `colourQ` (mixed layouts).
    /// Cost: a few vector operations a partition.
    @inline(__always)
    private func quantiseScaledEnds(partitions: Range<Int>, level: Int, valuesAt start: Int = 0) {
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

    /// Rounds `ends` to the colour level (swapped so the decoder never blue-contracts them),
    /// filling `colourQ` (from `valuesAt`), `decodedEnds` and the integer interpolation constants.
    @inline(__always)
    private func quantiseEnds(partitions: Range<Int>, level: Int, opaque: Bool, valuesAt start: Int = 0) {
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

    /// Ideal weights against the decoded endpoints, averaged onto the grid, quantised to
    /// `gridQ`, and infilled back to `texelW` (0…64) exactly as the decoder does.
    @inline(__always)
    private func computeWeights(_ c: Candidate, partitions: Int) {
        var origin = (decodedEnds[0], decodedEnds[2]), direction = (decodedEnds[1] - decodedEnds[0], SIMD4<Float>())
        var scale: (Float, Float) = (0, 0)
        let len0 = (direction.0 * direction.0).sum()
        scale.0 = len0 > 0 ? 1 / len0 : 0
        if partitions == 2 {
            origin.1 = decodedEnds[2]
            direction.1 = decodedEnds[3] - decodedEnds[2]
            let len1 = (direction.1 * direction.1).sum()
            scale.1 = len1 > 0 ? 1 / len1 : 0
        }
        if partitions == 1 {
            let o = origin.0, d = direction.0 * scale.0
            for t in 0..<texelCount { ideal[t] = min(max(((texels[t] - o) * d).sum(), 0), 1) }
        } else {
            for t in 0..<texelCount {
                let second = partitionOf[t] == 1
                let o = second ? origin.1 : origin.0, d = second ? direction.1 : direction.0
                let s = second ? scale.1 : scale.0
                ideal[t] = min(max(((texels[t] - o) * d).sum() * s, 0), 1)
            }
        }
        quantiseGrid(c, ideal, into: gridQ)
        infill(c)
    }

    /// `texelW` from `gridQ` through the grid's infill taps.
    @inline(__always)
    private func infill(_ c: Candidate) {
        let values = weightValue + c.weightLevel * 32
        if c.taps < 0 {
            for t in 0..<texelCount { texelW[t] = values[Int(gridQ[t])] }
        } else {
            let index = tapIndex + c.taps, weight = tapWeight + c.taps
            for t in 0..<texelCount {
                var sum: Int32 = 0
                for k in 0..<4 { sum &+= values[Int(gridQ[Int(index[4 * t + k])])] &* weight[4 * t + k] }
                texelSum[t] = sum
                texelW[t] = (sum &+ 8) >> 4
            }
        }
    }

    /// Least-squares endpoints of each partition for the decoded weights in `texelW`.
    @inline(__always)
    private func refitEnds(partitions: Int) {
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
    private func refitScaledEnds(partition p: Int) {
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

    /// Squared error of texel `t` decoded with weight `w` (the decoder's integer arithmetic).
    @inline(__always)
    private func texelError(_ t: Int, weight w: Int32) -> Int32 {
        let p = partitionOf[t]
        let d = ((base[p] &+ slope[p] &* SIMD4(repeating: w)) &>> 14) &- texelInts[t]
        return (d &* d).wrappedSum()
    }

    /// Exact decoded squared error of the current layout; leaves each texel's in `texelW + 64`
    /// (the second plane's half, which only ``fitDual(_:channel:refits:)`` uses) for
    /// ``refineWeights(_:partitions:error:)``.
    private func error() -> Int {
        var sum = 0
        let each = texelW + 64
        for t in 0..<texelCount {
            let e = texelError(t, weight: texelW[t])
            each[t] = e
            sum += Int(e)
        }
        return sum
    }

    /// Moves each grid weight one quantisation step down or up when that lowers the decoded
    /// error of the texels it reaches; returns the new total error. Expects `texelW` (and
    /// `texelSum` for a decimated grid) from `infill(c)` and each texel's error from the
    /// ``error()`` pass that gave `total`; keeps those up to date, so a trial decodes only
    /// the stepped weights (recomputing the current ones each trial cost ~7 % of `quality`).
    /// Cost: per grid weight, up to two trial re-infills of only the texels its taps reach.
    private func refineWeights(_ c: Candidate, partitions: Int, error total: Int) -> Int {
        var total = total
        let values = weightValue + c.weightLevel * 32, steps = weightStep + c.weightLevel * 64
        let now = texelW + 64
        for i in 0..<c.gridCount {
            let current = gridQ[i]
            for direction in 0..<2 {
                let candidate = steps[Int(current) * 2 + direction]
                guard candidate != current else { continue }
                let change = values[Int(candidate)] &- values[Int(current)]
                if c.reach < 0 {
                    let w = values[Int(candidate)], e = texelError(i, weight: w)
                    let delta = Int(e) - Int(now[i])
                    if delta < 0 { total += delta; gridQ[i] = candidate; texelW[i] = w; now[i] = e; break }
                    continue
                }
                let from = Int(reachStart[c.reach + i]), to = Int(reachStart[c.reach + i + 1])
                var delta = 0
                for r in from..<to {
                    let t = Int(reachTexel[r])
                    let w = (texelSum[t] &+ change &* reachWeight[r] &+ 8) >> 4
                    delta += Int(texelError(t, weight: w)) - Int(now[t])
                }
                if delta < 0 {
                    total += delta
                    gridQ[i] = candidate
                    for r in from..<to {
                        let t = Int(reachTexel[r])
                        texelSum[t] &+= change &* reachWeight[r]
                        texelW[t] = (texelSum[t] &+ 8) >> 4
                        now[t] = texelError(t, weight: texelW[t])
                    }
                    break
                }
            }
        }
        return total
    }

    /// The block for layout `c` with the given grid and colour values.
    /// A mixed layout (``Candidate/mixed``) writes per-partition endpoint modes: class base 1
    /// (selector 2), a class bit per partition (1 for mode 6, 2 for mode 8), two mode bits
    /// each; the second partition's mode bits sit just below the weights.
    private func pack(_ c: Candidate, partitions: Int, seed: Int, opaque: Bool,
                      gridValues: UnsafeMutablePointer<UInt8>, colourValues: UnsafeMutablePointer<UInt8>,
                      mixedScaled: Int = 0, plane2: Int = 0) -> ASTCBits {
        let endpointMode = c.scaled ? 6 : opaque ? 8 : 12
        var writer = ASTCBitWriter(lo: UInt64(c.mode) | UInt64(partitions - 1) << 11, hi: 0)
        let colourStart: Int
        if c.mixed {
            // Mode 6 is class 1 with mode bits 2; mode 8 is class 2 with mode bits 0.
            let classBits = mixedScaled == 0 ? 0b10 : 0b01, modeBits0 = mixedScaled == 0 ? 2 : 0
            writer.lo |= UInt64(seed) << 13 | UInt64(2 | classBits << 2 | modeBits0 << 4) << 23
            writer.write(mixedScaled == 1 ? 2 : 0, 2, at: 128 - c.weightBits - 2)
            colourStart = 29
        } else if partitions == 2 {
            writer.lo |= UInt64(seed) << 13 | UInt64(endpointMode << 2) << 23
            colourStart = 29
        } else {
            writer.lo |= UInt64(endpointMode) << 13
            colourStart = 17
            // Dual plane: the second plane's channel just below the weights.
            if c.dual { writer.write(plane2, 2, at: 128 - c.weightBits - 2) }
        }
        writeSequence(colourValues, count: c.mixed ? 10 : partitions * (c.scaled ? 4 : opaque ? 6 : 8), level: opaque ? c.rgbLevel : c.rgbaLevel,
                      start: colourStart, into: &writer)
        var weightWriter = ASTCBitWriter(lo: 0, hi: 0)
        writeSequence(gridValues, count: c.dual ? 2 * c.gridCount : c.gridCount, level: c.weightLevel, start: 0, into: &weightWriter)
        let reversed = ASTCBits(lo: weightWriter.lo, hi: weightWriter.hi).reversed
        return ASTCBits(lo: writer.lo | reversed.lo, hi: writer.hi | reversed.hi)
    }

    /// Writes `count` scrambled `values` as an integer sequence at `level` from bit `start`.
    private func writeSequence(_ values: UnsafeMutablePointer<UInt8>, count: Int, level: Int, start: Int, into w: inout ASTCBitWriter) {
        let n = Int(ASTCIntegerSequence.bitCounts[level])
        let kind = ASTCIntegerSequence.kinds[level]
        var pos = start
        let mask = (1 << n) - 1
        switch kind {
        case 1:
            for i in 0..<count { w.write(Int(values[i]), n, at: pos); pos += n }
        case 3:
            var i = 0
            while i < count {
                let group = min(5, count - i)
                var key = 0, scale = 1
                for j in 0..<group { key += (Int(values[i + j]) >> n) * scale; scale *= 3 }
                let t = Int(tritPack[key])
                for j in 0..<group {
                    let (width, shift) = j == 0 ? (2, 0) : j == 1 ? (2, 2) : j == 2 ? (1, 4) : j == 3 ? (2, 5) : (1, 7)
                    w.write(Int(values[i + j]) & mask, n, at: pos); pos += n
                    w.write((t >> shift) & ((1 << width) - 1), width, at: pos); pos += width
                }
                i += 5
            }
        default:
            var i = 0
            while i < count {
                let group = min(3, count - i)
                var key = 0, scale = 1
                for j in 0..<group { key += (Int(values[i + j]) >> n) * scale; scale *= 5 }
                let q = Int(quintPack[key])
                for j in 0..<group {
                    let (width, shift) = j == 0 ? (3, 0) : j == 1 ? (2, 3) : (2, 5)
                    w.write(Int(values[i + j]) & mask, n, at: pos); pos += n
                    w.write((q >> shift) & ((1 << width) - 1), width, at: pos); pos += width
                }
                i += 3
            }
        }
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

/// ORs bit fields into a 128-bit block.
struct ASTCBitWriter {
    var lo: UInt64
    var hi: UInt64

    @inline(__always) mutating func write(_ value: Int, _ count: Int, at position: Int) {
        guard count > 0 else { return }
        let v = UInt64(truncatingIfNeeded: value) & ((1 << UInt64(count)) - 1)
        if position >= 64 {
            hi |= v << UInt64(position - 64)
        } else {
            lo |= v << UInt64(position)
            if position + count > 64 { hi |= v >> UInt64(64 - position) }
        }
    }
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
