import TilePackCore
import TilePackSQLite
import TilePackCodec
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes an MBTiles 1.3 archive atomically: tiles go into `<target>.tmp-<pid>` next to the
/// target, and only ``finish()`` renames that file over the target.
///
/// An interrupted build (a thrown error, a dropped writer, a killed process) therefore never
/// leaves a half archive under the target name, and an archive already there stays valid
/// until the instant of the rename (`rename(2)` is atomic on one file system). Readers that
/// had the old archive open keep reading the old file.
///
/// Tiles are stored once per distinct content, in mb-util's layout: `images` keyed by the
/// lowercase hex SHA-256 of the bytes (swift-crypto; ~1.5 GB/s, negligible next to SQLite),
/// `map` from (zoom, column, TMS row) to that key, and a `tiles` view joining them.
/// Inserts are batched, ``Options/batchTiles`` tiles or ``Options/batchBytes`` bytes to a
/// transaction, and a batch open for ``Options/commitInterval`` commits at its next tile or
/// root, through prepared statements reused for every tile.
///
/// ```swift
/// let writer = try MBTilesWriter(path: "region.mbtiles",
///                                metadata: MBTilesMetadata(name: "Alps", format: "png"))
/// try writer.write(pngBytes, for: TileID(z: 3, x: 4, y: 2)!)
/// try writer.finish()
/// ```
///
/// Not thread-safe: one thread (e.g. the pipeline's collector) writes.
public final class MBTilesWriter {
    /// Batching and elevation settings.
    public struct Options: Sendable {
        /// Tiles per transaction; larger batches amortise the commit (~1 fsync-free WAL append).
        public var batchTiles: Int = 1_000
        /// Payload bytes per transaction, bounding the WAL file and memory during a batch.
        public var batchBytes: Int = 32 << 20
        /// A batch also commits at its next tile or root once this long has passed since the
        /// last commit (nil: by count and bytes only). So a slow build (a quality codec, ~0.1 s
        /// a tile) still commits about once a second, and a kill loses at most that much of the
        /// journal, not up to ``batchTiles`` tiles. A commit is a WAL append without fsync
        /// (`synchronous=NORMAL`): ~0.1 ms.
        public var commitInterval: Duration? = .seconds(1)
        /// How elevation tiles are packed; nil (the default) packs each tile both Float32 ways
        /// and keeps the smaller (twice the deflate time, 12–50 % smaller on measured DEMs),
        /// or quantised when ``elevationStep`` is set. A fixed ``ElevationEncoding/quantizedPlanarDeflate``
        /// needs ``elevationStep``.
        public var elevationEncoding: ElevationEncoding? = nil
        /// Quantisation step (metres, or the band's unit) for ``ElevationEncoding/quantizedPlanarDeflate``:
        /// when set (and ``elevationEncoding`` is nil or quantised), every tile is stored
        /// quantised to it, except a tile the quantiser cannot hold (infinite samples,
        /// beyond ±2³⁰ steps, several NaN bit patterns), which falls back to the smaller
        /// Float32 encoding. Recorded as `tilepack:elevation_precision`; the archive then
        /// says `tilepack:format_version` 2.
        public var elevationStep: Double? = nil
        /// zlib level for elevation tiles.
        public var elevationLevel: Int32 = 6
        /// SQLite page cache (`PRAGMA cache_size`); nil keeps SQLite's default (2 MiB). Dirty
        /// pages beyond it spill to the WAL, so it bounds the writer's memory during a batch.
        public var cacheBytes: Int? = nil

        public init() {}
    }

    /// Counts of what went in.
    public struct Statistics: Sendable, Equatable {
        /// Calls to ``MBTilesWriter/write(_:for:)``.
        public var tiles = 0
        /// Rows added to `images`: distinct tile contents (a tile written twice with new
        /// content counts both; finish sweeps the unreferenced one).
        public var distinctImages = 0
        /// Payload bytes stored in `images` (after deduplication).
        public var storedBytes = 0
        /// Elevation tiles written.
        public var elevationTiles = 0
    }

