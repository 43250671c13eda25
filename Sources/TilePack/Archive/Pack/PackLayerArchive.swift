import TilePackCore
import TilePackSQLite
import TilePackCodec

/// One layer of a pack as a ``TileArchive``: the tiles cut from one master archive, read
/// through the pack's tile index.
///
/// Every read checks the content's SHA-256 against the index row's hash and throws
/// ``ArchiveError`` (``ArchiveError/Code/hashMismatch``) when they differ: the device's
/// defence against tiles edited or swapped into an installed pack after its index digest was
/// checked against the signed manifest. A damaged tile is never handed out as a good one.
///
/// `path` is `<pack path>#<archive name>`, so errors name both. Made by ``PackReader``, with
/// which it shares connections (see ``PackReader`` for threads).
public final class PackLayerArchive: TileArchive {
    /// `<pack path>#<archive name>`.
    public let path: String
    /// The pack file.
    public let packPath: String

    /// `<pack file>/<archive>`: with a `/` in it, no file in a library can be named this, so a
    /// master archive named like a pack's layer never gets the pack's access.
    public var accessName: String {
        (packPath.split(separator: "/").last.map(String.init) ?? packPath) + "/" + info.archive
    }
    /// The layer's number in the pack (drawing order).
    public let layer: Int
    public let info: PackLayerInfo
    /// Name and codec from the layer's metadata, bounds from the pack's (the product's area),
    /// zooms from the layer's index rows (what the pack holds, not what the master held).
    public let summary: TileArchiveSummary
    private let pool: PackConnectionPool

    init(
        packPath: String, layer: Int, info: PackLayerInfo, packBounds: GeoBounds?, pool: PackConnectionPool
    ) throws(ArchiveError) {
        self.packPath = packPath
        self.layer = layer
        self.info = info
        self.path = "\(packPath)#\(info.archive)"
        self.pool = pool
        let metadata = info.metadata
        // Four primary-key seeks: the lowest and highest zoom of each kind in this layer.
        let (zooms, elevation): (ClosedRange<Int>?, Bool) = try pool.withConnection(
            errorPath: path, doing: "reading the layer's zooms"
        ) {
            conn throws(SQLiteError) in
            var lo = Int.max, hi = Int.min, hasElevation = false
            for kind in PackSchema.Kind.allCases {
                for order in ["ASC", "DESC"] {
                    let stmt = try conn.db.prepare(
                        """
                        SELECT zoom_level FROM tilepack_tile_index WHERE layer = ? AND kind = ? \
                        ORDER BY zoom_level \(order) LIMIT 1
                        """)
                    try stmt.bind(layer, at: 1)
                    try stmt.bind(kind.rawValue, at: 2)
                    guard try stmt.step() else { continue }
                    let z = stmt.int(at: 0)
                    lo = min(lo, z); hi = max(hi, z)
                    if kind == .elevation { hasElevation = true }
                }
            }
            return (lo <= hi && lo >= 0 && hi <= TileID.maxZoom ? lo...hi : nil, hasElevation)
        }
        let layerBounds = metadata[MBTilesMetadata.Key.bounds].flatMap(GeoBounds.init(metadataValue:))
        let tileSize =
            metadata[MBTilesMetadata.Key.tileSize].flatMap { Int($0) }.flatMap { (1...4096).contains($0) ? $0 : nil }
            ?? 256
        summary = TileArchiveSummary(
            name: metadata[MBTilesMetadata.Key.name] ?? info.archive, bounds: packBounds ?? layerBounds,
            zoomRange: zooms,
            codec: TileCodecChoice(metadata: metadata),
            codecName: metadata[MBTilesMetadata.Key.codec] ?? metadata[MBTilesMetadata.Key.format] ?? "",
            tileSize: tileSize, hasElevation: elevation,
            valueKind: .some(ValueKind(metadata: metadata, hasElevationTable: elevation)))
    }

    /// What one lookup found, carried out of the SQLite-typed closure.
    private enum Lookup<T> {
        case absent
        case found(T)
        case missingContent
        case mismatch
        case badHash
        /// Stored bytes refused unread (``StoredBlobLimit``): the problem and one-line reason.
        case refused(ArchiveError.Code, String)
    }

    /// Calls `body` with tile `id`'s stored bytes (SQLite's buffer, valid during the call)
    /// after checking them against the index row's hash; nil without calling it when the
    /// layer has no such tile. Bytes over ``StoredBlobLimit/maxBytes`` are refused unread.
    /// - Cost: two primary-key seeks (index row, content) and one SHA-256 of the payload
    ///   (~1.5 GB/s: ~20 µs for a 32 KiB tile); no allocation beyond what `body` does.
    /// - Throws: ``ArchiveError`` (hashMismatch) when the content is not what the index says,
    ///   (damaged) when the row's content is missing or too long, or what `body` throws.
    public func withTile<R>(_ id: TileID, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try withTile(id, maxBytes: StoredBlobLimit.maxBytes, body)
    }

