import Testing
@testable import TilePackEncoders
import TilePackCodec
import TilePackCore
import TilePackTestSupport

/// The build's GPU codecs write KTX2 files whose level is exactly the base encoder's output:
/// the blocks an archive held before KTX2, byte for byte (checks/test_ktx2_check.py compares
/// main's and this build's archives of the sample regions).
@Suite struct KTX2TileCodecTests {
    /// 256² RGBA: a gradient with a flat quarter (so zlib sometimes wins) and some noise.
    static func tile(seed: UInt64) -> [UInt8] {
        var random = SplitMix64(seed: seed)
        var out = [UInt8](repeating: 255, count: 256 * 256 * 4)
        for y in 0..<256 {
            for x in 0..<256 where y >= 64 {
                let i = (y * 256 + x) * 4
                out[i] = UInt8(x)
                out[i + 1] = UInt8(y)
                out[i + 2] = UInt8(truncatingIfNeeded: (x + y) / 2 + Int(random.next() % 8))
            }
        }
        return out
    }

    @Test(arguments: [TileCodecChoice.astc4x4, .astc6x6, .astc8x8, .pvrtc4, .pvrtc2])
    func levelIsTheBaseEncodersOutput(choice: TileCodecChoice) throws {
        let codec = choice.codec(level: .fast)
        let rgba = Self.tile(seed: 7)
        let stored = try codec.encode(rgba: rgba, width: 256, height: 256)
        let format = try #require(choice.ktx2Format)
        let base: any TileCodec =
            switch choice {
            case .pvrtc4: PVRTCCodec(format: .pvrtc4, level: .fast)
            case .pvrtc2: PVRTCCodec(format: .pvrtc2, level: .fast)
            default: ASTCCodec(format: choice.astcFormat!, level: .fast)
            }
        let raw = try base.encode(rgba: rgba, width: 256, height: 256)
        let texture = try stored.withUnsafeBytes {
            try KTX2Texture(parsing: $0, format: format, width: 256, height: 256)
        }
        var level = [UInt8](repeating: 0, count: texture.levelByteCount)
        let inflater = try Zlib.Inflater()
        try stored.withUnsafeBytes { s in
            try level.withUnsafeMutableBytes { try texture.unpackLevel(of: s, into: $0, inflater: inflater) }
        }
        #expect(level == raw)
        #expect(Array(stored[0..<12]) == KTX2Header.identifier)
        #expect(try codec.decode(stored, width: 256, height: 256) == (try base.decode(raw, width: 256, height: 256)))
        // The same pixels give the same bytes: nothing in a tile changes between runs or releases.
        #expect(try codec.encode(rgba: rgba, width: 256, height: 256) == stored)
    }

    /// `fast` builds deflate at level 4, `quality` ones at 6 (``PVRTCEncoder/Level/ktx2ZlibLevel``),
    /// whatever the GPU format.
    @Test(arguments: [TileCodecChoice.astc6x6, .pvrtc4])
    func zlibLevelFollowsTheEncoderLevel(choice: TileCodecChoice) throws {
        // A 64² crop of the textured part: `quality` at -Onone takes seconds on a whole tile.
        let whole = Self.tile(seed: 11)
        var rgba: [UInt8] = []
        for y in 64..<128 { rgba += whole[(y * 1024)..<(y * 1024 + 256)] }
        for (level, zlib) in [(PVRTCEncoder.Level.fast, Int32(4)), (.quality, 6)] {
            #expect(level.ktx2ZlibLevel == zlib)
            let stored = try choice.codec(level: level).encode(rgba: rgba, width: 64, height: 64)
            func deflated(at zlib: Int32) throws -> [UInt8] {
                switch choice {
                case .pvrtc4:
                    try KTX2TileCodec(PVRTCCodec(format: .pvrtc4, level: level), level: zlib)
                        .encode(rgba: rgba, width: 64, height: 64)
                default:
                    try KTX2TileCodec(ASTCCodec(format: .astc6x6, level: level), level: zlib)
                        .encode(rgba: rgba, width: 64, height: 64)
                }
            }
            #expect(stored == (try deflated(at: zlib)), "\(choice) \(level)")
            // The crop is one whose blocks deflate differently at the two levels, so the
            // comparison above tells them apart.
            #expect(stored != (try deflated(at: zlib == 4 ? 6 : 4)), "\(choice) \(level)")
        }
    }
}