    /// A journal of finished work kept in the temporary archive, so a build killed at any
    /// moment (SIGKILL, power loss) can resume from its last committed batch.
    ///
    /// Two tables live beside the MBTiles ones while the archive is built: `tilepack_build`
    /// (name, value: the ``identity`` of the build) and `tilepack_roots` (a tile on the map
    /// grid and an opaque `pixels` blob the caller records once everything below that tile is
    /// written: ``recordRoot(_:payload:)``). A root row goes into the same transaction as the
    /// tiles written just before it, so a committed root means a committed subtree.
    /// ``finish()`` drops both tables (keeping the root rows at and above ``keptRootZoom`` when set)
    /// and hands the freed pages back to the file system (incremental auto-vacuum).
    public struct Journal: Sendable, Equatable {
        /// What the build is (e.g. source digest and options). The caller compares it with an
        /// interrupted archive's before resuming (``Interrupted/identity``).
        public var identity: [String: String]
        /// Root rows at this zoom and above (lower zoom numbers) stay in the finished archive:
        /// shard archives keep the pixels of their shard-zoom tiles and of the tiles above
        /// they built, for the merge. Nil drops them all.
        public var keptRootZoom: Int?

        public init(identity: [String: String], keptRootZoom: Int? = nil) {
            self.identity = identity
            self.keptRootZoom = keptRootZoom
        }
    }

    /// A temporary archive of this target left by a writer that is gone (see
    /// ``MBTilesWriter/interrupted(target:)``).
    public struct Interrupted: Sendable, Equatable {
        public let path: String
        /// Its journal's identity; nil when it has none (killed while being created, or
        /// written without a journal): such a file cannot be resumed.
        public let identity: [String: String]?
        /// Roots recorded as finished.
        public let finishedRoots: Int
    }

    private enum State { case open, finished, failed(String), abandoned }

    /// Where the finished archive goes.
    public let targetPath: String
    /// Where it is built; gone after ``finish()`` or failure.
    public var temporaryPath: String { replacement.temporaryPath }
    private let replacement: AtomicReplacement
    /// Written at ``finish()``; may be updated until then (e.g. the bounds once known).
    public var metadata: MBTilesMetadata
    public let options: Options
    public private(set) var statistics = Statistics()

    private var state = State.open
    /// Encodings of the elevation tiles written by this writer.
    private var elevationEncodingsUsed: Set<ElevationEncoding> = []
    /// Encodings of every elevation row in the file, read at ``finish()`` for the metadata.
    private var storedElevationEncodings: Set<String> = []
    private var connection: SQLiteConnection?
    private var insertImage: SQLiteStatement?
    private var insertMap: SQLiteStatement?
    private var insertElevation: SQLiteStatement?
    private var pendingTiles = 0
    private var pendingBytes = 0
    /// When the last batch committed (or the writer opened): ``Options/commitInterval`` counts from it.
    private var lastCommit = ContinuousClock.now
    /// Batches committed so far (by count, bytes or time; not the schema's or finish's).
    public private(set) var commits = 0
    /// Per zoom: min x, max x, min y, max y of the tiles written (for default bounds).
    private var extent: [Int: (Int, Int, Int, Int)] = [:]
    public let journal: Journal?
    private var insertRoot: SQLiteStatement?
    private var selectRoot: SQLiteStatement?
    /// Roots an interrupted writer recorded as finished (empty for a fresh archive).
    public private(set) var finishedRoots: Set<TileID> = []
    /// The file holds tiles this writer did not count (a resumed build, copied archives):
    /// ``statistics`` and the extent are recounted from the file at ``finish()``.
    private var recountAtFinish = false
    /// The interrupted archive this writer continued, if any.
    public let resumedFrom: String?

