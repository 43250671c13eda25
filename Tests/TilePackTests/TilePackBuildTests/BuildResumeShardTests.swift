import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
#if canImport(Glibc)
import Glibc
#endif
import TilePackTestSupport

/// Everything an archive holds that a build decides: tiles, elevation rows and metadata.
struct ArchiveContents: Equatable {
    var tiles: [String: [UInt8]] = [:]
    var elevation: [String: [UInt8]] = [:]
    var metadata: [String: String] = [:]
    var tables: [String] = []

    init(_ path: String) throws {
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        let t = try db.prepare("SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles")
        while try t.step() { tiles["\(t.int(at: 0))/\(t.int(at: 1))/\(t.int(at: 2))"] = t.bytes(at: 3) ?? [] }
        let e = try db.prepare("SELECT zoom_level, tile_column, tile_row, encoding, data FROM elevation")
        while try e.step() {
            elevation["\(e.int(at: 0))/\(e.int(at: 1))/\(e.int(at: 2))"] =
                Array((e.string(at: 3) ?? "").utf8) + (e.bytes(at: 4) ?? [])
        }
        let m = try db.prepare("SELECT name, value FROM metadata")
        while try m.step() { metadata[m.string(at: 0) ?? ""] = m.string(at: 1) ?? "" }
        let s = try db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        while try s.step() { tables.append(s.string(at: 0) ?? "") }
    }
}

/// Pages on the file's free list (a dropped journal left unreturned would show here).
func freePages(_ path: String) throws -> Int {
    let db = try SQLiteConnection(path: path, mode: .readOnly)
    let s = try db.prepare("PRAGMA freelist_count")
    return try s.step() ? s.int(at: 0) : -1
}

/// Resume after a kill, shards and their merge: each must give the uninterrupted
/// single-machine build's archive, tile for tile.
///
/// Not tagged `concurrent`: its builds run the same worker pipeline as BuildPipelineTests and
/// BuildScaleTests (tagged, so under ThreadSanitizer), and what it adds (journals, kills,
/// merges) is sequential; it is the slowest suite, and under TSan it took most of the run.
@Suite("Build: resume and shards")
struct BuildResumeShardTests {
    static let dem = TestData.sampleRegions + "/montblanc-dem.tif"

    /// A DEM build (hillshade colours and lossless metres: both must survive a resume) with
    /// PVRTC fast tiles (lossy: parents cannot come from the archive's tiles), blocks of one
    /// level and batches of two tiles, so a kill lands between many commits. Zooms 9–11
    /// (12 tiles written): a debug build makes it in about a second.
    static func request(_ output: String, maxZoom: Int = 11) -> RegionBuild.Request {
        var request = RegionBuild.Request(sourcePath: dem)
        request.outputPath = output
        request.codec = .pvrtc4
        request.codecLevel = .fast
        request.options.maxZoom = maxZoom
        request.options.blockLevels = 1
        request.options.workers = 2
        return request
    }

    static func build(
        _ request: RegionBuild.Request, interruptAfter: Int? = nil,
        batchTiles: Int = 2, commitInterval: Duration? = .seconds(1)
    ) throws -> RegionBuild.Result {
        var build = RegionBuild(request)
        build.writerOptions.batchTiles = batchTiles
        build.writerOptions.commitInterval = commitInterval
        build.interruptAfterTiles = interruptAfter
        return try build.run()
    }

