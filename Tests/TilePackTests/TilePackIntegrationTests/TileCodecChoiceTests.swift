import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
@testable import TilePackStore
@testable import TilePackSamples
import TilePackTestSupport

@Suite struct TileCodecChoiceTests {
    static let flatTile = [UInt8]((0..<(256 * 256)).flatMap { _ in [90, 120, 60, 255] as [UInt8] })

    @Test func deflatesWhenSmallerAndDecodesRawOrDeflated() throws {
        let codec = TileCodecChoice.pvrtc4.codec(level: .fast)
        let plain = PVRTCCodec(format: .pvrtc4, level: .fast)
        // Flat colour: every word repeats, so the payload is a KTX2 file around a (much) shorter zlib stream.
        let flat = try codec.encode(rgba: Self.flatTile, width: 256, height: 256)
        #expect(flat.count < 1_200 && Array(flat.prefix(12)) == KTX2Header.identifier)
        #expect(flat[172] == 0x78)  // the level, right after the key/value data
        #expect(
            try codec.decode(flat, width: 256, height: 256)
                == plain.decode(try plain.encode(rgba: Self.flatTile, width: 256, height: 256), width: 256, height: 256)
        )
        // Random words do not compress: a payload of exactly 32 KiB is raw words.
        var random = TestRandom(seed: 9)
        let words = random.bytes(32_768)
        #expect(try Zlib.deflate(words).count > words.count)
        let decoded = try codec.decode(words, width: 256, height: 256)
        #expect(decoded == (try plain.decode(words, width: 256, height: 256)))
    }

    @Test func damagedPayloadsAreTypedErrors() throws {
        let codec = TileCodecChoice.pvrtc4.codec(level: .fast)
        let flat = try codec.encode(rgba: Self.flatTile, width: 256, height: 256)
        #expect(throws: CodecError.self) {
            try codec.decode(Array(flat.prefix(flat.count / 2)), width: 256, height: 256)
        }
        #expect(throws: CodecError.self) { try codec.decode([1, 2, 3], width: 256, height: 256) }
        let oversized = try Zlib.deflate([UInt8](repeating: 0, count: 40_000))
        #expect(throws: CodecError.self) { try codec.decode(oversized, width: 256, height: 256) }
        let short = try Zlib.deflate([UInt8](repeating: 0, count: 1_000))
        #expect(throws: CodecError.self) { try codec.decode(short, width: 256, height: 256) }
    }

    @Test func codecFromArchiveMetadata() {
        #expect(TileCodecChoice(metadata: ["tilepack:codec": "pvrtc2", "format": "pvrtc2"]) == .pvrtc2)
        #expect(TileCodecChoice(metadata: ["format": "png"]) == .png)  // an archive from another writer
        #expect(TileCodecChoice(metadata: ["format": "jpg"]) == nil)
        #expect(TileCodecChoice.png.payloadCompression == "none")
        #expect(TileCodecChoice.pvrtc4.payloadCompression == "ktx2")
        #expect(TileCodecChoice.pvrtc4.mbtilesFormat == "image/ktx2")
        #expect(TileCodecChoice.png.mbtilesFormat == "png")
    }

    /// ASTC 6×6 in the archive path: 43 × 43 blocks for a 256 tile, zlib when smaller, and the
    /// tile store's allocation-free unwrap + decode gives the same pixels as the codec.
    @Test func astcTilesThroughThePayloadPath() throws {
        #expect(TileCodecChoice(metadata: ["tilepack:codec": "astc6x6", "format": "astc6x6"]) == .astc6x6)
        #expect(TileCodecChoice.astc6x6.payloadCompression == "ktx2")
        var random = TestRandom(seed: 3)
        var tile = Self.flatTile
        for i in stride(from: 0, to: 256 * 64 * 4, by: 4) { tile[i] = random.bytes(1)[0] }  // a noisy top quarter
        for choice in [TileCodecChoice.astc4x4, .astc6x6, .astc8x8] {
            let codec = choice.codec(level: .fast)
            let stored = try codec.encode(rgba: tile, width: 256, height: 256)
            let payloadCodec = try TilePayloadCodec(codec: choice, tileSize: 256)
            let raw = try #require(payloadCodec.fixedPayloadByteCount)
            #expect(raw == choice.astcFormat!.byteCount(width: 256, height: 256))
            #expect(stored.count < raw)  // the flat three quarters deflate
            var payload = [UInt8](repeating: 0, count: raw),
                pixels = [UInt8](repeating: 0, count: payloadCodec.pixelByteCount)
            try stored.withUnsafeBytes { s in
                try payload.withUnsafeMutableBytes { try payloadCodec.unwrap(s, into: $0) }
            }
            try payload.withUnsafeBytes { p in
                try pixels.withUnsafeMutableBytes { try payloadCodec.decode(p, into: $0) }
            }
            #expect(pixels == (try choice.decoder().decode(stored, width: 256, height: 256)))
            let q = ImageQuality.measure(reference: tile, decoded: pixels, width: 256, height: 256)
            #expect(q.rgb > 20)
            #expect(throws: CodecError.self) {
                try choice.decoder().decode(Array(stored.prefix(10)), width: 256, height: 256)
            }
        }
        #expect(TileCodecChoice.astc6x6.astcFormat!.byteCount(width: 256, height: 256) == 29_584)
    }
}
