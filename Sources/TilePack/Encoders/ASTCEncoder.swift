import TilePackCore
import TilePackCodec

/// Encodes RGBA8 images to ASTC LDR blocks (4 × 4, 6 × 6, 8 × 8; row-major, 16 bytes a
/// block) that decode identically with ``ASTCDecoder`` and ARM's astcenc.
///
/// Every block: endpoints from the principal axis of its texels (RGB, or RGBA when any
/// texel is not opaque: endpoint modes 8 and 12), weights projected on the quantised
/// endpoints, then a least-squares refit of the endpoints to the decoded weights.
/// - ``Level/fast``: one weight grid and quantisation per footprint (the one that wins most
///   often on map imagery), one refit.
/// - ``Level/quality``: several weight grids and quantisations that fit the 128-bit budget,
///   two refits each, and two-partition layouts (the seeds whose partition maps best match a
///   two-cluster split of the block); the candidate with the smallest decoded error wins
///   (each candidate is decoded by ``ASTCDecoder`` to measure it).
///
/// Not thread-safe (scratch is owned by the encoder); the codec pools encoders.
public final class ASTCEncoder {
    public typealias Level = PVRTCEncoder.Level

    /// Footprints the encoder produces (the decoder takes all fourteen).
    public static let supportedFormats: [ASTCFormat] = [.astc4x4, .astc6x6, .astc8x8]

    public let format: ASTCFormat
    let decoder: ASTCDecoder
    let modes: ASTCBlockModes
    let texelCount: Int
    /// Candidate configurations, best-first for `fast` (which uses the first).
    let candidates: [Candidate]
    let partitionCandidates: [Candidate]
    /// Per 2-partition seed: bit t set when texel t is in partition 1 (footprints ≤ 64 texels).
    let partitionMasks: [UInt64]

    /// One block layout: a single-plane block mode and the colour level its bits leave.
    struct Candidate {
        var mode: Int
        var gridWidth: Int
        var gridHeight: Int
        var weightLevel: Int
        var weightBits: Int
        /// Colour level for 6 integers (RGB) and 8 (RGBA) at one partition, 12/16 at two.
        var rgbLevel: Int
        var rgbaLevel: Int
        var infill: Int
    }

    // Scratch.
    let texels: UnsafeMutablePointer<SIMD4<Float>>
    let ideal: UnsafeMutablePointer<Float>
    private let gridIdeal: UnsafeMutablePointer<Float>
    private let gridIndex: UnsafeMutablePointer<UInt8>
    private let gridValue: UnsafeMutablePointer<UInt8>
    let texelWeight: UnsafeMutablePointer<Float>
    private let decoded: UnsafeMutablePointer<UInt32>
    private let colourQuant: [UInt8]   // per colour level: 0…255 → nearest scrambled value
    private let weightQuant: [UInt8]   // per weight level: 0…64 → nearest scrambled value
    private let tritPack: [UInt8]      // 3^5 trit tuples → 8-bit field
    private let quintPack: [UInt8]     // 5^3 quint tuples → 7-bit field

