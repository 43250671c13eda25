import Testing
import Crypto
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

@Suite struct ArchivePackTests {
    @Test func writesTwoLayersAndReadsThemBack() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("p.mbtiles")
        let written = try PackFixture.write(path)
        #expect(dir.listing() == ["p.mbtiles"])
        #expect(written.tiles == 2 * 84 && written.elevationRows == 84)
        #expect(written.perZoom.map(\.z) == [1, 2, 3])
        #expect(written.perZoom.map(\.tiles) == [4 * 3, 16 * 3, 64 * 3])

        let reader = try PackReader(path: path)
        #expect(reader.layers == PackFixture.layers)
        #expect(reader.metadata["tilepack_pack_format"] == "1")
        #expect(reader.metadata["format"] == "png")  // from layer 0
        #expect(reader.metadata["attribution"] == "© tests")
        #expect(try reader.indexDigest() == written.indexDigest)
        #expect(try reader.statistics() == written)
        #expect(reader.layer(2) == nil && reader.layer(-1) == nil)
        let color = try #require(reader.layer(0)), dem = try #require(reader.layer(1))
        #expect(color.path == path + "#color.mbtiles")
        #expect(reader.layer(named: "dem.mbtiles")?.layer == 1)
        #expect(color.summary.zoomRange == 1...3 && color.summary.codec == .png && color.summary.tileSize == 16)
        #expect(color.summary.name == "Color" && !color.summary.hasElevation && dem.summary.hasElevation)
        #expect(color.summary.bounds == GeoBounds(west: 5, south: 45, east: 8, north: 47))
        for tile in PackFixture.tiles {
            let s = tile.z * 1000 + tile.x * 31 + tile.y
            #expect(try color.tile(tile) == PackFixture.png(s))
            #expect(try dem.tile(tile) == PackFixture.png(s + 7))
            #expect(try dem.elevation(tile) == PackFixture.elevation(s))
            #expect(try color.elevation(tile) == nil)
        }
        #expect(try color.tile(TileID(z: 4, x: 0, y: 0)!) == nil)
        #expect(try dem.elevation(TileID(z: 0, x: 0, y: 0)!) == nil)
        #expect(try reader.indexRows(layer: 1).count == 2 * 84)
        #expect(try reader.indexRows().count == 3 * 84)
    }

    /// The digest of a one-tile, one-elevation pack, computed here from docs/REGIONS.md's words.
    @Test func digestIsTheDocumentedByteLayout() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("tiny.mbtiles")
        let layer = PackLayerInfo(archive: "a", metadata: ["name": "A", "format": "png"])
        let tile = TileID(z: 2, x: 1, y: 0)!  // TMS row 3
        let bytes: [UInt8] = [1, 2, 3]
        let grid = ElevationTile(width: 1, height: 1, values: [42])
        let blob = try ElevationEncoding.float32Deflate.encode(grid)
        let writer = try PackWriter(path: path, layers: [layer], metadata: ["name": "tiny"])
        try writer.writeElevationRow(encoding: "f32le-deflate", width: 1, height: 1, data: blob, layer: 0, id: tile)
        try writer.writeTile(bytes, layer: 0, tile: tile)
        let stats = try writer.finish()

        func be32(_ v: Int) -> [UInt8] {
            [UInt8(v >> 24 & 255), UInt8(v >> 16 & 255), UInt8(v >> 8 & 255), UInt8(v & 255)]
        }
        let text = Array(#"{"format":"png","name":"A"}"#.utf8)
        let tileHash = Array(SHA256.hash(data: bytes))
        let elevationHash = Array(SHA256.hash(data: Array("f32le-deflate".utf8) + [0] + be32(1) + be32(1) + blob))
        var message = Array("tilepack-pack-index-v1\n".utf8)
        message += be32(0) + be32(1) + Array("a".utf8) + be32(text.count) + text
        message += be32(0) + [0, 2] + be32(1) + be32(3) + tileHash  // kind 0 sorts first
        message += be32(0) + [1, 2] + be32(1) + be32(3) + elevationHash
        #expect(stats.indexDigest == SHA256.hash(data: message).hexString)
        #expect(stats.perZoom == [PackZoomCount(z: 2, tiles: 2, bytes: 3 + blob.count)])
        #expect(stats.storedBytes == 3 + blob.count)
        let reader = try PackReader(path: path)
        #expect(
            try reader.indexRows() == [
                PackIndexRow(layer: 0, kind: .tile, tile: tile, sha256: SHA256.hash(data: bytes).hexString),
                PackIndexRow(
                    layer: 0, kind: .elevation, tile: tile,
                    sha256: SHA256.hash(data: Array("f32le-deflate".utf8) + [0] + be32(1) + be32(1) + blob).hexString),
            ])
    }

    @Test func digestIsStableAcrossWriteOrderAndRewrites() throws {
        let dir = TemporaryDirectory()
        let a = try PackFixture.write(dir.file("a.mbtiles"))
        // Reverse order, with a tile first written wrong and then replaced.
        let writer = try PackWriter(
            path: dir.file("b.mbtiles"), layers: PackFixture.layers, metadata: PackFixture.packMetadata)
        try writer.writeTile([9, 9, 9], layer: 0, tile: TileID(z: 1, x: 0, y: 0)!)
        for tile in PackFixture.tiles.reversed() {
            let s = tile.z * 1000 + tile.x * 31 + tile.y
            try writer.writeElevation(PackFixture.elevation(s), encoding: .float32PredictorDeflate, layer: 1, id: tile)
            try writer.writeTile(PackFixture.png(s + 7), layer: 1, tile: tile)
            try writer.writeTile(PackFixture.png(s), layer: 0, tile: tile)
        }
        let b = try writer.finish()
        #expect(a == b)  // digest, counts and bytes: the orphaned [9, 9, 9] is gone
        #expect(try PackReader(path: dir.file("b.mbtiles")).indexDigest() == a.indexDigest)
        // Different layer metadata: a different digest.
        var layers = PackFixture.layers
        layers[1].metadata["tilepack:codec"] = "astc6x6"
        let c = try PackFixture.write(dir.file("c.mbtiles"), layers: layers)
        #expect(c.indexDigest != a.indexDigest)
    }

    @Test func aTileEditedAfterWritingIsNeverReturned() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("p.mbtiles")
        let stats = try PackFixture.write(path)
        let tile = TileID(z: 2, x: 1, y: 2)!
        let other = try PackFixture.png(12345)
        // Edit the content in place (its key stays): every read of a row pointing at it fails.
        let hex = SHA256.hash(data: try PackFixture.png(tile.z * 1000 + tile.x * 31 + tile.y)).hexString
        try PackFixture.execute(
            path,
            "UPDATE images SET tile_data = x'\(other.map { String(format2: $0) }.joined())' WHERE tile_id = '\(hex)'")
        let reader = try PackReader(path: path)
        #expect(try reader.indexDigest() == stats.indexDigest)  // the index is untouched…
        // …the read fails
        expectPackError(.hashMismatch, path + "#color.mbtiles") { _ = try reader.layer(0)?.tile(tile) }
        let color = try #require(reader.layer(0))
        var called = false
        expectPackError(.hashMismatch, path + "#color.mbtiles") {
            let _: Int? = try color.withTile(tile) { (_: UnsafeRawBufferPointer) -> Int in
                called = true; return 1
            }
        }
        #expect(!called)
        expectPackError(.hashMismatch, path + "#color.mbtiles") { _ = try reader.verifyAll(decode: false) }
        #expect(try reader.layer(0)?.tile(TileID(z: 2, x: 0, y: 0)!) != nil)  // the others still read

        // Elevation: flip the width (the hash covers it), then the data.
        let dem = try #require(reader.layer(1))
        try PackFixture.execute(path, "UPDATE tilepack_elevation SET width = 8 WHERE rowid = 1")
        let failures = PackFixture.tiles.filter { t in
            do { _ = try dem.elevation(t); return false } catch {
                return (error as? ArchiveError)?.code == .hashMismatch
            }
        }
        #expect(failures.count == 1)
        // A content deleted: damaged, named.
        try PackFixture.execute(
            path,
            """
            DELETE FROM images WHERE tile_id = (SELECT sha256 FROM tilepack_tile_index WHERE layer = 1 AND kind = \
            0 AND zoom_level = 1 AND tile_column = 0 AND tile_row = 0)
            """
        )
        expectPackError(.damaged, path + "#dem.mbtiles") { _ = try dem.tile(TileID(z: 1, x: 0, y: 1)!) }
    }

    /// A pack's content rows are file data: a forged 40 MB blob is refused by its stored length,
    /// before SQLite loads it or the hash is computed, on every read path (layer, verify).
    @Test func anOverlongContentRowIsRefusedUnread() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("p.mbtiles")
        try PackFixture.write(path)
        let tile = TileID(z: 2, x: 1, y: 2)!
        let hex = SHA256.hash(data: try PackFixture.png(tile.z * 1000 + tile.x * 31 + tile.y)).hexString
        try PackFixture.execute(path, "UPDATE images SET tile_data = zeroblob(40000000) WHERE tile_id = '\(hex)'")
        let reader = try PackReader(path: path)
        let color = try #require(reader.layer(0))
        var called = false
        expectPackError(
            .damaged, path + "#color.mbtiles",
            contains: "tile 2/1/2 stores 40000000 bytes, more than the 33554432 it may hold; not read"
        ) {
            let _: Int? = try color.withTile(tile) { (_: UnsafeRawBufferPointer) -> Int in
                called = true; return 1
            }
        }
        // A caller's smaller limit is applied the same way (the tile store's per-tile bound).
        expectPackError(.damaged, path + "#color.mbtiles", contains: "more than the 10 it may hold") {
            let _: Int? = try color.withTile(TileID(z: 2, x: 0, y: 0)!, maxBytes: 10) {
                (_: UnsafeRawBufferPointer) -> Int in
                called = true; return 1
            }
        }
        #expect(!called)
        expectPackError(.damaged, path + "#color.mbtiles", contains: "40000000 bytes") {
            _ = try reader.verifyAll(decode: false)
        }
        // Elevation: the limit follows the declared grid (8 × w × h + 64 KiB), text is refused too.
        let original = try PackFixture.png(tile.z * 1000 + tile.x * 31 + tile.y).map { String(format2: $0) }.joined()
        try PackFixture.execute(path, "UPDATE images SET tile_data = x'\(original)' WHERE tile_id = '\(hex)'")
        #expect(try color.tile(tile) != nil)
        try PackFixture.execute(path, "UPDATE tilepack_elevation SET data = zeroblob(2000000)")
        let dem = try #require(reader.layer(1))
        var refused = 0
        for t in PackFixture.tiles {
            do { _ = try dem.elevation(t) } catch let error as ArchiveError {
                #expect(
                    error.code == .badElevation && error.description.contains("stores 2000000 bytes")
                        && error.description.contains("not read"),
                    "\(error)")
                refused += 1
            }
        }
        #expect(refused > 0)
        try PackFixture.execute(path, "UPDATE tilepack_elevation SET data = 'text'")
        expectPackError(.badElevation, path + "#dem.mbtiles", contains: "stores text, not a blob; not read") {
            _ = try reader.verifyAll(decode: false)
        }
    }

    @Test func anEditedIndexRowChangesTheDigest() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("p.mbtiles")
        let stats = try PackFixture.write(path)
        // Swap: point tile 1/0/0 (TMS row 1) at 1/1/0's content. Reads pass (the content is
        // what the row says), but the digest no longer matches the manifest's.
        try PackFixture.execute(
            path,
            """
            UPDATE tilepack_tile_index SET sha256 = (SELECT sha256 FROM tilepack_tile_index WHERE layer = 0 AND kind = 0 \
            AND zoom_level = 1 AND tile_column = 1 AND tile_row = 1) WHERE layer = 0 AND kind = 0 AND zoom_level = 1 \
            AND tile_column = 0 AND tile_row = 1
            """)
        #expect(try PackReader(path: path).indexDigest() != stats.indexDigest)
        // Layer metadata edited: digest differs too.
        let path2 = dir.file("q.mbtiles")
        try PackFixture.write(path2)
        try PackFixture.execute(path2, "UPDATE tilepack_pack_layers SET metadata = '{\"name\":\"X\"}' WHERE layer = 1")
        #expect(try PackReader(path: path2).indexDigest() != stats.indexDigest)
        // A malformed row (text in an integer column) is damaged, not hashed as something else.
        try PackFixture.execute(
            path2,
            """
            UPDATE tilepack_tile_index SET tile_column = 'x' WHERE layer = 0 AND zoom_level = 1 AND tile_column = \
            0 AND tile_row = 0
            """
        )
        expectPackError(.damaged, path2) { _ = try PackReader(path: path2).indexDigest() }
    }

    @Test func refusesFilesThatAreNotPacks() throws {
        let dir = TemporaryDirectory()
        let mbtiles = dir.file("plain.mbtiles")
        let writer = try MBTilesWriter(path: mbtiles, metadata: MBTilesMetadata(name: "x", format: "png"))
        try writer.write([1], for: TileID(z: 0, x: 0, y: 0)!)
        try writer.finish()
        expectPackError(.notPack, mbtiles) { _ = try PackReader(path: mbtiles) }
        let newer = dir.file("newer.mbtiles")
        try PackFixture.write(newer)
        try PackFixture.execute(newer, "UPDATE metadata SET value = '2' WHERE name = 'tilepack_pack_format'")
        expectPackError(.unsupportedVersion, newer) { _ = try PackReader(path: newer) }
        let garbage = try dir.write("garbage.mbtiles", Array(repeating: 7, count: 4096))
        expectPackError(.notSQLite, garbage) { _ = try PackReader(path: garbage) }
        expectPackError(.notFound, dir.file("absent")) { _ = try PackReader(path: dir.file("absent")) }
        let fifo = dir.file("fifo.mbtiles")
        #expect(mkfifo(fifo, 0o600) == 0)
        expectPackError(.notRegularFile, fifo) { _ = try PackReader(path: fifo) }  // refused, never blocks
        let bad = dir.file("bad-writer.mbtiles")
        #expect(throws: ArchiveError.self) { _ = try PackWriter(path: bad, layers: [], metadata: [:]) }
        let dup = [PackFixture.layers[0], PackFixture.layers[0]]
        #expect(throws: ArchiveError.self) { _ = try PackWriter(path: bad, layers: dup, metadata: [:]) }
        let w = try PackWriter(path: bad, layers: PackFixture.layers, metadata: [:])
        #expect(throws: ArchiveError.self) { try w.writeTile([1], layer: 2, tile: TileID(z: 0, x: 0, y: 0)!) }
        #expect(throws: ArchiveError.self) {
            try w.writeElevationRow(
                encoding: "raw", width: 1, height: 1, data: [0], layer: 0, id: TileID(z: 0, x: 0, y: 0)!)
        }
        w.abandon()
        #expect(!dir.listing().contains { $0.hasPrefix("bad-writer") })
    }

    @Test func mbtilesReaderOpensAPackAsLayerZero() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("p.mbtiles")
        try PackFixture.write(path)
        let reader = try MBTilesReader(path: path)
        // The pack's `elevation` view shows layer 0's rows, and layer 0 stores none.
        #expect(!reader.hasElevation)
        #expect(reader.summary.codec == .png && reader.tileSize == 16)
        for tile in PackFixture.tiles {
            let s = tile.z * 1000 + tile.x * 31 + tile.y
            #expect(try reader.tile(tile) == PackFixture.png(s))
            #expect(try reader.elevation(tile) == nil)  // layer 0 has no elevation; layer 1's is not shown
        }
        #expect(try reader.tileCount == 84)
        #expect(try reader.tileIDs(zoom: 1).count == 4)
        #expect(reader.zoomRange == 1...3)
    }

    @Test func verifyAllDecodesEveryTile() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("p.mbtiles")
        let stats = try PackFixture.write(path)
        let reader = try PackReader(path: path)
        #expect(try reader.verifyAll(decode: true) == stats)
        #expect(try reader.verifyAll(decode: false) == stats)
        // A tile that hashes right but is no PNG: hash check passes, decoding fails.
        let bad = dir.file("bad.mbtiles")
        let writer = try PackWriter(path: bad, layers: PackFixture.layers, metadata: [:])
        try writer.writeTile(try PackFixture.png(1), layer: 0, tile: TileID(z: 1, x: 0, y: 0)!)
        try writer.writeTile([1, 2, 3], layer: 1, tile: TileID(z: 1, x: 1, y: 1)!)
        _ = try writer.finish()
        let badReader = try PackReader(path: bad)
        _ = try badReader.verifyAll(decode: false)
        expectPackError(.damaged, bad + "#dem.mbtiles", contains: "1/1/1") { _ = try badReader.verifyAll(decode: true) }
    }
}

