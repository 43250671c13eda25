import Testing
@testable import TilePackCore
@testable import TilePackCodec
@testable import TilePackArchive
import TilePackTestSupport

/// GPU archives before and after KTX2: an archive of old raw and zlib tiles and one of KTX2
/// tiles both decode whole; a KTX2 tile of another format is a damaged tile named by the
/// archive and the tile.
@Suite(.tags(.concurrent)) struct ArchiveKTX2Tests {
    static func metadata(format: String) -> MBTilesMetadata {
        MBTilesMetadata(
            name: "GPU region", format: format, codec: "astc6x6",
            payloadCompression: format == "image/ktx2" ? "ktx2" : "zlib-when-smaller", tileSize: 256)
    }

    static let a = TileID(z: 1, x: 0, y: 0)!, b = TileID(z: 1, x: 1, y: 0)!, c = TileID(z: 1, x: 0, y: 1)!

    /// ASTC 6×6 blocks at 256²: any 16 bytes decode (an invalid block decodes to the error colour).
    static func blocks(seed: UInt64) -> [UInt8] {
        var random = TestRandom(seed: seed)
        return random.bytes(ASTCFormat.astc6x6.byteCount(width: 256, height: 256))
    }

    static func write(_ tiles: [(TileID, [UInt8])], format: String, in dir: TemporaryDirectory) throws -> String {
        let path = dir.file(format == "image/ktx2" ? "ktx2.mbtiles" : "old.mbtiles")
        let writer = try MBTilesWriter(path: path, metadata: metadata(format: format))
        for (id, bytes) in tiles { try writer.write(bytes, for: id) }
        try writer.finish()
        return path
    }

    @Test func oldAndKTX2ArchivesDecodeAlike() throws {
        let dir = TemporaryDirectory()
        let raw = Self.blocks(seed: 1), flat = [UInt8](repeating: 0, count: raw.count)
        let old = try Self.write(
            [(Self.a, raw), (Self.b, try Zlib.deflate(flat, level: 6))], format: "astc6x6", in: dir)
        let format = KTX2Format(astc: .astc6x6)
        let new = try Self.write(
            [
                (Self.a, try KTX2Writer.texture(level: raw, format: format, width: 256, height: 256)),
                (Self.b, try KTX2Writer.texture(level: flat, format: format, width: 256, height: 256)),
            ], format: "image/ktx2", in: dir)
        let oldReader = try MBTilesReader(path: old), newReader = try MBTilesReader(path: new)
        #expect(oldReader.summary.codec == .astc6x6 && newReader.summary.codec == .astc6x6)
        #expect(try oldReader.decodeAllTiles().tiles == 2)
        #expect(try newReader.decodeAllTiles().tiles == 2)
        let decoder = TileCodecChoice.astc6x6.decoder()
        for id in [Self.a, Self.b] {
            let before = try decoder.decode(try #require(try oldReader.tile(id)), width: 256, height: 256)
            let after = try decoder.decode(try #require(try newReader.tile(id)), width: 256, height: 256)
            #expect(before == after)
        }
    }

    @Test func aKTX2TileOfAnotherFormatIsDamagedNamingArchiveAndTile() throws {
        let dir = TemporaryDirectory()
        let other = KTX2Format(astc: .astc4x4)
        let wrong = try KTX2Writer.texture(
            level: [UInt8](repeating: 0, count: other.levelByteCount(width: 256, height: 256)!), format: other,
            width: 256, height: 256)
        let path = try Self.write([(Self.c, wrong)], format: "image/ktx2", in: dir)
        do {
            _ = try MBTilesReader(path: path).decodeAllTiles()
            Issue.record("a 4×4 KTX2 tile decoded as 6×6")
        } catch let error as ArchiveError {
            #expect(error.code == .damaged)
            #expect(error.subject == path)
            #expect(error.detail.contains("tile \(Self.c)") && error.detail.contains("vkFormat is 157"))
            #expect(!error.description.contains("\n"))
        }
    }
}
