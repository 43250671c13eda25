import TilePackCore
import TilePackSQLite
import Synchronization

/// A read-only connection to a pack with the statements every tile read uses.
///
/// `@unchecked Sendable` because SQLite handles are not thread-safe: the invariant that makes
/// this sound is that ``PackConnectionPool`` hands each instance to one caller at a time (it
/// is removed from the Mutex-protected array while in use), as ``MBTilesReader``'s pool does.
final class PackConnection: @unchecked Sendable {
    let db: SQLiteConnection
    /// (hash, tile_data, content present) of one display tile: a primary-key seek on the
    /// index, one on `images`.
    let selectTile: SQLiteStatement
    /// (hash, encoding, width, height, data, content present) of one elevation row.
    let selectElevation: SQLiteStatement
    /// Content by hash, for verifying and copying.
    let selectImage: SQLiteStatement
    let selectElevationContent: SQLiteStatement

    init(path: String) throws(SQLiteError) {
        db = try SQLiteConnection(path: path, mode: .readOnly)
        // As MBTilesReader: tile blobs are read once and cached above; keep interior pages hot.
        try db.execute("PRAGMA cache_size = -\(PooledConnection.pageCacheKiB)")
        selectTile = try db.prepare("""
            SELECT i.sha256, m.tile_data, m.tile_id IS NOT NULL FROM tilepack_tile_index AS i \
            LEFT JOIN images AS m ON m.tile_id = i.sha256 \
            WHERE i.layer = ? AND i.kind = 0 AND i.zoom_level = ? AND i.tile_column = ? AND i.tile_row = ?
            """)
        selectElevation = try db.prepare("""
            SELECT i.sha256, e.encoding, e.width, e.height, e.data, e.sha256 IS NOT NULL FROM tilepack_tile_index AS i \
            LEFT JOIN tilepack_elevation AS e ON e.sha256 = i.sha256 \
            WHERE i.layer = ? AND i.kind = 1 AND i.zoom_level = ? AND i.tile_column = ? AND i.tile_row = ?
            """)
        selectImage = try db.prepare("SELECT tile_data FROM images WHERE tile_id = ?")
        selectElevationContent = try db.prepare("SELECT encoding, width, height, data FROM tilepack_elevation WHERE sha256 = ?")
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
    private let idle: Mutex<[PackConnection]>

    init(path: String, first: PackConnection) {
        self.path = path
        idle = Mutex([first])
    }

    /// Runs `body` on a borrowed connection; an SQLite failure becomes an ``ArchiveError``
    /// naming `errorPath` (the pack, or `pack#layer`) and what was being done.
    /// `what` is an autoclosure so a tile read builds no message string unless it fails.
    func withConnection<T>(errorPath: String, doing what: @autoclosure () -> String,
                           _ body: (PackConnection) throws(SQLiteError) -> T) throws(ArchiveError) -> T {
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
