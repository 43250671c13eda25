import TilePackCore
import TilePackSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a delta carries (``PackDelta/write(old:new:output:packID:from:to:)``).
package struct PackDeltaSummary: Sendable, Equatable {
    /// Index rows whose hash changed.
    public var changed: Int
    /// Index rows new in the later version.
    public var added: Int
    /// Index rows gone in the later version (`tilepack_removed`).
    public var removed: Int
    /// Contents carried (those the older version lacks), and their bytes.
    public var contents: Int
    public var contentBytes: Int
    /// The delta file's size.
    public var fileBytes: Int
    /// The later version's tile index digest (the delta's `tilepack_tile_index_sha256`).
    public var indexDigest: String

    public init(
        changed: Int, added: Int, removed: Int, contents: Int, contentBytes: Int, fileBytes: Int, indexDigest: String
    ) {
        self.changed = changed; self.added = added; self.removed = removed; self.contents = contents
        self.contentBytes = contentBytes; self.fileBytes = fileBytes; self.indexDigest = indexDigest
    }
}

/// Updates by difference (docs/REGIONS.md, "Deltas"): a delta file has the pack tables with
/// only the index rows that changed or appeared, the contents of those the older version
/// lacks, the later version's full layers table and metadata, and `tilepack_removed` for the
/// rows that went away; its metadata names the pack, both versions and the later version's
/// tile index digest.
package enum PackDelta {
    private static let companions = ["-wal", "-shm", "-journal"]

    /// Writes `output` = the delta from pack `old` (version `from`) to pack `new` (version `to`),
    /// atomically (temporary file and rename). Contents `old` already holds are not carried.
    /// - Cost: one scan of each index (old's kept in memory, ~100 bytes a row), one content
    ///   key probe in `old` and one read and SHA-256 of each carried content in `new`.
    /// - Throws: ``ArchiveError`` naming the file at fault: an unreadable pack, a content of
    ///   `new` that does not match its hash, bad arguments, or a failed write.
    public static func write(
        old: String, new: String, output: String, packID: String, from: Int, to: Int
    ) throws -> PackDeltaSummary {
        guard !packID.isEmpty, from >= 1, to > from else {
            throw ArchiveError(
                path: output, code: .invalidArgument,
                detail:
                    """
                    a delta needs a pack id and versions 1 ≤ from < to (got \(ErrorText.quoted(packID)) \
                    v\(from)→v\(to))
                    """
            )
        }
        let oldReader = try PackReader(path: old)
        let newReader = try PackReader(path: new)
        let digest = try newReader.indexDigest()
        let oldDB = try openReadOnly(old), newDB = try openReadOnly(new)
        var oldRows: [PackRowKey: String] = [:]
        try PackIndex.forEachRow(oldDB, path: old, layerCount: oldReader.layers.count) {
            key, _, hex throws(ArchiveError) in
            oldRows[key] = hex
        }
        let layers = try PackIndex.storedLayers(newDB, path: new)

        let replacement = AtomicReplacement(targetPath: output, companionSuffixes: companions)
        replacement.removeTemporary()
        var summary = PackDeltaSummary(
            changed: 0, added: 0, removed: 0, contents: 0, contentBytes: 0, fileBytes: 0, indexDigest: digest)
        do {
            do {  // scoped so the connections close before the rename
                let db = try SQLiteConnection(path: replacement.temporaryPath, mode: .readWriteCreate)
                try PackWriter.createSchema(db, delta: true)
                try db.inTransaction {
                    try insertLayers(layers, into: db)
                    var rows = newReader.metadata
                    rows[PackSchema.Key.packID] = packID
                    rows[PackSchema.Key.deltaFrom] = String(from)
                    rows[PackSchema.Key.deltaTo] = String(to)
                    rows[PackSchema.Key.tileIndexSHA256] = digest
                    try insertMetadata(rows, into: db)

                    let insertIndex = try db.prepare(
                        """
                        INSERT INTO tilepack_tile_index (layer, kind, zoom_level, tile_column, tile_row, sha256) VALUES (?, ?, ?, ?, ?, ?)
                        """)
                    let oldHasImage = try oldDB.prepare("SELECT 1 FROM images WHERE tile_id = ?")
                    let oldHasElevation = try oldDB.prepare("SELECT 1 FROM tilepack_elevation WHERE sha256 = ?")
                    let copier = try ContentCopier(from: newDB, fromPath: new, into: db)
                    var carried = Set<String>()
                    try PackIndex.forEachRow(newDB, path: new, layerCount: layers.count) {
                        key, hash, hex throws(ArchiveError) in
                        let before = oldRows.removeValue(forKey: key)
                        guard before != hex else { return }
                        if before == nil { summary.added += 1 } else { summary.changed += 1 }
                        do {
                            try bind(key, to: insertIndex)
                            try insertIndex.bind(hex, at: 6)
                            try insertIndex.run()
                            let probe = key.kind == PackSchema.Kind.tile.rawValue ? oldHasImage : oldHasElevation
                            defer { probe.reset() }
                            try probe.bind(hex, at: 1)
                            guard try !probe.step(), carried.insert("\(key.kind) \(hex)").inserted else { return }
                        } catch let error as SQLiteError {
                            throw ArchiveError.reading(error, path: output, doing: "writing the delta")
                        } catch {
                            throw ArchiveError(
                                path: output, code: .writeFailed, detail: "writing the delta failed: \(error)")
                        }
                        let bytes = try copier.copy(kind: key.kind, hash: hash, hex: hex, row: key)
                        summary.contents += 1
                        summary.contentBytes += bytes
                    }
                    let insertRemoved = try db.prepare(
                        """
                        INSERT INTO tilepack_removed (layer, kind, zoom_level, tile_column, tile_row) VALUES (?, ?, ?, ?, ?)
                        """)
                    for key in oldRows.keys.sorted() {
                        try bind(key, to: insertRemoved)
                        try insertRemoved.run()
                    }
                    summary.removed = oldRows.count
                }
                try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                try db.execute("PRAGMA journal_mode = DELETE")
            }
            if let code = replacement.commit() {
                throw ArchiveError(
                    path: output, code: .writeFailed,
                    detail: "cannot move \(replacement.temporaryPath) into place: \(AtomicReplacement.message(code))")
            }
        } catch {
            replacement.removeTemporary()
            throw PackWriter.writeFailure(error, path: output, doing: "writing the delta")
        }
        var info = stat()
        summary.fileBytes = stat(output, &info) == 0 ? Int(info.st_size) : 0
        return summary
    }

    /// Applies the delta at `delta` to the pack at `installed` (never modified) and writes the
    /// result to `output` through a temporary file and an atomic rename; `output` may be
    /// `installed` itself, which is then replaced in one step once every check has passed.
    ///
    /// Checks, each failure leaving no output behind (the temporary file removed) and the
    /// installed pack as it was: `delta` is a whole, readable delta (a truncated or damaged one
    /// is refused); its metadata names `packID`, `from` and `to` and the digest
    /// `expectedDigest` ("a delta for another version" otherwise); every content it carries
    /// hashes to its key; every index row of the result has its content; and the result's
    /// tile index digest is `expectedDigest`. Contents no row references any more are removed.
    /// Contents kept from `installed` are not re-hashed here: every read checks them (and
    /// ``PackReader/verifyAll(decode:)`` does all at once).
    /// - Cost: one copy of `installed`, one pass over the delta, one index scan of the result.
    public static func apply(
        delta: String, installed: String, output: String, packID: String, from: Int, to: Int,
        expectedDigest: String
    ) throws(ArchiveError) {
        let deltaReader = try ArchiveError.typed(path: delta) { try PackReader(path: delta) }
        guard deltaReader.hasRemovedTable else {
            throw ArchiveError(
                path: delta, code: .notPack, detail: "not a tilepack delta (no tilepack_removed table)")
        }
        let meta = deltaReader.metadata
        let names = (
            meta[PackSchema.Key.packID] ?? "", meta[PackSchema.Key.deltaFrom] ?? "", meta[PackSchema.Key.deltaTo] ?? ""
        )
        guard names == (packID, String(from), String(to)) else {
            throw ArchiveError(
                path: delta, code: .deltaMismatch,
                detail:
                    """
                    a delta for another version: it updates pack \(ErrorText.quoted(String(names.0.prefix(200)))) \
                    v\(ErrorText.oneLine(String(names.1.prefix(20))))→v\(ErrorText.oneLine(String(names.2.prefix(20)))), expected \(ErrorText.quoted(packID)) v\(from)→v\(to)
                    """
            )
        }
        guard meta[PackSchema.Key.tileIndexSHA256] == expectedDigest else {
            throw ArchiveError(
                path: delta, code: .deltaMismatch,
                detail:
                    """
                    a delta for another version: it makes tile index \
                    \(ErrorText.quoted(String((meta[PackSchema.Key.tileIndexSHA256] ?? "").prefix(64)))), \
                    expected \(expectedDigest)
                    """
            )
        }
        // A pack this reader reads, before copying it.
        _ = try ArchiveError.typed(path: installed) { try PackReader(path: installed) }

        let replacement = AtomicReplacement(targetPath: output, companionSuffixes: companions)
        for stale in replacement.abandonedTemporaries() where stale != replacement.temporaryPath {
            replacement.remove(abandoned: stale)
        }
        replacement.removeTemporary()
        let temp = replacement.temporaryPath
        do {
            try ArchiveFile.copy(installed, to: temp)
            do {  // scoped so the connections close before the rename
                let deltaDB = try openReadOnly(delta)
                let db: SQLiteConnection
                do {
                    db = try SQLiteConnection(path: temp, mode: .readWriteExisting)
                    // The copy is ours until the rename and is deleted on any failure: no
                    // journal needed; durability comes from the fsync before the rename.
                    try db.execute("PRAGMA journal_mode = OFF")
                    try db.execute("PRAGMA synchronous = OFF")
                } catch {
                    throw ArchiveError.reading(error, path: temp, doing: "opening the copy")
                }
                try merge(deltaDB, delta: delta, deltaLayers: deltaReader.layers.count, into: db, output: output)
                let digest: String
                do {
                    digest = try PackIndex.digest(db, path: output)
                } catch {
                    // A row of the installed pack that the new layers do not have, say.
                    throw ArchiveError(
                        path: delta, code: .deltaMismatch,
                        detail: "applied to \(installed), it gives no valid pack: \(error.detail)")
                }
                guard digest == expectedDigest else {
                    throw ArchiveError(
                        path: delta, code: .deltaMismatch,
                        detail: "applied to \(installed) it gives tile index \(digest), expected \(expectedDigest)")
                }
            }
            try syncFile(temp)
            if let code = replacement.commit() {
                throw ArchiveError(
                    path: output, code: .writeFailed,
                    detail: "cannot move \(temp) into place: \(AtomicReplacement.message(code))")
            }
        } catch let error as ArchiveError {
            replacement.removeTemporary()
            throw error
        } catch {
            replacement.removeTemporary()
            throw ArchiveError(path: output, code: .writeFailed, detail: "applying \(delta) failed: \(error)")
        }
    }

    // MARK: - Internals

    /// Applies the delta's removals, rows, contents, layers and metadata to the copy in one
    /// transaction, sweeps unreferenced contents and checks that every row has its content.
    private static func merge(
        _ deltaDB: SQLiteConnection, delta: String, deltaLayers: Int,
        into db: SQLiteConnection, output: String
    ) throws(ArchiveError) {
        func sql<T>(_ what: String, _ body: () throws(SQLiteError) -> T) throws(ArchiveError) -> T {
            do { return try body() } catch { throw ArchiveError.reading(error, path: output, doing: what) }
        }
        try sql("starting the update") { () throws(SQLiteError) in try db.execute("BEGIN IMMEDIATE") }
        // Removed rows.
        let removed: SQLiteStatement = try sql("reading the removed rows") { () throws(SQLiteError) in
            try deltaDB.prepare(
                """
                SELECT layer, kind, zoom_level, tile_column, tile_row, typeof(layer) = 'integer' AND typeof(kind) = 'integer' \
                AND typeof(zoom_level) = 'integer' AND typeof(tile_column) = 'integer' AND typeof(tile_row) = 'integer' \
                FROM tilepack_removed
                """)
        }
        let delete = try sql("removing rows") { () throws(SQLiteError) in
            try db.prepare(
                """
                DELETE FROM tilepack_tile_index WHERE layer = ? AND kind = ? AND zoom_level = ? AND tile_column = ? AND tile_row = ?
                """)
        }
        while try sql("reading the removed rows", { () throws(SQLiteError) in try removed.step() }) {
            let key = PackRowKey(
                layer: removed.int(at: 0), kind: removed.int(at: 1), z: removed.int(at: 2),
                column: removed.int(at: 3), row: removed.int(at: 4))
            guard removed.int(at: 5) == 1 else {
                throw ArchiveError(path: delta, code: .damaged, detail: "removed row \(key.text) is not integers")
            }
            try sql("removing rows") { () throws(SQLiteError) in
                try bind(key, to: delete)
                try delete.run()
            }
        }
        // Changed and added rows (validated in key order as the digest walks them).
        let upsert = try sql("writing rows") { () throws(SQLiteError) in
            try db.prepare(
                """
                INSERT OR REPLACE INTO tilepack_tile_index (layer, kind, zoom_level, tile_column, tile_row, sha256) \
                VALUES (?, ?, ?, ?, ?, ?)
                """)
        }
        try PackIndex.forEachRow(deltaDB, path: delta, layerCount: deltaLayers) { key, _, hex throws(ArchiveError) in
            try sql("writing rows") { () throws(SQLiteError) in
                try bind(key, to: upsert)
                try upsert.bind(hex, at: 6)
                try upsert.run()
            }
        }
        // Contents, each checked against its key.
        let copier: ContentCopier = try sql("copying contents") { () throws(SQLiteError) in
            try ContentCopier(from: deltaDB, fromPath: delta, into: db)
        }
        try copier.copyAll()
        // Layers and metadata of the new version.
        let layers = try PackIndex.storedLayers(deltaDB, path: delta)
        var rows: [String: String] = [:]
        try sql("reading the delta's metadata") { () throws(SQLiteError) in
            let meta = try deltaDB.prepare("SELECT name, value FROM metadata")
            while try meta.step() { if let name = meta.string(at: 0) { rows[name] = meta.string(at: 1) ?? "" } }
        }
        // The delta's own keys describe the delta, not the pack (the pack id stays: it names the pack).
        for key in [PackSchema.Key.deltaFrom, PackSchema.Key.deltaTo, PackSchema.Key.tileIndexSHA256] {
            rows[key] = nil
        }
        try sql("writing layers and metadata") { () throws(SQLiteError) in
            try db.execute("DELETE FROM tilepack_pack_layers; DELETE FROM metadata")
            try insertLayers(layers, into: db)
            try insertMetadata(rows, into: db)
            try PackWriter.removeOrphans(db)
        }
        // Every row must have its content: the digest covers rows only.
        let orphan: String? = try sql("checking contents") { () throws(SQLiteError) -> String? in
            let check = try db.prepare(
                """
                SELECT zoom_level || '/' || tile_column || '/' || tile_row || ' (TMS) of layer ' || layer FROM tilepack_tile_index AS i \
                WHERE (i.kind = 0 AND NOT EXISTS (SELECT 1 FROM images WHERE tile_id = i.sha256)) \
                OR (i.kind = 1 AND NOT EXISTS (SELECT 1 FROM tilepack_elevation AS e WHERE e.sha256 = i.sha256)) LIMIT 1
                """)
            return try check.step() ? (check.string(at: 0) ?? "?") : nil
        }
        if let orphan {
            throw ArchiveError(
                path: delta, code: .deltaMismatch, detail: "applied, it leaves tile \(orphan) without content")
        }
        try sql("committing the update") { () throws(SQLiteError) in try db.execute("COMMIT") }
    }

    private static func openReadOnly(_ path: String) throws(ArchiveError) -> SQLiteConnection {
        do { return try SQLiteConnection(path: path, mode: .readOnly) } catch {
            throw ArchiveError.reading(error, path: path, doing: "opening")
        }
    }

    private static func bind(_ key: PackRowKey, to stmt: SQLiteStatement) throws(SQLiteError) {
        try stmt.bind(key.layer, at: 1)
        try stmt.bind(key.kind, at: 2)
        try stmt.bind(key.z, at: 3)
        try stmt.bind(key.column, at: 4)
        try stmt.bind(key.row, at: 5)
    }

    private static func insertLayers(_ layers: [PackIndex.StoredLayer], into db: SQLiteConnection) throws(SQLiteError) {
        let insert = try db.prepare("INSERT INTO tilepack_pack_layers (layer, archive, metadata) VALUES (?, ?, ?)")
        for layer in layers {
            try insert.bind(layer.layer, at: 1)
            try insert.bind(layer.archive, at: 2)
            try insert.bind(layer.metadataText, at: 3)
            try insert.run()
        }
    }

    private static func insertMetadata(_ rows: [String: String], into db: SQLiteConnection) throws(SQLiteError) {
        let insert = try db.prepare("INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)")
        for (name, value) in rows.sorted(by: { $0.key < $1.key }) {
            try insert.bind(name, at: 1)
            try insert.bind(value, at: 2)
            try insert.run()
        }
    }

    private static func syncFile(_ path: String) throws(ArchiveError) {
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0, fsync(fd) == 0 else {
            let code = errno
            if fd >= 0 { close(fd) }
            throw ArchiveError(
                path: path, code: .writeFailed,
                detail: "cannot sync the updated pack: \(AtomicReplacement.message(code))")
        }
        close(fd)
    }
}

