import TilePackCore
import TilePackSQLite
import TilePackCodec
/// What an MBTiles 1.3 archive says about itself: the standard `metadata` keys plus
/// tilepack's own keys, all prefixed `tilepack:` (documented in docs/FORMAT.md).
///
/// Every standard key (name, format, bounds, center, minzoom, maxzoom, type, version,
/// description, attribution) is always written; the writer fills bounds, center and the zoom
/// range from the tiles it saw when they are left nil.
public struct MBTilesMetadata: Sendable, Equatable {
    /// MBTiles `type`.
    public enum LayerType: String, Sendable {
        case baselayer, overlay
    }

    /// MBTiles `center`: "lon,lat,zoom", the view a client opens on.
    public struct Center: Sendable, Equatable {
        public var lon: Double, lat: Double, zoom: Int

        public init(lon: Double, lat: Double, zoom: Int) {
            self.lon = lon; self.lat = lat; self.zoom = zoom
        }

        public init?(metadataValue: String) {
            let parts = metadataValue.split(separator: ",").map { String($0.trimmingWhitespace()) }
            guard parts.count == 3, let lon = Double(parts[0]), let lat = Double(parts[1]),
                lon.isFinite, lat.isFinite
            else { return nil }
            // Some writers store the zoom as "3.0".
            guard
                let zoom = Int(parts[2]) ?? Double(parts[2]).flatMap({ $0.isFinite ? Int(exactly: $0.rounded()) : nil })
            else { return nil }
            self.init(lon: lon, lat: lat, zoom: zoom)
        }

        public var metadataValue: String { "\(lon),\(lat),\(zoom)" }
    }

    /// Names of the keys tilepack writes, standard and its own.
    public enum Key {
        public static let name = "name", format = "format", bounds = "bounds", center = "center"
        public static let minZoom = "minzoom", maxZoom = "maxzoom", type = "type", version = "version"
        public static let description = "description", attribution = "attribution"
        /// The prefix of every tilepack-specific key.
        public static let prefix = "tilepack:"
        public static let codec = "tilepack:codec"
        public static let codecLevel = "tilepack:codec_level"
        public static let payloadCompression = "tilepack:payload_compression"
        public static let tileSize = "tilepack:tile_size"
        public static let sourceFile = "tilepack:source_file"
        public static let sourceSHA256 = "tilepack:source_sha256"
        public static let sources = "tilepack:sources"
        public static let buildOptions = "tilepack:build_options"
        public static let elevation = "tilepack:elevation"
        public static let elevationEncoding = "tilepack:elevation_encoding"
        public static let formatVersion = "tilepack:format_version"
        /// What the single data band holds (``ValueKind``); see docs/FORMAT.md.
        public static let valueKind = "tilepack:value_kind"
        /// The colour mode the build used (`ColorMode`'s raw value).
        public static let colorMode = "tilepack:color_mode"
        /// JSON array of ``LegendEntry`` for classes (and colour ramps).
        public static let legend = "tilepack:legend"
        /// The quantisation step of `q-planar-deflate` elevation (each blob also records its own).
        public static let elevationPrecision = "tilepack:elevation_precision"
        /// The datum transformation that took the source to WGS 84 (name, code, grid, accuracy).
        public static let datumTransform = "tilepack:datum_transform"
        /// The version of tilepack that wrote the archive (``TilePackVersion/current``); tiles
        /// never carry it.
        public static let tilePackVersion = "tilepack:version"
    }

    /// The newest version of tilepack's additions (keys and elevation table) that this code
    /// writes: 2 when elevation is quantised (`q-planar-deflate`), else 1, so an archive
    /// without quantised elevation still opens in tilepacks that know only version 1.
    public static let tilePackFormatVersion = 2
    /// The versions this code reads: 1 (Float32 elevation only) and 2 (adds `q-planar-deflate`).
    public static let readableFormatVersions = 1...2

    /// A step as metadata text: "1" for whole numbers, else Swift's shortest round-trip form ("0.01").
    public static func precisionText(_ step: Double) -> String {
        NumberText.plain(step)
    }