    /// Creates the temporary archive with its schema, or continues an interrupted one.
    ///
    /// Fresh (`resuming` nil): temporary files of this target left by writers that are gone
    /// (``interrupted(target:)``) are deleted first; the target is not touched. With a
    /// `journal`, the file gets the journal tables and `identity` in the schema transaction.
    /// Resuming: `resuming` (from ``interrupted(target:)``, with an identity the caller
    /// accepted) is checkpointed, renamed to this writer's temporary name and continued;
    /// its tiles and ``finishedRoots`` stay, and the other abandoned files are deleted.
    /// - Cost: resuming reads the roots' keys and one checkpoint of the old WAL.
    public init(
        path: String, metadata: MBTilesMetadata, options: Options = Options(),
        journal: Journal? = nil, resuming: Interrupted? = nil
    ) throws {
        guard !metadata.name.isEmpty else {
            throw ArchiveError(path: path, problem: .invalidArgument, detail: "archive name must not be empty")
        }
        guard metadata.tileSize > 0 else {
            throw ArchiveError(
                path: path, problem: .invalidArgument, detail: "tile size \(metadata.tileSize) must be positive")
        }
        precondition(options.batchTiles > 0 && options.batchBytes > 0, "batch limits must be positive")
        precondition(options.commitInterval.map { $0 >= .zero } ?? true, "commit interval must not be negative")
        precondition(resuming == nil || journal != nil, "resuming needs a journal")
        self.targetPath = path
        self.replacement = AtomicReplacement(targetPath: path, companionSuffixes: Self.companions)
        self.metadata = metadata
        self.options = options
        self.journal = journal
        self.resumedFrom = resuming?.path
        for stale in replacement.abandonedTemporaries() where stale != resuming?.path && stale != temporaryPath {
            replacement.remove(abandoned: stale)
        }
        if let resuming {
            try adopt(resuming)
        } else {
            replacement.removeTemporary()
        }
        do {
            let db = try SQLiteConnection(path: temporaryPath, mode: .readWriteCreate)
            connection = db
            if let bytes = options.cacheBytes { try db.execute("PRAGMA cache_size = -\(max(1, bytes / 1024))") }
            if resuming == nil {
                if journal != nil {
                    // Opening in WAL mode already wrote the header: VACUUM (of an empty file,
                    // instant) makes the setting take, so finish can return the journal's pages.
                    try db.execute("PRAGMA auto_vacuum = INCREMENTAL")
                    try db.execute("VACUUM")
                }
                try db.execute("PRAGMA application_id = \(MBTilesSchema.applicationID)")
                _ = try db.inTransaction {
                    try db.execute(MBTilesSchema.create)
                    if let journal {
                        try db.execute(MBTilesSchema.createJournal)
                        let row = try db.prepare("INSERT INTO tilepack_build (name, value) VALUES (?, ?)")
                        for (name, value) in journal.identity.sorted(by: { $0.key < $1.key }) {
                            try row.bind(name, at: 1)
                            try row.bind(value, at: 2)
                            try row.run()
                        }
                    }
                }
            }
            insertImage = try db.prepare("INSERT OR IGNORE INTO images (tile_id, tile_data) VALUES (?, ?)")
            insertMap = try db.prepare(
                "INSERT OR REPLACE INTO map (zoom_level, tile_column, tile_row, tile_id) VALUES (?, ?, ?, ?)")
            insertElevation = try db.prepare(
                """
                INSERT OR REPLACE INTO elevation (zoom_level, tile_column, tile_row, encoding, width, height, data)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """)
            if journal != nil {
                insertRoot = try db.prepare(
                    "INSERT OR REPLACE INTO tilepack_roots (zoom_level, tile_column, tile_row, pixels) VALUES (?, ?, ?, ?)"
                )
                selectRoot = try db.prepare(
                    "SELECT pixels FROM tilepack_roots WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?")
            }
            if resuming != nil {
                finishedRoots = try Self.rootKeys(db)
                recountAtFinish = true
            }
        } catch {
            closeAndRemove()
            throw Self.writeFailure(
                error, path: temporaryPath, doing: resuming == nil ? "creating the archive" : "resuming the archive")
        }
    }

    /// SQLite's files beside a database.
    private static let companions = ["-wal", "-shm", "-journal"]

