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

@Suite struct TileCodecChoiceTests {
    static let flatTile = [UInt8]((0..<(256 * 256)).flatMap { _ in [90, 120, 60, 255] as [UInt8] })

    @Test func deflatesWhenSmallerAndDecodesRawOrDeflated() throws {
        let codec = TileCodecChoice.pvrtc4.codec(level: .fast)
        let plain = PVRTCCodec(format: .pvrtc4, level: .fast)
        // Flat colour: every word repeats, so the payload is a (much) shorter zlib stream.
        let flat = try codec.encode(rgba: Self.flatTile, width: 256, height: 256)
        #expect(flat.count < 1_000 && flat.prefix(1) == [0x78])
        #expect(try codec.decode(flat, width: 256, height: 256) == plain.decode(try plain.encode(rgba: Self.flatTile, width: 256, height: 256), width: 256, height: 256))
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
        #expect(throws: CodecError.self) { try codec.decode(Array(flat.prefix(flat.count / 2)), width: 256, height: 256) }
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
        #expect(TileCodecChoice.pvrtc4.payloadCompression == "zlib-when-smaller")
    }
}
