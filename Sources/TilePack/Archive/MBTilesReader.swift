import TilePackCore
import TilePackSQLite
import TilePackCodec
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads any MBTiles archive (tilepack's or another writer's) through its `tiles` table or
/// view, plus tilepack's `elevation` table when present.
///
/// Opening validates cheaply, in O(1) pages: the file is readable, starts with the SQLite
/// header, is not shorter than its header says (a truncated copy), carries MBTiles'
/// `application_id` or none, and has `tiles` and `metadata` with the MBTiles columns.
/// Every problem is an ``ArchiveError`` naming the file; a damaged page met later is one too.
/// ``verifyIntegrity()`` runs SQLite's full check (O(file size)) when wanted.
///
/// Threads: the reader is `Sendable` and may be shared. Each call borrows a read-only
/// connection (`SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX`) from a small lock-protected
/// pool and returns it, so concurrent calls run in parallel on separate connections; at most
/// ``maxIdleConnections`` stay open between calls.
///
/// Consistency: the writer builds in a temporary file and renames it into place, so a reader
/// sees a whole archive or the previous one, never a partial build; each query is one SQLite
/// read transaction, so even a file written in place (WAL) shows only committed data.
public final class MBTilesReader: TileArchive {
    /// Connections kept open between calls; more are opened under load and closed after.
    public static let maxIdleConnections = 4

    public let path: String
    /// Every `metadata` row, name → value.
    public let metadata: [String: String]
    /// `bounds` from metadata, nil when absent or unparsable.
    public let bounds: GeoBounds?
    /// `minzoom…maxzoom` from metadata, else from the tiles; nil for an archive without tiles.
    public let zoomRange: ClosedRange<Int>?
    /// Whether the archive stores elevation grids: tilepack's `elevation` table with at least
    /// one row. Every archive tilepack writes has the table, an RGB one empty, so the table
    /// alone says nothing (it made `/regions` call every region elevation).
    public let hasElevation: Bool

    private let pool: Locked<[PooledConnection]>

