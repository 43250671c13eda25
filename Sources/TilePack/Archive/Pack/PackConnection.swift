import TilePackCore
import TilePackSQLite
import Synchronization

/// A read-only connection to a pack with the statements every tile read uses.
///
/// `@unchecked Sendable` because SQLite handles are not thread-safe: the invariant that makes
/// this sound is that ``PackConnectionPool`` hands each instance to one caller at a time (it
/// is removed from the lock-protected array while in use), as ``MBTilesReader``'s pool does.
final class PackConnection: @unchecked Sendable {
    let db: SQLiteConnection
    /// (hash, tile_data, content present, typeof, length) of one display tile: a primary-key
    /// seek on the index, one on `images`. `tile_data` comes back only when it is a blob no
    /// longer than ?5 (read from the record header first, as ``MBTilesReader`` does), so a
    /// forged 1 GB row is refused unloaded.
    let selectTile: SQLiteStatement
    /// (hash, encoding, width, height, data, content present, typeof, length) of one elevation
    /// row; `data` only when it is a blob within what its grid may need.
    let selectElevation: SQLiteStatement
    /// Content by hash, for verifying: (data, typeof, length), data within 32 MiB.
    let selectImage: SQLiteStatement
    /// (encoding, width, height, data, typeof, length), data within its grid's need.
    let selectElevationContent: SQLiteStatement

    init(path: String) throws(SQLiteError) {
        db = try SQLiteConnection(path: path, mode: .readOnly)
        // As MBTilesReader: tile blobs are read once and cached above; keep interior pages hot.
        try db.execute("PRAGMA cache_size = -\(PooledConnection.pageCacheKiB)")
        selectTile = try db.prepare(
            """
            SELECT i.sha256, \(StoredBlobLimit.boundedSQL("m.tile_data", limit: "?5")), \
            m.tile_id IS NOT NULL, typeof(m.tile_data), coalesce(length(m.tile_data), 0) FROM tilepack_tile_index AS i \
            LEFT JOIN images AS m ON m.tile_id = i.sha256 \
            WHERE i.layer = ?1 AND i.kind = 0 AND i.zoom_level = ?2 AND i.tile_column = ?3 AND i.tile_row = ?4
            """)
        selectElevation = try db.prepare(
            """
            SELECT i.sha256, e.encoding, e.width, e.height, \
            \(StoredBlobLimit.boundedSQL("e.data", limit: StoredBlobLimit.elevationSQL(width: "e.width", height: "e.height"))), \
            e.sha256 IS NOT NULL, typeof(e.data), coalesce(length(e.data), 0) FROM tilepack_tile_index AS i \
            LEFT JOIN tilepack_elevation AS e ON e.sha256 = i.sha256 \
            WHERE i.layer = ?1 AND i.kind = 1 AND i.zoom_level = ?2 AND i.tile_column = ?3 AND i.tile_row = ?4
            """)
        selectImage = try db.prepare(
            """
            SELECT \(StoredBlobLimit.boundedSQL("tile_data", limit: "\(StoredBlobLimit.maxBytes)")), \
            typeof(tile_data), coalesce(length(tile_data), 0) FROM images WHERE tile_id = ?1
            """)
        selectElevationContent = try db.prepare(
            """
            SELECT encoding, width, height, \
            \(StoredBlobLimit.boundedSQL("data", limit: StoredBlobLimit.elevationSQL(width: "width", height: "height"))), \
            typeof(data), coalesce(length(data), 0) FROM tilepack_elevation WHERE sha256 = ?1
            """)
    }

    func bindKey(_ stmt: SQLiteStatement, layer: Int, tile: TileID) throws(SQLiteError) {
        try stmt.bind(layer, at: 1)
        try stmt.bind(tile.z, at: 2)
        try stmt.bind(tile.x, at: 3)
        try stmt.bind(tile.tmsY, at: 4)
    }
}

/// The read-only connections a ``PackReader`` and its ``PackLayerArchive``s share: each call
/// borrows one (opening a new one when none is idle) and returns it; at most ``maxIdle`` stay
/// open between calls, so concurrent reads run in parallel on separate connections.
final class PackConnectionPool: Sendable {
    static let maxIdle = MBTilesReader.maxIdleConnections

    let path: String
    private let idle: Locked<[PackConnection]>

    init(path: String, first: PackConnection) {
        self.path = path
        idle = Locked([first])
    }

    /// Runs `body` on a borrowed connection; an SQLite failure becomes an ``ArchiveError``
    /// naming `errorPath` (the pack, or `pack#layer`) and what was being done.
    /// `what` is an autoclosure so a tile read builds no message string unless it fails.
    func withConnection<T>(
        errorPath: String, doing what: @autoclosure () -> String,
        _ body: (PackConnection) throws(SQLiteError) -> T
    ) throws(ArchiveError) -> T {
        let conn: PackConnection
        if let spare = idle.withLock({ $0.popLast() }) {
            conn = spare
        } else {
            do {
                conn = try PackConnection(path: path)
            } catch {
                throw ArchiveError.reading(error, path: errorPath, doing: what())
            }
        }
        defer {
            idle.withLock { connections in
                if connections.count < Self.maxIdle { connections.append(conn) }
            }
        }
        do {
            return try body(conn)
        } catch {
            throw ArchiveError.reading(error, path: errorPath, doing: what())
        }
    }
}