/// Copies contents from one pack file to another, checking each against its hash: a content
/// whose bytes do not hash to its key is never copied.
private struct ContentCopier {
    let fromPath: String
    let selectImage: SQLiteStatement
    let selectElevation: SQLiteStatement
    let allImages: SQLiteStatement
    let allElevation: SQLiteStatement
    let insertImage: SQLiteStatement
    let insertElevation: SQLiteStatement

    init(from: SQLiteConnection, fromPath: String, into db: SQLiteConnection) throws(SQLiteError) {
        self.fromPath = fromPath
        // A content's type and length come from the record header; its bytes only when they
        // are a blob within StoredBlobLimit (a delta comes from a server or the device owner's disk).
        let image =
            "tile_id, " + StoredBlobLimit.boundedSQL("tile_data", limit: "\(StoredBlobLimit.maxBytes)")
            + ", typeof(tile_data), coalesce(length(tile_data), 0) FROM images"
        let elevation =
            "sha256, encoding, width, height, "
            + StoredBlobLimit.boundedSQL("data", limit: StoredBlobLimit.elevationSQL(width: "width", height: "height"))
            + ", typeof(data), coalesce(length(data), 0) FROM tilepack_elevation"
        selectImage = try from.prepare("SELECT \(image) WHERE tile_id = ?")
        selectElevation = try from.prepare("SELECT \(elevation) WHERE sha256 = ?")
        allImages = try from.prepare("SELECT \(image)")
        allElevation = try from.prepare("SELECT \(elevation)")
        // REPLACE: a checked content wins over whatever the target holds under its key (an
        // installed copy whose content was edited).
        insertImage = try db.prepare("INSERT OR REPLACE INTO images (tile_id, tile_data) VALUES (?, ?)")
        insertElevation = try db.prepare(
            "INSERT OR REPLACE INTO tilepack_elevation (sha256, encoding, width, height, data) VALUES (?, ?, ?, ?, ?)")
    }