    /// ``MBTilesWriter/Options/commitInterval`` alone ends batches that never fill by count or
    /// bytes, and a root committed that way comes back with its tile after a kill. Interval
    /// zero: every tile and root commits; an hour: nothing does before the kill.
    @Test func timedCommitsKeepTheJournalWithItsTiles() throws {
        let dir = TemporaryDirectory()
        let tile = try #require(TileID(z: 3, x: 1, y: 2))
        let metadata = MBTilesMetadata(name: "t", format: "png")
        let journal = MBTilesWriter.Journal(identity: ["build": "timed"])
        for (interval, committed) in [(Duration.zero, true), (Duration.seconds(3600), false)] {
            let out = dir.file("timed-\(committed).mbtiles")
            var options = MBTilesWriter.Options()
            options.batchTiles = 1_000_000
            options.commitInterval = interval
            let writer = try MBTilesWriter(path: out, metadata: metadata, options: options, journal: journal)
            try writer.write([1, 2, 3], for: tile)
            try writer.recordRoot(tile, payload: [9])
            #expect(writer.commits == (committed ? 2 : 0))
            writer.abandon()  // as a kill: the open batch is lost
            let left = MBTilesWriter.interrupted(target: out)
            #expect(left.count == 1 && left.first?.identity == journal.identity)
            #expect(left.first?.finishedRoots == (committed ? 1 : 0))
            let resumed = try MBTilesWriter(
                path: out, metadata: metadata, options: options, journal: journal,
                resuming: try #require(left.first))
            #expect(resumed.finishedRoots == (committed ? [tile] : []))
            #expect(try resumed.rootPayload(tile) == (committed ? .some([9]) : nil))
            try resumed.finish()
            #expect(try MBTilesReader(path: out).tileCount == (committed ? 1 : 0))
        }
    }

    /// A build whose batches never fill commits on time only; killed halfway, it resumes
    /// from those commits and ends equal to the uninterrupted build. The same kill with no
    /// interval finds nothing committed: the timed commits are what the resume used.
    @Test func killAfterATimedCommitResumesEqual() throws {
        let dir = TemporaryDirectory()
        let reference = try Self.build(Self.request(dir.file("ref.mbtiles")))
        let expected = try ArchiveContents(reference.outputPath)
        let cut = reference.report.tilesWritten / 2
        for interval in [Duration.zero, nil] {
            let out = dir.file("timed-\(interval == nil ? "none" : "zero").mbtiles")
            #expect(throws: InterruptingSink.Interrupted.self) {
                try Self.build(Self.request(out), interruptAfter: cut, batchTiles: 1_000_000, commitInterval: interval)
            }
            var resume = Self.request(out)
            resume.resume = true
            let resumed = try Self.build(resume, batchTiles: 1_000_000, commitInterval: interval)
            #expect(resumed.resumedFrom != nil)
            if interval == nil {
                #expect(resumed.report.resumedTiles == 0, "no commit before the kill")
            } else {
                #expect(resumed.report.resumedTiles > 0, "the timed commits were resumed")
            }
            #expect(try ArchiveContents(out) == expected, "interval \(String(describing: interval))")
        }
    }

