import TilePackCore
import TilePackCodec

/// What `tilepack info ARCHIVE --json` prints of an MBTiles archive, a pack or a delta: the
/// container, the tile format and codec, zooms, bounds, tile counts and bytes per zoom, the
/// elevation rows, the layers of a pack, attribution and licence. The `pack` section (the
/// manifest and its signature) is the region store's to add: this layer cannot check
/// signatures.
///
/// Cost: O(1) pages to open, then one scan of the tile index (packs) or one grouped scan of
/// `tiles` reading each blob's length (MBTiles); no tile is decoded.
package struct ArchiveReport: Sendable, Encodable {
    /// `archive` (a master MBTiles), `pack` or `delta`.
    public var kind: String
    /// Always `mbtiles`: every tilepack archive is an MBTiles file.
    public var container = "mbtiles"
    /// MBTiles `format` (`png`, `astc`, `pvrtc`…); for packs, layer 0's.
    public var format: String
    /// tilepack's codec name (`astc6x6`, `pvrtc4`, `png`), nil when the archive does not say.
    public var codec: String?
    public var minzoom: Int?
    public var maxzoom: Int?
    /// [west, south, east, north]
    public var bounds: [Double]?
    public var tiles: Tiles
    public var elevation: Elevation?
    /// A pack's or delta's layers, in drawing order; nil for an MBTiles archive.
    public var layers: [Layer]?
    public var attribution: String?
    public var license: String?

    public struct Tiles: Sendable, Encodable {
        public var count: Int
        public var bytes: Int
        public var perZoom: [PackZoomCount]
        enum CodingKeys: String, CodingKey { case count, bytes, perZoom = "per_zoom" }
    }

    public struct Elevation: Sendable, Encodable {
        public var rows: Int
        public var encoding: String?
    }

    public struct Layer: Sendable, Encodable {
        public var archive: String
        public var codec: String?
        public var tileSize: Int
        enum CodingKeys: String, CodingKey { case archive, codec, tileSize = "tile_size" }
    }

    /// Reads `path`: a pack or delta when it has a tile index, else an MBTiles archive.
    /// - Throws: ``ArchiveError`` naming the file when it is neither.
    public init(path: String) throws {
        do {
            try self.init(pack: try PackReader(path: path))
        } catch let error as ArchiveError where error.code == .notPack {
            try self.init(mbtiles: try MBTilesReader(path: path))
        }
    }

    private init(pack: PackReader) throws {
        let stats = try pack.statistics()
        let meta = pack.metadata
        kind = pack.hasRemovedTable ? "delta" : "pack"
        format = meta[MBTilesMetadata.Key.format] ?? pack.layers.first?.metadata[MBTilesMetadata.Key.format] ?? ""
        codec = pack.layers.first.flatMap { TileCodecChoice(metadata: $0.metadata)?.rawValue }
        minzoom = stats.perZoom.map(\.z).min()
        maxzoom = stats.perZoom.map(\.z).max()
        bounds = meta[MBTilesMetadata.Key.bounds].flatMap(GeoBounds.init(metadataValue:)).map {
            [$0.west, $0.south, $0.east, $0.north]
        }
        tiles = Tiles(count: stats.tiles, bytes: stats.perZoom.reduce(0) { $0 + $1.bytes }, perZoom: stats.perZoom)
        let encodings = Set(pack.layers.compactMap { $0.metadata[MBTilesMetadata.Key.elevationEncoding] })
        elevation =
            stats.elevationRows > 0 ? Elevation(rows: stats.elevationRows, encoding: encodings.sorted().first) : nil
        layers = pack.layers.indices.compactMap { i in
            pack.layer(i).map {
                Layer(archive: $0.info.archive, codec: $0.summary.codec?.rawValue, tileSize: $0.summary.tileSize)
            }
        }
        attribution = meta[MBTilesMetadata.Key.attribution]
        license = meta["license"]
    }

    private init(mbtiles reader: MBTilesReader) throws {
        let meta = reader.metadata
        let counts = try reader.zoomStatistics()
        kind = "archive"
        format = meta[MBTilesMetadata.Key.format] ?? ""
        codec = reader.summary.codec?.rawValue
        minzoom = reader.zoomRange?.lowerBound
        maxzoom = reader.zoomRange?.upperBound
        bounds = reader.bounds.map { [$0.west, $0.south, $0.east, $0.north] }
        tiles = Tiles(
            count: counts.reduce(0) { $0 + $1.tiles }, bytes: counts.reduce(0) { $0 + $1.bytes }, perZoom: counts)
        elevation =
            reader.hasElevation
            ? Elevation(rows: try reader.elevationRowCount(), encoding: meta[MBTilesMetadata.Key.elevationEncoding])
            : nil
        layers = nil
        attribution = meta[MBTilesMetadata.Key.attribution]
        license = meta["license"]
    }
}
