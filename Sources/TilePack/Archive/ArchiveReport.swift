#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePackCore
import TilePackCodec

/// What `tilepack info ARCHIVE --json` prints of an MBTiles archive, a pack or a delta: the
/// container, name, tile format and codec, zooms, bounds and centre, tile counts and bytes per
/// zoom, the elevation (encoding, zooms, bytes), the sources with their SHA-256, the recorded
/// build options, the layers of a pack, attribution and licence. One schema for every
/// container. The `pack` section (the manifest and its signature) is the region store's to
/// add: this layer cannot check signatures.
///
/// Cost: O(1) pages to open, then one scan of the tile index (packs) or one grouped scan of
/// `tiles` reading each blob's length (MBTiles); no tile is decoded.
package struct ArchiveReport: Sendable, Encodable {
    /// `archive` (a master MBTiles), `pack` or `delta`.
    public var kind: String
    /// The file's container: `mbtiles` (archives, packs and deltas) or `pmtiles`.
    public var container = "mbtiles"
    /// The region's name (MBTiles `name`; for packs, the pack's).
    public var name: String
    /// MBTiles `format` (`png`, `astc`, `pvrtc`…); for packs, layer 0's.
    public var format: String
    /// tilepack's codec name (`astc6x6`, `pvrtc4`, `png`), nil when the archive does not say.
    public var codec: String?
    /// The encoder's effort the build recorded (`quality`, `fast`), nil when none.
    public var codecLevel: String?
    /// Tile side in pixels.
    public var tileSize: Int
    public var minzoom: Int?
    public var maxzoom: Int?
    /// [west, south, east, north]
    public var bounds: [Double]?
    /// [longitude, latitude, zoom]: where a viewer opens (MBTiles `center`), nil when not recorded.
    public var center: [Double]?
    public var tiles: Tiles
    public var elevation: Elevation?
    /// The files the archive was built from, each with its SHA-256 (empty when not recorded).
    public var sources: [Source]
    /// The options the build recorded (`tilepack:build_options`), nil when none.
    public var buildOptions: JSONValue?
    /// tilepack's archive format version (`tilepack:format_version`), nil for others' archives.
    public var formatVersion: Int?
    /// A PMTiles archive's header facts; nil for MBTiles.
    public var pmtiles: PMTilesFacts?

    /// What a PMTiles header says of the file's layout.
    public struct PMTilesFacts: Sendable, Encodable {
        public var clustered: Bool
        /// `none`, `gzip`…: how directories and metadata are stored.
        public var internalCompression: String
        /// How each tile is stored (tilepack writes `none`).
        public var tileCompression: String
        /// `png`, `unknown` (tilepack's GPU tiles)…
        public var tileType: String
        public var addressedTiles: UInt64
        public var tileEntries: UInt64
        public var tileContents: UInt64
        /// The sibling holding the elevation (`X.terrain.pmtiles`), nil when none.
        public var terrain: String?
        enum CodingKeys: String, CodingKey {
            case clustered, terrain
            case internalCompression = "internal_compression", tileCompression = "tile_compression"
            case tileType = "tile_type", addressedTiles = "addressed_tiles", tileEntries = "tile_entries"
            case tileContents = "tile_contents"
        }
    }
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
        /// How each row is stored (`q-planar-deflate`, `f32-deflate`…).
        public var encoding: String?
        /// What the grid holds (`elevation`, `percent`, `class`…).
        public var valueKind: String?
        /// The quantisation step in the grid's unit, nil when stored exactly.
        public var precision: String?
        public var minzoom: Int?
        public var maxzoom: Int?
        /// Bytes of the stored rows.
        public var bytes: Int
        enum CodingKeys: String, CodingKey {
            case rows, encoding, precision, minzoom, maxzoom, bytes, valueKind = "value_kind"
        }
    }

    /// A file the archive was built from, as the build recorded it.
    public struct Source: Sendable, Codable, Equatable {
        public var file: String
        public var sha256: String
    }

    enum CodingKeys: String, CodingKey {
        case kind, container, name, format, codec, minzoom, maxzoom, bounds, center, tiles, elevation
        case sources, layers, attribution, license
        case codecLevel = "codec_level", tileSize = "tile_size", buildOptions = "build_options"
        case formatVersion = "format_version", pmtiles
    }

    public struct Layer: Sendable, Encodable {
        public var archive: String
        public var codec: String?
        public var tileSize: Int
        enum CodingKeys: String, CodingKey { case archive, codec, tileSize = "tile_size" }
    }

    /// Reads `path`: a PMTiles archive by its magic bytes; else a pack or delta when it has a
    /// tile index, else an MBTiles archive.
    /// - Throws: ``ArchiveError`` naming the file when it is none of them.
    public init(path: String) throws {
        if TileArchiveKind(contentsOf: path) == .pmtiles {
            try self.init(pmtiles: try PMTilesReader(path: path))
            return
        }
        do {
            try self.init(pack: try PackReader(path: path))
        } catch let error as ArchiveError where error.code == .notPack {
            try self.init(mbtiles: try MBTilesReader(path: path))
        }
    }

    private init(pack: PackReader) throws {
        let stats = try pack.statistics()
        let meta = pack.metadata
        let first = pack.layers.first?.metadata ?? [:]
        kind = pack.hasRemovedTable ? "delta" : "pack"
        name = meta[MBTilesMetadata.Key.name] ?? first[MBTilesMetadata.Key.name] ?? ""
        format = meta[MBTilesMetadata.Key.format] ?? first[MBTilesMetadata.Key.format] ?? ""
        codec = pack.layers.first.flatMap { TileCodecChoice(metadata: $0.metadata)?.rawValue }
        codecLevel = first[MBTilesMetadata.Key.codecLevel]
        tileSize = first[MBTilesMetadata.Key.tileSize].flatMap { Int($0) } ?? WebMercator.tileSize
        minzoom = stats.perZoom.map(\.z).min()
        maxzoom = stats.perZoom.map(\.z).max()
        bounds = meta[MBTilesMetadata.Key.bounds].flatMap(GeoBounds.init(metadataValue:)).map {
            [$0.west, $0.south, $0.east, $0.north]
        }
        center = Self.center(meta)
        tiles = Tiles(count: stats.tiles, bytes: stats.perZoom.reduce(0) { $0 + $1.bytes }, perZoom: stats.perZoom)
        // The pack's index counts tile and elevation rows together per zoom: the elevation's
        // own zooms and bytes are not told apart, so only its rows and encoding are reported.
        let encodings = Set(pack.layers.compactMap { $0.metadata[MBTilesMetadata.Key.elevationEncoding] })
        elevation =
            stats.elevationRows > 0
            ? Elevation(
                rows: stats.elevationRows, encoding: encodings.sorted().first,
                valueKind: first[MBTilesMetadata.Key.valueKind],
                precision: first[MBTilesMetadata.Key.elevationPrecision], minzoom: nil, maxzoom: nil, bytes: 0)
            : nil
        sources = pack.layers.flatMap { Self.sources($0.metadata) }
        buildOptions = nil
        formatVersion = meta[MBTilesMetadata.Key.formatVersion].flatMap { Int($0) }
        layers = pack.layers.indices.compactMap { i in
            pack.layer(i).map {
                Layer(archive: $0.info.archive, codec: $0.summary.codec?.rawValue, tileSize: $0.summary.tileSize)
            }
        }
        attribution = meta[MBTilesMetadata.Key.attribution]
        license = meta["license"]
    }

    /// A PMTiles archive: zooms, tiles and bytes from its directories (no tile read), the
    /// elevation from its Terrarium sibling's, the layout from its header.
    private init(pmtiles reader: PMTilesReader) throws {
        let header = reader.header
        let grids = try reader.terrain?.zoomStatistics() ?? []
        try self.init(
            archive: reader, metadata: reader.metadata, container: "pmtiles",
            defaultFormat: PMTilesTileType.name(of: header.tileType), tiles: try reader.zoomStatistics(),
            grids: grids, elevationEncoding: "terrarium", elevationPrecision: "1/256")
        pmtiles = PMTilesFacts(
            clustered: header.clustered, internalCompression: PMTilesCompression.name(of: header.internalCompression),
            tileCompression: PMTilesCompression.name(of: header.tileCompression),
            tileType: PMTilesTileType.name(of: header.tileType), addressedTiles: header.addressedTiles,
            tileEntries: header.tileEntries, tileContents: header.tileContents, terrain: reader.terrain?.path)
    }

    /// An MBTiles archive: tiles and elevation rows counted by grouped scans reading lengths.
    private init(mbtiles reader: MBTilesReader) throws {
        let meta = reader.metadata
        try self.init(
            archive: reader, metadata: meta, container: "mbtiles", defaultFormat: "",
            tiles: try reader.zoomStatistics(), grids: try reader.elevationZoomStatistics(),
            elevationEncoding: meta[MBTilesMetadata.Key.elevationEncoding],
            elevationPrecision: meta[MBTilesMetadata.Key.elevationPrecision])
    }

    /// What every archive reports alike, whatever its container: the summary, the metadata
    /// rows the build recorded, and the tiles and elevation grids counted per zoom.
    private init(
        archive: any TileArchive, metadata meta: [String: String], container: String, defaultFormat: String,
        tiles counts: [PackZoomCount], grids: [PackZoomCount], elevationEncoding: String?,
        elevationPrecision: String?
    ) throws {
        let summary = archive.summary
        kind = "archive"
        self.container = container
        name = summary.name
        format = meta[MBTilesMetadata.Key.format] ?? defaultFormat
        codec = summary.codec?.rawValue
        codecLevel = meta[MBTilesMetadata.Key.codecLevel]
        tileSize = summary.tileSize
        minzoom = counts.first?.z
        maxzoom = counts.last?.z
        bounds = summary.bounds.map { [$0.west, $0.south, $0.east, $0.north] }
        center = Self.center(meta)
        tiles = Tiles(
            count: counts.reduce(0) { $0 + $1.tiles }, bytes: counts.reduce(0) { $0 + $1.bytes }, perZoom: counts)
        elevation =
            grids.isEmpty
            ? nil
            : Elevation(
                rows: grids.reduce(0) { $0 + $1.tiles }, encoding: elevationEncoding,
                valueKind: summary.valueKind?.rawValue, precision: elevationPrecision,
                minzoom: grids.first?.z, maxzoom: grids.last?.z, bytes: grids.reduce(0) { $0 + $1.bytes })
        sources = Self.sources(meta)
        buildOptions = meta[MBTilesMetadata.Key.buildOptions].flatMap(JSONValue.init(parsing:))
        formatVersion = meta[MBTilesMetadata.Key.formatVersion].flatMap { Int($0) }
        layers = nil
        attribution = meta[MBTilesMetadata.Key.attribution]
        license = meta["license"]
    }
}

extension ArchiveReport {
    /// MBTiles `center` as [lon, lat, zoom], nil when absent or malformed.
    static func center(_ meta: [String: String]) -> [Double]? {
        meta[MBTilesMetadata.Key.center].flatMap(MBTilesMetadata.Center.init(metadataValue:)).map {
            [$0.lon, $0.lat, Double($0.zoom)]
        }
    }

    /// The recorded sources: the mosaic's list (`tilepack:sources`), or the one file with its
    /// digest (`tilepack:source_file`, `tilepack:source_sha256`); empty when neither is there or
    /// the list is not the JSON tilepack writes.
    static func sources(_ meta: [String: String]) -> [Source] {
        if let list = meta[MBTilesMetadata.Key.sources],
            let sources = try? JSONDecoder().decode([Source].self, from: Data(list.utf8))
        {
            return sources
        }
        guard let file = meta[MBTilesMetadata.Key.sourceFile] else { return [] }
        return [Source(file: file, sha256: meta[MBTilesMetadata.Key.sourceSHA256] ?? "")]
    }
}
