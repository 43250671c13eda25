import Testing
@testable import TilePackCodec
import TilePackCore
@testable import TilePackEncoders

/// The weight passes that run four texels a lane, or over a texel's nonzero taps only, against
/// the one-texel-at-a-time, all-taps forms they replaced, bit for bit, on seeded random blocks.
@Suite struct ASTCWeightPassesTests {
    /// Random texels into `encoder` (opaque when `opaque`, else any alpha; smooth, noisy or a
    /// few levels by `kind`), then random decoded ends (sometimes equal: a zero-length line) and
    /// a random two-partition map.
    static func load(_ encoder: ASTCEncoder, kind: Int, opaque: Bool, random: inout SplitMix64) {
        func byte() -> UInt32 { UInt32(truncatingIfNeeded: random.next() % 256) }
        let base = (byte(), byte(), byte(), byte())
        for t in 0..<encoder.texelCount {
            var v: (UInt32, UInt32, UInt32, UInt32)
            switch kind % 3 {
            case 0: v = (min(base.0 + UInt32(t) * 3, 255), base.1, min(base.2 + byte() % 5, 255), base.3)
            case 1: v = (byte(), byte(), byte(), byte())
            default: v = random.next() % 2 == 0 ? base : (base.0 / 2, base.1 / 2, base.2 / 2, base.3 / 2)
            }
            encoder.words[t] = v.0 | v.1 << 8 | v.2 << 16 | (opaque ? 255 : v.3) << 24
        }
        encoder.loadPlanes(aos: true)
        for e in 0..<4 {
            encoder.decodedEnds[e] = SIMD4(
                Float(byte()), Float(byte()), Float(byte()), opaque ? 255 : Float(byte()))
        }
        if kind % 5 == 4 { encoder.decodedEnds[1] = encoder.decodedEnds[0] }
        let mask = random.next()
        for t in 0..<encoder.texelCount { encoder.partitionOf[t] = Int(mask >> UInt64(t) & 1) }
    }

    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func laneWeightsAreTheTexelByTexelOnes(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        var random = SplitMix64(seed: 29)
        var clamped = 0
        for kind in 0..<90 {
            let opaque = kind % 2 == 0
            Self.load(encoder, kind: kind, opaque: opaque, random: &random)
            for partitions in 1...2 {
                // What computeWeights projected one texel at a time before it ran four a lane.
                let e = encoder.decodedEnds
                let o0 = e[0], d0 = e[1] - e[0], o1 = e[2], d1 = e[3] - e[2]
                let len0 = (d0 * d0).sum(), len1 = (d1 * d1).sum()
                let s0: Float = len0 > 0 ? 1 / len0 : 0, s1: Float = len1 > 0 ? 1 / len1 : 0
                let expected = (0..<encoder.texelCount).map { t -> Float in
                    let x = encoder.texels[t]
                    if partitions == 1 { return min(max(((x - o0) * (d0 * s0)).sum(), 0), 1) }
                    let second = encoder.partitionOf[t] == 1
                    let o = second ? o1 : o0, d = second ? d1 : d0
                    return min(max(((x - o) * d).sum() * (second ? s1 : s0), 0), 1)
                }
                encoder.computeWeights(encoder.candidates[0], partitions: partitions)
                for t in 0..<encoder.texelCount {
                    #expect(
                        encoder.ideal[t].bitPattern == expected[t].bitPattern,
                        "\(format) \(kind) \(partitions): texel \(t) \(encoder.ideal[t]) vs \(expected[t])")
                }
                clamped += expected.filter { $0 == 0 || $0 == 1 }.count
            }
        }
        #expect(clamped > 0, "\(format): no weight reached the clamp")
    }

    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func laneLineFiguresAreTheTexelByTexelOnes(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        var random = SplitMix64(seed: 31)
        let weights = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        let lengths = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        defer { weights.deallocate(); lengths.deallocate() }
        for kind in 0..<90 {
            Self.load(encoder, kind: kind, opaque: kind % 2 == 0, random: &random)
            // What idealWeights computed one texel at a time before it ran four a lane.
            let o = encoder.decodedEnds[0], d = encoder.decodedEnds[1] - o
            let len = (d * d).sum(), s: Float = len > 0 ? 1 / len : 0
            var off: Float = 0
            var expected: [Float] = []
            for t in 0..<encoder.texelCount {
                let x = encoder.texels[t]
                let w = min(max(((x - o) * d).sum() * s, 0), 1)
                expected.append(w)
                let r = x - (o + d * w)
                off += (r * r).sum()
            }
            let got = encoder.idealWeights(encoder.decodedEnds, partitions: 1, into: weights, lengths: lengths)
            #expect(got.offLine.bitPattern == off.bitPattern, "\(format) \(kind): \(got.offLine) vs \(off)")
            #expect(got.total == len * Float(encoder.texelCount))
            for t in 0..<encoder.texelCount {
                #expect(weights[t].bitPattern == expected[t].bitPattern, "\(format) \(kind): texel \(t)")
                #expect(lengths[t] == len)
            }
        }
    }

    /// The exact error pass (four texels a lane in Float) gives the decoder's integer figures,
    /// texel by texel as the pass computed them before it ran in lanes, per texel and in total,
    /// at one and two partitions, endpoint values at the ends of their range (0 and 255) among
    /// random ones, and weights 0…64.
    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func laneErrorsAreTheTexelByTexelOnes(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        var random = SplitMix64(seed: 41)
        var extremes = 0
        for kind in 0..<120 {
            Self.load(encoder, kind: kind, opaque: kind % 2 == 0, random: &random)
            func value() -> Int32 {
                switch random.next() % 4 {
                case 0: 0
                case 1: 255
                default: Int32(truncatingIfNeeded: random.next() % 256)
                }
            }
            for p in 0..<2 {
                let q0 = SIMD4(value(), value(), value(), value()), q1 = SIMD4(value(), value(), value(), value())
                encoder.base[p] = 257 &* 64 &* q0 &+ 32
                encoder.slope[p] = 257 &* (q1 &- q0)
            }
            for t in 0..<encoder.texelCount {
                encoder.texelW[t] = random.next() % 3 == 0 ? 64 : Int32(truncatingIfNeeded: random.next() % 65)
            }
            for partitions in 1...2 {
                if partitions == 1 { for t in 0..<encoder.texelCount { encoder.partitionOf[t] = 0 } }
                var expected: [Int32] = []
                for t in 0..<encoder.texelCount {
                    if partitions == 2 { encoder.partitionOf[t] = Int(random.next() % 2) }
                    let p = encoder.partitionOf[t], w = SIMD4(repeating: encoder.texelW[t])
                    let d = ((encoder.base[p] &+ encoder.slope[p] &* w) &>> 14) &- encoder.texelInts[t]
                    expected.append((d &* d).wrappedSum())
                }
                let total = encoder.error(partitions: partitions)
                #expect(total == expected.reduce(0) { $0 + Int($1) }, "\(format) \(kind) \(partitions)")
                for t in 0..<encoder.texelCount {
                    #expect(encoder.texelW[64 + t] == expected[t], "\(format) \(kind) \(partitions): texel \(t)")
                }
                extremes += expected.filter { $0 >= 3 * 255 * 255 }.count
            }
        }
        #expect(extremes > 0, "\(format): no texel missed by 255 in three channels")
    }

    /// Every decimated layout's infill over its texels' nonzero taps gives the decoder's weights.
    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func infillOverNonzeroTapsIsTheDecoders(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        let modes = ASTCBlockModes.table(for: format)
        var random = SplitMix64(seed: 37)
        let layouts =
            encoder.candidates + encoder.partitionCandidates + encoder.simpleCandidates + encoder.dualCandidates
        var twoTap = 0
        var decoded = [UInt8](repeating: 0, count: 64), expected = [UInt8](repeating: 0, count: 64)
        for c in layouts where c.taps >= 0 {
            if c.tapCount == 2 { twoTap += 1 }
            let range = ASTCIntegerSequence.ranges[c.weightLevel]
            for _ in 0..<8 {
                for i in 0..<c.gridCount {
                    encoder.gridQ[i] = UInt8(random.next() % UInt64(range))
                    decoded[i] = UInt8(encoder.weightValue[c.weightLevel * 32 + Int(encoder.gridQ[i])])
                }
                encoder.infill(c)
                modes.infill(
                    decoded, at: Int(modes.entries[c.mode].infill), texels: encoder.texelCount, into: &expected)
                for t in 0..<encoder.texelCount {
                    #expect(encoder.texelW[t] == Int32(expected[t]), "\(format) mode \(c.mode): texel \(t)")
                    #expect((encoder.texelSum[t] + 8) >> 4 == encoder.texelW[t])
                }
            }
        }
        #expect(twoTap > 0, "\(format): no layout infills over two taps")
    }
}