    /// One reference build, then kills at several moments (before the first commit, between
    /// commits, near the end), a kill of a process that is gone, a stale file cleaned up and
    /// a refused resume: run one after the other, as they share the reference.
    @Test func resumeAfterAKillEqualsTheUninterruptedBuild() throws {
        let dir = TemporaryDirectory()
        let reference = try Self.build(Self.request(dir.file("ref.mbtiles")))
        let expected = try ArchiveContents(reference.outputPath)
        let total = reference.report.tilesWritten
        #expect(total >= 10)
        #expect(!expected.tables.contains("tilepack_roots") && !expected.tables.contains("tilepack_build"))
        #expect(try freePages(reference.outputPath) == 0, "the journal's pages went back to the file system")
        for cut in [1, total / 2, total - 1] {
            let out = dir.file("cut\(cut).mbtiles")
            #expect(throws: InterruptingSink.Interrupted.self) {
                try Self.build(Self.request(out), interruptAfter: cut)
            }
            #expect(!fileExists(out))
            let left = MBTilesWriter.interrupted(target: out)
            #expect(left.count == 1 && left.first?.identity != nil, "a valid temporary archive with its journal stays")
            var resume = Self.request(out)
            resume.resume = true
            let resumed = try Self.build(resume)
            #expect(resumed.resumedFrom == left.first?.path)
            if cut >= total / 2 { #expect(resumed.report.resumedTiles > 0, "cut \(cut): the journal was used") }
            #expect(try ArchiveContents(out) == expected, "resumed after \(cut) tiles")
            #expect(MBTilesWriter.interrupted(target: out).isEmpty)
        }

        // The temporary archive of a process that is gone (a pid above any pid_max).
        let out = dir.file("a.mbtiles")
        _ = try? Self.build(Self.request(out), interruptAfter: total / 2)
        let mine = try #require(MBTilesWriter.interrupted(target: out).first).path
        let dead = out + ".tmp-99999999"
        #expect(rename(mine, dead) == 0)
        for suffix in ["-wal", "-shm"] { _ = rename(mine + suffix, dead + suffix) }
        var resume = Self.request(out)
        resume.resume = true
        let resumed = try Self.build(resume)
        #expect(resumed.resumedFrom == dead && resumed.report.resumedTiles > 0)
        #expect(try ArchiveContents(out) == expected)
        #expect(!fileExists(dead))

        // Other options: refused naming the file, which stays for the right command.
        _ = try? Self.build(Self.request(out), interruptAfter: total / 2)
        let stale = try #require(MBTilesWriter.interrupted(target: out).first).path
        var other = Self.request(out)
        other.resume = true
        other.options.resampling = .nearest
        let error = try #require(throws: ShardError.self) { try Self.build(other) }
        #expect(error.description.hasPrefix("\(stale): built with different options ("))
        #expect(!error.description.contains("\n"))
        #expect(fileExists(stale))

        // Without --resume the stale file of a dead build is deleted, not continued.
        let fresh = try Self.build(Self.request(out))
        #expect(fresh.resumedFrom == nil && fresh.report.resumedTiles == 0)
        #expect(!fileExists(stale) && MBTilesWriter.interrupted(target: out).isEmpty)
        #expect(try ArchiveContents(out) == expected)
    }

