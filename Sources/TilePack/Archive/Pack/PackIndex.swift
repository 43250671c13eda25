import TilePackCore
import TilePackSQLite
import Crypto

/// Reading a pack's layers and tile index off one connection, validated, in the order the
/// digest hashes them. Shared by the writer (digest at finish), the reader and the deltas, so
/// the three cannot disagree about what the digest covers.
enum PackIndex {
    /// A layer as stored: its number, archive name and the metadata text as is (the digest
    /// hashes the stored text, not a re-encoding of it).
    struct StoredLayer {
        var layer: Int
        var archive: String
        var metadataText: String
    }

    /// Every layer, in `layer` order. Layers must be numbered 0, 1, … without gaps, at most
    /// ``PackSchema/maxLayers``, with text names and metadata.
    /// - Cost: O(layers).
    static func storedLayers(_ db: SQLiteConnection, path: String) throws(ArchiveError) -> [StoredLayer] {
        var layers: [StoredLayer] = []
        do {
            let stmt = try db.prepare(
                """
                SELECT layer, archive, metadata, typeof(layer) = 'integer' AND typeof(archive) = 'text' \
                AND typeof(metadata) = 'text' FROM tilepack_pack_layers ORDER BY layer LIMIT \(PackSchema.maxLayers + 1)
                """)
            while try stmt.step() {
                guard layers.count < PackSchema.maxLayers else {
                    throw ArchiveError(
                        path: path, code: .damaged, detail: "pack has more than \(PackSchema.maxLayers) layers")
                }
                let number = stmt.int(at: 0)
                guard stmt.int(at: 3) == 1, number == layers.count, let archive = stmt.string(at: 1),
                    let text = stmt.string(at: 2)
                else {
                    throw ArchiveError(
                        path: path, code: .damaged,
                        detail:
                            """
                            pack layer row \(layers.count) is damaged (layers must be numbered 0, 1, … with text \
                            names and metadata)
                            """
                    )
                }
                layers.append(StoredLayer(layer: number, archive: archive, metadataText: text))
            }
        } catch let error as ArchiveError {
            throw error
        } catch let error as SQLiteError {
            throw ArchiveError.reading(error, path: path, doing: "reading the pack layers")
        } catch {
            preconditionFailure("unexpected error \(error)")
        }
        return layers
    }

    /// Calls `body` with every index row in primary-key order: its key and the 32 bytes of
    /// its hash. Throws ``ArchiveError`` (damaged) for a row whose values are not integers and
    /// a lowercase hex hash, whose layer is not one of `layerCount`, whose kind is unknown,
    /// whose tile lies outside its zoom's grid, or that repeats a key (a file whose index lost
    /// its primary key).
    /// - Cost: one scan of the index (a WITHOUT ROWID table, so in key order at no sort cost).
    static func forEachRow(
        _ db: SQLiteConnection, path: String, layerCount: Int,
        _ body: (PackRowKey, [UInt8], String) throws(ArchiveError) -> Void
    ) throws(ArchiveError) {
        let stmt: SQLiteStatement
        do {
            stmt = try db.prepare(
                """
                SELECT layer, kind, zoom_level, tile_column, tile_row, sha256, \
                typeof(layer) = 'integer' AND typeof(kind) = 'integer' AND typeof(zoom_level) = 'integer' \
                AND typeof(tile_column) = 'integer' AND typeof(tile_row) = 'integer' AND typeof(sha256) = 'text' \
                FROM tilepack_tile_index ORDER BY layer, kind, zoom_level, tile_column, tile_row
                """)
        } catch {
            throw ArchiveError.reading(error, path: path, doing: "reading the tile index")
        }
        var previous: PackRowKey?
        while true {
            let more: Bool
            do { more = try stmt.step() } catch {
                throw ArchiveError.reading(error, path: path, doing: "reading the tile index")
            }
            guard more else { break }
            let key = PackRowKey(
                layer: stmt.int(at: 0), kind: stmt.int(at: 1), z: stmt.int(at: 2),
                column: stmt.int(at: 3), row: stmt.int(at: 4))
            let hex = stmt.string(at: 5) ?? ""
            guard stmt.int(at: 6) == 1, let hash = PackSchema.hashBytes(hex: hex) else {
                throw ArchiveError(
                    path: path, code: .damaged,
                    detail: "tile index row \(key.text) is damaged (not integers and a 64-digit lowercase hex hash)")
            }
            try check(key, path: path, layerCount: layerCount)
            if let previous, !(previous < key) {
                throw ArchiveError(path: path, code: .damaged, detail: "tile index repeats \(key.text)")
            }
            previous = key
            try body(key, hash, hex)
        }
    }

