#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePackCore
import TilePackCodec
import TilePackEncoders
import TilePackArchive

/// `tilepack merge`: joins the N shard archives of one build (`tilepack build --shard K/N`)
/// into the archive the single-machine build makes, tile for tile.
///
/// Checks first, naming the file at fault: every file is a shard (`tilepack:shard`), all
/// come from the same source (SHA-256) and options and the same split, none is given twice
/// and none is missing. Then it copies every shard's tiles and elevation rows (SQL, no
/// decoding) and builds the tiles that span shards (those above the shard zoom no one shard
/// built whole: a few per boundary between shards and zoom) from the exact pixels the shards
/// kept (`tilepack_roots`), so the parents equal the single build's even for lossy codecs.
/// The output is written atomically like a build's.
///
/// ```swift
/// let result = try ShardMerge(shardPaths: ["a.mbtiles", "b.mbtiles"], outputPath: "region.mbtiles").run()
/// ```
public struct ShardMerge: Sendable {
    public let shardPaths: [String]
    public let outputPath: String
    /// Threads making the tiles that span shards (default: all cores).
    public var workers = ProcessorInfo.activeCount

    public init(shardPaths: [String], outputPath: String) {
        self.shardPaths = shardPaths
        self.outputPath = outputPath
    }

    /// What a merge did.
    public struct Result: Sendable {
        public let outputPath: String
        public let shards: Int
        public let shardZoom: Int
        /// The tiles that span shards, built here.
        public let levels: BuildReport
        public let archive: MBTilesWriter.Statistics
        public let seconds: Double
        /// Where ``seconds`` went: opening and checking the shards, copying their tiles
        /// (SQL), the tiles that span shards (``levels``), finishing the archive.
        public let checkSeconds: Double, copySeconds: Double, finishSeconds: Double
    }

    /// One opened shard.
    private struct Shard {
        let path: String
        let reader: MBTilesReader
        let record: ShardRecord
        let source: String
    }

    /// Checks the shards, copies their tiles and builds the zooms that span them.
    /// - Cost: one SQL copy of every shard; one parent encode per tile that spans shards,
    ///   over ``workers`` threads.
    public func run(progress: ((TileBuilder.Progress) -> Void)? = nil) throws -> Result {
        let clock = ContinuousClock()
        let start = clock.now
        let shards = try shardPaths.map(open)
        guard let reference = shards.first else {
            throw ShardError.missingShards(indices: [], count: 0)
        }
        var seen: [Int: String] = [:]
        for shard in shards {
            try check(shard, against: reference)
            if let other = seen[shard.record.index] {
                throw ShardError.duplicateShard(
                    path: shard.path, shard: "\(shard.record.index)/\(shard.record.count)", other: other)
            }
            seen[shard.record.index] = shard.path
        }
        let missing = (0..<reference.record.count).filter { seen[$0] == nil }
        guard missing.isEmpty else { throw ShardError.missingShards(indices: missing, count: reference.record.count) }

        let rows = reference.reader.metadata
        guard let bounds = reference.reader.bounds, let zooms = reference.reader.zoomRange,
            var metadata = MBTilesMetadata(rows: rows, dropping: [ShardRecord.key])
        else {
            throw ShardError.notAShard(
                path: reference.path, detail: "no name, format, bounds or zoom range in its metadata")
        }
        metadata.bounds = bounds
        let plan: TilePlan
        do {
            plan = try TilePlan(
                bounds: bounds, nativeResolutionMetres: 1, minZoom: zooms.lowerBound, maxZoom: zooms.upperBound,
                maxTiles: Int.max)
        } catch let error as BuildError {
            throw InputFileError(path: reference.path, detail: error.description)
        }
        let partition = ShardPartition(plan: plan, count: reference.record.count)
        guard partition.zoom == reference.record.zoom else {
            throw ShardError.differentSplit(
                path: reference.path, split: "shard zoom \(reference.record.zoom)",
                expected: "shard zoom \(partition.zoom) for its plan", reference: "this tilepack")
        }
        guard let choice = TileCodecChoice(metadata: rows) else {
            throw ShardError.notAShard(
                path: reference.path, detail: "unknown codec \(ErrorText.quoted(rows[MBTilesMetadata.Key.codec] ?? ""))"
            )
        }
        let level = rows[MBTilesMetadata.Key.codecLevel].flatMap(PVRTCEncoder.Level.init(rawValue:)) ?? .quality
        let keepEmpty = try Self.keepEmpty(rows[MBTilesMetadata.Key.buildOptions], path: reference.path)
        // Merged parents are encoded at the shards' λ, as their tiles were.
        let rdo = ASTCRateDistortion.recorded(inBuildOptions: rows[MBTilesMetadata.Key.buildOptions])

        let owners = try Self.owners(shards, partition: partition, plan: plan)
        let checked = clock.now

        // The shards' elevation step and levels, so the merged parents are stored as the
        // shards stored theirs (a one-machine build's archive, tile for tile).
        var writerOptions = MBTilesWriter.Options()
        writerOptions.elevationStep = rows[MBTilesMetadata.Key.elevationPrecision].flatMap(Double.init).flatMap {
            $0.isFinite && $0 > 0 ? $0 : nil
        }
        let elevationLevels = Self.elevationLevels(rows[MBTilesMetadata.Key.buildOptions])
        let writer = try MBTilesWriter(path: outputPath, metadata: metadata, options: writerOptions)
        for shard in shards { try writer.copyTiles(from: shard.path) }
        let copied = clock.now
        let tileSize = metadata.tileSize
        let levels = try TileBuilder.buildLevels(
            above: partition, plan: plan, codec: choice.codec(level: level, rdo: rdo),
            elevation: reference.record.elevation,
            categorical: rows[MBTilesMetadata.Key.valueKind] == ValueKind.class.rawValue,
            categoricalColour: rows[MBTilesMetadata.Key.colorMode] == ColorMode.classes.rawValue,
            keepEmpty: keepEmpty, workers: max(1, workers), given: Set(owners.keys),
            pixels: { tile in
                guard let owner = owners[tile] else { throw ShardError.unbuiltTile(tile: tile, count: partition.count) }
                guard let stored = try owner.reader.buildRoot(tile) else {
                    throw ShardError.missingPixels(path: owner.path, tile: tile)
                }
                guard let payload = stored else { return nil }
                guard let pixels = TilePixels(payload: payload, size: tileSize) else {
                    throw ShardError.missingPixels(path: owner.path, tile: tile)
                }
                return pixels
            },
            sink: writer, elevationLevels: elevationLevels, progress: progress)
        let built = clock.now
        try writer.finish()
        let end = clock.now
        return Result(
            outputPath: outputPath, shards: shards.count, shardZoom: partition.zoom, levels: levels,
            archive: writer.statistics, seconds: (end - start).inSeconds, checkSeconds: (checked - start).inSeconds,
            copySeconds: (copied - checked).inSeconds, finishSeconds: (end - built).inSeconds)
    }

