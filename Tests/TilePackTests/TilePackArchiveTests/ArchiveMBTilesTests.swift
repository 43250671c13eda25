import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackArchive
import TilePackTestSupport

@Suite(.tags(.concurrent)) struct ArchiveMBTilesTests {
    static func metadata() -> MBTilesMetadata { ArchiveFixture.metadata() }

    @Test func roundTripDeduplicatesAndStoresTMSRows() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("r.mbtiles")
        var random = TestRandom(seed: 42)
        let shared = random.bytes(300), other = random.bytes(500)
        let a = TileID(z: 2, x: 1, y: 0)!, b = TileID(z: 2, x: 2, y: 3)!, c = TileID(z: 1, x: 0, y: 1)!
        do {
            let writer = try MBTilesWriter(path: path, metadata: Self.metadata())
            try writer.write(shared, for: a)
            try writer.write(shared, for: b)
            try writer.write(other, for: c)
            #expect(writer.statistics.distinctImages == 2)
            #expect(!fileExists(path))  // nothing under the target name before finish
            try writer.finish()
        }
        #expect(dir.listing() == ["r.mbtiles"])  // temp, -wal and -shm all gone

        let reader = try MBTilesReader(path: path)
        #expect(try reader.tile(a) == shared)
        #expect(try reader.tile(b) == shared)
        #expect(try reader.tile(c) == other)
        #expect(try reader.tile(TileID(z: 2, x: 0, y: 0)!) == nil)
        #expect(try reader.tileCount == 3)
        #expect(try reader.tileIDs(zoom: 2) == [a, b])
        #expect(reader.zoomRange == 1...2)
        for key in [
            "name", "format", "bounds", "center", "minzoom", "maxzoom", "type", "version",
            "description", "attribution", "tilepack:codec", "tilepack:codec_level",
            "tilepack:payload_compression", "tilepack:tile_size", "tilepack:source_file",
            "tilepack:source_sha256", "tilepack:build_options", "tilepack:elevation",
            "tilepack:format_version", "tilepack:note", "tilepack:version",
        ] {
            #expect(reader.metadata[key] != nil, "missing metadata \(key)")
        }
        #expect(reader.metadata["type"] == "baselayer")
        #expect(reader.metadata["tilepack:version"] == TilePackVersion.current)
        #expect(reader.metadata["tilepack:elevation"] == "false")
        // Default bounds: the extent of the finest zoom's tiles (x 1…2, y 0…3 at z2).
        let bounds = try #require(reader.bounds)
        #expect(bounds.west == -90 && bounds.east == 90)
        #expect(
            abs(bounds.north - WebMercator.maxLatitude) < 1e-9 && abs(bounds.south + WebMercator.maxLatitude) < 1e-9)

        // Raw SQL, as any MBTiles reader sees it.
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        func scalar(_ sql: String) throws -> String? {
            let s = try db.prepare(sql)
            return try s.step() ? s.string(at: 0) : nil
        }
        #expect(try scalar("SELECT count(*) FROM images") == "2")
        #expect(try scalar("SELECT count(*) FROM map") == "3")
        #expect(try scalar("PRAGMA integrity_check") == "ok")
        #expect(try scalar("PRAGMA application_id") == String(0x4d504258))
        #expect(try scalar("PRAGMA journal_mode") == "delete")
        // XYZ (2, 1, 0) is TMS row 3; (2, 2, 3) is TMS row 0.
        #expect(
            try scalar(
                """
                SELECT group_concat(tile_column || '/' || tile_row, ' ') FROM (SELECT * FROM tiles WHERE \
                zoom_level = 2 ORDER BY tile_column)
                """
            ) == "1/3 2/0")
        #expect(try scalar("SELECT tile_id FROM map WHERE zoom_level = 1") == MBTilesWriter.contentKey(other))
        try reader.verifyIntegrity()
    }

    @Test func rewritingATileKeepsTheLastAndSweepsTheOrphan() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("r.mbtiles")
        let id = TileID(z: 0, x: 0, y: 0)!
        let writer = try MBTilesWriter(path: path, metadata: Self.metadata())
        try writer.write([1, 2, 3], for: id)
        try writer.write([4, 5], for: id)
        try writer.finish()
        let reader = try MBTilesReader(path: path)
        #expect(try reader.tile(id) == [4, 5])
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        let s = try db.prepare("SELECT count(*) FROM images")
        #expect(try s.step() && s.int(at: 0) == 1)
    }

    @Test func elevationRoundTripIsBitExactIncludingNaN() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("e.mbtiles")
        var random = TestRandom(seed: 7)
        var values = [Float](repeating: 0, count: 256 * 256)
        for y in 0..<256 {
            for x in 0..<256 {
                values[y * 256 + x] =
                    1200 + Float(x) * 0.37 - Float(y) * 1.1
                    + Float(random.next() % 1000) / 1000
            }
        }
        values[0] = .nan
        values[5] = Float(bitPattern: 0x7fc0_1234)  // NaN with a payload
        values[77] = -0.0
        values[78] = .infinity
        values[79] = -.greatestFiniteMagnitude
        let tile = ElevationTile(width: 256, height: 256, values: values)
        let small = ElevationTile(width: 3, height: 1, values: [.nan, 1, 2])
        let id = TileID(z: 9, x: 270, y: 180)!
        // The lossless Float32 encodings (q-planar-deflate is lossy to its step: QuantizedElevationTests).
        for encoding in [ElevationEncoding.float32Deflate, .float32PredictorDeflate, nil] {
            var options = MBTilesWriter.Options()
            options.elevationEncoding = encoding
            let writer = try MBTilesWriter(path: path, metadata: Self.metadata(), options: options)
            try writer.write([0], for: id)
            try writer.writeElevation(tile, for: id)
            try writer.writeElevation(small, for: TileID(z: 0, x: 0, y: 0)!)
            try writer.finish()
            let reader = try MBTilesReader(path: path)
            let back = try #require(try reader.elevation(id))
            #expect(back == tile)
            #expect(back.values[5].bitPattern == 0x7fc0_1234)
            #expect(back.values[77].sign == .minus)
            #expect(try reader.elevation(TileID(z: 0, x: 0, y: 0)!) == small)
            #expect(try reader.elevation(TileID(z: 9, x: 0, y: 0)!) == nil)
            #expect(reader.metadata["tilepack:elevation"] == "true")
            #expect(reader.metadata["tilepack:elevation_encoding"] == encoding?.rawValue ?? "per-tile")
        }
    }

    @Test func damagedElevationBlobIsATypedError() throws {
        let blob = try ElevationEncoding.float32Deflate.encode(
            ElevationTile(width: 4, height: 4, values: .init(repeating: 1, count: 16)))
        #expect(throws: ArchiveError.self) {
            try ElevationEncoding.float32Deflate.decode(blob, width: 5, height: 4, path: "x")
        }
        #expect(throws: ArchiveError.self) {
            try ElevationEncoding.float32Deflate.decode(blob, width: 100_000, height: 100_000, path: "x")
        }
        #expect(throws: ArchiveError.self) {
            try ElevationEncoding.float32Deflate.decode(Array(blob.prefix(5)), width: 4, height: 4, path: "x")
        }
    }

    @Test func droppedWriterLeavesNoFileAndKeepsAnExistingArchive() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("keep.mbtiles")
        let id = TileID(z: 0, x: 0, y: 0)!
        // No archive before: a dropped writer leaves nothing at all.
        do {
            let writer = try MBTilesWriter(path: path, metadata: Self.metadata())
            try writer.write([9, 9, 9], for: id)
            #expect(fileExists(writer.temporaryPath))
        }
        #expect(dir.listing().isEmpty)

        // An archive before: dropped and failed writers leave it byte-for-byte as it was.
        let first = try MBTilesWriter(path: path, metadata: Self.metadata())
        try first.write([1, 1, 1], for: id)
        try first.finish()
        let before = readFile(path)
        do {
            let writer = try MBTilesWriter(path: path, metadata: Self.metadata())
            for z in 0..<5 { try writer.write([UInt8(z)], for: TileID(z: z, x: 0, y: 0)!) }
        }
        #expect(dir.listing() == ["keep.mbtiles"])
        #expect(readFile(path) == before)

        // A writer whose finish fails (the target name is a directory now) cleans up as well.
        let blocked = dir.file("blocked.mbtiles")
        #expect(mkdir(blocked, 0o755) == 0)
        defer { rmdir(blocked) }
        let failing = try MBTilesWriter(path: blocked, metadata: Self.metadata())
        try failing.write([1], for: id)
        #expect {
            try failing.finish()
        } throws: { error in
            guard let e = error as? ArchiveError else { return false }
            return e.code == .writeFailed && e.description.contains("blocked.mbtiles")
        }
        #expect(dir.listing() == ["blocked.mbtiles", "keep.mbtiles"])
        #expect(throws: ArchiveError.self) { try failing.write([2], for: id) }

        let reader = try MBTilesReader(path: path)
        #expect(try reader.tile(id) == [1, 1, 1])
        try reader.verifyIntegrity()
    }

    @Test func damagedFilesAreTypedErrorsNamingTheFile() throws {
        let dir = TemporaryDirectory()
        let good = dir.file("good.mbtiles")
        let writer = try MBTilesWriter(path: good, metadata: Self.metadata())
        var random = TestRandom(seed: 3)
        for x in 0..<64 { try writer.write(random.bytes(2_000), for: TileID(z: 6, x: x, y: 5)!) }
        try writer.finish()
        let bytes = readFile(good)

        func expectArchiveError(
            _ path: String, _ problem: ArchiveError.Code, _ body: (MBTilesReader) throws -> Void = { _ in }
        ) {
            do {
                let reader = try MBTilesReader(path: path)
                try body(reader)
                Issue.record("\(path) opened and read without error")
            } catch let error as ArchiveError {
                #expect(error.code == problem, "\(error)")
                #expect(error.description.hasPrefix(path + ": "))
                #expect(!error.description.contains("\n"))
            } catch {
                Issue.record("untyped error \(error)")
            }
        }

        let truncated = dir.file("truncated.mbtiles")
        writeFile(truncated, Array(bytes.prefix(bytes.count / 2)))
        expectArchiveError(truncated, .damaged)

        let noise = dir.file("noise.mbtiles")
        writeFile(noise, random.bytes(8_192))
        expectArchiveError(noise, .notSQLite)

        let empty = dir.file("empty.mbtiles")
        writeFile(empty, [])
        expectArchiveError(empty, .notSQLite)

        expectArchiveError(dir.file("missing.mbtiles"), .notFound)

        let plain = dir.file("plain.sqlite")
        do {
            let db = try SQLiteConnection(path: plain, mode: .readWriteCreate)
            try db.execute("CREATE TABLE notes (t TEXT); PRAGMA journal_mode = DELETE")
        }
        expectArchiveError(plain, .notMBTiles)

        let foreign = dir.file("foreign.sqlite")
        do {
            let db = try SQLiteConnection(path: foreign, mode: .readWriteCreate)
            try db.execute(
                """
                PRAGMA application_id = 1234;
                CREATE TABLE metadata (name TEXT, value TEXT);
                CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);
                PRAGMA journal_mode = DELETE
                """)
        }
        expectArchiveError(foreign, .notMBTiles)

        // Damage inside the file, past the header: pages of tile data overwritten with noise.
        let scribbled = dir.file("scribbled.mbtiles")
        var damaged = bytes
        for i in 4_096..<damaged.count where i % 4_096 < 64 { damaged[i] = UInt8(truncatingIfNeeded: i &* 31) }
        writeFile(scribbled, damaged)
        expectArchiveError(scribbled, .damaged) { reader in
            for x in 0..<64 { _ = try reader.tile(TileID(z: 6, x: x, y: 5)!) }
            try reader.verifyIntegrity()
        }
    }

    @Test func readsAPlainMBTilesTableFromAnotherWriter() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("other.mbtiles")
        do {
            let db = try SQLiteConnection(path: path, mode: .readWriteCreate)
            try db.execute(
                """
                CREATE TABLE metadata (name TEXT, value TEXT);
                CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);
                INSERT INTO tiles VALUES (3, 2, 7, x'0102');
                INSERT INTO metadata VALUES ('name', 'other');
                PRAGMA journal_mode = DELETE
                """)
        }
        let reader = try MBTilesReader(path: path)
        #expect(try reader.tile(TileID(z: 3, x: 2, y: 0)!) == [1, 2])
        #expect(reader.zoomRange == 3...3)
        #expect(reader.bounds == nil)
        #expect(!reader.hasElevation)
        #expect(try reader.elevation(TileID(z: 3, x: 2, y: 0)!) == nil)
    }

    @Test func oneReaderServesManyThreads() async throws {
        let dir = TemporaryDirectory()
        let path = dir.file("mt.mbtiles")
        let writer = try MBTilesWriter(path: path, metadata: Self.metadata())
        for x in 0..<32 { try writer.write([UInt8(x), 1], for: TileID(z: 5, x: x, y: 1)!) }
        try writer.finish()
        let reader = try MBTilesReader(path: path)
        let ok = try await withThrowingTaskGroup(of: Bool.self) { group in
            for t in 0..<8 {
                group.addTask {
                    for round in 0..<50 {
                        let x = (t * 7 + round) % 32
                        guard try reader.tile(TileID(z: 5, x: x, y: 1)!) == [UInt8(x), 1] else { return false }
                    }
                    return true
                }
            }
            return try await group.reduce(true) { $0 && $1 }
        }
        #expect(ok)
    }
}
