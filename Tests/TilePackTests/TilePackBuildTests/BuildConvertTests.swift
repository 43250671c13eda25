import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackBuild
import TilePackTestSupport

/// `tilepack convert --to png` (``TileFormatConversion``): every tile decoded and written as PNG,
/// metadata and elevation kept, the output written atomically and never over what exists.
@Suite(.tags(.concurrent)) struct BuildConvertTests {
    static let tiles = [TileID(z: 3, x: 4, y: 2)!, TileID(z: 3, x: 5, y: 2)!, TileID(z: 2, x: 2, y: 1)!]

    static func rgba(seed: Int) -> [UInt8] {
        (0..<(256 * 256)).flatMap { i -> [UInt8] in
            [UInt8(truncatingIfNeeded: i % 256 + seed), UInt8(truncatingIfNeeded: i / 256), UInt8(seed * 40), 255]
        }
    }

    /// A GPU archive of ``tiles`` with one elevation row; `old` stores the pre-KTX2 form.
    static func gpuArchive(_ choice: TileCodecChoice, at path: String, old: Bool = false) throws -> [TileID: [UInt8]] {
        let metadata = MBTilesMetadata(
            name: "conv", format: old ? choice.rawValue : choice.mbtilesFormat, codec: choice.rawValue,
            attribution: "© test", codecLevel: "fast", payloadCompression: old ? "zlib-when-smaller" : "ktx2")
        let writer = try MBTilesWriter(path: path, metadata: metadata)
        var pixels: [TileID: [UInt8]] = [:]
        let codec = choice.codec(level: .fast)
        for (i, id) in tiles.enumerated() {
            var stored = try codec.encode(rgba: rgba(seed: i), width: 256, height: 256)
            if old {
                stored = try GPUTileDecoder(ASTCTileDecoder(format: .astc6x6)).payload(stored, width: 256, height: 256)
            }
            try writer.write(stored, for: id)
            pixels[id] = try choice.decoder().decode(stored, width: 256, height: 256)
        }
        try writer.writeElevation(
            ElevationTile(width: 4, height: 4, values: (0..<16).map { Float($0) * 10.5 }), for: tiles[0])
        try writer.finish()
        return pixels
    }

    @Test(arguments: [false, true])
    func convertsEveryTileToPNGKeepingMetadataAndElevation(old: Bool) throws {
        let dir = TemporaryDirectory()
        let input = dir.file("in.mbtiles"), output = dir.file("out.mbtiles")
        let pixels = try Self.gpuArchive(.astc6x6, at: input, old: old)
        let result = try TileFormatConversion(inputPath: input, outputPath: output, workers: 2).run()
        #expect(result.from == "astc6x6")
        #expect(result.archive.tiles == Self.tiles.count)
        #expect(dir.listing().sorted() == ["in.mbtiles", "out.mbtiles"])  // no temporary left
        let reader = try MBTilesReader(path: output), source = try MBTilesReader(path: input)
        #expect(reader.metadata["format"] == "png")
        #expect(reader.metadata["tilepack:codec"] == "png")
        #expect(reader.metadata["tilepack:payload_compression"] == "none")
        #expect(reader.metadata["tilepack:codec_level"] == nil)
        #expect(reader.metadata["name"] == "conv" && reader.metadata["attribution"] == "© test")
        #expect(reader.metadata["tilepack:elevation"] == "true")
        for id in Self.tiles {
            let png = try #require(try reader.tile(id))
            #expect(Array(png.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
            #expect(try PNGTileDecoder().decode(png, width: 256, height: 256) == pixels[id])
        }
        #expect(try reader.storedElevation(Self.tiles[0]) == source.storedElevation(Self.tiles[0]))
        #expect(try reader.decodeAllTiles() == (tiles: 3, elevationRows: 1))
    }

    @Test func refusesAnExistingOutputUnlessForcedAndNeverTheInput() throws {
        let dir = TemporaryDirectory()
        let input = dir.file("in.mbtiles"), output = dir.file("out.mbtiles")
        _ = try Self.gpuArchive(.pvrtc4, at: input)
        let existing = try dir.write("out.mbtiles", [1, 2, 3])
        do {
            _ = try TileFormatConversion(inputPath: input, outputPath: output).run()
            Issue.record("converted over an existing file")
        } catch let error as ConversionError {
            #expect(error.code == .outputExists && error.subject == output && error.category == .invalidArgument)
        }
        #expect(readFile(output) == [1, 2, 3])
        _ = try TileFormatConversion(inputPath: input, outputPath: existing, force: true).run()
        #expect(try MBTilesReader(path: output).metadata["format"] == "png")
        #expect(throws: ConversionError.self) {
            try TileFormatConversion(inputPath: input, outputPath: dir.path + "/./in.mbtiles", force: true).run()
        }
    }

    @Test func refusesTilesItCannotDecodeNamingArchiveAndTile() throws {
        let dir = TemporaryDirectory()
        let input = dir.file("in.mbtiles")
        let writer = try MBTilesWriter(
            path: input, metadata: MBTilesMetadata(name: "bad", format: "image/ktx2", codec: "astc6x6"))
        try writer.write([0xAB, 0x4B, 0x54, 0x58, 1, 2, 3], for: Self.tiles[0])
        try writer.finish()
        do {
            _ = try TileFormatConversion(inputPath: input, outputPath: dir.file("out.mbtiles")).run()
            Issue.record("converted a damaged tile")
        } catch let error as InputFileError {
            #expect(error.subject == input && error.detail.contains("tile \(Self.tiles[0])"))
        }
        #expect(dir.listing() == ["in.mbtiles"])
        let jpeg = dir.file("jpeg.mbtiles")
        let other = try MBTilesWriter(path: jpeg, metadata: MBTilesMetadata(name: "jpg", format: "jpg"))
        try other.write([0xFF, 0xD8], for: Self.tiles[0])
        try other.finish()
        #expect(throws: InputFileError.self) {
            try TileFormatConversion(inputPath: jpeg, outputPath: dir.file("out.mbtiles")).run()
        }
    }
}
