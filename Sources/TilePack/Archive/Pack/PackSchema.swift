import TilePackCore
import TilePackSQLite
import Crypto

/// The pack file format (docs/REGIONS.md, "The pack file"): the SQL, the content hashes and
/// the tile index digest, in one place for the writer, the reader and the delta code.
///
/// A pack is an SQLite file with MBTiles' `application_id`, content-addressed tiles
/// (`images`, `tilepack_elevation`), one layer per master archive (`tilepack_pack_layers`) and
/// the tile index (`tilepack_tile_index`: layer, kind, TMS tile → content hash). The `tiles`
/// and `elevation` views show layer 0, so every MBTiles reader (GDAL, QGIS, ``MBTilesReader``)
/// opens a pack as its first layer.
package enum PackSchema {
    /// The pack format this code reads and writes (the manifest's `min_reader_version`, and
    /// the pack's `tilepack_pack_format` metadata row). A pack needing a newer reader is refused.
    public static let readerVersion = 1

    /// Index row kinds (`tilepack_tile_index.kind`).
    public enum Kind: Int, Sendable, Comparable, CaseIterable {
        /// A display tile; content in `images`.
        case tile = 0
        /// An elevation grid; content in `tilepack_elevation`.
        case elevation = 1

        public static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
    }

    /// Metadata keys the pack and delta code write.
    public enum Key {
        /// The pack format version of the file (``readerVersion`` when written here).
        public static let packFormat = "tilepack_pack_format"
        /// Delta files: the pack id, the version the delta starts from and the one it makes,
        /// and that version's tile index digest.
        public static let packID = "tilepack_pack_id"
        public static let deltaFrom = "tilepack_delta_from"
        public static let deltaTo = "tilepack_delta_to"
        public static let tileIndexSHA256 = "tilepack_tile_index_sha256"
    }

    /// Largest number of layers a pack may have: a pack has a layer per master archive of one
    /// product (a handful); the bound keeps opening a hostile file O(1).
    public static let maxLayers = 256

    /// The statements that create a pack, each run on its own so that `sqlite_master.sql`
    /// holds exactly this text (the reader compares the index table's with ``createIndex``).
    static let createIndex = """
        CREATE TABLE tilepack_tile_index (layer INTEGER NOT NULL, kind INTEGER NOT NULL, \
        zoom_level INTEGER NOT NULL, tile_column INTEGER NOT NULL, tile_row INTEGER NOT NULL, \
        sha256 TEXT NOT NULL, PRIMARY KEY (layer, kind, zoom_level, tile_column, tile_row)) WITHOUT ROWID
        """

    static let createRemoved = """
        CREATE TABLE tilepack_removed (layer INTEGER NOT NULL, kind INTEGER NOT NULL, \
        zoom_level INTEGER NOT NULL, tile_column INTEGER NOT NULL, tile_row INTEGER NOT NULL, \
        PRIMARY KEY (layer, kind, zoom_level, tile_column, tile_row)) WITHOUT ROWID
        """

    /// The pack's tables and views (a delta adds ``createRemoved``).
    static let create: [String] = [
        "CREATE TABLE metadata (name TEXT, value TEXT)",
        "CREATE UNIQUE INDEX metadata_name ON metadata (name)",
        "CREATE TABLE images (tile_id TEXT PRIMARY KEY, tile_data BLOB)",
        """
        CREATE TABLE tilepack_elevation (sha256 TEXT PRIMARY KEY, encoding TEXT NOT NULL, \
        width INTEGER NOT NULL, height INTEGER NOT NULL, data BLOB NOT NULL)
        """,
        """
        CREATE TABLE tilepack_pack_layers (layer INTEGER PRIMARY KEY, archive TEXT NOT NULL UNIQUE, metadata TEXT \
        NOT NULL)
        """,
        createIndex,
        // Layer 0 for GIS tools and MBTilesReader: a point lookup on the view is a primary-key
        // seek on the index (layer 0, kind 0, z, x, y) and one on images.
        """
        CREATE VIEW tiles AS SELECT i.zoom_level AS zoom_level, i.tile_column AS tile_column, \
        i.tile_row AS tile_row, images.tile_data AS tile_data \
        FROM tilepack_tile_index AS i JOIN images ON images.tile_id = i.sha256 WHERE i.layer = 0 AND i.kind = 0
        """,
        """
        CREATE VIEW elevation AS SELECT i.zoom_level AS zoom_level, i.tile_column AS tile_column, \
        i.tile_row AS tile_row, e.encoding AS encoding, e.width AS width, e.height AS height, e.data AS data \
        FROM tilepack_tile_index AS i JOIN tilepack_elevation AS e ON e.sha256 = i.sha256 WHERE i.layer = 0 AND i.kind = 1
        """,
    ]

    /// The tables a pack must have (checked at open, O(1)).
    static let requiredTables = [
        "metadata", "images", "tilepack_elevation", "tilepack_pack_layers", "tilepack_tile_index",
    ]

    /// The first bytes the tile index digest hashes.
    static let digestPrefix = Array("tilepack-pack-index-v1\n".utf8)

    // MARK: - Hashes

    /// SHA-256 of a display tile's stored bytes.
    /// - Cost: one pass over `bytes` (~1.5 GB/s).
    static func tileHash(_ bytes: UnsafeRawBufferPointer) -> SHA256.Digest {
        var hasher = SHA256()
        hasher.update(bufferPointer: bytes)
        return hasher.finalize()
    }

    /// SHA-256 of an elevation row: `encoding` (UTF-8), a 0 byte, `width` and `height`
    /// (big-endian 32-bit) and `data`. Nil when a side does not fit 32 bits unsigned (such a
    /// row cannot be hashed, so it is damaged). Unambiguous because a valid encoding name
    /// holds no 0 byte (readers refuse unknown encodings).
    static func elevationHash(encoding: String, width: Int, height: Int, data: UnsafeRawBufferPointer) -> SHA256.Digest?
    {
        guard let w = UInt32(exactly: width), let h = UInt32(exactly: height) else { return nil }
        var hasher = SHA256()
        var head = Array(encoding.utf8)
        head.append(0)
        appendBE32(w, to: &head)
        appendBE32(h, to: &head)
        head.withUnsafeBytes { hasher.update(bufferPointer: $0) }
        hasher.update(bufferPointer: data)
        return hasher.finalize()
    }

    static func appendBE32(_ value: UInt32, to out: inout [UInt8]) {
        out.append(UInt8(truncatingIfNeeded: value >> 24))
        out.append(UInt8(truncatingIfNeeded: value >> 16))
        out.append(UInt8(truncatingIfNeeded: value >> 8))
        out.append(UInt8(truncatingIfNeeded: value))
    }

    /// The 32 bytes of a lowercase 64-hex-digit hash; nil for anything else (upper case too:
    /// one spelling per hash, so the index and the content keys compare as text).
    static func hashBytes(hex: String) -> [UInt8]? {
        let utf8 = hex.utf8
        guard utf8.count == 64 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(32)
        var high: UInt8 = 0
        for (i, c) in utf8.enumerated() {
            let v: UInt8
            switch c {
            case 0x30...0x39: v = c - 0x30
            case 0x61...0x66: v = c - 0x61 + 10
            default: return nil
            }
            if i % 2 == 0 { high = v } else { out.append(high << 4 | v) }
        }
        return out
    }
}