    public init(format: ASTCFormat) throws(CodecError) {
        guard Self.supportedFormats.contains(format) else {
            throw .byteCount(what: "\(format.rawValue) encoder (encodes astc4x4, astc6x6, astc8x8)", expected: 0, actual: 0)
        }
        self.format = format
        decoder = ASTCDecoder(format: format)
        modes = ASTCBlockModes.table(for: format)
        texelCount = format.blockWidth * format.blockHeight
        (candidates, partitionCandidates) = Self.chooseCandidates(format: format, modes: modes)
        let small = texelCount < 32
        partitionMasks = (0..<1024).map { seed in
            var mask: UInt64 = 0
            for y in 0..<format.blockHeight {
                for x in 0..<format.blockWidth where ASTCPartition.select(seed: seed, x: x, y: y, count: 2, smallBlock: small) == 1 {
                    mask |= 1 << UInt64(y * format.blockWidth + x)
                }
            }
            return mask
        }
        texels = .allocate(capacity: 64)
        ideal = .allocate(capacity: 64)
        gridIdeal = .allocate(capacity: 64)
        gridIndex = .allocate(capacity: 64)
        gridValue = .allocate(capacity: 64)
        texelWeight = .allocate(capacity: 64)
        decoded = .allocate(capacity: 144)
        var cq = [UInt8](repeating: 0, count: 21 * 256)
        for level in ASTCIntegerSequence.minimumColourLevel..<21 {
            let n = ASTCIntegerSequence.ranges[level]
            for v in 0..<256 {
                var best = 0, bestError = Int.max
                for s in 0..<n {
                    let e = abs(Int(ASTCIntegerSequence.colourUnquantised[level * 256 + s]) - v)
                    if e < bestError { bestError = e; best = s }
                }
                cq[level * 256 + v] = UInt8(best)
            }
        }
        colourQuant = cq
        var wq = [UInt8](repeating: 0, count: 12 * 65)
        for level in 0..<12 {
            for v in 0...64 {
                var best = 0, bestError = Int.max
                for s in 0..<ASTCIntegerSequence.ranges[level] {
                    let e = abs(Int(ASTCIntegerSequence.weightUnquantised[level * 32 + s]) - v)
                    if e < bestError { bestError = e; best = s }
                }
                wq[level * 65 + v] = UInt8(best)
            }
        }
        weightQuant = wq
        var tp = [UInt8](repeating: 0, count: 243), qp = [UInt8](repeating: 0, count: 125)
        for t in (0..<256).reversed() {
            let r = ASTCIntegerSequence.tritTable[(t * 5)..<(t * 5 + 5)].map(Int.init)
            tp[r[0] + 3 * r[1] + 9 * r[2] + 27 * r[3] + 81 * r[4]] = UInt8(t)
        }
        for q in (0..<128).reversed() {
            let r = ASTCIntegerSequence.quintTable[(q * 3)..<(q * 3 + 3)].map(Int.init)
            qp[r[0] + 5 * r[1] + 25 * r[2]] = UInt8(q)
        }
        tritPack = tp
        quintPack = qp
    }

    deinit {
        texels.deallocate(); ideal.deallocate(); gridIdeal.deallocate(); gridIndex.deallocate()
        gridValue.deallocate(); texelWeight.deallocate(); decoded.deallocate()
    }