    /// Temporary archives of `target` whose writers are gone (killed, or the machine lost
    /// power), newest first, each with its journal's identity when it has one.
    /// - Cost: a directory listing; opening each candidate (recovering its WAL) and reading
    ///   its `tilepack_build` rows and root count.
    public static func interrupted(target: String) -> [Interrupted] {
        AtomicReplacement(targetPath: target, companionSuffixes: companions).abandonedTemporaries().map { path in
            guard access(path, F_OK) == 0, let db = try? SQLiteConnection(path: path, mode: .readWriteCreate),
                let rows = try? db.prepare("SELECT name, value FROM tilepack_build")
            else {
                return Interrupted(path: path, identity: nil, finishedRoots: 0)
            }
            var identity: [String: String] = [:]
            while (try? rows.step()) == true {
                if let name = rows.string(at: 0) { identity[name] = rows.string(at: 1) ?? "" }
            }
            let count =
                (try? db.prepare("SELECT count(*) FROM tilepack_roots")).flatMap { s in
                    (try? s.step()) == true ? s.int(at: 0) : nil
                } ?? 0
            return Interrupted(path: path, identity: identity.isEmpty ? nil : identity, finishedRoots: count)
        }
    }

    /// Moves an interrupted archive to this writer's temporary name: its WAL is checkpointed
    /// into the file first, so the file alone holds every committed batch.
    private func adopt(_ interrupted: Interrupted) throws {
        do {
            let old = try SQLiteConnection(path: interrupted.path, mode: .readWriteCreate)
            try old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            throw Self.writeFailure(error, path: interrupted.path, doing: "recovering the interrupted archive")
        }
        guard interrupted.path != temporaryPath else { return }
        replacement.removeTemporary()
        guard rename(interrupted.path, temporaryPath) == 0 else {
            throw ArchiveError(
                path: interrupted.path, problem: .writeFailed,
                detail: "cannot move to \(temporaryPath): \(AtomicReplacement.message(errno))")
        }
        for suffix in Self.companions { unlink(interrupted.path + suffix) }
    }

    private static func rootKeys(_ db: SQLiteConnection) throws -> Set<TileID> {
        let rows = try db.prepare("SELECT zoom_level, tile_column, tile_row FROM tilepack_roots")
        var keys = Set<TileID>()
        while try rows.step() {
            let z = rows.int(at: 0)
            guard (0...TileID.maxZoom).contains(z) else { continue }
            if let id = TileID(z: z, x: rows.int(at: 1), tmsY: rows.int(at: 2)) { keys.insert(id) }
        }
        return keys
    }

    deinit {
        switch state {
        case .finished, .abandoned: return
        case .open, .failed: closeAndRemove()
        }
    }

    /// Records that everything below `tile` (and `tile`) is written, with the caller's
    /// `payload` for it (nil: an empty tile), in the current batch. Needs a ``Journal``.
    /// - Cost: one indexed insert of the payload.
    public func recordRoot(_ tile: TileID, payload: [UInt8]?) throws {
        try checkOpen()
        guard let stmt = insertRoot else { preconditionFailure("recordRoot on a writer without a journal") }
        do {
            try beginBatchIfNeeded()
            try stmt.bind(tile.z, at: 1)
            try stmt.bind(tile.x, at: 2)
            try stmt.bind(tile.tmsY, at: 3)
            if let payload { try stmt.bind(payload, at: 4) } else { try stmt.bindNull(at: 4) }
            try stmt.run()
            try endBatchIfFull(adding: payload?.count ?? 0)
        } catch {
            throw fail(error, doing: "recording finished tile \(tile)")
        }
    }

    /// The payload recorded for a root: `.some(nil)` for an empty tile, nil when none is recorded.
    public func rootPayload(_ tile: TileID) throws -> [UInt8]?? {
        try checkOpen()
        guard let stmt = selectRoot else { preconditionFailure("rootPayload on a writer without a journal") }
        do {
            try stmt.bind(tile.z, at: 1)
            try stmt.bind(tile.x, at: 2)
            try stmt.bind(tile.tmsY, at: 3)
            defer { stmt.reset() }
            guard try stmt.step() else { return nil }
            return .some(stmt.isNull(at: 0) ? nil : stmt.bytes(at: 0) ?? [])
        } catch {
            throw fail(error, doing: "reading finished tile \(tile)")
        }
    }

