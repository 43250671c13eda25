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
}
