import TilePackCore
import TilePackSQLite
import TilePackCodec

/// Reads a pack (or a delta, which has the same tables; docs/REGIONS.md, "The pack file").
///
/// Opening validates cheaply, in O(1) pages plus O(layers): the file is a regular file (a FIFO
/// is refused without blocking), starts with the SQLite header and is not shorter than its
/// header says (a truncated download or delta), carries MBTiles' `application_id`, has the pack
/// tables (the tile index exactly as ``PackSchema`` creates it), a `tilepack_pack_format` this
/// reader knows, and layers numbered 0, 1, … whose metadata is a JSON object of strings.
/// Every problem is an ``ArchiveError`` naming the file.
///
/// What opening does not prove: that the index is the published one (compare
/// ``indexDigest()`` with the manifest's `tile_index_sha256`), and that each content matches
/// its index row (checked on every read by ``PackLayerArchive``, or all at once by
/// ``verifyAll(decode:)``).
///
/// Threads: `Sendable`; the reader and its layers share a pool of read-only connections, one
/// per concurrent call (as ``MBTilesReader``).
public final class PackReader: Sendable {
    public let path: String
    public let layers: [PackLayerInfo]
    /// The pack's MBTiles `metadata` rows.
    public let metadata: [String: String]
    /// `tilepack_pack_format` of the file (1 … ``PackSchema/readerVersion``).
    public let formatVersion: Int
    /// Whether the file has `tilepack_removed` (a delta).
    public let hasRemovedTable: Bool
    let pool: PackConnectionPool
    private let archives: [PackLayerArchive]