    public var name: String
    /// MBTiles `format`: "png", "jpg", "webp", "pbf", or a media type for other payloads
    /// ("image/ktx2" for tilepack's GPU tiles, ``TileCodecChoice/mbtilesFormat``).
    public var format: String
    public var bounds: GeoBounds?
    public var center: Center?
    public var minZoom: Int?
    public var maxZoom: Int?
    public var type: LayerType
    /// The version of this tileset (MBTiles `version`), not of the MBTiles spec.
    public var version: String
    public var description: String
    public var attribution: String

    /// The codec that produced `tile_data` (`TileCodec.name`, e.g. "png", "pvrtc4").
    public var codec: String
    /// Codec quality or effort setting, free text ("fast", "6").
    public var codecLevel: String?
    /// How each codec payload is wrapped: "none" (PNG), "ktx2" (GPU tiles: a KTX2 file each,
    /// zlib-supercompressed when smaller), or, in archives written before KTX2,
    /// "zlib-when-smaller" (a payload shorter than the raw blocks is a zlib stream); see
    /// docs/FORMAT.md.
    public var payloadCompression: String
    /// Tile side in pixels.
    public var tileSize: Int
    /// File name of the source raster.
    public var sourceFile: String?
    /// Lowercase hex SHA-256 of the source raster.
    public var sourceSHA256: String?
    /// Every input file of a mosaic, as a JSON array of `{"file": name, "sha256": hex}` in
    /// build order; nil for a single-file build (``sourceFile`` says it all).
    public var sources: String?
    /// The build options, as the command line or JSON that produced the archive.
    public var buildOptions: String?
    /// Further keys; a key without the `tilepack:` prefix gets it.
    public var extra: [String: String]

    public init(
        name: String, format: String, codec: String? = nil, bounds: GeoBounds? = nil, center: Center? = nil,
        minZoom: Int? = nil, maxZoom: Int? = nil, type: LayerType = .baselayer, version: String = "1",
        description: String = "", attribution: String = "", codecLevel: String? = nil,
        payloadCompression: String = "none", tileSize: Int = 256, sourceFile: String? = nil,
        sourceSHA256: String? = nil, sources: String? = nil, buildOptions: String? = nil, extra: [String: String] = [:]
    ) {
        self.name = name
        self.format = format
        self.codec = codec ?? format
        self.bounds = bounds
        self.center = center
        self.minZoom = minZoom
        self.maxZoom = maxZoom
        self.type = type
        self.version = version
        self.description = description
        self.attribution = attribution
        self.codecLevel = codecLevel
        self.payloadCompression = payloadCompression
        self.tileSize = tileSize
        self.sourceFile = sourceFile
        self.sourceSHA256 = sourceSHA256
        self.sources = sources
        self.buildOptions = buildOptions
        self.extra = extra
    }

    /// The metadata of an archive from its `metadata` rows (``MBTilesReader/metadata``), for
    /// writing a new archive that says the same (joining shards). Keys the writer derives
    /// from the tiles (`tilepack:format_version`, `tilepack:elevation`,
    /// `tilepack:elevation_encoding`, `tilepack:elevation_precision`), `tilepack:version` (the
    /// writer's own) and those in `dropping` are left out; other
    /// `tilepack:` keys go to ``extra``. Nil without `name` and `format`.
    public init?(rows: [String: String], dropping: Set<String> = []) {
        guard let name = rows[Key.name], let format = rows[Key.format] else { return nil }
        self.init(
            name: name, format: format, codec: rows[Key.codec],
            bounds: rows[Key.bounds].flatMap(GeoBounds.init(metadataValue:)),
            center: rows[Key.center].flatMap(Center.init(metadataValue:)),
            minZoom: rows[Key.minZoom].flatMap { Int($0) }, maxZoom: rows[Key.maxZoom].flatMap { Int($0) },
            type: rows[Key.type].flatMap(LayerType.init(rawValue:)) ?? .baselayer,
            version: rows[Key.version] ?? "1", description: rows[Key.description] ?? "",
            attribution: rows[Key.attribution] ?? "", codecLevel: rows[Key.codecLevel],
            payloadCompression: rows[Key.payloadCompression] ?? "none",
            tileSize: rows[Key.tileSize].flatMap { Int($0) } ?? 256,
            sourceFile: rows[Key.sourceFile], sourceSHA256: rows[Key.sourceSHA256], sources: rows[Key.sources],
            buildOptions: rows[Key.buildOptions])
        let known: Set<String> = [
            Key.codec, Key.codecLevel, Key.payloadCompression, Key.tileSize, Key.sourceFile,
            Key.sourceSHA256, Key.sources, Key.buildOptions, Key.elevation, Key.elevationEncoding,
            Key.formatVersion, Key.elevationPrecision, Key.tilePackVersion,
        ]
        for (key, value) in rows where key.hasPrefix(Key.prefix) && !known.contains(key) && !dropping.contains(key) {
            extra[key] = value
        }
    }