    /// ``withTile(_:_:)`` refusing stored bytes longer than `maxBytes` (capped at
    /// ``StoredBlobLimit/maxBytes``) *before SQLite loads them*: the query reads the blob's
    /// length from the record header and asks for the data only within the limit.
    /// - Throws: as ``withTile(_:_:)``; ``ArchiveError`` (damaged) naming the stored size.
    public func withTile<R>(_ id: TileID, maxBytes: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        let limit = min(max(0, maxBytes), StoredBlobLimit.maxBytes)
        var bodyError: (any Error)?
        let lookup: Lookup<R?> = try pool.withConnection(errorPath: path, doing: "reading tile \(id)") {
            conn throws(SQLiteError) in
            let stmt = conn.selectTile
            defer { stmt.reset() }
            try conn.bindKey(stmt, layer: layer, tile: id)
            try stmt.bind(limit, at: 5)
            guard try stmt.step() else { return .absent }
            guard let expected = stmt.string(at: 0).flatMap(PackSchema.hashBytes(hex:)) else { return .badHash }
            guard stmt.int(at: 2) == 1 else { return .missingContent }
            if let refusal = StoredBlobLimit.refusal(
                type: stmt.string(at: 3) ?? "null", length: stmt.int(at: 4), limit: limit,
                what: "tile \(id)")
            {
                return .refused(.damaged, refusal)
            }
            let empty = UnsafeRawBufferPointer(start: nil, count: 0)
            let checked: Lookup<R?> =
                stmt.withBytes(at: 1) { bytes in
                    guard PackSchema.tileHash(bytes).elementsEqual(expected) else { return .mismatch }
                    do { return .found(try body(bytes)) } catch { bodyError = error; return .found(nil) }
                }
                ?? {
                    guard PackSchema.tileHash(empty).elementsEqual(expected) else { return .mismatch }
                    do { return .found(try body(empty)) } catch { bodyError = error; return .found(nil) }
                }()
            return checked
        }
        if let bodyError { throw bodyError }
        return try unwrap(lookup, what: "tile \(id)") ?? nil
    }

    /// Tile `id`'s checked bytes as a new array, nil when the layer has none.
    /// - Cost: as ``withTile(_:_:)`` plus one copy of the payload.
    public func tile(_ id: TileID) throws -> [UInt8]? {
        do {
            return try withTile(id) { Array($0) }
        } catch let error as ArchiveError {
            throw error
        } catch {
            preconditionFailure("a non-throwing body cannot throw \(error)")
        }
    }

    /// The elevation grid of tile `id` after checking its row against the index hash, nil
    /// when the layer has none there.
    /// - Cost: two seeks, one SHA-256 and one inflate of the blob (refused unread when longer
    ///   than its grid may need, ``StoredBlobLimit/elevation(width:height:)``).
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
        guard summary.hasElevation else { return nil }
        let lookup: Lookup<(String, Int, Int, [UInt8])> = try pool.withConnection(
            errorPath: path, doing: "reading elevation \(id)"
        ) {
            conn throws(SQLiteError) in
            let stmt = conn.selectElevation
            defer { stmt.reset() }
            try conn.bindKey(stmt, layer: layer, tile: id)
            guard try stmt.step() else { return .absent }
            guard let expected = stmt.string(at: 0).flatMap(PackSchema.hashBytes(hex:)) else { return .badHash }
            guard stmt.int(at: 5) == 1 else { return .missingContent }
            let encoding = stmt.string(at: 1) ?? "", width = stmt.int(at: 2), height = stmt.int(at: 3)
            if let refusal = StoredBlobLimit.refusal(
                type: stmt.string(at: 6) ?? "null", length: stmt.int(at: 7),
                limit: StoredBlobLimit.elevation(width: width, height: height),
                what: "elevation tile \(id) (\(width)×\(height))")
            {
                return .refused(.badElevation, refusal)
            }
            let data = stmt.bytes(at: 4) ?? []
            let hash = data.withUnsafeBytes {
                PackSchema.elevationHash(encoding: encoding, width: width, height: height, data: $0)
            }
            guard let hash, hash.elementsEqual(expected) else { return .mismatch }
            return .found((encoding, width, height, data))
        }
        guard let (name, width, height, blob) = try unwrap(lookup, what: "elevation \(id)") else { return nil }
        guard let encoding = ElevationEncoding(rawValue: name) else {
            throw ArchiveError(
                path: path, code: .badElevation,
                detail: "elevation tile \(id) has unknown encoding \(ErrorText.quoted(name))")
        }
        try admit(width, height)
        return try encoding.decode(blob, width: width, height: height, path: path)
    }

    private func unwrap<T>(_ lookup: Lookup<T>, what: String) throws(ArchiveError) -> T? {
        switch lookup {
        case .absent: return nil
        case .found(let value): return value
        case .missingContent:
            throw ArchiveError(
                path: path, code: .damaged, detail: "\(what) is in the tile index but its content is missing")
        case .mismatch:
            throw ArchiveError(
                path: path, code: .hashMismatch,
                detail: "\(what) does not match its tile index hash (edited or swapped after the pack was written)")
        case .badHash:
            throw ArchiveError(
                path: path, code: .damaged,
                detail: "\(what) has a tile index hash that is not 64 lowercase hex digits")
        case .refused(let problem, let detail):
            throw ArchiveError(path: path, code: problem, detail: detail)
        }
    }
}
