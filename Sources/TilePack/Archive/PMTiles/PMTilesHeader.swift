import TilePackCore

/// The fixed 127-byte header that opens every PMTiles v3 archive: where the root directory,
/// metadata, leaf directories and tile data lie, how many tiles there are, how they are
/// compressed, and the zooms, bounds and centre. All integers little-endian; positions are
/// E7 (degrees × 10⁷).
public struct PMTilesHeader: Sendable, Equatable {
    /// Bytes of the header.
    public static let length = 127
    /// The header and root directory together lie within this many bytes (the spec's rule, so
    /// one 16 KiB read finds any tile's first directory).
    public static let rootLimit = 16_384
    /// "PMTiles" and the version byte 3.
    static let magic: [UInt8] = Array("PMTiles".utf8)
    public static let version: UInt8 = 3

    public var rootOffset: UInt64 = 0
    public var rootLength: UInt64 = 0
    public var metadataOffset: UInt64 = 0
    public var metadataLength: UInt64 = 0
    public var leafDirectoryOffset: UInt64 = 0
    public var leafDirectoryLength: UInt64 = 0
    public var tileDataOffset: UInt64 = 0
    public var tileDataLength: UInt64 = 0
    /// Tiles a reader can ask for (runs counted tile by tile).
    public var addressedTiles: UInt64 = 0
    /// Directory entries that point at tiles (one per run).
    public var tileEntries: UInt64 = 0
    /// Distinct tile contents stored.
    public var tileContents: UInt64 = 0
    /// Tile contents lie in tile-id order (duplicates aside).
    public var clustered = false
    /// Raw `internal_compression` byte (see ``PMTilesCompression``).
    public var internalCompression: UInt8 = PMTilesCompression.gzip.rawValue
    /// Raw `tile_compression` byte.
    public var tileCompression: UInt8 = PMTilesCompression.none.rawValue
    /// Raw `tile_type` byte (see ``PMTilesTileType``).
    public var tileType: UInt8 = PMTilesTileType.unknown.rawValue
    public var minZoom: UInt8 = 0
    public var maxZoom: UInt8 = 0
    public var minLonE7: Int32 = 0
    public var minLatE7: Int32 = 0
    public var maxLonE7: Int32 = 0
    public var maxLatE7: Int32 = 0
    public var centerZoom: UInt8 = 0
    public var centerLonE7: Int32 = 0
    public var centerLatE7: Int32 = 0

    public init() {}

    /// Parses the first 127 bytes of `bytes` (an archive's start).
    /// - Throws: ``ArchiveError`` (`notPMTiles`) for bytes that do not start with `PMTiles`,
    ///   (`unsupportedVersion`) for a version other than 3, naming `path`.
    /// - Cost: O(1).
    public init(_ bytes: some RandomAccessCollection<UInt8>, path: String) throws(ArchiveError) {
        let b = Array(bytes.prefix(Self.length))
        guard b.count >= 7, b.prefix(7).elementsEqual(Self.magic) else {
            throw ArchiveError(
                path: path, code: .notPMTiles, detail: "not a PMTiles archive (no \"PMTiles\" magic at byte 0)")
        }
        guard b.count == Self.length else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail: "PMTiles header is truncated: \(b.count) bytes, expected \(Self.length)")
        }
        guard b[7] == Self.version else {
            throw ArchiveError(
                path: path, code: .unsupportedVersion,
                detail: "PMTiles version \(b[7]) is not one this tilepack reads (3)")
        }
        func u64(_ at: Int) -> UInt64 {
            var v: UInt64 = 0
            for i in (0..<8).reversed() { v = v << 8 | UInt64(b[at + i]) }
            return v
        }
        func i32(_ at: Int) -> Int32 {
            Int32(
                bitPattern: UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24)
        }
        rootOffset = u64(8); rootLength = u64(16)
        metadataOffset = u64(24); metadataLength = u64(32)
        leafDirectoryOffset = u64(40); leafDirectoryLength = u64(48)
        tileDataOffset = u64(56); tileDataLength = u64(64)
        addressedTiles = u64(72); tileEntries = u64(80); tileContents = u64(88)
        clustered = b[96] == 1
        internalCompression = b[97]; tileCompression = b[98]; tileType = b[99]
        minZoom = b[100]; maxZoom = b[101]
        minLonE7 = i32(102); minLatE7 = i32(106); maxLonE7 = i32(110); maxLatE7 = i32(114)
        centerZoom = b[118]; centerLonE7 = i32(119); centerLatE7 = i32(123)
    }

    /// The 127 header bytes.
    /// - Cost: O(1).
    public var bytes: [UInt8] {
        var out = Self.magic + [Self.version]
        out.reserveCapacity(Self.length)
        for v in [
            rootOffset, rootLength, metadataOffset, metadataLength, leafDirectoryOffset, leafDirectoryLength,
            tileDataOffset, tileDataLength, addressedTiles, tileEntries, tileContents,
        ] {
            for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
        }
        func i32(_ v: Int32) {
            for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: UInt32(bitPattern: v) >> (8 * UInt32(i)))) }
        }
        out += [clustered ? 1 : 0, internalCompression, tileCompression, tileType, minZoom, maxZoom]
        i32(minLonE7); i32(minLatE7); i32(maxLonE7); i32(maxLatE7)
        out.append(centerZoom)
        i32(centerLonE7); i32(centerLatE7)
        return out
    }

    /// The header's bounds, nil when they are all zero or not a valid lon/lat box.
    public var bounds: GeoBounds? {
        let w = Double(minLonE7) / 1e7, s = Double(minLatE7) / 1e7
        let e = Double(maxLonE7) / 1e7, n = Double(maxLatE7) / 1e7
        guard w < e, s < n, w >= -180, e <= 180, s >= -90, n <= 90 else { return nil }
        return GeoBounds(west: w, south: s, east: e, north: n)
    }

    /// Degrees as E7, clamped to Int32 (the spec's ±180° fit with room to spare).
    static func e7(_ degrees: Double) -> Int32 {
        Int32(max(Double(Int32.min), min(Double(Int32.max), (degrees * 1e7).rounded())))
    }
}
