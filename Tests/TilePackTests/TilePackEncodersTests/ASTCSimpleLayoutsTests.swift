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
            // Header 17 bits, then 4 (scaled) or 6 (direct) 8-bit values; weights from the top down.
            let used = 17 + (c.scaled ? 32 : 48), zeroBits = 128 - c.weightBits - used
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
        let simple = Set(encoder.simpleCandidates.map { $0.mode << 4 | ($0.scaled ? 6 : 8) })
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
            let offLine = SIMD2<Float>(direct.offLine, scaled.offLine)
            func picks(_ lambda: Float, limit: Float = .infinity) -> SIMD2<Int> {
                encoder.simplePicks(lambda: lambda, limit: limit, floorBits: 0, offLine: offLine).index
            }
            let errorFirst = picks(0), bitsFirst = picks(1e9)
            #expect(picks(1, limit: 0) == SIMD2(-1, -1), "block \(kind)")
            for k in 0..<2 {
                let layouts = encoder.simpleCandidates.indices.filter { encoder.simpleCandidates[$0].kind == k }
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
