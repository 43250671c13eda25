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

        /// How these options pack elevation tiles (encoding, step, level).
        public var elevationPacker: ElevationPacker {
            ElevationPacker(encoding: elevationEncoding, step: elevationStep, level: elevationLevel)
        }
    }

    /// Counts of what went in.
    public struct Statistics: Sendable, Equatable {
        /// Calls to ``MBTilesWriter/write(_:for:)``; after ``MBTilesWriter/finish()`` of a
        /// resumed archive, the tiles in the file.
        public var tiles = 0
        /// Rows added to `images`: distinct tile contents (a tile written twice with new
        /// content counts both; finish sweeps the unreferenced one).
        public var distinctImages = 0
        /// Payload bytes stored in `images` (after deduplication).
        public var storedBytes = 0
        /// Elevation tiles written.
        public var elevationTiles = 0
        /// Tiles per zoom counted in the finished file, when it holds tiles this writer did
        /// not write (a resumed build): nil otherwise, the caller's own counts being exact.
        public var tilesPerZoom: [Int: Int]? = nil
    }

    private enum State { case open, finished, failed(String), abandoned }

    /// Where the finished archive goes.
    public let targetPath: String
    /// Where it is built; gone after ``finish()`` or failure.
    public var temporaryPath: String { replacement.temporaryPath }
    let replacement: AtomicReplacement
    /// Written at ``finish()``; may be updated until then (e.g. the bounds once known).
    public var metadata: MBTilesMetadata
    public let options: Options
    public internal(set) var statistics = Statistics()

    private var state = State.open
    /// Encodings of the elevation tiles written by this writer.
    private var elevationEncodingsUsed: Set<ElevationEncoding> = []
    /// Encodings of every elevation row in the file, read at ``finish()`` for the metadata.
    var storedElevationEncodings: Set<String> = []
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
    var extent: [Int: (Int, Int, Int, Int)] = [:]
    public let journal: Journal?
    var insertRoot: SQLiteStatement?
    var selectRoot: SQLiteStatement?
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
            throw ArchiveError(path: path, code: .invalidArgument, detail: "archive name must not be empty")
        }
        guard metadata.tileSize > 0 else {
            throw ArchiveError(
                path: path, code: .invalidArgument, detail: "tile size \(metadata.tileSize) must be positive")
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
                    """
                    INSERT OR REPLACE INTO tilepack_roots (zoom_level, tile_column, tile_row, pixels) VALUES (?, \
                    ?, ?, ?)
                    """
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
    static let companions = ["-wal", "-shm", "-journal"]

    deinit {
        switch state {
        case .finished, .abandoned: return
        case .open, .failed: closeAndRemove()
        }
    }

    /// Copies every tile and elevation row of another tilepack archive (``MBTilesWriter``'s
    /// layout) into this one; a tile already here is replaced. Used to join shard archives.
    /// - Cost: one SQL pass per table over the other file (ATTACH, `INSERT … SELECT`).
    public func copyTiles(from path: String) throws {
        try copy(from: path, tiles: true)
    }

    /// Copies the elevation rows of another tilepack archive as stored (no decoding): an
    /// archive converted to another tile format keeps its elevation byte for byte.
    /// - Cost: one SQL pass over the other file's elevation table.
    public func copyElevation(from path: String) throws {
        try copy(from: path, tiles: false)
    }

    private func copy(from path: String, tiles: Bool) throws {
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
            let copyTiles = """
                INSERT OR IGNORE INTO images (tile_id, tile_data) SELECT tile_id, tile_data FROM other.images;
                INSERT OR REPLACE INTO map (zoom_level, tile_column, tile_row, tile_id)
                    SELECT zoom_level, tile_column, tile_row, tile_id FROM other.map;
                """
            try db.inTransaction {
                try db.execute(
                    (tiles ? copyTiles : "")
                        + """
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
    /// - Cost: ``ElevationPacker/pack(_:)`` on this thread, then one insert.
    public func writeElevation(_ elevation: ElevationTile, for tile: TileID) throws {
        try checkOpen()
        let packed: PackedElevation
        do {
            packed = try options.elevationPacker.pack(elevation)
        } catch {
            throw fail(error, doing: "writing elevation for tile \(tile)")
        }
        try writeElevation(packed: packed, for: tile)
    }

    /// Stores one tile's elevation as packed by its options' ``Options/elevationPacker`` (on
    /// any thread: a quantised tile's deflate at level 9 takes ~50 ms, most of a DEM build's
    /// time while it ran on the writer's thread).
    /// - Cost: one insert; a commit every batch.
    public func writeElevation(packed: PackedElevation, for tile: TileID) throws {
        try checkOpen()
        do {
            try beginBatchIfNeeded()
            elevationEncodingsUsed.insert(packed.encoding)
            let stmt = insertElevation!
            try stmt.bind(tile.z, at: 1)
            try stmt.bind(tile.x, at: 2)
            try stmt.bind(tile.tmsY, at: 3)
            try stmt.bind(packed.encoding.rawValue, at: 4)
            try stmt.bind(packed.width, at: 5)
            try stmt.bind(packed.height, at: 6)
            try stmt.bind(packed.blob, at: 7)
            try stmt.run()
            statistics.elevationTiles += 1
            try endBatchIfFull(adding: packed.blob.count)
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
                    path: targetPath, code: .writeFailed,
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

    func checkOpen() throws {
        switch state {
        case .open: return
        case .finished:
            preconditionFailure("MBTilesWriter used after finish()")
        case .abandoned:
            throw ArchiveError(path: targetPath, code: .writeFailed, detail: "writer was abandoned")
        case .failed(let reason):
            throw ArchiveError(path: targetPath, code: .writeFailed, detail: "writer already failed: \(reason)")
        }
    }

    func beginBatchIfNeeded() throws {
        if let db = connection, !db.isInTransaction { try db.execute("BEGIN IMMEDIATE") }
    }

    /// Commits the batch when it is full or ``Options/commitInterval`` has passed. Called after
    /// each tile and each root, never inside one: a root row is committed with (or after) the
    /// tiles below it, whatever ends the batch, so the journal always matches the tiles.
    /// - Cost: one clock read per call.
    func endBatchIfFull(adding bytes: Int) throws {
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
    func fail(_ error: any Error, doing what: String) -> any Error {
        let wrapped = Self.writeFailure(error, path: targetPath, doing: what)
        state = .failed(wrapped.detail)
        closeAndRemove()
        return wrapped
    }

    static func writeFailure(_ error: any Error, path: String, doing what: String) -> ArchiveError {
        if let archive = error as? ArchiveError { return archive }
        return ArchiveError(path: path, code: .writeFailed, detail: "\(what) failed: \(error)")
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