@Suite struct ArchivePackDeltaTests {
    static var v2Layers: [PackLayerInfo] { PackFixture.v2Layers }
    typealias Versions = PackFixture.Versions

    @Test func deltaThenApplyEqualsTheNewVersion() throws {
        let v = try Versions()
        let changedTiles =
            PackFixture.tiles.filter { ($0.z != 3 || ($0.x != 0 && $0.x != 7)) && ($0.x + $0.y) % 10 == 3 }.count + 1
        #expect(v.summary.added == 8 * 3 && v.summary.removed == 8 * 3 && v.summary.changed == changedTiles * 3)
        #expect(v.summary.indexDigest == v.v2Stats.indexDigest)
        #expect(v.summary.contents < v.summary.added + v.summary.changed)  // 2/0/0's contents are v1's: not carried
        let delta = try PackReader(path: v.delta)
        #expect(delta.hasRemovedTable && delta.layers == Self.v2Layers)
        #expect(delta.metadata["tilepack_pack_id"] == "chamonix" && delta.metadata["tilepack_delta_from"] == "1")
        #expect(
            delta.metadata["tilepack_delta_to"] == "2"
                && delta.metadata["tilepack_tile_index_sha256"] == v.v2Stats.indexDigest)

        let before = readFile(v.v1)
        let out = v.dir.file("updated.mbtiles")
        try PackDelta.apply(
            delta: v.delta, installed: v.v1, output: out, packID: "chamonix", from: 1, to: 2,
            expectedDigest: v.v2Stats.indexDigest)
        #expect(readFile(v.v1) == before)  // the installed pack is never modified
        let updated = try PackReader(path: out)
        #expect(try updated.verifyAll(decode: true) == v.v2Stats)  // same digest, counts and bytes (orphans gone)
        #expect(updated.layers == Self.v2Layers)
        #expect(updated.metadata["tilepack_delta_from"] == nil && updated.metadata["name"] == "Test pack")
        let fresh = try PackReader(path: v.v2)
        for tile in PackFixture.tiles {
            for layer in 0..<2 {
                #expect(try updated.layer(layer)?.tile(tile) == fresh.layer(layer)?.tile(tile))
            }
            #expect(try updated.layer(1)?.elevation(tile) == fresh.layer(1)?.elevation(tile))
        }
        #expect(!v.dir.listing().contains { $0.contains(".tmp-") || $0.hasSuffix("-journal") })
        // In place: output = installed, replaced atomically once checked.
        try PackDelta.apply(
            delta: v.delta, installed: v.v1, output: v.v1, packID: "chamonix", from: 1, to: 2,
            expectedDigest: v.v2Stats.indexDigest)
        #expect(try PackReader(path: v.v1).indexDigest() == v.v2Stats.indexDigest)
    }

    @Test func aDeltaThatDoesNotFitIsRefusedAndLeavesNothing() throws {
        let v = try Versions()
        let out = v.dir.file("out.mbtiles")
        func refuse(
            _ problem: ArchiveError.Code, delta: String? = nil, installed: String? = nil,
            packID: String = "chamonix",
            from: Int = 1, to: Int = 2, digest: String? = nil, contains: String? = nil,
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let d = delta ?? v.delta
            expectPackError(problem, d, contains: contains, sourceLocation: sourceLocation) {
                try PackDelta.apply(
                    delta: d, installed: installed ?? v.v1, output: out, packID: packID, from: from, to: to,
                    expectedDigest: digest ?? v.v2Stats.indexDigest)
            }
            #expect(!fileExists(out), sourceLocation: sourceLocation)
            #expect(!v.dir.listing().contains { $0.contains(".tmp-") }, sourceLocation: sourceLocation)
        }
        refuse(.deltaMismatch, packID: "zermatt", contains: "a delta for another version")
        refuse(.deltaMismatch, from: 2, to: 3, contains: "a delta for another version")
        refuse(.deltaMismatch, digest: String(repeating: "0", count: 64), contains: "a delta for another version")
        // Right labels, wrong base: the result's digest is not the manifest's.
        let other = v.dir.file("other.mbtiles")
        writeFile(other, readFile(v.v1))
        try PackFixture.execute(
            other,
            """
            UPDATE tilepack_tile_index SET sha256 = (SELECT sha256 FROM tilepack_tile_index WHERE layer = 0 AND kind = 0 \
            AND zoom_level = 1 AND tile_column = 1 AND tile_row = 1) WHERE layer = 0 AND kind = 0 AND zoom_level = 1 \
            AND tile_column = 0 AND tile_row = 0
            """)
        refuse(.deltaMismatch, installed: other, contains: "expected \(v.v2Stats.indexDigest)")
        // Another pack altogether: contents the delta does not carry (the old version has them) are missing.
        let unrelated = v.dir.file("unrelated.mbtiles")
        try PackFixture.write(unrelated, seed: { $0.z == 1 ? nil : $0.z * 7 + $0.x + 90_000 })
        refuse(.deltaMismatch, installed: unrelated, contains: "without content")
        // Truncated in transit.
        let bytes = readFile(v.delta)
        let truncated = try v.dir.write("truncated.delta.mbtiles", Array(bytes.prefix(bytes.count * 2 / 3)))
        refuse(.damaged, delta: truncated, contains: "truncated")
        // A carried content edited: refused by its hash.
        let edited = v.dir.file("edited.delta.mbtiles")
        writeFile(edited, bytes)
        try PackFixture.execute(
            edited, "UPDATE images SET tile_data = x'00' WHERE rowid = (SELECT min(rowid) FROM images)")
        refuse(.hashMismatch, delta: edited)
        // A carried content too large to load: refused by its recorded length, never read.
        let bomb = v.dir.file("bomb.delta.mbtiles")
        writeFile(bomb, bytes)
        try PackFixture.execute(
            bomb, "UPDATE images SET tile_data = zeroblob(40000000) WHERE rowid = (SELECT min(rowid) FROM images)")
        refuse(.damaged, delta: bomb, contains: "stores 40000000 bytes, more than the 33554432 it may hold; not read")
        // A full pack is not a delta.
        refuse(.notPack, delta: v.v2)
        // A row whose content the delta lacks (and the old pack too).
        let holed = v.dir.file("holed.delta.mbtiles")
        writeFile(holed, bytes)
        try PackFixture.execute(holed, "DELETE FROM images WHERE rowid = (SELECT min(rowid) FROM images)")
        refuse(.deltaMismatch, delta: holed, contains: "without content")
        #expect(throws: ArchiveError.self) {
            _ = try PackDelta.write(old: v.v1, new: v.v2, output: v.dir.file("bad.delta"), packID: "x", from: 2, to: 2)
        }
    }
}

extension String {
    /// Two lowercase hex digits.
    init(format2 byte: UInt8) {
        let digits = Array("0123456789abcdef")
        self = String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }
}

/// Expects `body` to throw an ArchiveError of `problem` whose one-line description starts with `path`.
func expectPackError(
    _ problem: ArchiveError.Code, _ path: String, contains: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("no error (expected \(problem))", sourceLocation: sourceLocation)
    } catch let error as ArchiveError {
        #expect(error.code == problem, "\(error)", sourceLocation: sourceLocation)
        #expect(error.description.hasPrefix(path + ": "), "\(error)", sourceLocation: sourceLocation)
        #expect(!error.description.contains("\n"), sourceLocation: sourceLocation)
        if let contains { #expect(error.description.contains(contains), "\(error)", sourceLocation: sourceLocation) }
    } catch {
        Issue.record("untyped error \(error)", sourceLocation: sourceLocation)
    }
}