    /// 2 shards, 4 shards (two of them killed once and resumed), and 3 shards of an ASTC
    /// `quality` build (its split weighed by the source's detail) merge into the single build.
    @Test func mergedShardsEqualTheSingleBuild() throws {
        let dir = TemporaryDirectory()
        func request(_ name: String, astc: Bool) -> RegionBuild.Request {
            // The ASTC build stops at zoom 10 (5 tiles; its `quality` encoder at -Onone is what a
            // debug run spends its time in): the weighed split gives the shards 3, 0 and 1 of
            // them and the merge the fifth, so an empty shard merges too.
            var request = Self.request(dir.file(name), maxZoom: astc ? 10 : 11)
            if astc { (request.codec, request.codecLevel) = (.astc6x6, .quality) }
            return request
        }
        var single: [Bool: ArchiveContents] = [:]  // the single build of each codec, made once
        for (n, astc) in [(2, false), (4, false), (3, true)] {
            let expected =
                try single[astc]
                ?? ArchiveContents(try Self.build(request("ref-\(astc).mbtiles", astc: astc)).outputPath)
            single[astc] = expected
            var paths: [String] = []
            for k in (0..<n).reversed() {
                var request = request("s\(n)-\(k).mbtiles", astc: astc)
                request.shard = BuildShard(index: k, count: n)
                if n == 4, k % 2 == 0 {
                    _ = try? Self.build(request, interruptAfter: 2)
                    request.resume = true
                }
                paths.append(try Self.build(request).outputPath)
            }
            let shardTables = try ArchiveContents(paths[0]).tables
            #expect(shardTables.contains("tilepack_roots") && !shardTables.contains("tilepack_build"))
            let merged = try ShardMerge(shardPaths: paths, outputPath: dir.file("m\(n).mbtiles")).run()
            #expect(merged.shards == n)
            let prepared = try RegionBuild(request("ref-\(astc).mbtiles", astc: astc)).prepare()
            #expect(prepared.builder.codec.encodeTimeFollowsDetail == astc)
            let plan = prepared.plan
            let partition = prepared.builder.shardPartition(plan, count: n)
            let spanning = plan.ranges.filter { $0.z < partition.zoom }.flatMap(\.tiles).filter {
                partition.upperOwner[$0] == nil
            }
            #expect(
                merged.levels.tilesWritten + merged.levels.emptySkipped == spanning.count,
                "\(n) shards: the merge made only the tiles that span shards")
            let contents = try ArchiveContents(merged.outputPath)
            #expect(contents.tiles == expected.tiles, "\(n) shards: tiles")
            #expect(contents.elevation == expected.elevation, "\(n) shards: elevation")
            #expect(contents.metadata == expected.metadata, "\(n) shards: metadata")
            #expect(contents.tables == expected.tables)
        }
    }

    @Test func mergeRefusesWrongSetsNamingTheFile() throws {
        let dir = TemporaryDirectory()
        func shard(_ k: Int, _ n: Int, name: String, resampling: Resampling = .bilinear) throws -> String {
            var request = Self.request(dir.file(name), maxZoom: 10)
            request.shard = BuildShard(index: k, count: n)
            request.options.resampling = resampling
            return try Self.build(request).outputPath
        }
        let a = try shard(0, 3, name: "a.mbtiles"), b = try shard(1, 3, name: "b.mbtiles"),
            c = try shard(2, 3, name: "c.mbtiles")
        let out = dir.file("out.mbtiles")
        func refusal(_ paths: [String]) throws -> String {
            try #require(throws: ShardError.self) { try ShardMerge(shardPaths: paths, outputPath: out).run() }
                .description
        }
        #expect(try refusal([a, b]) == "shard 2 of 3 missing: give all 3 shard archives")
        #expect(try refusal([a, b, b, c]) == "\(b): shard 1/3 given twice (also \(b))")
        let nearest = try shard(2, 3, name: "n.mbtiles", resampling: .nearest)
        #expect(try refusal([a, b, nearest]).hasPrefix("\(nearest): built with different options ("))
        let four = try shard(2, 4, name: "four.mbtiles")
        #expect(try refusal([a, b, four]).hasPrefix("\(four): shard of a different split ("))
        var whole = Self.request(dir.file("whole.mbtiles"), maxZoom: 10)
        whole.shard = nil
        let plain = try Self.build(whole).outputPath
        #expect(
            try refusal([plain, a])
                == """
                \(plain): not a shard archive (no tilepack:shard metadata); build shards with `tilepack build \
                --shard K/N`
                """
        )
        #expect(!fileExists(out))
    }

    /// The datum operations proj.db gave are part of a build's identity: a resume or a shard
    /// made where BETA2007.gsb was installed does not continue one made without it (the map
    /// would move by a metre between tiles), and the refusal names the file.
    @Test(.enabled(if: ProjData.haveProjData)) func datumOperationsAreInTheIdentity() throws {
        let dir = TemporaryDirectory()
        // A 64×64 DEM in DHDN / 3-degree Gauss-Kruger zone 3 (EPSG:31467), 100 m pixels.
        let source = dir.file("gk3.tif")
        var options = GeoTIFFWriter.Options(width: 64, height: 64, samplesPerPixel: 1, sampleType: .float32)
        options.geoTransform = GeoTransform([3_500_000, 100, 0, 5_500_000, 0, -100])
        options.geoKeys = GeoKeyDirectory(entries: [
            (GeoKey.gtModelType, .shorts([1])), (GeoKey.gtRasterType, .shorts([1])),
            (GeoKey.projectedCSType, .shorts([31467])),
        ])
        let writer = try GeoTIFFWriter(path: source, options: options)
        try writer.write { bx, by, block in
            let r = writer.blockRegion(blockX: bx, blockY: by)
            for j in 0..<r.height {
                for i in 0..<r.width {
                    let v = Float(200 + (r.x + i) * 3 + (r.y + j) * 2)
                    withUnsafeBytes(of: v.bitPattern.littleEndian) { b in
                        for k in 0..<4 { block[((j * options.blockWidth + i) * 4) + k] = b[k] }
                    }
                }
            }
        }
        // proj.db in its own folder (no grids beside it) and proj.db beside Debian's grids.
        let bare = dir.file("bare")
        #expect(mkdir(bare, 0o755) == 0)
        #expect(symlink(ProjData.projDB, bare + "/proj.db") == 0)
        let withGrid = try CRSRegistry(projDB: ProjData.projDB)
        let withoutGrid = try CRSRegistry(projDB: bare + "/proj.db")
        func request(_ registry: CRSRegistry) -> RegionBuild.Request {
            var r = RegionBuild.Request(sourcePath: source)
            r.outputPath = dir.file("gk3.mbtiles")
            r.codec = .png
            r.options.minZoom = 9
            r.options.maxZoom = 13
            r.options.workers = 1
            r.crsRegistry = registry
            return r
        }
        #expect(throws: InterruptingSink.Interrupted.self) { try Self.build(request(withGrid), interruptAfter: 3) }
        var resume = request(withoutGrid)
        resume.resume = true
        let error = try #require(throws: ShardError.self) { try Self.build(resume) }
        #expect(error.description.contains("built with different options ("))
        #expect(error.description.contains("BETA2007.gsb"))
        #expect(!error.description.contains("\n"))
        // The same registry resumes; the archive names the grid operation.
        var same = request(withGrid)
        same.resume = true
        let done = try Self.build(same)
        #expect(done.resumedFrom != nil && done.datumTransform == "DHDN to WGS 84 (4) [EPSG:15949, BETA2007.gsb, 1 m]")
    }

    @Test func shardArgumentsAndPartition() throws {
        #expect(BuildShard(argument: "2/4") == BuildShard(index: 2, count: 4))
        for bad in ["4/4", "-1/4", "1/0", "x", "1/2/3", "", "1/"] {
            #expect(BuildShard(argument: bad) == nil, "\(bad)")
        }
        let plan = try TilePlan(
            bounds: GeoBounds(west: 6.5, south: 45.6, east: 7.2, north: 46.1), nativeResolutionMetres: 10,
            minZoom: 8, maxZoom: 14)
        for n in [1, 2, 5, 16] {
            let p = ShardPartition(plan: plan, count: n)
            let zoomTiles = try #require(plan.range(atZoom: p.zoom)).tiles
            #expect(Set(p.order) == Set(zoomTiles) && p.order.count == zoomTiles.count)
            #expect(p.zoom == plan.maxZoom || zoomTiles.count >= 8 * n)
            // Contiguous runs in build order, every shard used, work within 25 % of an equal share.
            let owners = p.order.compactMap { p.owner[$0] }
            #expect(owners == owners.sorted() && Set(owners) == Set(0..<n))
            let work = (0..<n).map { k in
                p.tiles(of: k).reduce(0) { $0 + plan.plannedTiles(under: $1, atZoom: plan.maxZoom) }
            }
            let share = Double(work.reduce(0, +)) / Double(n)
            #expect(work.allSatisfy { abs(Double($0) - share) <= 0.25 * share }, "\(n) shards: \(work)")
            // Above the shard zoom, a tile is one shard's exactly when all its planned children are
            // (one shard builds the whole pyramid); the merge makes only the ones that span shards.
            let upper = plan.ranges.filter { $0.z < p.zoom }.flatMap(\.tiles)
            for tile in upper {
                let builders = Set(tile.children.filter(plan.contains).map { p.builder(of: $0) })
                #expect(
                    p.upperOwner[tile] == (builders.count == 1 ? builders.first ?? nil : nil), "\(n) shards: \(tile)")
            }
            if n == 1 { #expect(p.upperOwner.count == upper.count) }
        }
    }

    /// The split weighs the source's stored bytes: where the file holds more detail a shard
    /// takes fewer tiles, the estimated work evens out, and hostile byte counts do not trap.
    @Test func shardSplitFollowsStoredBytes() throws {
        let (width, height, block) = (2048, 1024, 256)
        let (across, down) = (width / block, height / block)
        // The north half compresses 4× worse than the south: four times the bytes per pixel.
        let bytes = (0..<(across * down)).map { i in UInt64(i / across < down / 2 ? 80_000 : 20_000) }
        var source = FunctionSource(width: width, height: height) { _, _, _ in 0 }
        let map = try #require(
            StoredByteMap(blockWidth: block, blockHeight: block, blocksAcross: across, blocksDown: down, bytes: bytes))
        source.storedBytes = map
        let georef = PlateCarree(
            west: 6, north: 46.5, dx: 2.0 / Double(width), dy: 1.0 / Double(height), width: width, height: height)
        let plan = try TilePlan(
            bounds: georef.lonLatBounds, nativeResolutionMetres: georef.groundResolutionMetres, minZoom: 6, maxZoom: 13)
        let estimate = try #require(ShardWorkEstimate(source: source, georeference: georef))
        #expect(
            StoredByteMap(blockWidth: block, blockHeight: block, blocksAcross: across, blocksDown: down, bytes: [1])
                == nil)
        #expect(
            ShardWorkEstimate(source: FunctionSource(width: 4, height: 4) { _, _, _ in 0 }, georeference: georef) == nil
        )

        // Per pixel, the north's blocks weigh 16× the south's (bytes per pixel, squared).
        func tile(_ lon: Double, _ lat: Double) throws -> TileID {
            try #require(WebMercator.tile(lon: lon, lat: lat, zoom: 12)).tile
        }
        let (north, south) = (estimate.detail(of: try tile(7, 46.3)), estimate.detail(of: try tile(7, 45.7)))
        #expect(south > 0 && north > 15 * south && north < 17 * south, "north \(north), south \(south)")
        #expect(estimate.detail(of: try tile(20, 46)) == 0, "off the source")

        for n in [2, 3, 4] {
            let even = ShardPartition(plan: plan, count: n),
                weighed = ShardPartition(plan: plan, count: n, work: estimate)
            #expect(
                weighed.zoom == even.zoom && weighed.order == even.order,
                "the merge's zoom and order do not depend on it")
            let weights = ShardPartition.weights(weighed.order, plan: plan, estimate: estimate)
            func spread(_ p: ShardPartition) throws -> Double {
                var work = [Int](repeating: 0, count: n)
                for (tile, weight) in zip(p.order, weights) { work[try #require(p.owner[tile])] += weight }
                let share = Double(work.reduce(0, +)) / Double(n)
                return work.map { abs(Double($0) - share) / share }.max() ?? 0
            }
            let (evenSpread, weighedSpread) = (try spread(even), try spread(weighed))
            #expect(
                weighedSpread <= 0.25 && weighedSpread < evenSpread,
                "\(n) shards: \(weighedSpread) vs \(evenSpread) by tile counts")
        }

        // Byte counts a hostile file claims saturate instead of trapping.
        source.storedBytes = StoredByteMap(
            blockWidth: block, blockHeight: block, blocksAcross: across, blocksDown: down,
            bytes: [UInt64](repeating: .max, count: across * down))
        let hostile = try #require(ShardWorkEstimate(source: source, georeference: georef))
        let p = ShardPartition(plan: plan, count: 3, work: hostile)
        #expect(Set(p.order.compactMap { p.owner[$0] }) == Set(0..<3))
    }

    @Test func tilePixelsPayloadIsLossless() throws {
        var rng = SplitMix64(seed: 7)
        let rgba = (0..<(256 * 256 * 4)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        var metres = (0..<(256 * 256)).map { Float($0) * 0.25 - 400 }
        metres[3] = .nan
        metres[5] = Float(bitPattern: 0x7FC0_1234)  // a NaN with a payload
        metres[9] = -0.0
        for pixels in [TilePixels(rgba: rgba, metres: metres), TilePixels(rgba: rgba, metres: nil)] {
            let payload = try pixels.payload()
            let back = try #require(TilePixels(payload: payload, size: 256))
            #expect(back.rgba == pixels.rgba)
            #expect(back.metres?.map(\.bitPattern) == pixels.metres?.map(\.bitPattern))
            #expect(TilePixels(payload: Array(payload.dropLast(9)), size: 256) == nil)
            #expect(TilePixels(payload: payload, size: 128) == nil)
        }
        #expect(TilePixels(payload: [1, 0, 255, 255, 255, 255], size: 256) == nil)
    }
}
