import Testing
@testable import TilePackCodec
import TilePackCore
@testable import TilePackEncoders
import TilePackTestSupport

/// Luminance endpoints (mode 0) for grey blocks: ranked by the search, reused and offered as a
/// simple layout by the rate-distortion choice; never for a block with any colour.
@Suite struct ASTCLuminanceTests {
    /// A grey image (R = G = B), `width` × `height`: seeded noise upsampled 2× by bilinear, as
    /// a map's zoom past its source's pixels is (rio-tiler web.tif's z9), with a ramp under it.
    /// `amplitude`: the noise's range in grey levels.
    static func greyImage(width: Int, height: Int, seed: UInt64, amplitude: UInt64 = 160) -> [UInt8] {
        var random = SplitMix64(seed: seed)
        let cw = width / 2 + 2, ch = height / 2 + 2
        let coarse = (0..<cw * ch).map { _ in Double(random.next() % amplitude) + 40 }
        var rgba = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let fx = Double(x) / 2 + 0.25, fy = Double(y) / 2 + 0.25
                let x0 = Int(fx), y0 = Int(fy), tx = fx - Double(x0), ty = fy - Double(y0)
                let top = coarse[y0 * cw + x0] * (1 - tx) + coarse[y0 * cw + x0 + 1] * tx
                let bottom = coarse[(y0 + 1) * cw + x0] * (1 - tx) + coarse[(y0 + 1) * cw + x0 + 1] * tx
                let v = UInt8(min(max(top * (1 - ty) + bottom * ty + Double(x) * 0.1, 0), 255))
                for c in 0..<3 { rgba[4 * (y * width + x) + c] = v }
            }
        }
        return rgba
    }

    /// The low 64 bits of each 16-byte block (mode, partition count, endpoint mode).
    static func lowWords(_ blocks: [UInt8]) -> [UInt64] {
        stride(from: 0, to: blocks.count, by: 16).map { o in
            blocks[o..<o + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
    }

    /// The endpoint mode of each block that is not a void-extent (nil for those).
    static func endpointModes(_ blocks: [UInt8]) -> [Int?] {
        lowWords(blocks).map { lo in lo & 0x1FF == 0x1FC ? nil : Int(lo >> 13 & 0xF) }
    }

    /// Single grey blocks at `quality`: the search takes luminance endpoints for many of them,
    /// every block decodes grey, and the exact error the search kept (`searchedError`) is the
    /// decoder's, so the ends `quantiseLuminanceEnds` records are the ones the decoder reads.
    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func greyBlocksTakeLuminanceAtTheDecodersError(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        let decoder = ASTCDecoder(format: format)
        let w = format.blockWidth, h = format.blockHeight
        var luminance = 0
        for seed in 0..<120 as Range<UInt64> {
            let rgba = Self.greyImage(width: w, height: h, seed: seed)
            let blocks = try encoder.encode(rgba: rgba, width: w, height: h, level: .quality)
            let decoded = try decoder.decode(blocks, width: w, height: h)
            let error = zip(rgba, decoded).reduce(0) { $0 + (Int($1.0) - Int($1.1)) * (Int($1.0) - Int($1.1)) }
            #expect(
                error == encoder.searchedError,
                "\(format) seed \(seed): decoded \(error), searched \(encoder.searchedError)")
            if Self.endpointModes(blocks)[0] == 0 {
                luminance += 1
                for t in 0..<w * h {
                    #expect(
                        decoded[4 * t] == decoded[4 * t + 1] && decoded[4 * t] == decoded[4 * t + 2], "seed \(seed)")
                }
            }
        }
        #expect(luminance >= 30, "\(format): \(luminance) of 120 grey blocks took luminance endpoints")
    }

    /// The same blocks with one channel off by one in one texel are not grey: no luminance
    /// endpoints, at `quality` or with RDO (whose luminance reuse and simple layout are for grey
    /// blocks' neighbours too, but a colour block is never offered the simple layout).
    @Test func aBlockWithAnyColourNeverTakesLuminanceFromTheSearch() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        for seed in 0..<60 as Range<UInt64> {
            var rgba = Self.greyImage(width: 6, height: 6, seed: seed)
            let t = Int(seed % 36)
            rgba[4 * t + Int(seed % 3)] ^= 1
            let blocks = try encoder.encode(rgba: rgba, width: 6, height: 6, level: .quality)
            #expect(Self.endpointModes(blocks)[0] != 0, "seed \(seed)")
        }
    }

    /// A grey tile with RDO on: luminance blocks are reuse sources (their layout is indexed, its
    /// values give back the decoder's ends), RDO's blocks still decode grey, and on a smooth one
    /// the simple luminance layout (3 × 3, range 12, 8-bit values) is taken somewhere.
    @Test func rdoReusesLuminanceBlocks() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        let decoder = ASTCDecoder(format: .astc6x6)
        let recent = encoder.recentBlocks(blockCount: 4, columns: 2)
        let colour = UnsafeMutablePointer<UInt8>.allocate(capacity: 16)
        let grid = UnsafeMutablePointer<UInt8>.allocate(capacity: 64)
        defer { colour.deallocate(); grid.deallocate() }
        let luminanceLayouts = encoder.luminanceScreening + encoder.simpleCandidates.filter(\.luminance)
        #expect(encoder.simpleCandidates.filter(\.luminance).count == 1)
        for c in luminanceLayouts {
            let values = encoder.colourValue + c.rgbLevel * 256
            colour[0] = encoder.colourQuant[c.rgbLevel * 256 + 200]
            colour[1] = encoder.colourQuant[c.rgbLevel * 256 + 30]
            grid.initialize(repeating: 0, count: 64)
            let block = encoder.pack(c, partitions: 1, seed: 0, opaque: true, gridValues: grid, colourValues: colour)
            let index = encoder.reusableLayout(of: block, in: recent)
            try #require(index >= 0, "mode \(c.mode)")
            let indexed = encoder.reusableLayout(index)
            #expect(indexed.luminance && indexed.mode == c.mode && indexed.rgbLevel == c.rgbLevel)
            encoder.setEnds(indexed, colour: colour)
            let l0 = Float(values[Int(colour[0])]), l1 = Float(values[Int(colour[1])])
            #expect(
                encoder.decodedEnds[0] == SIMD4(l0, l0, l0, 255) && encoder.decodedEnds[1] == SIMD4(l1, l1, l1, 255))
            // All weights 0: every texel decodes as the first end.
            let bytes =
                (0..<8).map { UInt8(truncatingIfNeeded: block.lo >> UInt64(8 * $0)) }
                + (0..<8).map { UInt8(truncatingIfNeeded: block.hi >> UInt64(8 * $0)) }
            let decoded = try decoder.decode(bytes, width: 6, height: 6)
            #expect(decoded[0] == UInt8(l0) && decoded[1] == UInt8(l0) && decoded[2] == UInt8(l0))
        }

        let size = 96
        var smooth: [UInt8] = []
        for amplitude in [160, 24] as [UInt64] {
            let rgba = Self.greyImage(width: size, height: size, seed: 5, amplitude: amplitude)
            let blocks = try encoder.encode(rgba: rgba, width: size, height: size, rdo: .standard)
            let decoded = try decoder.decode(blocks, width: size, height: size)
            for t in 0..<size * size {
                #expect(decoded[4 * t] == decoded[4 * t + 1] && decoded[4 * t] == decoded[4 * t + 2])
            }
            #expect(Self.endpointModes(blocks).contains(0), "amplitude \(amplitude)")
            smooth = blocks
        }
        let simpleModes = Set(encoder.simpleCandidates.filter(\.luminance).map(\.mode))
        let simpleTaken = Self.lowWords(smooth).filter { lo in
            lo >> 11 & 3 == 0 && lo >> 13 & 0xF == 0 && simpleModes.contains(Int(lo & 0x7FF))
        }
        #expect(!simpleTaken.isEmpty)
    }
}
