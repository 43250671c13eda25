import TilePackCore
import TilePackSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a pack (docs/REGIONS.md, "The pack file") atomically, as ``MBTilesWriter`` does:
/// everything goes into `<target>.tmp-<pid>` next to the target, and only ``finish()``
/// renames it over the target, so no half pack ever appears under the target name.
///
/// Contents are stored once per distinct hash (`images`, `tilepack_elevation`); each
/// `write…` call adds or replaces one index row. Rows are batched into transactions of
/// `batchRows` rows or 32 MiB. ``finish()`` sweeps contents no row references (a tile written
/// twice), writes the metadata and returns the counts and the tile index digest. The digest
/// depends only on the layers and the rows, never on write order or file layout, so writing
/// the same tiles twice gives the same digest (the file bytes may differ).
///
/// Not thread-safe: one thread writes.
package final class PackWriter {
    private enum State { case open, finished, failed(String), abandoned }

    /// Where the finished pack goes.
    public let targetPath: String
    public var temporaryPath: String { replacement.temporaryPath }
    public let layers: [PackLayerInfo]
    /// The metadata rows ``finish()`` writes: the caller's, with `tilepack_pack_format`, and
    /// layer 0's `format`, `tilepack:codec`, `tilepack:tile_size` and
    /// `tilepack:payload_compression` where the caller gave none (so MBTiles readers decode
    /// the `tiles` view, which shows layer 0).
    public let metadata: [String: String]
    private let replacement: AtomicReplacement
    private let batchRows: Int
    private let batchBytes = 32 << 20
    private var state = State.open
    private var connection: SQLiteConnection?
    private var insertImage: SQLiteStatement?
    private var insertElevation: SQLiteStatement?
    private var insertIndex: SQLiteStatement?
    private var pendingRows = 0
    private var pendingBytes = 0

    private static let companions = ["-wal", "-shm", "-journal"]

    /// Creates the temporary pack with its schema and layers. Stale temporary files of this
    /// target left by writers that are gone are removed; the target is not touched.
    /// - Throws: ``ArchiveError`` (invalidArgument) for no layers, more than
    ///   ``PackSchema/maxLayers``, an empty or repeated archive name; (writeFailed) when the
    ///   file cannot be created.
    public init(path: String, layers: [PackLayerInfo], metadata: [String: String], batchRows: Int = 4_096) throws {
        guard !layers.isEmpty, layers.count <= PackSchema.maxLayers else {
            throw ArchiveError(
                path: path, code: .invalidArgument,
                detail: "a pack needs 1…\(PackSchema.maxLayers) layers, got \(layers.count)")
        }
        var names = Set<String>()
        for layer in layers {
            guard !layer.archive.isEmpty, names.insert(layer.archive).inserted else {
                throw ArchiveError(
                    path: path, code: .invalidArgument,
                    detail:
                        "pack layer archive names must be non-empty and distinct (\(ErrorText.quoted(layer.archive)))")
            }
        }
        precondition(batchRows > 0, "batchRows must be positive")
        self.targetPath = path
        self.layers = layers
        self.batchRows = batchRows
        var rows = metadata
        for key in [
            MBTilesMetadata.Key.format, MBTilesMetadata.Key.codec, MBTilesMetadata.Key.tileSize,
            MBTilesMetadata.Key.payloadCompression,
        ] where rows[key] == nil {
            rows[key] = layers[0].metadata[key]
        }
        rows[PackSchema.Key.packFormat] = String(PackSchema.readerVersion)
        self.metadata = rows
        self.replacement = AtomicReplacement(targetPath: path, companionSuffixes: Self.companions)
        for stale in replacement.abandonedTemporaries() where stale != temporaryPath {
            replacement.remove(abandoned: stale)
        }
        replacement.removeTemporary()
        do {
            let db = try SQLiteConnection(path: temporaryPath, mode: .readWriteCreate)
            connection = db
            try Self.createSchema(db, delta: false)
            try db.inTransaction {
                let insert = try db.prepare(
                    "INSERT INTO tilepack_pack_layers (layer, archive, metadata) VALUES (?, ?, ?)")
                for (number, layer) in layers.enumerated() {
                    try insert.bind(number, at: 1)
                    try insert.bind(layer.archive, at: 2)
                    try insert.bind(layer.metadataText, at: 3)
                    try insert.run()
                }
            }
            try prepareStatements(db)
        } catch {
            closeAndRemove()
            throw Self.writeFailure(error, path: path, doing: "creating the pack")
        }
    }

    deinit {
        switch state {
        case .finished, .abandoned: return
        case .open, .failed: closeAndRemove()
        }
    }

    /// Stores display tile `tile` of layer `layer` (replacing an earlier write of it).
    /// - Cost: one SHA-256 of `bytes` and two indexed inserts; a commit every batch.
    /// - Throws: ``ArchiveError`` (invalidArgument) for a layer the pack lacks; an SQLite
    ///   failure fails the writer (temporary file removed, later calls throw).
    public func writeTile(_ bytes: [UInt8], layer: Int, tile: TileID) throws {
        try checkOpen()
        try checkLayer(layer, tile: tile)
        let hex = bytes.withUnsafeBytes { PackSchema.tileHash($0) }.hexString
        do {
            try beginBatchIfNeeded()
            guard let image = insertImage else { preconditionFailure("open writer without statements") }
            try image.bind(hex, at: 1)
            try image.bind(bytes, at: 2)
            try image.run()
            try addIndexRow(layer: layer, kind: .tile, tile: tile, hex: hex)
            try endBatchIfFull(adding: bytes.count)
        } catch {
            throw fail(error, doing: "writing tile \(tile) of layer \(layer)")
        }
    }

    /// Encodes `tile` with `encoding` (zlib level 6) and stores it as layer `layer`'s
    /// elevation at `id`. ``ElevationEncoding/quantizedPlanarDeflate`` takes `step` (the
    /// master's, from its blob) and falls back to Float32 for a tile it cannot hold.
    /// - Cost: one encode (O(width × height) and a deflate), then as
    /// ``writeElevationRow(encoding:width:height:data:layer:id:)``.
    public func writeElevation(
        _ tile: ElevationTile, encoding: ElevationEncoding, step: Double? = nil,
        layer: Int, id: TileID
    ) throws {
        try checkOpen()
        let data: [UInt8]
        var encoding = encoding
        do {
            if encoding == .quantizedPlanarDeflate {
                (encoding, data) = try ElevationEncoding.pack(tile, step: step)
            } else {
                data = try encoding.encode(tile)
            }
        } catch {
            throw fail(error, doing: "encoding elevation \(id) of layer \(layer)")
        }
        try writeElevationRow(
            encoding: encoding.rawValue, width: tile.width, height: tile.height, data: data, layer: layer, id: id)
    }

    /// Stores an elevation row as it is stored elsewhere (a master archive's `elevation` row),
    /// without decoding it.
    /// - Throws: ``ArchiveError`` (invalidArgument) for an unknown encoding, sides outside
    ///   1…``ElevationTile/maxSide`` or a layer the pack lacks.
    public func writeElevationRow(
        encoding: String, width: Int, height: Int, data: [UInt8], layer: Int, id: TileID
    ) throws {
        try checkOpen()
        try checkLayer(layer, tile: id)
        // A known encoding has no 0 byte, which keeps the row hash unambiguous.
        guard ElevationEncoding(rawValue: encoding) != nil else {
            throw ArchiveError(
                path: targetPath, code: .invalidArgument,
                detail: "elevation \(id) of layer \(layer) has unknown encoding \(ErrorText.quoted(encoding))")
        }
        guard (1...ElevationTile.maxSide).contains(width), (1...ElevationTile.maxSide).contains(height),
            let hash = data.withUnsafeBytes({
                PackSchema.elevationHash(encoding: encoding, width: width, height: height, data: $0)
            })
        else {
            throw ArchiveError(
                path: targetPath, code: .invalidArgument,
                detail: "elevation \(id) of layer \(layer) is \(width)×\(height), outside 1…\(ElevationTile.maxSide)")
        }
        let hex = hash.hexString
        do {
            try beginBatchIfNeeded()
            guard let stmt = insertElevation else { preconditionFailure("open writer without statements") }
            try stmt.bind(hex, at: 1)
            try stmt.bind(encoding, at: 2)
            try stmt.bind(width, at: 3)
            try stmt.bind(height, at: 4)
            try stmt.bind(data, at: 5)
            try stmt.run()
            try addIndexRow(layer: layer, kind: .elevation, tile: id, hex: hex)
            try endBatchIfFull(adding: data.count)
        } catch {
            throw fail(error, doing: "writing elevation \(id) of layer \(layer)")
        }
    }

    /// Commits the last batch, removes unreferenced contents, writes the metadata, switches
    /// the file to a self-contained rollback journal, closes it and renames it over the target.
    /// No VACUUM: the file is written once, in order, so it has few free pages.
    /// - Returns: counts, bytes and the tile index digest of what was written.
    /// - Cost: one sweep of the content keys, two scans of the index (digest, counts), one
    ///   WAL checkpoint and one rename.
    public func finish() throws -> PackStatistics {
        try checkOpen()
        let statistics: PackStatistics
        do {
            do {  // scoped so that `db` is released before the rename
                guard let db = connection else { preconditionFailure("open writer without a connection") }
                if db.isInTransaction { try db.execute("COMMIT") }
                try db.inTransaction {
                    try Self.removeOrphans(db)
                    let insert = try db.prepare("INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)")
                    for (name, value) in metadata.sorted(by: { $0.key < $1.key }) {
                        try insert.bind(name, at: 1)
                        try insert.bind(value, at: 2)
                        try insert.run()
                    }
                }
                let digest = try PackIndex.digest(db, path: temporaryPath)
                statistics = try PackIndex.statistics(db, path: temporaryPath, digest: digest)
                try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                try db.execute("PRAGMA journal_mode = DELETE")
            }
            releaseConnection()
            if let code = replacement.commit() {
                throw ArchiveError(
                    path: targetPath, code: .writeFailed,
                    detail: "cannot move \(temporaryPath) into place: \(AtomicReplacement.message(code))")
            }
            state = .finished
        } catch {
            throw fail(error, doing: "finishing the pack")
        }
        return statistics
    }

    /// Stops writing and removes the temporary file; every later call throws.
    public func abandon() {
        switch state {
        case .finished, .abandoned: return
        case .open, .failed: closeAndRemove()
        }
        state = .abandoned
    }

    // MARK: - Shared with PackDelta

    /// Creates the pack tables and views (and, for a delta, `tilepack_removed`) in a fresh
    /// file, each statement on its own so `sqlite_master` keeps exactly the text of ``PackSchema``.
    static func createSchema(_ db: SQLiteConnection, delta: Bool) throws {
        try db.execute("PRAGMA application_id = \(MBTilesSchema.applicationID)")
        try db.inTransaction {
            for statement in PackSchema.create { try db.execute(statement) }
            if delta { try db.execute(PackSchema.createRemoved) }
        }
    }

    /// Deletes contents that no index row references.
    /// - Cost: one scan of the index into a temporary b-tree (NOT IN over an uncorrelated
    ///   subquery; the index has no hash column index, so a correlated probe would rescan it
    ///   per content), then one pass over each content table's keys. `sha256` is NOT NULL, so
    ///   NOT IN has no NULL surprise.
    static func removeOrphans(_ db: SQLiteConnection) throws(SQLiteError) {
        try db.execute(
            """
            DELETE FROM images WHERE tile_id NOT IN (SELECT sha256 FROM tilepack_tile_index WHERE kind = 0);
            DELETE FROM tilepack_elevation WHERE sha256 NOT IN (SELECT sha256 FROM tilepack_tile_index WHERE kind = 1);
            """)
    }

    static func writeFailure(_ error: any Error, path: String, doing what: String) -> ArchiveError {
        if let archive = error as? ArchiveError { return archive }
        return ArchiveError(
            path: path, code: .writeFailed, detail: "\(what) failed: \(ErrorText.oneLine(String(describing: error)))"
        )
    }

    // MARK: - Internals

    private func prepareStatements(_ db: SQLiteConnection) throws {
        insertImage = try db.prepare("INSERT OR IGNORE INTO images (tile_id, tile_data) VALUES (?, ?)")
        insertElevation = try db.prepare(
            "INSERT OR IGNORE INTO tilepack_elevation (sha256, encoding, width, height, data) VALUES (?, ?, ?, ?, ?)")
        insertIndex = try db.prepare(
            """
            INSERT OR REPLACE INTO tilepack_tile_index (layer, kind, zoom_level, tile_column, tile_row, sha256) \
            VALUES (?, ?, ?, ?, ?, ?)
            """)
    }

    private func addIndexRow(layer: Int, kind: PackSchema.Kind, tile: TileID, hex: String) throws {
        guard let stmt = insertIndex else { preconditionFailure("open writer without statements") }
        try stmt.bind(layer, at: 1)
        try stmt.bind(kind.rawValue, at: 2)
        try stmt.bind(tile.z, at: 3)
        try stmt.bind(tile.x, at: 4)
        try stmt.bind(tile.tmsY, at: 5)
        try stmt.bind(hex, at: 6)
        try stmt.run()
    }

    private func checkLayer(_ layer: Int, tile: TileID) throws {
        guard layers.indices.contains(layer) else {
            throw ArchiveError(
                path: targetPath, code: .invalidArgument,
                detail: "tile \(tile) names layer \(layer); the pack has layers 0…\(layers.count - 1)")
        }
    }

    private func checkOpen() throws {
        switch state {
        case .open: return
        case .finished:
            throw ArchiveError(path: targetPath, code: .writeFailed, detail: "pack writer used after finish()")
        case .abandoned:
            throw ArchiveError(path: targetPath, code: .writeFailed, detail: "pack writer was abandoned")
        case .failed(let reason):
            throw ArchiveError(path: targetPath, code: .writeFailed, detail: "pack writer already failed: \(reason)")
        }
    }

    private func beginBatchIfNeeded() throws {
        if let db = connection, !db.isInTransaction { try db.execute("BEGIN IMMEDIATE") }
    }

    private func endBatchIfFull(adding bytes: Int) throws {
        pendingRows += 1
        pendingBytes += bytes
        if pendingRows >= batchRows || pendingBytes >= batchBytes {
            try connection?.execute("COMMIT")
            pendingRows = 0
            pendingBytes = 0
        }
    }

    private func fail(_ error: any Error, doing what: String) -> any Error {
        let wrapped = Self.writeFailure(error, path: targetPath, doing: what)
        state = .failed(wrapped.detail)
        closeAndRemove()
        return wrapped
    }

    private func closeAndRemove() {
        connection?.rollbackQuietly()
        releaseConnection()
        replacement.removeTemporary()
    }

    private func releaseConnection() {
        insertImage = nil
        insertElevation = nil
        insertIndex = nil
        connection = nil
    }
}

@available(*, unavailable)
extension PackWriter: Sendable {}