    /// Copies every tile and elevation row of another tilepack archive (``MBTilesWriter``'s
    /// layout) into this one; a tile already here is replaced. Used to join shard archives.
    /// - Cost: one SQL pass per table over the other file (ATTACH, `INSERT … SELECT`).
    public func copyTiles(from path: String) throws {
        try checkOpen()
        do {
            guard let db = connection else { preconditionFailure("open writer without a connection") }
            if db.isInTransaction { try db.execute("COMMIT") }
            pendingTiles = 0
            pendingBytes = 0
            let attach = try db.prepare("ATTACH DATABASE ? AS other")
            try attach.bind(path, at: 1)
            try attach.run()
            defer { try? db.execute("DETACH DATABASE other") }
            try db.inTransaction {
                try db.execute(
                    """
                    INSERT OR IGNORE INTO images (tile_id, tile_data) SELECT tile_id, tile_data FROM other.images;
                    INSERT OR REPLACE INTO map (zoom_level, tile_column, tile_row, tile_id)
                        SELECT zoom_level, tile_column, tile_row, tile_id FROM other.map;
                    INSERT OR REPLACE INTO elevation (zoom_level, tile_column, tile_row, encoding, width, height, data)
                        SELECT zoom_level, tile_column, tile_row, encoding, width, height, data FROM other.elevation;
                    """)
            }
            recountAtFinish = true
        } catch let error as SQLiteError {
            throw fail(
                ArchiveError.reading(error, path: path, doing: "copying tiles into \(targetPath)"), doing: "copying")
        } catch {
            throw fail(error, doing: "copying tiles from \(path)")
        }
    }

    /// Stops as a killed process would: the open batch is rolled back, the temporary file
    /// stays for ``interrupted(target:)``. Every later call throws. (Tests of resuming.)
    package func abandon() {
        releaseConnection()
        state = .abandoned
    }

    /// Stores one tile's payload. A second write for the same tile replaces the first.
    /// - Cost: one SHA-256 of `data` plus two indexed inserts; a commit every batch.
    /// - Throws: the SQLite failure wrapped in ``ArchiveError``; the writer is then failed,
    ///   its temporary file removed, and every later call throws.
    public func write(_ data: [UInt8], for tile: TileID) throws {
        try checkOpen()
        do {
            try beginBatchIfNeeded()
            let key = Self.contentKey(data)
            let image = insertImage!, map = insertMap!
            try image.bind(key, at: 1)
            try image.bind(data, at: 2)
            try image.run()
            if connection!.changes > 0 {
                statistics.distinctImages += 1
                statistics.storedBytes += data.count
            }
            try map.bind(tile.z, at: 1)
            try map.bind(tile.x, at: 2)
            try map.bind(tile.tmsY, at: 3)
            try map.bind(key, at: 4)
            try map.run()
            noteExtent(tile)
            statistics.tiles += 1
            try endBatchIfFull(adding: data.count)
        } catch {
            throw fail(error, doing: "writing tile \(tile)")
        }
    }

    /// Stores the elevation grid of one tile, packed with ``Options/elevationEncoding``.
    public func writeElevation(_ elevation: ElevationTile, for tile: TileID) throws {
        try checkOpen()
        do {
            try beginBatchIfNeeded()
            let encoding: ElevationEncoding
            let blob: [UInt8]
            if let fixed = options.elevationEncoding, fixed != .quantizedPlanarDeflate {
                encoding = fixed
                blob = try fixed.encode(elevation, level: options.elevationLevel)
            } else {
                (encoding, blob) = try ElevationEncoding.pack(
                    elevation, step: options.elevationStep, level: options.elevationLevel)
            }
            elevationEncodingsUsed.insert(encoding)
            let stmt = insertElevation!
            try stmt.bind(tile.z, at: 1)
            try stmt.bind(tile.x, at: 2)
            try stmt.bind(tile.tmsY, at: 3)
            try stmt.bind(encoding.rawValue, at: 4)
            try stmt.bind(elevation.width, at: 5)
            try stmt.bind(elevation.height, at: 6)
            try stmt.bind(blob, at: 7)
            try stmt.run()
            statistics.elevationTiles += 1
            try endBatchIfFull(adding: blob.count)
        } catch {
            throw fail(error, doing: "writing elevation for tile \(tile)")
        }
    }

