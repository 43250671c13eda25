import Testing
@testable import TilePackCodec
import TilePackCore
@testable import TilePackEncoders
import TilePackTestSupport

/// The rate-distortion choice's simple layouts (ASTCEncoder+SimpleModes.swift): few weight bits,
/// endpoints at the colour cap, the bits between them zero; taken only with RDO on.
@Suite struct ASTCSimpleLayoutsTests {
    @Test func simpleLayoutsReachTheColourCapAndLeaveTheRestZero() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        #expect(!encoder.simpleCandidates.isEmpty)
        let colour = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)
        let grid = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
        defer { colour.deallocate(); grid.deallocate() }
        colour.initialize(repeating: 255, count: 16)
        for c in encoder.simpleCandidates {
            #expect(c.rgbLevel == 20, "mode \(c.mode)")
            let range = ASTCIntegerSequence.ranges[c.weightLevel]
            grid.initialize(repeating: UInt8(range - 1), count: 64)
            let block = encoder.pack(c, partitions: 1, seed: 0, opaque: true, gridValues: grid, colourValues: colour)
            // Header 17 bits, then 2 (luminance), 4 (scaled) or 6 (direct) 8-bit values; weights
            // from the top down.
            let used = 17 + 8 * c.valueCount, zeroBits = 128 - c.weightBits - used
            #expect(zeroBits >= 16, "mode \(c.mode): \(zeroBits) free bits")
            for bit in used..<(128 - c.weightBits) {
                let set = bit < 64 ? block.lo >> UInt64(bit) & 1 : block.hi >> UInt64(bit - 64) & 1
                #expect(set == 0, "mode \(c.mode) bit \(bit)")
            }
        }
    }

    /// RDO takes them on a map-like tile at the default λ and never without it; they decode.
    @Test func rdoTakesSimpleLayoutsAndTheSearchDoesNot() throws {
        let image = ASTCRateDistortionTests.mapTile()
        let encoder = try ASTCEncoder(format: .astc6x6)
        let simple = Set(encoder.simpleCandidates.map { $0.mode << 4 | $0.endpointMode })
        let decoder = ASTCDecoder(format: .astc6x6)
        func count(_ rdo: ASTCRateDistortion) throws -> Int {
            let blocks = try encoder.encode(rgba: image, width: 96, height: 96, rdo: rdo)
            return ASTCEncoderTests.countDecodedBlocks(blocks, decoder: decoder) { lo, _ in
                lo >> 11 & 3 == 0 && simple.contains(Int(lo & 0x7FF) << 4 | Int(lo >> 13 & 0xF))
            }
        }
        #expect(try count(.off) == 0)
        #expect(try count(.standard) > 0)
    }

    /// The simple layouts fit from `fast`'s principal line (`fastAxisEnds`), kept for the block
    /// through a two-partition search that replaces `axisEnds`: it passes through the block's
    /// mean, on a block with a dominant direction (smooth ramps, two levels) it is the principal
    /// line (within 1° of ``ASTCEncoder/principalAxis(mask:)``'s, the line the layouts were fitted
    /// from before), and `cheapestSimple` puts it back into `axisEnds`. On noise neither power
    /// iteration settles in four steps, so the two lines differ there; bytes changed by +0.0005 %
    /// on the 4096² bench source (docs/ASTC.md, the ninth round).
    @Test func simpleLayoutsFitFromFastsLineAfterAnySearch() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        let recent = ASTCRecentBlocks(format: .astc6x6, blockCount: 16, columns: 4)
        var random = SplitMix64(seed: 23)
        let all = UInt64.max >> UInt64(64 - encoder.texelCount)
        var replaced = 0
        for kind in 0..<60 as Range<UInt64> {
            _ = ASTCRateDistortionBoundsTests.load(encoder, kind: kind, random: &random)
            _ = encoder.encodeBlock(opaque: true, level: .quality)
            let fast = encoder.fastAxisEnds
            if encoder.axisEnds[0] != fast.0 || encoder.axisEnds[1] != fast.1 { replaced += 1 }
            let (mean, axis) = encoder.principalAxis(mask: all)
            let direction = fast.1 - fast.0
            let lengths = ((direction * direction).sum() * (axis * axis).sum()).squareRoot()
            if lengths > 1e-3 && (axis * axis).sum() > 1e-3 {
                let cosine = abs((direction * axis).sum()) / lengths
                if kind % 3 != 1 { #expect(cosine > 0.9998, "block \(kind): \(cosine)") }
                // The line passes through the block's mean.
                let t = ((mean - fast.0) * direction).sum() / (direction * direction).sum()
                let off = mean - (fast.0 + direction * t)
                #expect((off * off).sum() < 1e-2, "block \(kind)")
            }
            for t in 0..<encoder.texelCount { encoder.partitionOf[t] = 0 }
            _ = encoder.cheapestSimple(lambda: 4, recent: recent, below: .infinity)
            #expect(encoder.axisEnds[0] == fast.0 && encoder.axisEnds[1] == fast.1, "block \(kind)")
        }
        #expect(replaced > 0, "no search replaced the one-partition line")
    }

    /// The choice fits one simple layout a kind: of those its gates pass, the least gate estimate
    /// plus λ × the layout's literal bits. At λ 0 that is the least estimate of the kind, at a
    /// huge λ the fewest weight bits; a limit the gates cannot pass picks none.
    @Test func simplePicksTradeTheEstimateAgainstWeightBitsPerKind() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        var random = SplitMix64(seed: 17)
        let all = UInt64.max >> UInt64(64 - encoder.texelCount)
        for kind in 0..<30 as Range<UInt64> {
            _ = ASTCRateDistortionBoundsTests.load(encoder, kind: kind, random: &random)
            encoder.setPartitions(count: 1, mask: all)
            let direct = encoder.idealWeights(
                encoder.axisEnds, partitions: 1, into: encoder.screenIdeal, lengths: encoder.lineLength2)
            encoder.lineTotal = direct.total
            encoder.setChromaEnds(partitions: 1, mask: all)
            let scaled = encoder.idealWeights(
                encoder.chromaEnds, partitions: 1, into: encoder.screenIdealScaled, lengths: encoder.lineLength2Scaled)
            encoder.lineTotalScaled = scaled.total
            // These blocks are not grey: the luminance lane's off-line error is infinite, as
            // `cheapestSimple` passes it, and no luminance layout is picked.
            let offLine = SIMD4<Float>(direct.offLine, scaled.offLine, .infinity, .infinity)
            func picks(_ lambda: Float, limit: Float = .infinity) -> SIMD4<Int> {
                encoder.simplePicks(lambda: lambda, limit: limit, floorBits: 0, offLine: offLine).index
            }
            let errorFirst = picks(0), bitsFirst = picks(1e9)
            #expect(picks(1, limit: 0) == SIMD4(repeating: -1), "block \(kind)")
            #expect(errorFirst[2] == -1 && bitsFirst[2] == -1, "block \(kind)")
            for k in 0..<2 {
                let layouts = encoder.simpleCandidates.indices.filter { encoder.simpleCandidates[$0].endpointLane == k }
                try #require(layouts.count == 3)
                func gate(_ i: Int) -> Float {
                    let c = encoder.simpleCandidates[i]
                    return ASTCEncoder.simpleEstimateShare
                        * (offLine[k] + encoder.gridError(c) + encoder.estimate(c, opaque: true))
                }
                #expect(layouts.contains(errorFirst[k]) && layouts.contains(bitsFirst[k]), "block \(kind)")
                guard layouts.contains(errorFirst[k]), layouts.contains(bitsFirst[k]) else { continue }
                #expect(layouts.allSatisfy { gate($0) >= gate(errorFirst[k]) }, "block \(kind) kind \(k)")
                let fewest = layouts.map { encoder.simpleCandidates[$0].weightBits }.min()
                #expect(encoder.simpleCandidates[bitsFirst[k]].weightBits == fewest, "block \(kind) kind \(k)")
            }
        }
    }
}
