import Testing
@testable import TilePackCodec
@testable import TilePackEncoders

@Suite struct ASTCEncoderTests {
    static func gradient(_ w: Int, _ h: Int, alpha: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        for y in 0..<h { for x in 0..<w { out += [UInt8(x * 255 / (w - 1)), UInt8(y * 255 / (h - 1)), UInt8((x + y) * 127 / (w + h)), alpha ? UInt8(255 - x * 200 / w) : 255] } }
        return out
    }

    static func noise(_ w: Int, _ h: Int) -> [UInt8] {
        var random = ASTCFuzzRandom(state: 42)
        return (0..<(w * h)).flatMap { _ in
            let v = random.next()
            return [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v >> 16), 255]
        }
    }

    /// PSNR floors at `quality` (fast: 3 dB lower), about 1 dB under what was measured. The
    /// gradient runs R along x and G along y, which one partition and one weight plane can
    /// only fit along one axis: the floors are modest on purpose.
    @Test(arguments: [(ASTCFormat.astc4x4, 35.5, 33.5, 14.0), (.astc6x6, 31.5, 29.5, 12.5), (.astc8x8, 29.5, 27.3, 11.5)])
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
