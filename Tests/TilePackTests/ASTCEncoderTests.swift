import Testing
@testable import TilePackCodec
import TilePackCore
@testable import TilePackEncoders

@Suite struct ASTCEncoderTests {
    static func gradient(_ w: Int, _ h: Int, alpha: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        for y in 0..<h { for x in 0..<w { out += [UInt8(x * 255 / (w - 1)), UInt8(y * 255 / (h - 1)), UInt8((x + y) * 127 / (w + h)), alpha ? UInt8(255 - x * 200 / w) : 255] } }
        return out
    }

    static func noise(_ w: Int, _ h: Int) -> [UInt8] {
        var random = SplitMix64(seed: 42)
        return (0..<(w * h)).flatMap { _ in
            let v = random.next()
            return [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v >> 16), 255]
        }
    }

    /// The layout ranking is a strict order (score, then block mode), so it cannot depend on
    /// the order layouts were collected in. It once came from iterating a Dictionary, which
    /// Swift seeds per process: equal scores then came out in a different order in each run
    /// and so did the blocks `fast` and the two-partition search chose.
    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func layoutRankingIsAStrictOrder(format: ASTCFormat) {
        let modes = ASTCBlockModes.table(for: format)
        for partitions in 1...2 {
            let ranked = ASTCEncoder.rankCandidates(format: format, modes: modes, partitions: partitions)
            #expect(ranked.list.count > 1)
            for (a, b) in zip(ranked.list, ranked.list.dropFirst()) {
                let sa = ASTCEncoder.rankScore(a), sb = ASTCEncoder.rankScore(b)
                #expect(sa > sb || (sa == sb && a.mode < b.mode), "\(format.rawValue) p\(partitions): mode \(a.mode) before \(b.mode)")
            }
        }
    }

    /// The same pixels give the same blocks in every process: archives are compared tile for
    /// tile (resume, shards, merge), so the encoder must not depend on anything seeded per
    /// process (see `layoutRankingIsAStrictOrder`). The digests pin today's encoder output;
    /// an intended encoder change updates them.
    @Test(arguments: [(ASTCFormat.astc6x6, ASTCEncoder.Level.quality, "260930721be608e9f75959531eced2ce5716fbec5f48f30fd96d745b8b179374"), (.astc6x6, .fast, "d6e58542885d063a1b4fe5e8b74cd6941680874d04eae7df3c6da0c2e0a9ab76"), (.astc4x4, .quality, "197ec6ad8c8866a29838d194d1a08bbf92cd96b1a90814f6c0a9f556492443ce")])
    func encodesTheSameBlocksInEveryProcess(format: ASTCFormat, level: ASTCEncoder.Level, digest: String) throws {
        let (w, h) = (48, 36)
        var image = Self.gradient(w, h, alpha: true)
        let noise = Self.noise(w, h)
        for i in stride(from: 0, to: image.count, by: 4) where (i / 4) % 7 == 0 { image[i] = noise[i] }
        let blocks = try ASTCEncoder(format: format).encode(rgba: image, width: w, height: h, level: level)
        #expect(sha256Hex(blocks) == digest, "\(format.rawValue) \(level.rawValue): \(sha256Hex(blocks))")
    }

    /// PSNR floors at `quality` (fast: 3 dB lower), about 1 dB under what was measured. The
    /// gradient runs R along x and G along y, which one partition and one weight plane can
    /// only fit along one axis: the floors are modest on purpose. `quality` stops at `fast`'s
    /// block under astcenc's `fastest` dB limit, which at 8 × 8 (28.9 dB of summed channel
    /// error) accepts most gradient blocks: its gradient floor is 1 dB under the 28.8 dB measured.
    @Test(arguments: [(ASTCFormat.astc4x4, 35.5, 33.5, 14.0), (.astc6x6, 31.5, 29.5, 12.5), (.astc8x8, 27.8, 27.3, 11.5)])
    func roundTripQuality(format: ASTCFormat, gradientFloor: Double, alphaFloor: Double, noiseFloor: Double) throws {
        let encoder = try ASTCEncoder(format: format)
        let decoder = ASTCDecoder(format: format)
        let (w, h) = (37, 29) // not a multiple of any footprint
        for level in ASTCEncoder.Level.allCases {
            for (image, floor) in [(Self.gradient(w, h), gradientFloor), (Self.gradient(w, h, alpha: true), alphaFloor), (Self.noise(w, h), noiseFloor)] {
                let blocks = try encoder.encode(rgba: image, width: w, height: h, level: level)
                #expect(blocks.count == format.byteCount(width: w, height: h))
                let decoded = try decoder.decode(blocks, width: w, height: h)
                let q = ImageQuality.measure(reference: image, decoded: decoded, width: w, height: h)
                #expect(q.rgb >= floor - (level == .fast ? 3 : 0), "\(format.rawValue) \(level.rawValue): \(q)")
                // No block is an error block.
                for i in stride(from: 0, to: blocks.count, by: 16) {
                    let lo = blocks[i..<i + 8].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    let hi = blocks[i + 8..<i + 16].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                    let texels = UnsafeMutablePointer<UInt32>.allocate(capacity: 144)
                    defer { texels.deallocate() }
                    #expect(decoder.decodeBlock(ASTCBits(lo: lo, hi: hi), into: texels))
                }
            }
        }
    }

    /// `quality` scores `fast`'s layout among its candidates and adds refits, weight steps and
    /// two partitions, so over a whole image it must not lose to `fast`.
    @Test(arguments: ASTCEncoder.supportedFormats)
    func qualityBeatsFast(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        let decoder = ASTCDecoder(format: format)
        let (w, h) = (40, 40)
        for image in [Self.gradient(w, h), Self.noise(w, h), Self.gradient(w, h, alpha: true)] {
            var psnr: [Double] = []
            for level in [ASTCEncoder.Level.fast, .quality] {
                let decoded = try decoder.decode(try encoder.encode(rgba: image, width: w, height: h, level: level), width: w, height: h)
                psnr.append(ImageQuality.measure(reference: image, decoded: decoded, width: w, height: h).rgb)
            }
            #expect(psnr[1] >= psnr[0], "\(format.rawValue): fast \(psnr[0]) dB, quality \(psnr[1]) dB")
        }
    }

    @Test func flatImageIsExact() throws {
        let image = [UInt8](repeating: 77, count: 12 * 12 * 4)
        let blocks = try ASTCEncoder(format: .astc6x6).encode(rgba: image, width: 12, height: 12, level: .fast)
        #expect(try ASTCDecoder(format: .astc6x6).decode(blocks, width: 12, height: 12) == image)
    }

    @Test func refusesWhatItCannotEncode() throws {
        #expect(throws: CodecError.self) { try ASTCEncoder(format: .astc5x5) }
        #expect(throws: CodecError.self) { try ASTCEncoder(format: .astc4x4).encode(rgba: [1, 2, 3], width: 4, height: 4) }
    }
}