/// One row of a pack's tile index: a layer's display tile or elevation grid and the SHA-256 of
/// its content (``PackSchema``).
package struct PackIndexRow: Sendable, Equatable, Comparable {
    public var layer: Int
    public var kind: PackSchema.Kind
    public var tile: TileID
    /// Lowercase hex SHA-256 of the content.
    public var sha256: String

    public init(layer: Int, kind: PackSchema.Kind, tile: TileID, sha256: String) {
        self.layer = layer; self.kind = kind; self.tile = tile; self.sha256 = sha256
    }

    /// The primary-key order of `tilepack_tile_index` (TMS row, as stored), which the digest follows.
    public static func < (a: PackIndexRow, b: PackIndexRow) -> Bool { a.key < b.key }

    /// (layer, kind, zoom, column, TMS row): the row's primary key.
    var key: PackRowKey { PackRowKey(layer: layer, kind: kind.rawValue, z: tile.z, column: tile.x, row: tile.tmsY) }
}

/// An index row's primary key as stored (TMS row), ordered as SQLite orders the key.
struct PackRowKey: Comparable, Hashable, Sendable {
    var layer: Int, kind: Int, z: Int, column: Int, row: Int

    static func < (a: PackRowKey, b: PackRowKey) -> Bool {
        (a.layer, a.kind, a.z, a.column, a.row) < (b.layer, b.kind, b.z, b.column, b.row)
    }

    var text: String { "layer \(layer) \(kind == 1 ? "elevation" : "tile") \(z)/\(column)/\(row) (TMS)" }
}