    /// Copies the content of `row` (hash `hex`); returns its size.
    func copy(kind: Int, hash: [UInt8], hex: String, row: PackRowKey) throws(ArchiveError) -> Int {
        let stmt = kind == PackSchema.Kind.tile.rawValue ? selectImage : selectElevation
        defer { stmt.reset() }
        let found: Bool
        do {
            try stmt.bind(hex, at: 1)
            found = try stmt.step()
        } catch {
            throw ArchiveError.reading(error, path: fromPath, doing: "reading the content of \(row.text)")
        }
        guard found else {
            throw ArchiveError(
                path: fromPath, code: .damaged, detail: "\(row.text) is in the tile index but its content is missing"
            )
        }
        return try copyCurrent(stmt, kind: kind)
    }

    /// Copies every content of the source (a delta's).
    func copyAll() throws(ArchiveError) {
        for (stmt, kind) in [(allImages, 0), (allElevation, 1)] {
            defer { stmt.reset() }
            while true {
                let more: Bool
                do { more = try stmt.step() } catch {
                    throw ArchiveError.reading(error, path: fromPath, doing: "reading the delta's contents")
                }
                guard more else { break }
                _ = try copyCurrent(stmt, kind: kind)
            }
        }
    }

    /// Checks the row `stmt` is on (key first, then the content's columns) and inserts it.
    private func copyCurrent(_ stmt: SQLiteStatement, kind: Int) throws(ArchiveError) -> Int {
        let key = stmt.string(at: 0) ?? ""
        guard let expected = PackSchema.hashBytes(hex: key) else {
            throw ArchiveError(
                path: fromPath, code: .damaged,
                detail: "content key \(ErrorText.quoted(String(key.prefix(64)))) is not 64 lowercase hex digits")
        }
        let data: [UInt8]
        let matches: Bool
        var encoding = "", width = 0, height = 0
        let isTile = kind == PackSchema.Kind.tile.rawValue
        let sizeColumn: Int32 = isTile ? 2 : 5
        let limit =
            isTile
            ? StoredBlobLimit.maxBytes : StoredBlobLimit.elevation(width: stmt.int(at: 2), height: stmt.int(at: 3))
        if let refusal = StoredBlobLimit.refusal(
            type: stmt.string(at: sizeColumn) ?? "null", length: stmt.int(at: sizeColumn + 1),
            limit: limit, what: "\(isTile ? "tile" : "elevation") content \(key)")
        {
            throw ArchiveError(path: fromPath, code: .damaged, detail: refusal)
        }
        if isTile {
            data = stmt.bytes(at: 1) ?? []
            matches = data.withUnsafeBytes { PackSchema.tileHash($0).elementsEqual(expected) }
        } else {
            encoding = stmt.string(at: 1) ?? ""
            width = stmt.int(at: 2)
            height = stmt.int(at: 3)
            data = stmt.bytes(at: 4) ?? []
            matches =
                data.withUnsafeBytes {
                    PackSchema.elevationHash(encoding: encoding, width: width, height: height, data: $0)?.elementsEqual(
                        expected) ?? false
                } && ElevationEncoding(rawValue: encoding) != nil
        }
        guard matches else {
            throw ArchiveError(
                path: fromPath, code: .hashMismatch,
                detail: "\(kind == 0 ? "tile" : "elevation") content \(key) does not hash to its key")
        }
        do {
            if kind == PackSchema.Kind.tile.rawValue {
                try insertImage.bind(key, at: 1)
                try insertImage.bind(data, at: 2)
                try insertImage.run()
            } else {
                try insertElevation.bind(key, at: 1)
                try insertElevation.bind(encoding, at: 2)
                try insertElevation.bind(width, at: 3)
                try insertElevation.bind(height, at: 4)
                try insertElevation.bind(data, at: 5)
                try insertElevation.run()
            }
        } catch {
            throw ArchiveError.reading(error, path: fromPath, doing: "copying content \(key)")
        }
        return data.count
    }
}
