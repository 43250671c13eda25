import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackCodec
@testable import TilePackArchive
import TilePackTestSupport

@Suite(.tags(.concurrent)) struct ArchivePMTilesTests {
    /// The spec's vectors (spec/v3/spec.md, ../shared/testdata/pmtiles/README.md).
    @Test func hilbertTileIDsMatchTheSpec() {
        let vectors: [(Int, Int, Int, UInt64)] = [
            (0, 0, 0, 0), (1, 0, 0, 1), (1, 0, 1, 2), (1, 1, 1, 3), (1, 1, 0, 4), (2, 0, 0, 5),
            (12, 3423, 1763, 19_078_479),
        ]
        for (z, x, y, id) in vectors {
            let tile = TileID(z: z, x: x, y: y)!
            #expect(tile.pmtilesID == id, "\(tile)")
            #expect(TileID(pmtilesID: id) == tile)
        }
        // Every tile of zooms 0…5 maps to the next id in turn and back.
        var expected: UInt64 = 0
        for z in 0...5 {
            let ids = (0..<(1 << z)).flatMap { x in (0..<(1 << z)).map { y in TileID(z: z, x: x, y: y)!.pmtilesID } }
            #expect(ids.sorted() == Array(expected..<expected + UInt64(ids.count)))
            for id in ids { #expect(TileID(pmtilesID: id)?.pmtilesID == id) }
            expected += UInt64(ids.count)
        }
        #expect(TileID(pmtilesID: TileID.pmtilesZoomBase(TileID.maxZoom + 1)) == nil)
        #expect(TileID(pmtilesID: .max) == nil)
    }

    @Test func headerRoundTrips() throws {
        var h = PMTilesHeader()
        h.rootOffset = 127; h.rootLength = 300; h.metadataOffset = 427; h.metadataLength = 1 << 40
        h.leafDirectoryOffset = 99; h.leafDirectoryLength = 5; h.tileDataOffset = .max; h.tileDataLength = 7
        h.addressedTiles = 85; h.tileEntries = 84; h.tileContents = 80; h.clustered = true
        h.tileType = PMTilesTileType.png.rawValue; h.minZoom = 1; h.maxZoom = 14
        h.minLonE7 = -1_800_000_000; h.minLatE7 = -850_511_287; h.maxLonE7 = 68_000_000; h.maxLatE7 = 458_000_000
        h.centerZoom = 9; h.centerLonE7 = 68_600_000; h.centerLatE7 = -1
        let bytes = h.bytes
        #expect(bytes.count == PMTilesHeader.length)
        #expect(try PMTilesHeader(bytes, path: "h") == h)
        #expect(throws: ArchiveError.self) { try PMTilesHeader(Array(bytes.prefix(100)), path: "h") }
        var v4 = bytes
        v4[7] = 4
        let error = #expect(throws: ArchiveError.self) { try PMTilesHeader(v4, path: "h") }
        #expect(error?.code == .unsupportedVersion)
    }

    @Test func directoryRoundTripsAndRefusesDamage() throws {
        let entries = [
            PMTilesEntry(tileID: 0, offset: 0, length: 10, runLength: 1),
            PMTilesEntry(tileID: 1, offset: 10, length: 20, runLength: 3),  // follows: stored as 0
            PMTilesEntry(tileID: 9, offset: 0, length: 10, runLength: 1),  // a duplicate, back at 0
            PMTilesEntry(tileID: 1_000_000, offset: 5_000_000_000, length: 1, runLength: 0),  // a leaf
        ]
        let dir = PMTilesDirectory(entries: entries)
        #expect(try PMTilesDirectory(parsing: dir.bytes, path: "d", what: "root") == dir)
        #expect(dir.find(3)?.tileID == 1)
        #expect(dir.find(4) == nil)  // after the run
        #expect(dir.find(2_000_000)?.isLeaf == true)
        // Ids that do not increase; a run into the next entry; bytes left over; a count too big.
        var bad = entries
        bad[2].tileID = 1
        #expect(throws: ArchiveError.self) {
            try PMTilesDirectory(parsing: PMTilesDirectory(entries: bad).bytes, path: "d", what: "root")
        }
        bad = entries
        bad[1].runLength = 9
        #expect(throws: ArchiveError.self) {
            try PMTilesDirectory(parsing: PMTilesDirectory(entries: bad).bytes, path: "d", what: "root")
        }
        #expect(throws: ArchiveError.self) { try PMTilesDirectory(parsing: dir.bytes + [0], path: "d", what: "root") }
        #expect(throws: ArchiveError.self) {
            try PMTilesDirectory(parsing: [0xff, 0xff, 0xff, 0x0f, 1], path: "d", what: "root")
        }
    }

    /// Every fixture: the valid ones read whole (counts as ../shared/testdata/pmtiles/README.md
    /// says), the invalid and empty ones refused in one line.
    /// A few hundred bytes whose runs address 3 × 2^32 − 3 tiles: lookups answer, but
    /// expanding them one by one (`convert`, `verify`) is refused before the first tile.
    @Test func runsAddressingBillionsOfTilesAreNotExpanded() throws {
        let dir = TemporaryDirectory()
        let runs = (0..<3).map {
            PMTilesEntry(tileID: UInt64($0) * UInt64(UInt32.max), offset: 0, length: 4, runLength: .max)
        }
        let root = PMTilesDirectory(entries: runs).bytes
        let tile: [UInt8] = [1, 2, 3, 4]
        var h = PMTilesHeader()
        h.internalCompression = PMTilesCompression.none.rawValue
        h.rootOffset = UInt64(PMTilesHeader.length); h.rootLength = UInt64(root.count)
        h.metadataOffset = h.rootOffset + h.rootLength; h.metadataLength = 0
        h.leafDirectoryOffset = h.metadataOffset; h.leafDirectoryLength = 0
        h.tileDataOffset = h.leafDirectoryOffset; h.tileDataLength = UInt64(tile.count)
        h.addressedTiles = 3 * UInt64(UInt32.max); h.tileEntries = 3; h.tileContents = 1
        h.clustered = true; h.minZoom = 0; h.maxZoom = 24
        let path = try dir.write("runs.pmtiles", h.bytes + root + tile)
        let reader = try PMTilesReader(path: path)
        #expect(try reader.tileBytes(TileID(z: 0, x: 0, y: 0)!) == tile)
        var handed = 0
        let error = #expect(throws: ArchiveError.self) { try reader.forEachTile { _, _ in handed += 1 } }
        #expect(handed == 0 && error?.detail.contains("more than the \(PMTilesReader.maxExpandedTiles)") == true)
    }

    @Test func fixturesReadOrAreRefused() throws {
        let valid: [(String, Int)] = [
            ("pmtiles-repo__stamen_toner_raster_CC-BY_ODbL_z3.pmtiles", 85),
            ("pmtiles-repo__usgs-mt-whitney-8-15-webp-512.pmtiles", 50),
            ("pmtiles-repo__test_fixture_1.pmtiles", 1), ("pmtiles-repo__test_fixture_2.pmtiles", 1),
            ("go-pmtiles__test_fixture_1.pmtiles", 1), ("go-pmtiles__unclustered.pmtiles", -1),
        ]
        for (name, count) in valid {
            let reader = try PMTilesReader(path: TestData.shared("pmtiles/" + name))
            var walked: [(TileID, [UInt8])] = []
            try reader.forEachTile { id, bytes in walked.append((id, bytes)) }
            for (id, bytes) in walked { #expect(try reader.tileBytes(id) == bytes) }
            let tiles = walked.count
            #expect(tiles == (count < 0 ? Int(reader.header.addressedTiles) : count), "\(name)")
            #expect(UInt64(tiles) == reader.header.addressedTiles)
            #expect(try reader.zoomStatistics().reduce(0) { $0 + $1.tiles } == tiles)
        }
        let stamen = try PMTilesReader(
            path: TestData.shared("pmtiles/pmtiles-repo__stamen_toner_raster_CC-BY_ODbL_z3.pmtiles"))
        #expect(stamen.summary.codec == .png)
        #expect(stamen.summary.zoomRange == 0...3)
        #expect(stamen.header.tileContents == 80)
        for name in [
            "pmtiles-repo__invalid.pmtiles", "pmtiles-repo__invalid_v4.pmtiles", "pmtiles-repo__empty.pmtiles",
        ] {
            let error = #expect(throws: ArchiveError.self) {
                try PMTilesReader(path: TestData.shared("pmtiles/" + name))
            }
            #expect(
                error.map { !$0.description.contains("\n") && $0.description.hasPrefix(TestData.shared("pmtiles/")) }
                    == true)
        }
    }

    /// Writes tiles z0…`maxZoom`, tile i's bytes chosen by `content(i)`, and returns the path.
    static func write(
        _ dir: TemporaryDirectory, _ name: String, maxZoom: Int, options: PMTilesWriter.Options = .init(),
        content: (Int) -> [UInt8]
    ) throws -> (path: String, stats: PMTilesWriter.Statistics, tiles: [TileID: [UInt8]]) {
        let ids = (0...maxZoom).flatMap { z in
            (0..<(1 << z)).flatMap { x in (0..<(1 << z)).map { y in TileID(z: z, x: x, y: y)! } }
        }.sorted { $0.pmtilesID < $1.pmtilesID }
        let path = dir.file(name)
        let writer = try PMTilesWriter(
            path: path, metadata: ["name": "t", "format": "png"], tileType: .png, options: options)
        var tiles: [TileID: [UInt8]] = [:]
        for (i, id) in ids.enumerated() {
            let bytes = content(i)
            try writer.write(bytes, for: id)
            tiles[id] = bytes
        }
        #expect(!FileManager.default.fileExists(atPath: path))
        try writer.finish()
        return (path, writer.statistics, tiles)
    }

    @Test func writerDeduplicatesAndRunLengthEncodes() throws {
        let dir = TemporaryDirectory()
        // 21 tiles (z0…2): 0–9 the same bytes (one run), 10 other, 11–20 the first again.
        let same: [UInt8] = [1, 2, 3], other: [UInt8] = [9]
        let (path, stats, tiles) = try Self.write(dir, "d.pmtiles", maxZoom: 2) { $0 == 10 ? other : same }
        #expect(stats.addressedTiles == 21)
        #expect(stats.tileContents == 2)
        #expect(stats.tileEntries == 3)
        let reader = try PMTilesReader(path: path)
        #expect(reader.header.clustered)
        #expect(reader.header.tileDataLength == 4)
        #expect(reader.header.minZoom == 0 && reader.header.maxZoom == 2)
        for (id, bytes) in tiles { #expect(try reader.tileBytes(id) == bytes) }
        #expect(try reader.tileBytes(TileID(z: 3, x: 0, y: 0)!) == nil)
        #expect(reader.metadata["name"] == "t")
        let writer = try PMTilesWriter(path: dir.file("o.pmtiles"), metadata: [:], tileType: .png)
        try writer.write([1], for: TileID(z: 1, x: 0, y: 0)!)
        #expect(throws: ArchiveError.self) { try writer.write([1], for: TileID(z: 0, x: 0, y: 0)!) }
    }

    /// Tile `i`'s bytes, distinct, of lengths without pattern: a directory of them does not
    /// gzip into 100 bytes.
    static func varied(_ i: Int) -> [UInt8] {
        var random = TestRandom(seed: UInt64(i))
        return [UInt8(i & 255), UInt8(i >> 8)] + [UInt8](repeating: 7, count: Int(random.next() % 100))
    }

    @Test func smallRootForcesLeafDirectories() throws {
        let dir = TemporaryDirectory()
        var options = PMTilesWriter.Options()
        options.rootLimit = 227
        options.leafEntries = 16
        let (path, stats, tiles) = try Self.write(dir, "l.pmtiles", maxZoom: 4, options: options, content: Self.varied)
        #expect(stats.leafDirectories > 1)
        let reader = try PMTilesReader(path: path, leafCacheBytes: 1024)
        #expect(reader.header.leafDirectoryLength > 0)
        #expect(reader.header.rootOffset + reader.header.rootLength <= 227)
        for (id, bytes) in tiles { #expect(try reader.tileBytes(id) == bytes) }
        var walked = 0
        try reader.forEachTile { _, _ in walked += 1 }
        #expect(walked == tiles.count)
    }

    /// Many threads read one reader at once through a leaf cache too small for the leaves:
    /// every tile comes back whole.
    @Test func readsFromManyThreadsAtOnce() throws {
        let dir = TemporaryDirectory()
        var options = PMTilesWriter.Options()
        options.rootLimit = 227
        options.leafEntries = 16
        let (path, _, tiles) = try Self.write(dir, "t.pmtiles", maxZoom: 4, options: options, content: Self.varied)
        let reader = try PMTilesReader(path: path, leafCacheBytes: 2048)
        let ids = Array(tiles.keys)
        let wrong = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for i in 0..<ids.count * 2 {
                let id = ids[(i * 7 + worker * 13) % ids.count]
                if (try? reader.tileBytes(id)) != tiles[id] { wrong.withLock { $0 += 1 } }
            }
        }
        #expect(wrong.withLock { $0 } == 0)
    }

    /// Seeded corruption of a small archive with leaves: every outcome is a tile or an
    /// ``ArchiveError``, never a trap, and nothing allocates past the reader's limits.
    @Test func corruptedArchivesNeverCrash() throws {
        let dir = TemporaryDirectory()
        var options = PMTilesWriter.Options()
        options.rootLimit = 227
        options.leafEntries = 8
        let (path, stats, tiles) = try Self.write(dir, "f.pmtiles", maxZoom: 3, options: options, content: Self.varied)
        #expect(stats.leafDirectories > 1)
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        var random = TestRandom(seed: 29)
        var refused = 0
        for round in 0..<400 {
            var bytes = original
            if round % 10 == 0 {
                bytes.removeLast(Int(random.next() % UInt64(bytes.count)))
            } else {
                for _ in 0..<(1 + random.next() % 6) {
                    // Mostly the header and directories: where the numbers a reader trusts live.
                    let span = round % 2 == 0 ? min(bytes.count, 400) : bytes.count
                    bytes[Int(random.next() % UInt64(span))] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            let file = try dir.write("c\(round).pmtiles", bytes)
            do {
                let reader = try PMTilesReader(path: file, leafCacheBytes: 256)
                for id in tiles.keys { _ = try? reader.tileBytes(id) }
                try reader.forEachTile { _, _ in }
                _ = try reader.zoomStatistics()
            } catch let error as ArchiveError {
                #expect(!error.description.contains("\n"))
                refused += 1
            }
        }
        #expect(refused > 0)
    }
}