    /// Opens and validates `path`. See the type's documentation for what is checked.
    public init(path: String) throws {
        self.path = path
        try Self.checkFile(path)
        let first: PooledConnection
        do {
            first = try PooledConnection(path: path)
        } catch {
            throw ArchiveError.reading(error, path: path, doing: "opening")
        }
        let db = first.db
        do {
            let appID = try db.prepare("PRAGMA application_id")
            let id = try appID.step() ? Int32(truncatingIfNeeded: appID.int(at: 0)) : 0
            guard id == 0 || id == MBTilesSchema.applicationID else {
                throw ArchiveError(
                    path: path, code: .notMBTiles,
                    detail:
                        """
                        not an MBTiles archive (application_id 0x\(String(UInt32(bitPattern: id), radix: 16)), \
                        expected 0x4d504258 or none)
                        """
                )
            }
            let names = try db.prepare(
                """
                SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name IN ('tiles', 'metadata', \
                'elevation')
                """
            )
            var found = Set<String>()
            while try names.step() { if let n = names.string(at: 0) { found.insert(n) } }
            for required in ["tiles", "metadata"] where !found.contains(required) {
                throw ArchiveError(
                    path: path, code: .notMBTiles, detail: "not an MBTiles archive (no \(required) table or view)")
            }
            if found.contains("elevation") {
                let any = try db.prepare("SELECT 1 FROM elevation LIMIT 1")
                hasElevation = try any.step()
            } else {
                hasElevation = false
            }
            do {
                try first.prepareStatements(elevation: found.contains("elevation"))
            } catch {
                throw ArchiveError(
                    path: path, code: .notMBTiles,
                    detail: "not an MBTiles archive (tiles or elevation lacks the expected columns: \(error.message))")
            }
            var rows: [String: String] = [:]
            let meta = try db.prepare("SELECT name, value FROM metadata")
            while try meta.step() {
                if let name = meta.string(at: 0) { rows[name] = meta.string(at: 1) ?? "" }
            }
            metadata = rows
            // Versions 1 and 2 differ only in the elevation encodings they may hold; a newer
            // archive may store what this code would misread, so it is refused whole.
            if let version = rows[MBTilesMetadata.Key.formatVersion],
                !(Int(version).map(MBTilesMetadata.readableFormatVersions.contains) ?? false)
            {
                throw ArchiveError(
                    path: path, code: .unsupportedVersion,
                    detail:
                        """
                        tilepack:format_version \(ErrorText.quoted(version)) is not one this tilepack reads \
                        (\(MBTilesMetadata.readableFormatVersions.lowerBound)…\(MBTilesMetadata.readableFormatVersions.upperBound))
                        """
                )
            }
            bounds = rows[MBTilesMetadata.Key.bounds].flatMap(GeoBounds.init(metadataValue:))
            if let lo = rows[MBTilesMetadata.Key.minZoom].flatMap({ Int($0) }),
                let hi = rows[MBTilesMetadata.Key.maxZoom].flatMap({ Int($0) }), 0 <= lo, lo <= hi, hi <= TileID.maxZoom
            {
                zoomRange = lo...hi
            } else {
                let range = try db.prepare("SELECT min(zoom_level), max(zoom_level) FROM tiles")
                if try range.step(), !range.isNull(at: 0) {
                    let lo = range.int(at: 0), hi = range.int(at: 1)
                    zoomRange = (0 <= lo && lo <= hi && hi <= TileID.maxZoom) ? lo...hi : nil
                } else {
                    zoomRange = nil
                }
            }
        } catch let error as ArchiveError {
            throw error
        } catch let error as SQLiteError {
            throw ArchiveError.reading(error, path: path, doing: "reading the schema")
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        pool = Locked([first])
    }

    /// The payload of tile `id`, or nil when the archive has none there.
    /// - Cost: one indexed lookup and one copy of the payload.
    public func tile(_ id: TileID) throws -> [UInt8]? {
        do {
            return try withTile(id) { Array($0) }
        } catch let error as ArchiveError {
            throw error
        } catch {
            preconditionFailure("a non-throwing body cannot throw \(error)")
        }
    }

    /// Largest blob any read loads (tile or elevation data): 32 MiB (``StoredBlobLimit``).
    /// SQLite would otherwise load a forged 1 GB row whole before anyone could look at its size.
    public static let maxBlobBytes = StoredBlobLimit.maxBytes

    /// Calls `body` with tile `id`'s stored bytes in SQLite's own buffer (no copy), or
    /// returns nil when the archive has no tile there. Blobs above ``maxBlobBytes`` are
    /// refused unread (see ``withTile(_:maxBytes:_:)``).
    /// - Cost: one indexed lookup; no allocation beyond what `body` does.
    public func withTile<R>(_ id: TileID, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try withTile(id, maxBytes: Self.maxBlobBytes, body)
    }

    /// ``withTile(_:_:)`` refusing a blob longer than `maxBytes` (capped at ``maxBlobBytes``)
    /// *before SQLite loads it*: the query asks for the blob only when `length(tile_data)` (read
    /// from the record header, not the data) is within the limit, so a 100 MB row costs a
    /// lookup, not 100 MB. A `tile_data` that is text, not a blob, is refused the same way
    /// (its byte length is unknowable without loading it).
    /// - Throws: ``ArchiveError`` (damaged) naming the tile, its stored size and the limit.
    public func withTile<R>(_ id: TileID, maxBytes: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        let limit = min(max(0, maxBytes), Self.maxBlobBytes)
        var refused: (type: String, length: Int)?
        // The body may throw its own errors: carry them out of the SQLite-typed closure.
        var bodyError: (any Error)?
        let result: R? = try withConnection(doing: "reading tile \(id)") { conn throws(SQLiteError) in
            let stmt = try conn.statement(\.selectTile)
            defer { stmt.reset() }
            try stmt.bind(id.z, at: 1)
            try stmt.bind(id.x, at: 2)
            try stmt.bind(id.tmsY, at: 3)
            try stmt.bind(limit, at: 4)
            guard try stmt.step() else { return nil }
            let type = stmt.string(at: 1) ?? "null"
            if type != "null" && (type != "blob" || stmt.int(at: 2) > limit) {
                refused = (type, stmt.int(at: 2))
                return nil
            }
            do {
                return try stmt.withBytes(at: 0, body) ?? body(UnsafeRawBufferPointer(start: nil, count: 0))
            } catch {
                bodyError = error
                return nil
            }
        }
        if let refused,
            let detail = StoredBlobLimit.refusal(
                type: refused.type, length: refused.length, limit: limit, what: "tile \(id)")
        {
            throw ArchiveError(path: path, code: .damaged, detail: detail)
        }
        if let bodyError { throw bodyError }
        return result
    }

    /// Name, bounds, zooms, codec and tile size from the metadata (computed at open).
    public var summary: TileArchiveSummary {
        TileArchiveSummary(
            name: metadata[MBTilesMetadata.Key.name] ?? "", bounds: bounds, zoomRange: zoomRange,
            codec: TileCodecChoice(metadata: metadata),
            codecName: metadata[MBTilesMetadata.Key.codec] ?? metadata[MBTilesMetadata.Key.format] ?? "",
            tileSize: tileSize, hasElevation: hasElevation,
            valueKind: .some(ValueKind(metadata: metadata, hasElevationTable: hasElevation)))
    }

    /// The elevation grid of tile `id`, or nil when there is none (or no elevation table).
    public func elevation(_ id: TileID) throws -> ElevationTile? {
        try elevation(id) { _, _ throws(ArchiveError) in }
    }

    /// ``elevation(_:)``, `admit` called with the row's declared size before the grid is
    /// allocated (see ``TileArchive/elevation(_:admitting:)``).
    public func elevation(
        _ id: TileID, admitting admit: (_ width: Int, _ height: Int) throws(ArchiveError) -> Void
    )
        throws -> ElevationTile?
    {
        guard hasElevation else { return nil }
        // Quantised rows decode straight from SQLite's buffer: the grid is the only allocation.
        var failure: ArchiveError?
        let quick = try withConnection(doing: "reading elevation \(id)") {
            conn throws(SQLiteError) -> (handled: Bool, tile: ElevationTile?) in
            let stmt = try conn.statement(\.selectElevation)
            defer { stmt.reset() }
            try stmt.bind(id.z, at: 1)
            try stmt.bind(id.x, at: 2)
            try stmt.bind(id.tmsY, at: 3)
            guard try stmt.step() else { return (true, nil) }
            guard stmt.string(at: 0) == ElevationEncoding.quantizedPlanarDeflate.rawValue else { return (false, nil) }
            let width = stmt.int(at: 1), height = stmt.int(at: 2)
            var tile: ElevationTile?
            do {
                try admit(width, height)
                let length = try Self.checkElevationBlob(stmt, id: id, width: width, height: height, path: path)
                stmt.reset()
                let data = try conn.statement(\.selectElevationData)
                defer { data.reset() }
                try data.bind(id.z, at: 1)
                try data.bind(id.x, at: 2)
                try data.bind(id.tmsY, at: 3)
                try data.bind(length, at: 4)
                guard try data.step() else { return (true, nil) }  // deleted between the two reads
                let found: Bool? = try data.withBytes(at: 0) { blob in
                    tile = try ElevationEncoding.quantizedPlanarDeflate.decode(
                        blob, width: width, height: height, path: path)
                    return true
                }
                if found == nil {
                    failure = ArchiveError(
                        path: path, code: .badElevation, detail: "elevation tile \(id) has no data")
                }
            } catch {
                failure =
                    error as? ArchiveError
                    ?? ArchiveError(path: path, code: .badElevation, detail: "elevation tile \(id): \(error)")
            }
            return (true, tile)
        }
        if let failure { throw failure }
        if quick.handled { return quick.tile }
        guard let row = try storedElevation(id, admitting: admit) else { return nil }
        guard let encoding = ElevationEncoding(rawValue: row.encoding) else {
            throw ArchiveError(
                path: path, code: .badElevation,
                detail: "elevation tile \(id) has unknown encoding \(ErrorText.quoted(row.encoding))")
        }
        return try encoding.decode(row.data, width: row.width, height: row.height, path: path)
    }

    /// The blob length of the elevation row `stmt` stands on (`selectElevation`), refused
    /// unless it is a blob no larger than any encoding of a `width × height` grid can need
    /// (``StoredBlobLimit/elevation(width:height:)``).
    /// Read from the record header: the data is not loaded.
    private static func checkElevationBlob(
        _ stmt: SQLiteStatement, id: TileID, width: Int, height: Int,
        path: String
    ) throws(ArchiveError) -> Int {
        let type = stmt.string(at: 3) ?? "null", length = stmt.int(at: 4)
        let limit = StoredBlobLimit.elevation(width: width, height: height)
        if let detail = StoredBlobLimit.refusal(
            type: type, length: length, limit: limit, what: "elevation tile \(id) (\(width)×\(height))")
        {
            throw ArchiveError(path: path, code: .badElevation, detail: detail)
        }
        return max(0, length)
    }

    /// The elevation row of tile `id` as stored (encoding name, grid size, encoded bytes),
    /// undecoded: what a pack copies unchanged. nil when there is none.
    /// - Cost: one indexed lookup and one copy of the blob.
    public func storedElevation(_ id: TileID) throws -> StoredElevation? {
        try storedElevation(id) { _, _ throws(ArchiveError) in }
    }

    /// ``storedElevation(_:)`` with `admit` called on the declared size, and the blob's
    /// length checked (``checkElevationBlob``), before the blob is loaded.
    private func storedElevation(
        _ id: TileID, admitting admit: (_ width: Int, _ height: Int) throws(ArchiveError) -> Void
    )
        throws(ArchiveError) -> StoredElevation?
    {
        guard hasElevation else { return nil }
        var failure: ArchiveError?
        let row = try withConnection(doing: "reading elevation \(id)") { conn throws(SQLiteError) -> StoredElevation? in
            let stmt = try conn.statement(\.selectElevation)
            defer { stmt.reset() }
            try stmt.bind(id.z, at: 1)
            try stmt.bind(id.x, at: 2)
            try stmt.bind(id.tmsY, at: 3)
            guard try stmt.step() else { return nil }
            let encoding = stmt.string(at: 0) ?? "", width = stmt.int(at: 1), height = stmt.int(at: 2)
            let length: Int
            do throws(ArchiveError) {
                try admit(width, height)
                length = try Self.checkElevationBlob(stmt, id: id, width: width, height: height, path: path)
            } catch {
                failure = error
                return nil
            }
            stmt.reset()
            let data = try conn.statement(\.selectElevationData)
            defer { data.reset() }
            try data.bind(id.z, at: 1)
            try data.bind(id.x, at: 2)
            try data.bind(id.tmsY, at: 3)
            try data.bind(length, at: 4)
            guard try data.step() else { return nil }
            return StoredElevation(encoding: encoding, width: width, height: height, data: data.bytes(at: 0) ?? [])
        }
        if let failure { throw failure }
        return row
    }

    /// The pixels a shard archive keeps for one of its shard-zoom tiles (`tilepack_roots`,
    /// see ``MBTilesWriter/Journal``): `.some(nil)` for an empty tile, nil when the archive
    /// has no row for it (or no such table).
    /// - Cost: one indexed lookup (a statement prepared per call: the merge asks once per tile).
    public func buildRoot(_ id: TileID) throws -> [UInt8]?? {
        try withConnection(doing: "reading the shard pixels of \(id)") { conn throws(SQLiteError) -> [UInt8]?? in
            let table = try conn.db.prepare(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tilepack_roots'")
            guard try table.step() else { return nil }
            let stmt = try conn.db.prepare(
                "SELECT pixels FROM tilepack_roots WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?")
            try stmt.bind(id.z, at: 1)
            try stmt.bind(id.x, at: 2)
            try stmt.bind(id.tmsY, at: 3)
            guard try stmt.step() else { return nil }
            return .some(stmt.bytes(at: 0))
        }
    }

    /// The tiles at zoom `z` and above (lower zoom numbers) a shard archive keeps pixels for
    /// (`tilepack_roots`): the shard-zoom tiles it built and those above it built whole.
    /// Empty when it has none (or no such table); rows outside the tile grid are skipped.
    /// - Cost: one scan of the roots' primary key (a shard keeps a few dozen rows).
    public func buildRootTiles(upToZoom z: Int) throws -> [TileID] {
        try withConnection(doing: "listing the shard tiles") { conn throws(SQLiteError) -> [TileID] in
            let table = try conn.db.prepare(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tilepack_roots'")
            guard try table.step() else { return [] }
            let stmt = try conn.db.prepare(
                "SELECT zoom_level, tile_column, tile_row FROM tilepack_roots WHERE zoom_level BETWEEN 0 AND ?")
            try stmt.bind(z, at: 1)
            var out: [TileID] = []
            while try stmt.step() {
                if let id = TileID(z: stmt.int(at: 0), x: stmt.int(at: 1), tmsY: stmt.int(at: 2)) { out.append(id) }
            }
            return out
        }
    }

    /// Number of rows in `tiles`. - Cost: O(tiles) (SQLite counts an index).
    public var tileCount: Int {
        get throws(ArchiveError) {
            try withConnection(doing: "counting tiles") { conn throws(SQLiteError) in
                let stmt = try conn.db.prepare("SELECT count(*) FROM tiles")
                return try stmt.step() ? stmt.int(at: 0) : 0
            }
        }
    }

    /// The tiles stored at `zoom`, in XYZ, ordered by row then column.
    /// - Throws: ``ArchiveError`` (damaged) for a row outside the zoom's grid.
    public func tileIDs(zoom: Int) throws -> [TileID] {
        guard zoom >= 0, zoom <= TileID.maxZoom else { return [] }
        let rows: [(Int, Int)] = try withConnection(doing: "listing zoom \(zoom)") { conn throws(SQLiteError) in
            let stmt = try conn.db.prepare("SELECT tile_column, tile_row FROM tiles WHERE zoom_level = ?")
            try stmt.bind(zoom, at: 1)
            var rows: [(Int, Int)] = []
            while try stmt.step() { rows.append((stmt.int(at: 0), stmt.int(at: 1))) }
            return rows
        }
        var ids: [TileID] = []
        ids.reserveCapacity(rows.count)
        for (column, row) in rows {
            guard let id = TileID(z: zoom, x: column, tmsY: row) else {
                throw ArchiveError(
                    path: path, code: .damaged,
                    detail: "tile row (zoom \(zoom), column \(column), row \(row)) lies outside the zoom's grid")
            }
            ids.append(id)
        }
        return ids.sorted()
    }

    /// Tiles and stored bytes per zoom (`tiles`), zooms ascending.
    /// - Cost: one grouped scan of `tiles` reading each blob's length (not its bytes).
    package func zoomStatistics() throws(ArchiveError) -> [PackZoomCount] {
        try withConnection(doing: "counting tiles per zoom") { conn throws(SQLiteError) in
            let stmt = try conn.db.prepare(
                "SELECT zoom_level, count(*), sum(length(tile_data)) FROM tiles GROUP BY zoom_level ORDER BY zoom_level"
            )
            var out: [PackZoomCount] = []
            while try stmt.step() {
                out.append(PackZoomCount(z: stmt.int(at: 0), tiles: stmt.int(at: 1), bytes: stmt.int(at: 2)))
            }
            return out
        }
    }

    /// Rows of the `elevation` table per zoom, ascending, with the bytes of their stored grids
    /// (empty without an elevation table).
    /// - Cost: one grouped scan of `elevation` reading each row's length; nothing is decoded.
    package func elevationZoomStatistics() throws(ArchiveError) -> [PackZoomCount] {
        guard hasElevation else { return [] }
        return try withConnection(doing: "counting elevation rows per zoom") { conn throws(SQLiteError) in
            let stmt = try conn.db.prepare(
                "SELECT zoom_level, count(*), sum(length(data)) FROM elevation GROUP BY zoom_level ORDER BY zoom_level")
            var out: [PackZoomCount] = []
            while try stmt.step() {
                out.append(PackZoomCount(z: stmt.int(at: 0), tiles: stmt.int(at: 1), bytes: stmt.int(at: 2)))
            }
            return out
        }
    }

    /// Rows of the `elevation` table (0 without one). - Cost: O(rows) (SQLite counts an index).
    public func elevationRowCount() throws -> Int {
        guard hasElevation else { return 0 }
        return try withConnection(doing: "counting elevation rows") { conn throws(SQLiteError) in
            let stmt = try conn.db.prepare("SELECT count(*) FROM elevation")
            return try stmt.step() ? stmt.int(at: 0) : 0
        }
    }

    /// Decodes every tile with the archive's codec and every elevation row with its encoding;
    /// the first that does not decode is thrown (damaged), naming the tile.
    /// - Cost: O(archive): one read and one decode per tile and per elevation row.
    public func decodeAllTiles() throws -> (tiles: Int, elevationRows: Int) {
        let summary = self.summary
        let codec = try decodableCodec()
        let decoder = codec.decoder()
        var tiles = 0, rows = 0
        for z in summary.zoomRange.map({ Array($0) }) ?? [] {
            for id in try tileIDs(zoom: z) {
                guard let bytes = try tile(id) else { continue }
                do { _ = try decoder.decode(bytes, width: summary.tileSize, height: summary.tileSize) } catch {
                    throw ArchiveError(
                        path: path, code: .damaged,
                        detail: "tile \(id) does not decode as \(codec.rawValue): \(error)")
                }
                tiles += 1
                if hasElevation, try elevation(id) != nil { rows += 1 }
            }
        }
        return (tiles, rows)
    }

    /// Runs `PRAGMA integrity_check`; throws ``ArchiveError`` (damaged) with SQLite's first
    /// complaint unless it answers "ok". - Cost: reads the whole file.
    public func verifyIntegrity() throws {
        let answer: String = try withConnection(doing: "checking integrity") { conn throws(SQLiteError) in
            let stmt = try conn.db.prepare("PRAGMA integrity_check(1)")
            return try stmt.step() ? (stmt.string(at: 0) ?? "") : ""
        }
        guard answer == "ok" else {
            // SQLite's report spans lines ("*** in database main ***\nPage 5: ..."); keep one.
            throw ArchiveError(
                path: path, code: .damaged, detail: "integrity check failed: \(ErrorText.oneLine(answer))")
        }
    }

    // MARK: - Internals

    /// `what` is an autoclosure, built only for an error: callers interpolate the tile id
    /// ("reading tile 15/17000/11000"), and building that string was one malloc on every
    /// tile read (found with ordo-one's `--allocation-stacks`).
    private func withConnection<T>(
        doing what: @autoclosure () -> String,
        _ body: (PooledConnection) throws(SQLiteError) -> T
    ) throws(ArchiveError) -> T {
        let conn: PooledConnection
        if let idle = pool.withLock({ $0.popLast() }) {
            conn = idle
        } else {
            do {
                conn = try PooledConnection(path: path)
                try conn.prepareStatements(elevation: hasElevation)
            } catch {
                throw ArchiveError.reading(error, path: path, doing: what())
            }
        }
        defer {
            pool.withLock { idle in
                if idle.count < Self.maxIdleConnections { idle.append(conn) }
            }
        }
        do {
            return try body(conn)
        } catch {
            throw ArchiveError.reading(error, path: path, doing: what())
        }
    }

    /// Cheap checks before SQLite sees the file (``ArchiveFile/check(_:)``).
    private static func checkFile(_ path: String) throws(ArchiveError) {
        try ArchiveFile.check(path)
    }
}

/// A read-only connection with the reader's prepared statements.
///
/// `@unchecked Sendable` because SQLite handles are not thread-safe: the invariant that makes
/// this sound is that the pool hands each instance to one caller at a time (it is removed from
/// the lock-protected array while in use), so no two threads touch it at once.
final class PooledConnection: @unchecked Sendable {
    let db: SQLiteConnection
    private(set) var selectTile: SQLiteStatement?
    private(set) var selectElevation: SQLiteStatement?
    private(set) var selectElevationData: SQLiteStatement?

    /// Page cache per connection. SQLite's default (2 MB) mostly fills with the overflow
    /// pages of tile blobs that are read once and then cached by the tile store instead; with
    /// a connection per reading thread that was ~2 MB of RSS per thread for nothing. 256 KiB
    /// keeps the B-tree's interior pages hot.
    static let pageCacheKiB = 256

    init(path: String) throws(SQLiteError) {
        db = try SQLiteConnection(path: path, mode: .readOnly)
        try db.execute("PRAGMA cache_size = -\(Self.pageCacheKiB)")
    }

    /// A prepared statement; a missing one (the `elevation` table absent, or a connection
    /// used before ``prepareStatements(elevation:)``) is an SQLite misuse error, not a trap.
    func statement(_ which: KeyPath<PooledConnection, SQLiteStatement?>) throws(SQLiteError) -> SQLiteStatement {
        guard let stmt = self[keyPath: which] else {
            throw SQLiteError(code: .misuse, message: "statement not prepared", path: db.path)
        }
        return stmt
    }

    func prepareStatements(elevation: Bool) throws(SQLiteError) {
        // typeof() and length() of a blob read the record header, not the data (SQLite's
        // OPFLAG_LENGTHARG): the blob is loaded only when the CASE lets it through (?4 = limit).
        selectTile = try db.prepare(
            """
            SELECT \(StoredBlobLimit.boundedSQL("tile_data", limit: "?4")),
                   typeof(tile_data), CASE typeof(tile_data) WHEN 'blob' THEN length(tile_data) ELSE -1 END
            FROM tiles WHERE zoom_level = ?1 AND tile_column = ?2 AND tile_row = ?3
            """)
        if elevation {
            // The row's head first (sizes, blob type and length, never the data) ...
            selectElevation = try db.prepare(
                """
                SELECT encoding, width, height, typeof(data), CASE typeof(data) WHEN 'blob' THEN length(data) ELSE -1 END
                FROM elevation WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?
                """)
            // ... then the data, once its size is admitted (?4 = the admitted length).
            selectElevationData = try db.prepare(
                """
                SELECT \(StoredBlobLimit.boundedSQL("data", limit: "?4"))
                FROM elevation WHERE zoom_level = ?1 AND tile_column = ?2 AND tile_row = ?3
                """)
        }
    }
}