    /// The shard that built each tile at or above the shard zoom that a shard built (every
    /// planned shard-zoom tile, and the tiles above that one shard built whole), from the
    /// tiles each shard kept pixels for: the merge takes the split from the shards rather
    /// than recomputing it. A tile two shards claim, or a planned shard-zoom tile none has,
    /// is refused.
    /// - Cost: one scan of each shard's roots.
    private static func owners(_ shards: [Shard], partition: ShardPartition, plan: TilePlan) throws -> [TileID: Shard] {
        var owners: [TileID: Shard] = [:]
        for shard in shards.sorted(by: { $0.record.index < $1.record.index }) {
            for tile in try shard.reader.buildRootTiles(upToZoom: partition.zoom) where plan.contains(tile) {
                if let other = owners[tile] {
                    throw ShardError.overlappingShards(path: shard.path, tile: tile, other: other.path)
                }
                owners[tile] = shard
            }
        }
        if let unbuilt = partition.order.first(where: { owners[$0] == nil }) {
            throw ShardError.unbuiltTile(tile: unbuilt, count: partition.count)
        }
        return owners
    }

    /// Opens a shard archive and reads its `tilepack:shard` record.
    private func open(_ path: String) throws -> Shard {
        let reader = try MBTilesReader(path: path)
        guard let text = reader.metadata[ShardRecord.key] else {
            throw ShardError.notAShard(path: path, detail: "no \(ShardRecord.key) metadata")
        }
        guard let record = try? JSONDecoder().decode(ShardRecord.self, from: Data(text.utf8)),
            BuildShard(index: record.index, count: record.count) != nil
        else {
            throw ShardError.notAShard(path: path, detail: "unreadable \(ShardRecord.key) \(ErrorText.quoted(text))")
        }
        let source = RegionBuild.sourceDigest(
            sha256: reader.metadata[MBTilesMetadata.Key.sourceSHA256],
            sources: reader.metadata[MBTilesMetadata.Key.sources])
        return Shard(path: path, reader: reader, record: record, source: source)
    }

    /// Same source, options and split as the first shard given.
    private func check(_ shard: Shard, against reference: Shard) throws {
        guard shard.source == reference.source else {
            throw ShardError.differentSource(
                path: shard.path, sha256: shard.source, expected: reference.source, reference: reference.path)
        }
        guard shard.record.optionsSHA256 == reference.record.optionsSHA256 else {
            let key = MBTilesMetadata.Key.buildOptions
            let (mine, theirs) = (shard.reader.metadata[key] ?? "", reference.reader.metadata[key] ?? "")
            throw ShardError.differentOptions(
                path: shard.path,
                options: mine == theirs ? "options sha256 \(ShardError.short(shard.record.optionsSHA256))" : mine,
                expected: mine == theirs ? "sha256 \(ShardError.short(reference.record.optionsSHA256))" : theirs,
                reference: reference.path)
        }
        guard shard.record.count == reference.record.count, shard.record.zoom == reference.record.zoom,
            shard.record.elevation == reference.record.elevation
        else {
            throw ShardError.differentSplit(
                path: shard.path, split: "\(shard.record.count) shards at zoom \(shard.record.zoom)",
                expected: "\(reference.record.count) at zoom \(reference.record.zoom)", reference: reference.path)
        }
    }

    /// `keep_empty` of `tilepack:build_options`.
    /// `--elevation` as the shards recorded it (absent: every zoom, the default).
    private static func elevationLevels(_ options: String?) -> ElevationLevels {
        struct Recorded: Decodable { let elevation: String? }
        guard let options, let recorded = try? JSONDecoder().decode(Recorded.self, from: Data(options.utf8)),
            let name = recorded.elevation
        else { return .all }
        return ElevationLevels(rawValue: name) ?? .all
    }

    private static func keepEmpty(_ options: String?, path: String) throws -> Bool {
        struct Recorded: Decodable {
            let keepEmpty: Bool
            enum CodingKeys: String, CodingKey { case keepEmpty = "keep_empty" }
        }
        guard let options, let recorded = try? JSONDecoder().decode(Recorded.self, from: Data(options.utf8)) else {
            throw ShardError.notAShard(path: path, detail: "no readable \(MBTilesMetadata.Key.buildOptions)")
        }
        return recorded.keepEmpty
    }
}