    /// Commits the last batch, writes the metadata, switches the file to a self-contained
    /// rollback journal (so it opens read-only from read-only media without `-wal`/`-shm`
    /// files), closes it and renames it over the target.
    /// - Cost: one WAL checkpoint (rewrites the batch pages into the file) and one rename.
    public func finish() throws {
        try checkOpen()
        do {
            do {  // scoped so that `db` is released before the rename below
                guard let db = connection else { preconditionFailure("open writer without a connection") }
                if db.isInTransaction { try db.execute("COMMIT") }
                try db.inTransaction {
                    // A tile written twice leaves its first payload unreferenced; sweep such
                    // orphans (one pass over the two key indexes, well under a second per 100k tiles).
                    try db.execute("DELETE FROM images WHERE tile_id NOT IN (SELECT tile_id FROM map)")
                    if let journal {
                        if let z = journal.keptRootZoom {
                            try db.execute("DELETE FROM tilepack_roots WHERE zoom_level > \(z)")
                        } else {
                            try db.execute("DROP TABLE tilepack_roots")
                        }
                        try db.execute("DROP TABLE tilepack_build")
                    }
                    if recountAtFinish { try recount(db) }
                    // From the file, not this process's writes: a resumed build or a merge
                    // holds rows it did not encode.
                    let distinct = try db.prepare("SELECT DISTINCT encoding FROM elevation")
                    var stored: Set<String> = []
                    while try distinct.step() { stored.insert(distinct.string(at: 0) ?? "") }
                    storedElevationEncodings = stored
                    let insert = try db.prepare("INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)")
                    for (name, value) in resolvedMetadataRows() {
                        try insert.bind(name, at: 1)
                        try insert.bind(value, at: 2)
                        try insert.run()
                    }
                }
                if journal != nil { try db.execute("PRAGMA incremental_vacuum") }
                try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                try db.execute("PRAGMA journal_mode = DELETE")
            }
            insertImage = nil
            insertMap = nil
            insertElevation = nil
            insertRoot = nil
            selectRoot = nil
            connection = nil  // last reference: closes the file before the rename
            if let code = replacement.commit() {
                throw ArchiveError(
                    path: targetPath, problem: .writeFailed,
                    detail: "cannot move \(temporaryPath) into place: \(AtomicReplacement.message(code))")
            }
            state = .finished
        } catch {
            throw fail(error, doing: "finishing the archive")
        }
    }

    // MARK: - Internals

    /// The `images.tile_id` of a payload: lowercase hex SHA-256.
    static func contentKey(_ data: [UInt8]) -> String {
        var hasher = SHA256()
        data.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        return hasher.finalize().hexString
    }

    /// Widens the per-zoom extent that default bounds and zoom range come from.
    private func noteExtent(_ tile: TileID) {
        guard let e = extent[tile.z] else {
            extent[tile.z] = (tile.x, tile.x, tile.y, tile.y)
            return
        }
        extent[tile.z] = (min(e.0, tile.x), max(e.1, tile.x), min(e.2, tile.y), max(e.3, tile.y))
    }

    /// Statistics and extent from the file itself (after resuming or copying).
    private func recount(_ db: SQLiteConnection) throws {
        func scalar(_ sql: String) throws -> Int {
            let s = try db.prepare(sql)
            return try s.step() ? s.int(at: 0) : 0
        }
        statistics.tiles = try scalar("SELECT count(*) FROM map")
        statistics.distinctImages = try scalar("SELECT count(*) FROM images")
        statistics.storedBytes = try scalar("SELECT coalesce(sum(length(tile_data)), 0) FROM images")
        statistics.elevationTiles = try scalar("SELECT count(*) FROM elevation")
        extent = [:]
        let rows = try db.prepare(
            "SELECT zoom_level, min(tile_column), max(tile_column), min(tile_row), max(tile_row) FROM map GROUP BY zoom_level"
        )
        while try rows.step() {
            let z = rows.int(at: 0)
            guard (0...TileID.maxZoom).contains(z) else { continue }
            let top = (1 << z) - 1
            extent[z] = (rows.int(at: 1), rows.int(at: 2), top - rows.int(at: 4), top - rows.int(at: 3))
        }
    }