    /// Throws unless `key` names a layer of the pack, a known kind and a tile on its zoom's grid.
    static func check(_ key: PackRowKey, path: String, layerCount: Int) throws(ArchiveError) {
        guard (0..<layerCount).contains(key.layer), PackSchema.Kind(rawValue: key.kind) != nil,
            (0...TileID.maxZoom).contains(key.z), (0..<(1 << key.z)).contains(key.column),
            (0..<(1 << key.z)).contains(key.row)
        else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail: "tile index row \(key.text) names no layer, kind or tile of the pack (\(layerCount) layers)")
        }
    }

    /// The tile index digest of the pack open on `db` (docs/REGIONS.md): SHA-256 of
    /// `tilepack-pack-index-v1\n`, each layer (number, archive name, metadata text) and each
    /// index row (layer, kind, zoom, column, TMS row, hash) in primary-key order.
    /// - Cost: one scan of the layers and of the index; no content is read.
    static func digest(_ db: SQLiteConnection, path: String) throws(ArchiveError) -> String {
        var hasher = SHA256()
        PackSchema.digestPrefix.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        let layers = try storedLayers(db, path: path)
        var buffer: [UInt8] = []
        for layer in layers {
            buffer.removeAll(keepingCapacity: true)
            let name = Array(layer.archive.utf8), text = Array(layer.metadataText.utf8)
            guard let number = UInt32(exactly: layer.layer), let nameCount = UInt32(exactly: name.count),
                let textCount = UInt32(exactly: text.count)
            else {
                throw ArchiveError(
                    path: path, code: .damaged, detail: "pack layer \(layer.layer) is too large to hash")
            }
            PackSchema.appendBE32(number, to: &buffer)
            PackSchema.appendBE32(nameCount, to: &buffer)
            buffer.append(contentsOf: name)
            PackSchema.appendBE32(textCount, to: &buffer)
            buffer.append(contentsOf: text)
            buffer.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        }
        // 46 bytes a row: 4 layer, 1 kind, 1 zoom, 4 column, 4 row, 32 hash.
        var row = [UInt8]()
        row.reserveCapacity(46)
        try forEachRow(db, path: path, layerCount: layers.count) { key, hash, _ throws(ArchiveError) in
            row.removeAll(keepingCapacity: true)
            // check() proved layer < maxLayers, kind ∈ {0, 1}, z ≤ 24, column and row < 2^24.
            PackSchema.appendBE32(UInt32(truncatingIfNeeded: key.layer), to: &row)
            row.append(UInt8(truncatingIfNeeded: key.kind))
            row.append(UInt8(truncatingIfNeeded: key.z))
            PackSchema.appendBE32(UInt32(truncatingIfNeeded: key.column), to: &row)
            PackSchema.appendBE32(UInt32(truncatingIfNeeded: key.row), to: &row)
            row.append(contentsOf: hash)
            row.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        }
        return hasher.finalize().hexString
    }

    /// Counts per zoom and kind, and the distinct contents' bytes, with `digest` appended.
    /// - Cost: one scan of the index joined to the content keys; `length()` of a blob reads
    ///   no overflow page, so no tile content is read.
    static func statistics(_ db: SQLiteConnection, path: String, digest: String) throws(ArchiveError) -> PackStatistics
    {
        do {
            let rows = try db.prepare(
                """
                SELECT i.zoom_level, i.kind, count(*), coalesce(sum(coalesce(length(m.tile_data), length(e.data), 0)), 0) \
                FROM tilepack_tile_index AS i \
                LEFT JOIN images AS m ON i.kind = 0 AND m.tile_id = i.sha256 \
                LEFT JOIN tilepack_elevation AS e ON i.kind = 1 AND e.sha256 = i.sha256 \
                GROUP BY i.zoom_level, i.kind ORDER BY i.zoom_level, i.kind
                """)
            var perZoom: [PackZoomCount] = []
            var tiles = 0, elevation = 0
            while try rows.step() {
                let z = rows.int(at: 0), kind = rows.int(at: 1), count = rows.int(at: 2), bytes = rows.int(at: 3)
                if kind == PackSchema.Kind.elevation.rawValue { elevation += count } else { tiles += count }
                if let last = perZoom.last, last.z == z {
                    perZoom[perZoom.count - 1].tiles += count
                    perZoom[perZoom.count - 1].bytes += bytes
                } else {
                    perZoom.append(PackZoomCount(z: z, tiles: count, bytes: bytes))
                }
            }
            let stored = try db.prepare(
                """
                SELECT (SELECT coalesce(sum(length(tile_data)), 0) FROM images) \
                + (SELECT coalesce(sum(length(data)), 0) FROM tilepack_elevation)
                """)
            let storedBytes = try stored.step() ? stored.int(at: 0) : 0
            return PackStatistics(
                perZoom: perZoom, tiles: tiles, elevationRows: elevation, storedBytes: storedBytes,
                indexDigest: digest)
        } catch {
            throw ArchiveError.reading(error, path: path, doing: "counting the pack's tiles")
        }
    }
}