    /// Single-plane layouts worth trying, per footprint: for each weight grid, the finest weight
    /// quantisation that still leaves RGB endpoints at least `range 64`-ish precision.
    static func chooseCandidates(format: ASTCFormat, modes: ASTCBlockModes) -> ([Candidate], [Candidate]) {
        let bw = format.blockWidth, bh = format.blockHeight
        func level(count: Int, bits: Int) -> Int {
            bits < 0 ? -1 : Int(ASTCIntegerSequence.colourLevels[(count >> 1) * 128 + min(bits, 127)])
        }
        var best: [Int: Candidate] = [:]       // key: grid, value: the finest weights with rgb level ≥ minimum
        var bestTwo: [Int: Candidate] = [:]
        for mode in 0..<2048 {
            let e = modes.entries[mode]
            guard e.valid, !e.dualPlane, mode & 0x1FF != 0x1FC else { continue }
            let gw = Int(e.gridWidth), gh = Int(e.gridHeight), wbits = Int(e.weightBits)
            let one = Candidate(mode: mode, gridWidth: gw, gridHeight: gh, weightLevel: Int(e.weightLevel), weightBits: wbits,
                                rgbLevel: level(count: 6, bits: 111 - wbits), rgbaLevel: level(count: 8, bits: 111 - wbits), infill: Int(e.infill))
            let key = gw * 16 + gh
            if one.rgbLevel >= 14, one.rgbaLevel >= 11, one.weightLevel > (best[key]?.weightLevel ?? -1) { best[key] = one }
            var two = one
            two.rgbLevel = level(count: 12, bits: 99 - wbits)
            two.rgbaLevel = level(count: 16, bits: 99 - wbits)
            if two.rgbLevel >= 8, two.rgbaLevel >= 5, two.weightLevel > (bestTwo[key]?.weightLevel ?? -1) { bestTwo[key] = two }
        }
        // Rank: more weights × finer weights first; keep grids of at least a third of the footprint.
        func score(_ c: Candidate) -> Double {
            Double(c.gridWidth * c.gridHeight) * Double(ASTCIntegerSequence.ranges[c.weightLevel]).squareRoot() + Double(c.rgbLevel)
        }
        let minimumArea = max(4, bw * bh / 4)
        let ones = best.values.filter { $0.gridWidth * $0.gridHeight >= minimumArea && abs($0.gridWidth - $0.gridHeight) <= 1 }
            .sorted { score($0) > score($1) }
        let twos = bestTwo.values.filter { $0.gridWidth * $0.gridHeight >= minimumArea && abs($0.gridWidth - $0.gridHeight) <= 1 }
            .sorted { score($0) > score($1) }
        return (ones, Array(twos.prefix(3)))
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
        rgba.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBytes { dst in
                for by in 0..<grid.high {
                    for bx in 0..<grid.wide {
                        var opaque = true
                        for y in 0..<bh {
                            let sy = min(by * bh + y, height - 1)
                            for x in 0..<bw {
                                let sx = min(bx * bw + x, width - 1)
                                let i = (sy * width + sx) * 4
                                texels[y * bw + x] = SIMD4(Float(src[i]), Float(src[i + 1]), Float(src[i + 2]), Float(src[i + 3]))
                                opaque = opaque && src[i + 3] == 255
                            }
                        }
                        let bits = encodeBlock(opaque: opaque, level: level)
                        let offset = (by * grid.wide + bx) * 16
                        dst.storeBytes(of: bits.lo.littleEndian, toByteOffset: offset, as: UInt64.self)
                        dst.storeBytes(of: bits.hi.littleEndian, toByteOffset: offset + 8, as: UInt64.self)
                    }
                }
            }
        }
        return out
    }

    /// The best block for the texels in `texels`.
    func encodeBlock(opaque: Bool, level: Level) -> ASTCBits {
        // Constant block: a void-extent is exact.
        let first = texels[0]
        var constant = true
        for t in 1..<texelCount where texels[t] != first { constant = false; break }
        if constant {
            let c = SIMD4<UInt64>(truncatingIfNeeded: SIMD4<Int32>(first)) &* 257
            return ASTCBits(lo: 0xDFC | ((1 << 52) - 1) << 12, hi: c[0] | c[1] << 16 | c[2] << 32 | c[3] << 48)
        }
        let all = UInt64.max >> UInt64(64 - texelCount)
        if level == .fast {
            return encodeSingle(candidates[0], opaque: opaque, mask: all, partition: nil, refits: 1, measure: false).bits
        }
        var best = encodeSingle(candidates[0], opaque: opaque, mask: all, partition: nil, refits: 2)
        for candidate in candidates.dropFirst() {
            if best.error < 1 { break }
            let trial = encodeSingle(candidate, opaque: opaque, mask: all, partition: nil, refits: 2)
            if trial.error < best.error { best = trial }
        }
        // Two partitions: seeds whose maps best match a split along the principal axis.
        if best.error > Float(texelCount) * 4, !partitionCandidates.isEmpty {
            let split = principalSplit(mask: all)
            var seeds: [(Int, Int)] = []
            for seed in 0..<1024 {
                let m = partitionMasks[seed]
                guard m != 0, m != all else { continue }
                let d = min((m ^ split).nonzeroBitCount, (m ^ split ^ all).nonzeroBitCount)
                seeds.append((d, seed))
            }
            seeds.sort { $0.0 < $1.0 }
            for (_, seed) in seeds.prefix(4) {
                for candidate in partitionCandidates {
                    let trial = encodeSingle(candidate, opaque: opaque, mask: all, partition: seed, refits: 2)
                    if trial.error < best.error { best = trial }
                }
            }
        }
        return best.bits
    }

    /// Bit t set for texels on the far side of the mean along the principal axis.
    func principalSplit(mask: UInt64) -> UInt64 {
        let (mean, axis) = principalAxis(mask: mask)
        var split: UInt64 = 0
        for t in 0..<texelCount where ((texels[t] - mean) * axis).sum() > 0 { split |= 1 << UInt64(t) }
        return split
    }

    /// Mean and principal axis (power iteration on the covariance) of the texels in `mask`.
    @inline(__always)
    func principalAxis(mask: UInt64) -> (SIMD4<Float>, SIMD4<Float>) {
        var sum = SIMD4<Float>(), count: Float = 0
        var lo = SIMD4<Float>(repeating: 255), hi = SIMD4<Float>(repeating: 0)
        for t in 0..<texelCount where mask >> UInt64(t) & 1 == 1 {
            sum += texels[t]; count += 1
            lo = pointwiseMin(lo, texels[t]); hi = pointwiseMax(hi, texels[t])
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
            let magnitude: SIMD4<Float> = pointwiseMax(next, -next)
            let m: Float = magnitude.max()
            if m < 1e-6 { break }
            axis = next / m
        }
        return (mean, axis)
    }

    struct Trial {
        var bits: ASTCBits
        var error: Float
    }

    /// Encodes one layout: single partition (`partition` nil) or two with `partition` as seed.
    func encodeSingle(_ c: Candidate, opaque: Bool, mask all: UInt64, partition: Int?, refits: Int, measure: Bool = true) -> Trial {
        let partitionCount = partition == nil ? 1 : 2
        let masks: [UInt64] = partition.map { [all & ~partitionMasks[$0], partitionMasks[$0]] } ?? [all]
        let endpointMode = opaque ? 8 : 12
        let colourLevel = opaque ? c.rgbLevel : c.rgbaLevel
        var e0 = [SIMD4<Float>](repeating: .zero, count: partitionCount), e1 = e0
        for p in 0..<partitionCount {
            let (mean, axis) = principalAxis(mask: masks[p])
            let len2 = (axis * axis).sum()
            var tmin: Float = 0, tmax: Float = 0
            if len2 > 0 {
                tmin = .greatestFiniteMagnitude; tmax = -.greatestFiniteMagnitude
                for t in 0..<texelCount where masks[p] >> UInt64(t) & 1 == 1 {
                    let s = ((texels[t] - mean) * axis).sum() / len2
                    tmin = min(tmin, s); tmax = max(tmax, s)
                }
            }
            e0[p] = mean + axis * tmin
            e1[p] = mean + axis * tmax
        }
        var bits = ASTCBits(lo: 0, hi: 0)
        var quantised = [[Int]](repeating: [], count: partitionCount)
        var decodedEnds = [(SIMD4<Float>, SIMD4<Float>)](repeating: (.zero, .zero), count: partitionCount)
        var round = 0
        while true {
            // Quantise endpoints (swap so the decoder never blue-contracts them).
            for p in 0..<partitionCount {
                var q0 = quantiseEndpoint(e0[p], level: colourLevel, opaque: opaque)
                var q1 = quantiseEndpoint(e1[p], level: colourLevel, opaque: opaque)
                if q0.1[0] + q0.1[1] + q0.1[2] > q1.1[0] + q1.1[1] + q1.1[2] { swap(&q0, &q1) }
                quantised[p] = zip(q0.0, q1.0).flatMap { [$0, $1] }
                decodedEnds[p] = (q0.1, q1.1)
            }
            // Ideal texel weights against the decoded endpoints.
            for t in 0..<texelCount {
                let p = partition != nil && masks[1] >> UInt64(t) & 1 == 1 ? 1 : 0
                let (d0, d1) = decodedEnds[p]
                let d = d1 - d0
                let len2 = (opaque ? d * SIMD4(1, 1, 1, 0) * d : d * d).sum()
                ideal[t] = len2 > 0 ? min(max(((texels[t] - d0) * d).sum() / len2, 0), 1) : 0
            }
            quantiseWeights(c)
            if round == refits { break }
            round += 1
            // Least-squares refit of each partition's endpoints to the decoded weights.
            for p in 0..<partitionCount {
                var a00: Float = 0, a01: Float = 0, a11: Float = 0
                var b0 = SIMD4<Float>(), b1 = SIMD4<Float>()
                for t in 0..<texelCount where masks[p] >> UInt64(t) & 1 == 1 {
                    let w = texelWeight[t], v = 1 - w
                    a00 += v * v; a01 += v * w; a11 += w * w
                    b0 += texels[t] * v; b1 += texels[t] * w
                }
                let det = a00 * a11 - a01 * a01
                guard abs(det) > 1e-3 else { continue }
                e0[p] = pointwiseMin(pointwiseMax((b0 * a11 - b1 * a01) / det, .zero), SIMD4(repeating: 255))
                e1[p] = pointwiseMin(pointwiseMax((b1 * a00 - b0 * a01) / det, .zero), SIMD4(repeating: 255))
            }
        }
        // Pack.
        var lo = UInt64(c.mode) | UInt64(partitionCount - 1) << 11
        var hi: UInt64 = 0
        let colourStart: Int
        if let seed = partition {
            lo |= UInt64(seed) << 13 | UInt64(endpointMode << 2) << 23
            colourStart = 29
        } else {
            lo |= UInt64(endpointMode) << 13
            colourStart = 17
        }
        var writer = ASTCBitWriter(lo: lo, hi: hi)
        let values = quantised.flatMap { $0 }
        writeSequence(values, level: colourLevel, start: colourStart, into: &writer)
        var weightWriter = ASTCBitWriter(lo: 0, hi: 0)
        writeSequence((0..<(c.gridWidth * c.gridHeight)).map { Int(gridIndex[$0]) }, level: c.weightLevel, start: 0, into: &weightWriter)
        let reversed = ASTCBits(lo: weightWriter.lo, hi: weightWriter.hi).reversed
        lo = writer.lo | reversed.lo
        hi = writer.hi | reversed.hi
        bits = ASTCBits(lo: lo, hi: hi)
        return Trial(bits: bits, error: measure ? error(of: bits) : 0)
    }

    /// Sum of squared differences of the decoded block against the texels.
    func error(of bits: ASTCBits) -> Float {
        decoder.decodeBlock(bits, into: decoded)
        var sum: Float = 0
        for t in 0..<texelCount {
            let w = decoded[t]
            let d = SIMD4<Float>(Float(w & 0xFF), Float((w >> 8) & 0xFF), Float((w >> 16) & 0xFF), Float(w >> 24)) - texels[t]
            sum += (d * d).sum()
        }
        return sum
    }

    /// Nearest colour-level values for an endpoint: scrambled values (R, G, B[, A]) and the
    /// 8-bit endpoint they decode to.
    @inline(__always)
    func quantiseEndpoint(_ e: SIMD4<Float>, level: Int, opaque: Bool) -> ([Int], SIMD4<Float>) {
        var scrambled: [Int] = []
        var decoded = SIMD4<Float>(0, 0, 0, 255)
        for ch in 0..<(opaque ? 3 : 4) {
            let v = Int(min(max(e[ch].rounded(), 0), 255))
            let s = Int(colourQuant[level * 256 + v])
            scrambled.append(s)
            decoded[ch] = Float(ASTCIntegerSequence.colourUnquantised[level * 256 + s])
        }
        return (scrambled, decoded)
    }

    /// Grid weights from the ideal texel weights (infill-weighted averages when the grid is
    /// coarser than the footprint), quantised; leaves the decoded per-texel weights (0…1)
    /// in `texelWeight`.
    func quantiseWeights(_ c: Candidate) {
        let count = c.gridWidth * c.gridHeight
        if c.infill < 0 {
            for i in 0..<count { gridIdeal[i] = ideal[i] }
        } else {
            var num = [Float](repeating: 0, count: count), den = [Float](repeating: 0, count: count)
            let taps = modes.infillTaps + c.infill
            for t in 0..<texelCount {
                let idx = taps[2 * t], wts = taps[2 * t + 1]
                for k in 0..<4 {
                    let g = Int((idx >> UInt32(8 * k)) & 0xFF), w = Float((wts >> UInt32(8 * k)) & 0xFF)
                    num[g] += w * ideal[t]; den[g] += w
                }
            }
            for i in 0..<count { gridIdeal[i] = den[i] > 0 ? num[i] / den[i] : 0 }
        }
        for i in 0..<count {
            let v = Int((gridIdeal[i] * 64).rounded())
            let s = weightQuant[c.weightLevel * 65 + min(max(v, 0), 64)]
            gridIndex[i] = s
            gridValue[i] = ASTCIntegerSequence.weightUnquantised[c.weightLevel * 32 + Int(s)]
        }
        if c.infill < 0 {
            for t in 0..<texelCount { texelWeight[t] = Float(gridValue[t]) / 64 }
        } else {
            let taps = modes.infillTaps + c.infill
            for t in 0..<texelCount {
                let idx = taps[2 * t], wts = taps[2 * t + 1]
                var sum: UInt32 = 8
                for k in 0..<4 { sum += UInt32(gridValue[Int((idx >> UInt32(8 * k)) & 0xFF)]) * ((wts >> UInt32(8 * k)) & 0xFF) }
                texelWeight[t] = Float(sum >> 4) / 64
            }
        }
    }

    /// Writes `values` (scrambled) as an integer sequence at `level` from bit `start`.
    func writeSequence(_ values: [Int], level: Int, start: Int, into w: inout ASTCBitWriter) {
        let n = Int(ASTCIntegerSequence.bitCounts[level])
        let kind = ASTCIntegerSequence.kinds[level]
        var pos = start
        let mask = (1 << n) - 1
        switch kind {
        case 1:
            for v in values { w.write(v, n, at: pos); pos += n }
        case 3:
            var i = 0
            while i < values.count {
                let group = Array(values[i..<min(i + 5, values.count)])
                var key = 0, scale = 1
                for v in group { key += (v >> n) * scale; scale *= 3 }
                let t = Int(tritPack[key])
                let widths = [2, 2, 1, 2, 1], shifts = [0, 2, 4, 5, 7]
                for (j, v) in group.enumerated() {
                    w.write(v & mask, n, at: pos); pos += n
                    w.write((t >> shifts[j]) & ((1 << widths[j]) - 1), widths[j], at: pos); pos += widths[j]
                }
                i += 5
            }
        default:
            var i = 0
            while i < values.count {
                let group = Array(values[i..<min(i + 3, values.count)])
                var key = 0, scale = 1
                for v in group { key += (v >> n) * scale; scale *= 5 }
                let q = Int(quintPack[key])
                let widths = [3, 2, 2], shifts = [0, 3, 5]
                for (j, v) in group.enumerated() {
                    w.write(v & mask, n, at: pos); pos += n
                    w.write((q >> shifts[j]) & ((1 << widths[j]) - 1), widths[j], at: pos); pos += widths[j]
                }
                i += 3
            }
        }
    }
}

@available(*, unavailable) extension ASTCEncoder: Sendable {}

/// ORs bit fields into a 128-bit block.
struct ASTCBitWriter {
    var lo: UInt64
    var hi: UInt64

    mutating func write(_ value: Int, _ count: Int, at position: Int) {
        guard count > 0 else { return }
        let v = UInt64(value) & ((1 << UInt64(count)) - 1)
        if position >= 64 {
            hi |= v << UInt64(position - 64)
        } else {
            lo |= v << UInt64(position)
            if position + count > 64 { hi |= v >> UInt64(64 - position) }
        }
    }
}