    private func resolvedMetadataRows() -> [(String, String)] {
        let zooms = extent.keys.sorted()
        let minZoom = metadata.minZoom ?? zooms.first ?? 0
        let maxZoom = metadata.maxZoom ?? zooms.last ?? 0
        let bounds =
            metadata.bounds
            ?? {
                guard let z = zooms.last, let e = extent[z] else {
                    return GeoBounds.webMercatorWorld
                }
                let nw = WebMercator.bounds(of: TileID(unchecked: z, e.0, e.2))
                let se = WebMercator.bounds(of: TileID(unchecked: z, e.1, e.3))
                return GeoBounds(west: nw.west, south: se.south, east: se.east, north: nw.north)
            }()
        let center =
            metadata.center
            ?? MBTilesMetadata.Center(
                lon: (bounds.west + bounds.east) / 2, lat: (bounds.south + bounds.north) / 2, zoom: minZoom)
        let quantized = ElevationEncoding.quantizedPlanarDeflate.rawValue
        let hasQuantized = storedElevationEncodings.contains(quantized)
        let encodingName: String
        if let fixed = options.elevationEncoding,
            fixed != .quantizedPlanarDeflate || storedElevationEncodings == [quantized]
        {
            encodingName = fixed.rawValue
        } else if options.elevationStep != nil, storedElevationEncodings == [quantized] {
            encodingName = quantized
        } else {
            encodingName = "per-tile"
        }
        return metadata.rows(
            bounds: bounds, center: center, minZoom: minZoom, maxZoom: maxZoom,
            elevationTiles: statistics.elevationTiles > 0, elevationEncoding: encodingName,
            formatVersion: storedElevationEncodings.compactMap(ElevationEncoding.init(rawValue:)).map(\.formatVersion)
                .max() ?? 1,
            elevationPrecision: hasQuantized ? options.elevationStep.map(MBTilesMetadata.precisionText) : nil)
    }

    private func checkOpen() throws {
        switch state {
        case .open: return
        case .finished:
            preconditionFailure("MBTilesWriter used after finish()")
        case .abandoned:
            throw ArchiveError(path: targetPath, problem: .writeFailed, detail: "writer was abandoned")
        case .failed(let reason):
            throw ArchiveError(path: targetPath, problem: .writeFailed, detail: "writer already failed: \(reason)")
        }
    }

    private func beginBatchIfNeeded() throws {
        if let db = connection, !db.isInTransaction { try db.execute("BEGIN IMMEDIATE") }
    }

    /// Commits the batch when it is full or ``Options/commitInterval`` has passed. Called after
    /// each tile and each root, never inside one: a root row is committed with (or after) the
    /// tiles below it, whatever ends the batch, so the journal always matches the tiles.
    /// - Cost: one clock read per call.
    private func endBatchIfFull(adding bytes: Int) throws {
        pendingTiles += 1
        pendingBytes += bytes
        let now = ContinuousClock.now
        let due = options.commitInterval.map { now - lastCommit >= $0 } ?? false
        if pendingTiles >= options.batchTiles || pendingBytes >= options.batchBytes || due {
            try connection?.execute("COMMIT")
            pendingTiles = 0
            pendingBytes = 0
            lastCommit = now
            commits += 1
        }
    }

    /// Puts the writer in the failed state: rolls back, closes and deletes the temporary file.
    private func fail(_ error: any Error, doing what: String) -> any Error {
        let wrapped = Self.writeFailure(error, path: targetPath, doing: what)
        state = .failed(wrapped.detail)
        closeAndRemove()
        return wrapped
    }

    private static func writeFailure(_ error: any Error, path: String, doing what: String) -> ArchiveError {
        if let archive = error as? ArchiveError { return archive }
        return ArchiveError(path: path, problem: .writeFailed, detail: "\(what) failed: \(error)")
    }

    private func closeAndRemove() {
        connection?.rollbackQuietly()
        releaseConnection()
        replacement.removeTemporary()
    }

    /// Finalises the prepared statements, then closes the connection (SQLite refuses to close
    /// a connection whose statements are alive). An open batch is rolled back by the close.
    private func releaseConnection() {
        insertImage = nil
        insertMap = nil
        insertElevation = nil
        insertRoot = nil
        selectRoot = nil
        connection = nil
    }
}

@available(*, unavailable)
extension MBTilesWriter: Sendable {}