    /// Opens and validates `path` (see the type's documentation).
    /// - Cost: O(1) pages, the metadata rows, and O(layers) index seeks.
    public init(path: String) throws {
        self.path = path
        try ArchiveFile.check(path)
        let db: SQLiteConnection
        do {
            db = try SQLiteConnection(path: path, mode: .readOnly)
        } catch {
            throw ArchiveError.reading(error, path: path, doing: "opening")
        }
        var rows: [String: String] = [:]
        var stored: [PackIndex.StoredLayer] = []
        var removed = false
        do {
            let appID = try db.prepare("PRAGMA application_id")
            let id = try appID.step() ? Int32(truncatingIfNeeded: appID.int(at: 0)) : 0
            guard id == MBTilesSchema.applicationID else {
                throw ArchiveError(
                    path: path, code: .notPack,
                    detail:
                        """
                        not a tilepack pack (application_id 0x\(String(UInt32(bitPattern: id), radix: 16)), \
                        expected 0x4d504258)
                        """
                )
            }
            let master = try db.prepare(
                """
                SELECT name, type, sql FROM sqlite_master WHERE name IN \
                ('metadata', 'images', 'tilepack_elevation', 'tilepack_pack_layers', 'tilepack_tile_index', 'tilepack_removed')
                """)
            var found: [String: (type: String, sql: String)] = [:]
            while try master.step() {
                if let name = master.string(at: 0) {
                    found[name] = (master.string(at: 1) ?? "", master.string(at: 2) ?? "")
                }
            }
            for table in PackSchema.requiredTables where found[table]?.type != "table" {
                throw ArchiveError(path: path, code: .notPack, detail: "not a tilepack pack (no \(table) table)")
            }
            // The digest and every read trust the index's key and types: it must be exactly ours.
            guard found["tilepack_tile_index"]?.sql == PackSchema.createIndex else {
                throw ArchiveError(
                    path: path, code: .notPack,
                    detail: "not a tilepack pack (tilepack_tile_index is not defined as the pack format defines it)")
            }
            if let table = found["tilepack_removed"] {
                guard table.type == "table", table.sql == PackSchema.createRemoved else {
                    throw ArchiveError(
                        path: path, code: .notPack,
                        detail: "not a tilepack delta (tilepack_removed is not defined as the pack format defines it)")
                }
                removed = true
            }
            let meta = try db.prepare("SELECT name, value FROM metadata")
            while try meta.step() {
                if let name = meta.string(at: 0) { rows[name] = meta.string(at: 1) ?? "" }
            }
        } catch let error as ArchiveError {
            throw error
        } catch let error as SQLiteError {
            throw ArchiveError.reading(error, path: path, doing: "reading the schema")
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        guard let formatText = rows[PackSchema.Key.packFormat] else {
            throw ArchiveError(
                path: path, code: .notPack, detail: "not a tilepack pack (no \(PackSchema.Key.packFormat) metadata)")
        }
        guard let format = Int(formatText), format >= 1 else {
            throw ArchiveError(
                path: path, code: .notPack,
                detail:
                    """
                    not a tilepack pack (\(PackSchema.Key.packFormat) \
                    \(ErrorText.quoted(String(formatText.prefix(40)))) is not a version)
                    """
            )
        }
        guard format <= PackSchema.readerVersion else {
            throw ArchiveError(
                path: path, code: .unsupportedVersion,
                detail:
                    "pack format \(format) needs a newer tilepack (this one reads format \(PackSchema.readerVersion))")
        }
        stored = try PackIndex.storedLayers(db, path: path)
        guard !stored.isEmpty else {
            throw ArchiveError(path: path, code: .damaged, detail: "pack has no layers")
        }
        var infos: [PackLayerInfo] = []
        for layer in stored {
            guard let rows = PackLayerInfo.metadata(fromText: layer.metadataText) else {
                throw ArchiveError(
                    path: path, code: .damaged,
                    detail:
                        """
                        pack layer \(layer.layer) (\(ErrorText.quoted(layer.archive))) has metadata that is not a \
                        JSON object of strings
                        """
                )
            }
            infos.append(PackLayerInfo(archive: layer.archive, metadata: rows))
        }
        let first: PackConnection
        do {
            first = try PackConnection(path: path)
        } catch {
            throw ArchiveError(
                path: path, code: .notPack,
                detail: "not a tilepack pack (tables lack the expected columns: \(ErrorText.oneLine(error.message)))")
        }
        metadata = rows
        formatVersion = format
        hasRemovedTable = removed
        layers = infos
        pool = PackConnectionPool(path: path, first: first)
        let bounds = rows[MBTilesMetadata.Key.bounds].flatMap(GeoBounds.init(metadataValue:))
        var archives: [PackLayerArchive] = []
        for (number, info) in infos.enumerated() {
            archives.append(
                try PackLayerArchive(packPath: path, layer: number, info: info, packBounds: bounds, pool: pool))
        }
        self.archives = archives
    }

    /// Layer `index` as a ``TileArchive``; nil when the pack has no such layer.
    /// - Cost: O(1) (made at open).
    public func layer(_ index: Int) -> PackLayerArchive? {
        archives.indices.contains(index) ? archives[index] : nil
    }

    /// The layer cut from master archive `name`, nil when none is.
    public func layer(named name: String) -> PackLayerArchive? {
        archives.first { $0.info.archive == name }
    }

    /// The tile index digest (docs/REGIONS.md): what the manifest's `tile_index_sha256` is
    /// compared with before a pack is used.
    /// - Cost: one scan of the index (O(index rows)); no tile content is read.
    /// - Throws: ``ArchiveError`` (damaged) for an index row that is not well formed.
    public func indexDigest() throws -> String {
        try withDatabase(doing: "reading the tile index") { db throws(ArchiveError) in
            try PackIndex.digest(db, path: path)
        }
    }

    /// Per-zoom counts and bytes, totals and the digest.
    /// - Cost: two scans of the index (digest, counts); no tile content is read.
    package func statistics() throws(ArchiveError) -> PackStatistics {
        try withDatabase(doing: "counting the pack") { db throws(ArchiveError) in
            let digest = try PackIndex.digest(db, path: path)
            return try PackIndex.statistics(db, path: path, digest: digest)
        }
    }

    /// Every index row, in primary-key order, optionally of one layer only.
    /// - Cost: one scan of the index; O(rows) memory (~150 bytes a row).
    package func indexRows(layer: Int? = nil) throws(ArchiveError) -> [PackIndexRow] {
        try withDatabase(doing: "reading the tile index") { db throws(ArchiveError) in
            var out: [PackIndexRow] = []
            try PackIndex.forEachRow(db, path: path, layerCount: layers.count) { key, _, hex throws(ArchiveError) in
                guard layer == nil || layer == key.layer, let kind = PackSchema.Kind(rawValue: key.kind),
                    let tile = TileID(z: key.z, x: key.column, tmsY: key.row)
                else { return }
                out.append(PackIndexRow(layer: key.layer, kind: kind, tile: tile, sha256: hex))
            }
            return out
        }
    }

    /// Checks the whole pack: every index row is well formed and its content exists and
    /// hashes to the row's hash; with `decode`, every display tile also decodes with its
    /// layer's codec at the layer's tile size, and every elevation row decodes. The first
    /// problem is thrown, naming the layer (`pack#archive`) and the tile (z/x/y, XYZ).
    /// - Cost: reads and hashes every distinct content once (a content shared by several rows
    ///   is checked once); with `decode`, decodes each once too. O(pack bytes).
    package func verifyAll(decode: Bool) throws(ArchiveError) -> PackStatistics {
        let stats = try statistics()
        let decoders: [(any TileDecoder)?] = layers.map { TileCodecChoice(metadata: $0.metadata)?.decoder() }
        try withPackConnection(doing: "verifying the pack") { conn throws(ArchiveError) in
            // A content shared by many rows (an empty sea tile) is read and checked once per layer and kind.
            var checked = Set<String>()
            try PackIndex.forEachRow(conn.db, path: path, layerCount: layers.count) {
                key, hash, hex throws(ArchiveError) in
                guard checked.insert("\(key.layer) \(key.kind) \(hex)").inserted else { return }
                let archive = archives[key.layer]
                // check() proved the key lies on its zoom's grid.
                let tile = TileID(unchecked: key.z, key.column, (1 << key.z) - 1 - key.row)
                if key.kind == PackSchema.Kind.tile.rawValue {
                    try verifyTile(
                        conn, archive: archive, tile: tile, hash: hash, hex: hex,
                        decoder: decode ? .some(decoders[key.layer]) : nil)
                } else {
                    try verifyElevation(conn, archive: archive, tile: tile, hash: hash, hex: hex, decode: decode)
                }
            }
        }
        return stats
    }

    // MARK: - Internals

    private func verifyTile(
        _ conn: PackConnection, archive: PackLayerArchive, tile: TileID, hash: [UInt8], hex: String,
        decoder: (any TileDecoder)??
    ) throws(ArchiveError) {
        let stmt = conn.selectImage
        defer { stmt.reset() }
        let bytes: [UInt8]?
        var refusal: String?
        do {
            try stmt.bind(hex, at: 1)
            if try stmt.step() {
                refusal = StoredBlobLimit.refusal(
                    type: stmt.string(at: 1) ?? "null", length: stmt.int(at: 2),
                    limit: StoredBlobLimit.maxBytes, what: "tile \(tile)")
                bytes = stmt.bytes(at: 0) ?? []
            } else {
                bytes = nil
            }
        } catch {
            throw ArchiveError.reading(error, path: archive.path, doing: "verifying tile \(tile)")
        }
        if let refusal { throw ArchiveError(path: archive.path, code: .damaged, detail: refusal) }
        guard let bytes else {
            throw ArchiveError(
                path: archive.path, code: .damaged,
                detail: "tile \(tile) is in the tile index but its content is missing")
        }
        guard bytes.withUnsafeBytes({ PackSchema.tileHash($0).elementsEqual(hash) }) else {
            throw ArchiveError(
                path: archive.path, code: .hashMismatch, detail: "tile \(tile) does not match its tile index hash")
        }
        guard let decoder else { return }
        guard let decoder else {
            throw ArchiveError(
                path: archive.path, code: .invalidArgument,
                detail:
                    """
                    tile \(tile) cannot be decoded: tilepack has no decoder for codec \
                    \(ErrorText.quoted(archive.summary.codecName))
                    """
            )
        }
        let side = archive.summary.tileSize
        do {
            _ = try decoder.decode(bytes, width: side, height: side)
        } catch {
            throw ArchiveError(
                path: archive.path, code: .damaged,
                detail:
                    """
                    tile \(tile) does not decode as \(decoder.name) \(side)×\(side): \
                    \(ErrorText.oneLine(String(describing: error)))
                    """
            )
        }
    }

    private func verifyElevation(
        _ conn: PackConnection, archive: PackLayerArchive, tile: TileID, hash: [UInt8], hex: String,
        decode: Bool
    ) throws(ArchiveError) {
        let stmt = conn.selectElevationContent
        defer { stmt.reset() }
        let row: (String, Int, Int, [UInt8])?
        var refusal: String?
        do {
            try stmt.bind(hex, at: 1)
            if try stmt.step() {
                let width = stmt.int(at: 1), height = stmt.int(at: 2)
                refusal = StoredBlobLimit.refusal(
                    type: stmt.string(at: 4) ?? "null", length: stmt.int(at: 5),
                    limit: StoredBlobLimit.elevation(width: width, height: height),
                    what: "elevation tile \(tile) (\(width)×\(height))")
                row = (stmt.string(at: 0) ?? "", width, height, stmt.bytes(at: 3) ?? [])
            } else {
                row = nil
            }
        } catch {
            throw ArchiveError.reading(error, path: archive.path, doing: "verifying elevation \(tile)")
        }
        if let refusal { throw ArchiveError(path: archive.path, code: .badElevation, detail: refusal) }
        guard let (name, width, height, data) = row else {
            throw ArchiveError(
                path: archive.path, code: .damaged,
                detail: "elevation \(tile) is in the tile index but its content is missing")
        }
        let actual = data.withUnsafeBytes {
            PackSchema.elevationHash(encoding: name, width: width, height: height, data: $0)
        }
        guard let actual, actual.elementsEqual(hash) else {
            throw ArchiveError(
                path: archive.path, code: .hashMismatch,
                detail: "elevation \(tile) does not match its tile index hash")
        }
        guard let encoding = ElevationEncoding(rawValue: name) else {
            throw ArchiveError(
                path: archive.path, code: .badElevation,
                detail: "elevation tile \(tile) has unknown encoding \(ErrorText.quoted(name))")
        }
        if decode {
            _ = try ArchiveError.typed(path: archive.path) {
                try encoding.decode(data, width: width, height: height, path: archive.path)
            }
        }
    }

    /// Runs `body` on a pooled connection; its SQLite failures become ArchiveErrors.
    private func withPackConnection<T>(
        doing what: String, _ body: (PackConnection) throws(ArchiveError) -> T
    ) throws(ArchiveError) -> T {
        let outcome: Result<T, ArchiveError> = try pool.withConnection(errorPath: path, doing: what) {
            conn throws(SQLiteError) in
            Result { () throws(ArchiveError) in try body(conn) }
        }
        return try outcome.get()
    }

    private func withDatabase<T>(
        doing what: String, _ body: (SQLiteConnection) throws(ArchiveError) -> T
    ) throws(ArchiveError) -> T {
        try withPackConnection(doing: what) { conn throws(ArchiveError) in try body(conn.db) }
    }
}