    /// The rows to store, with nil fields already resolved by the writer.
    func rows(
        bounds: GeoBounds, center: Center, minZoom: Int, maxZoom: Int,
        elevationTiles: Bool, elevationEncoding: String, formatVersion: Int = 1,
        elevationPrecision: String? = nil
    ) -> [(String, String)] {
        var rows: [(String, String)] = [
            (Key.name, name), (Key.format, format), (Key.bounds, bounds.metadataValue),
            (Key.center, center.metadataValue), (Key.minZoom, String(minZoom)), (Key.maxZoom, String(maxZoom)),
            (Key.type, type.rawValue), (Key.version, version), (Key.description, description),
            (Key.attribution, attribution),
            (Key.formatVersion, String(formatVersion)), (Key.tilePackVersion, TilePackVersion.current),
            (Key.codec, codec), (Key.payloadCompression, payloadCompression), (Key.tileSize, String(tileSize)),
            (Key.elevation, elevationTiles ? "true" : "false"),
        ]
        if elevationTiles { rows.append((Key.elevationEncoding, elevationEncoding)) }
        if elevationTiles, let elevationPrecision { rows.append((Key.elevationPrecision, elevationPrecision)) }
        if let codecLevel { rows.append((Key.codecLevel, codecLevel)) }
        if let sourceFile { rows.append((Key.sourceFile, sourceFile)) }
        if let sourceSHA256 { rows.append((Key.sourceSHA256, sourceSHA256)) }
        if let sources { rows.append((Key.sources, sources)) }
        if let buildOptions { rows.append((Key.buildOptions, buildOptions)) }
        let fixed = Set(rows.map(\.0))
        for (key, value) in extra.sorted(by: { $0.key < $1.key }) {
            let full = key.hasPrefix(Key.prefix) ? key : Key.prefix + key
            if !fixed.contains(full) { rows.append((full, value)) }
        }
        return rows
    }
}

/// The SQL of the archive layout, in one place for the writer, the reader and the docs.
enum MBTilesSchema {
    /// MBTiles' registered `application_id` ("MPBX").
    static let applicationID: Int32 = 0x4d50_4258

    /// mb-util's deduplicated layout, a `tiles` view for every MBTiles reader, and
    /// tilepack's lossless elevation table on the same TMS grid.
    static let create = """
        CREATE TABLE metadata (name TEXT, value TEXT);
        CREATE UNIQUE INDEX metadata_name ON metadata (name);
        CREATE TABLE images (tile_id TEXT PRIMARY KEY, tile_data BLOB);
        CREATE TABLE map (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_id TEXT);
        CREATE UNIQUE INDEX map_index ON map (zoom_level, tile_column, tile_row);
        CREATE VIEW tiles AS
            SELECT map.zoom_level AS zoom_level, map.tile_column AS tile_column,
                   map.tile_row AS tile_row, images.tile_data AS tile_data
            FROM map JOIN images ON images.tile_id = map.tile_id;
        CREATE TABLE elevation (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER,
                                encoding TEXT, width INTEGER, height INTEGER, data BLOB);
        CREATE UNIQUE INDEX elevation_index ON elevation (zoom_level, tile_column, tile_row);
        """

    /// The build journal of a temporary archive (``MBTilesWriter/Journal``); `tile_row` is TMS
    /// as in `map`. A shard archive keeps `tilepack_roots` (its shard-zoom pixels).
    static let createJournal = """
        CREATE TABLE tilepack_build (name TEXT PRIMARY KEY, value TEXT);
        CREATE TABLE tilepack_roots (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, pixels BLOB);
        CREATE UNIQUE INDEX tilepack_roots_index ON tilepack_roots (zoom_level, tile_column, tile_row);
        """
}
