import Foundation
import Testing
import CZlib
@testable import TilePack
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
@testable import TilePackStore
import TilePackTestSupport

/// Issue 27: every size read from input is bounded before it sizes an allocation — bands,
/// tag counts, GeoKeys, the build's per-band buffers, stored tile and elevation blobs — and
/// the tile store remembers a bad row instead of reading it again. Small, seeded inputs;
/// the RSS figures are checks/test_bounds_check.py's.
@Suite struct InputBoundsTests {
    // MARK: TIFF

    /// A 1×1 TIFF whose SamplesPerPixel says `bands` (BitsPerSample has one value, as libtiff
    /// accepts): a few hundred bytes claiming what it likes.
    private func claimingBands(_ bands: UInt16, in dir: TemporaryDirectory) throws -> String {
        var t = CraftedTIFF()
        t.width = 1
        t.height = 1
        t.extraTags[TIFFTag.samplesPerPixel] = .shorts([bands])
        return try dir.write("claims-\(bands).tif", try t.build(t.makeSamples()))
    }

    @Test func bandsAboveTheCapAreRefusedByName() throws {
        let dir = TemporaryDirectory()
        let path = try claimingBands(65535, in: dir)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0 < 1024)
        do {
            _ = try TIFFFile(path: path)
            Issue.record("a 65,535-band claim was opened")
        } catch {
            #expect(error.description == "\(path): 65535 bands; tilepack reads at most 4096")
            #expect(error.code == .unsupported)
            #expect(error.category == .unsupported)  // exit status 2, as every bad input
        }
        // At the cap the claim is read (its one block is 4 KiB).
        var t = CraftedTIFF()
        t.width = 1
        t.height = 1
        t.bands = TIFFLimits.maxBands
        let atCap = try dir.write("cap.tif", try t.build(t.makeSamples()))
        #expect(try TIFFFile(path: atCap).image.bands == 4096)
    }

    @Test func aTagClaimingMillionsOfValuesIsRefusedBeforeReading() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        // ExtraSamples is read for every image: 5 million LONGs claimed, none stored.
        t.extraTags[TIFFTag.extraSamples] = .raw(type: TIFFFieldType.long.rawValue, count: 5_000_000, bytes: [])
        let path = try dir.write("claims-values.tif", try t.build(t.makeSamples()))
        do {
            _ = try TIFFFile(path: path)
            Issue.record("a 5-million-value tag was read")
        } catch {
            #expect(error.code == .absurdDimensions)
            #expect(error.description.contains("\(TIFFLimits.maxTagValues)"), "\(error)")
        }
    }

    @Test func overlongMetadataIsIgnoredAndOverlongGeoAsciiRefused() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        let text = "<GDALMetadata><Item name=\"UNITTYPE\" sample=\"0\" role=\"unittype\">m</Item></GDALMetadata>"
        t.extraTags[TIFFTag.gdalMetadata] = .ascii(text + String(repeating: " ", count: TIFFLimits.maxTextBytes))
        let path = try dir.write("long-metadata.tif", try t.build(t.makeSamples()))
        #expect(try TIFFFile(path: path).image.gdalMetadata == nil)
        t.extraTags[TIFFTag.gdalMetadata] = .ascii(text)
        let short = try dir.write("metadata.tif", try t.build(t.makeSamples()))
        #expect(try TIFFFile(path: short).image.gdalMetadata?.items.first?.value == "m")
    }

    @Test func geoKeysCannotMultiplyTheirValues() throws {
        // 1,000 keys, each pointing at the whole 4,004-short directory: 4 million values.
        var dir: [UInt16] = [1, 1, 0, 1000]
        for i in 0..<1000 { dir += [UInt16(5000 + i), TIFFTag.geoKeyDirectory, 4004, 0] }
        #expect(throws: TIFFError.self) { try GeoTIFFTags.keyDirectory(dir, doubles: [], ascii: [], path: "keys.tif") }
        var many: [UInt16] = [1, 1, 0, 2000]
        for i in 0..<2000 { many += [UInt16(5000 + i), 0, 1, 7] }
        do {
            _ = try GeoTIFFTags.keyDirectory(many, doubles: [], ascii: [], path: "keys.tif")
            Issue.record("2,000 GeoKeys were resolved")
        } catch {
            #expect(error.description == "keys.tif: GeoKeyDirectory lists 2000 keys, more than the 1024 tilepack reads")
        }
        // A real directory still resolves.
        let real: [UInt16] = [1, 1, 0, 2, 1024, 0, 1, 2, 3072, 0, 1, 32633]
        #expect(try GeoTIFFTags.keyDirectory(real, doubles: [], ascii: [])?.short(3072) == 32633)
    }

    // MARK: Build memory plan

    @Test func perWorkerBytesScaleWithBandsAndSampleSize() {
        let MiB = 1 << 20
        #expect(BuildMemoryPlan.perWorkerBytes(for: .assumed) == 8 * MiB)
        let rgb = SourceFootprint(bands: 3, decodedBands: 3, sampleBytes: 1, blockBytes: 256 * 256 * 3)
        #expect(BuildMemoryPlan.perWorkerBytes(for: rgb) == 8 * MiB)
        let b64 = SourceFootprint(bands: 64, decodedBands: 64, sampleBytes: 1, blockBytes: 0)
        let f64 = SourceFootprint(bands: 64, decodedBands: 64, sampleBytes: 4, blockBytes: 0)
        // 64 × (256 KiB grid + 1 MiB window floats + 256 KiB raw) + 2 MiB.
        #expect(BuildMemoryPlan.perWorkerBytes(for: b64) == 2 * MiB + 64 * (MiB + MiB / 2))
        #expect(BuildMemoryPlan.perWorkerBytes(for: f64) > BuildMemoryPlan.perWorkerBytes(for: b64))
        // A selection of 3 of 64 decoded bands still pays for the 64 it decodes.
        let picked = SourceFootprint(bands: 3, decodedBands: 64, sampleBytes: 1, blockBytes: 0)
        #expect(BuildMemoryPlan.perWorkerBytes(for: picked) > 64 * MiB)
        let huge = SourceFootprint(bands: 65535, decodedBands: 65535, sampleBytes: 8, blockBytes: 1 << 28)
        #expect(BuildMemoryPlan.perWorkerBytes(for: huge) > 100 << 30)
    }

    @Test func aSourceThatCannotFitIsRefusedWithItsFigure() throws {
        let budget = 512 << 20
        let source = SourceFootprint(bands: 4096, decodedBands: 4096, sampleBytes: 1, blockBytes: 4096)
        do {
            try BuildMemoryPlan.checkFits(budget: budget, elevation: false, levelsAboveBlock: 10, source: source)
            Issue.record("4,096 bands fit 512 MiB")
        } catch let error as BuildError {
            guard error.code == .sourceExceedsBudget else { Issue.record("\(error)"); return }
            #expect(error.description.hasPrefix("4096 bands of 1 byte need 6."), "\(error)")
            #expect(error.description.hasSuffix("to build, more than --memory 512 MiB"), "\(error)")
            #expect(error.category == .invalidInput)
        }
        #expect(throws: BuildError.self) {
            try BuildMemoryPlan(
                budget: budget, workers: 2, blockLevels: 3, elevation: false, levelsAboveBlock: 10, source: source)
        }
        // A budget too small for any source stays the option's fault.
        do {
            try BuildMemoryPlan.checkFits(budget: 8 << 20, elevation: false, levelsAboveBlock: 3, source: .assumed)
            Issue.record("8 MiB fit a build")
        } catch let error as BuildError {
            guard error.code == .invalidOption else { Issue.record("\(error)"); return }
        }
    }

    @Test func aManyBandSourceThatFitsGetsFewerWorkers() throws {
        let budget = 512 << 20
        let source = SourceFootprint(bands: 64, decodedBands: 64, sampleBytes: 1, blockBytes: 256 * 256 * 64)
        let plan = try BuildMemoryPlan(
            budget: budget, workers: 8, blockLevels: 3, elevation: false, levelsAboveBlock: 10,
            source: source)
        let rgb = try BuildMemoryPlan(
            budget: budget, workers: 8, blockLevels: 3, elevation: false, levelsAboveBlock: 10)
        #expect(plan.workers < rgb.workers && plan.workers >= 1)
        #expect(plan.estimatedPeakBytes <= budget)
        #expect(plan.workerBytes == BuildMemoryPlan.perWorkerBytes(for: source))
        #expect(plan.description.contains("64 bands of 1 byte"))
    }

    // MARK: Tile store

    static let id = TileID(z: 3, x: 1, y: 2)!

    /// An archive with one tile and one elevation row, then `edit` applied in SQL.
    private func archive(_ dir: TemporaryDirectory, _ name: String, edit: String) throws -> String {
        let path = dir.file(name)
        var options = MBTilesWriter.Options()
        options.elevationStep = 1
        let writer = try MBTilesWriter(path: path, metadata: ArchiveFixture.metadata(), options: options)
        try writer.write([1, 2, 3], for: Self.id)
        try writer.writeElevation(
            ElevationTile(width: 8, height: 8, values: [Float](repeating: 1234, count: 64)), for: Self.id)
        try writer.finish()
        let db = try SQLiteConnection(path: path, mode: .readWriteExisting)
        try db.execute(edit)
        return path
    }

    @Test func aBlobAboveTheLimitIsRefusedUnreadAndRemembered() throws {
        let dir = TemporaryDirectory()
        let path = try archive(dir, "blob.mbtiles", edit: "UPDATE images SET tile_data = zeroblob(2000000)")
        let reader = try MBTilesReader(path: path)
        let limit = TileStore.maxStoredTileBytes(tileSize: 256)
        #expect(limit == 589_824)
        #expect(throws: ArchiveError.self) { try reader.withTile(Self.id, maxBytes: limit) { $0.count } }
        // Within the reader's own cap (32 MiB) a caller without a limit still gets it.
        #expect(try reader.tile(Self.id)?.count == 2_000_000)
        let store = try TileStore(archives: [reader], budget: MemoryBudget(parsing: "64MiB"))
        for attempt in 0..<3 {
            do {
                _ = try store.tile(Self.id)
                Issue.record("a 2 MB blob was served from a 256-pixel archive")
            } catch let error as TileStoreError {
                #expect(error.code == .damagedTile, "attempt \(attempt): \(error)")
                #expect(
                    error.description.contains("2000000 bytes") && error.description.contains("not read"), "\(error)")
            }
        }
        // One load; the others answered from the failure memory.
        #expect(store.statistics.misses == 1)
        #expect(store.statistics.peakResidentBytes < 64 << 10 && store.accountingProblem() == nil)
    }

    /// A zlib stream of `count` zero bytes (a bomb: ~1 KiB per MiB).
    private func zeros(_ count: Int) throws -> [UInt8] {
        try Zlib.deflate([UInt8](repeating: 0, count: count), level: 9)
    }

    @Test func anElevationBombStopsAtItsDeclaredSizeAndIsRemembered() throws {
        let dir = TemporaryDirectory()
        let bomb = try zeros(4 << 20)
        #expect(bomb.count < 8 << 10)
        let hex = bomb.map { String(format: "%02x", $0) }.joined()
        let path = try archive(
            dir, "bomb.mbtiles",
            edit: "UPDATE elevation SET encoding = 'f32le-deflate', width = 256, height = 256, data = x'\(hex)'")
        let reader = try MBTilesReader(path: path)
        do {
            _ = try reader.elevation(Self.id)
            Issue.record("a 4 MiB stream decoded as a 256 KiB grid")
        } catch let error as ArchiveError {
            #expect(error.code == .badElevation)
            #expect(error.description.contains("expected 262144"), "\(error)")
        }
        let store = try TileStore(archives: [reader], budget: MemoryBudget(parsing: "64MiB"))
        for _ in 0..<3 {
            #expect(throws: TileStoreError.self) { try store.elevation(Self.id) }
        }
        #expect(store.statistics.misses == 1 && store.accountingProblem() == nil)
    }

    @Test func anElevationBlobLargerThanItsGridIsRefusedUnread() throws {
        let dir = TemporaryDirectory()
        // 8 × 8 declared: no encoding needs more than 8 × 64 + 64 KiB.
        let path = try archive(dir, "fat.mbtiles", edit: "UPDATE elevation SET data = zeroblob(1000000)")
        let reader = try MBTilesReader(path: path)
        do {
            _ = try reader.elevation(Self.id)
            Issue.record("a 1 MB blob was read for an 8×8 grid")
        } catch let error as ArchiveError {
            #expect(
                error.description.contains("(8×8) stores 1000000 bytes, more than the 66048 it may hold; not read"),
                "\(error)")
        }
        #expect(throws: ArchiveError.self) { try reader.storedElevation(Self.id) }
    }

    @Test func theFailureMemoryIsBounded() {
        var memory = FailureMemory(capacity: 3)
        let keys = (0..<5).map { TileKey(archive: 0, layer: .payload, tile: TileID(z: 3, x: $0, y: 0)!) }
        for key in keys { memory.remember(key, TileStoreError(.damagedTile, subject: "a", detail: "\(key.tile)")) }
        #expect(memory.count == 3)
        #expect(memory.error(for: keys[0]) == nil && memory.error(for: keys[1]) == nil)
        #expect(memory.error(for: keys[4])?.detail == "3/4/0")
    }
}
