import TilePackCore

/// How large a blob stored in an archive or pack may be before a reader loads it, and the
/// one-line refusal when it is larger.
///
/// Readers ask SQLite for `typeof()` and `length()` first: both read the record header, not
/// the data (SQLite's OPFLAG_LENGTHARG), so a forged 1 GB row costs a lookup, never 1 GB.
/// ``MBTilesReader`` and ``PackLayerArchive`` share these figures, so an archive and the pack
/// cut from it refuse the same rows.
enum StoredBlobLimit {
    /// Largest blob any read loads (tile or elevation data): 32 MiB. A 4096² RGBA tile is 64 MiB
    /// raw but no codec tilepack reads stores one that large.
    static let maxBytes = 32 << 20

    /// Largest encoded elevation row for a `width × height` grid: twice the float grid plus
    /// 64 KiB (zlib never expands data more), within ``maxBytes``. Sides are clamped to
    /// ``ElevationTile/maxSide`` first, so a forged size cannot overflow the product.
    static func elevation(width: Int, height: Int) -> Int {
        let sides = min(max(width, 0), ElevationTile.maxSide) * min(max(height, 0), ElevationTile.maxSide)
        return min(maxBytes, 8 * sides + 65_536)
    }

    /// ``elevation(width:height:)`` as an SQL expression over a row's own `width` and `height`
    /// columns, for queries that must not load an over-long blob at all (a pack's content is
    /// found by hash, so its size is known only in the same row).
    static func elevationSQL(width: String, height: String) -> String {
        let side = ElevationTile.maxSide
        return "min(\(maxBytes), 8 * min(max(\(width), 0), \(side)) * min(max(\(height), 0), \(side)) + 65536)"
    }

    /// `column` when it is a blob of at most `limit` bytes (an SQL expression or `?N`), else
    /// NULL. `typeof()` and `length()` read the record header, so an over-long blob behind this
    /// expression is never loaded; readers select `typeof`/`length` beside it for ``refusal``.
    static func boundedSQL(_ column: String, limit: String) -> String {
        "CASE WHEN typeof(\(column)) = 'blob' AND length(\(column)) <= \(limit) THEN \(column) END"
    }

    /// The refusal for a stored value of SQLite type `type` and byte length `length` (as
    /// `typeof`/`length` report them) against `limit`, or nil when it may be read. A text
    /// value is refused too: its byte length is unknowable without loading it. NULL passes
    /// (an empty payload).
    static func refusal(type: String, length: Int, limit: Int, what: String) -> String? {
        if type == "null" { return nil }
        guard type == "blob" else { return "\(what) stores \(type), not a blob; not read" }
        guard length <= limit else {
            return "\(what) stores \(length) bytes, more than the \(limit) it may hold; not read"
        }
        return nil
    }
}
