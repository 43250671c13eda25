import TilePackCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One layer of a pack: the tiles cut from one master archive, and that archive's metadata.
public struct PackLayerInfo: Sendable, Equatable {
    /// The master archive's name (the catalog's archive name); unique within a pack.
    public var archive: String
    /// The master's `metadata` rows (name, format, `tilepack:codec`, `tilepack:tile_size`, …);
    /// stored as one JSON object with sorted keys (``metadataText``).
    public var metadata: [String: String]

    public init(archive: String, metadata: [String: String]) {
        self.archive = archive
        self.metadata = metadata
    }

    /// The text stored in `tilepack_pack_layers.metadata` and hashed into the index digest:
    /// one line of JSON, keys sorted, so the same rows always give the same text.
    public var metadataText: String {
        // Encoding a [String: String] cannot fail; an empty object is the safe fallback.
        (try? JSONOutput.string(metadata)) ?? "{}"
    }

    /// The rows back from stored text; nil unless it is a JSON object of strings.
    static func metadata(fromText text: String) -> [String: String]? {
        try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))
    }
}

/// Index rows and the bytes of their content at one zoom (display tiles and elevation rows of
/// every layer), as the manifest's `per_zoom` lists them.
package struct PackZoomCount: Sendable, Equatable, Codable {
    public var z: Int
    public var tiles: Int
    public var bytes: Int

    public init(z: Int, tiles: Int, bytes: Int) { self.z = z; self.tiles = tiles; self.bytes = bytes }
}

/// What a pack holds, counted from its tile index.
package struct PackStatistics: Sendable, Equatable {
    /// Per zoom, ascending: index rows (tiles and elevation) and the bytes of the content each
    /// row references (a content shared by several rows counts once per row).
    public var perZoom: [PackZoomCount]
    /// Display tile rows (kind 0) of every layer.
    public var tiles: Int
    /// Elevation rows (kind 1) of every layer.
    public var elevationRows: Int
    /// Bytes of the distinct contents stored (`images.tile_data` and `tilepack_elevation.data`).
    public var storedBytes: Int
    /// Lowercase hex tile index digest (the manifest's `tile_index_sha256`).
    public var indexDigest: String

    public init(perZoom: [PackZoomCount], tiles: Int, elevationRows: Int, storedBytes: Int, indexDigest: String) {
        self.perZoom = perZoom; self.tiles = tiles; self.elevationRows = elevationRows
        self.storedBytes = storedBytes; self.indexDigest = indexDigest
    }
}
