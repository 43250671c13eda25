import TilePackCore
import TilePackSQLite
import TilePackCodec

/// The archive's extent and the metadata rows ``MBTilesWriter/finish()`` writes from it:
/// zooms, bounds and centre default to what was written when the caller leaves them unset.
///
/// Cost: O(1) per tile for the extent; a recount is one aggregate query per table.
extension MBTilesWriter {
    /// Widens the per-zoom extent that default bounds and zoom range come from.
    func noteExtent(_ tile: TileID) {
        guard let e = extent[tile.z] else {
            extent[tile.z] = (tile.x, tile.x, tile.y, tile.y)
            return
        }
        extent[tile.z] = (min(e.0, tile.x), max(e.1, tile.x), min(e.2, tile.y), max(e.3, tile.y))
    }

    /// Statistics and extent from the file itself (after resuming or copying).
    func recount(_ db: SQLiteConnection) throws {
        func scalar(_ sql: String) throws -> Int {
            let s = try db.prepare(sql)
            return try s.step() ? s.int(at: 0) : 0
        }
        statistics.tiles = try scalar("SELECT count(*) FROM map")
        statistics.distinctImages = try scalar("SELECT count(*) FROM images")
        statistics.storedBytes = try scalar("SELECT coalesce(sum(length(tile_data)), 0) FROM images")
        statistics.elevationTiles = try scalar("SELECT count(*) FROM elevation")
        extent = [:]
        let rows = try db.prepare(
            """
            SELECT zoom_level, min(tile_column), max(tile_column), min(tile_row), max(tile_row), count(*) FROM map \
            GROUP BY zoom_level
            """
        )
        var perZoom: [Int: Int] = [:]
        defer { statistics.tilesPerZoom = perZoom }
        while try rows.step() {
            let z = rows.int(at: 0)
            guard (0...TileID.maxZoom).contains(z) else { continue }
            perZoom[z] = rows.int(at: 5)
            let top = (1 << z) - 1
            extent[z] = (rows.int(at: 1), rows.int(at: 2), top - rows.int(at: 4), top - rows.int(at: 3))
        }
    }

    func resolvedMetadataRows() -> [(String, String)] {
        let zooms = extent.keys.sorted()
        let minZoom = metadata.minZoom ?? zooms.first ?? 0
        let maxZoom = metadata.maxZoom ?? zooms.last ?? 0
        let bounds =
            metadata.bounds
            ?? {
                guard let z = zooms.last, let e = extent[z] else {
                    return GeoBounds.webMercatorWorld
                }
                let nw = WebMercator.bounds(of: TileID(unchecked: z, e.0, e.2))
                let se = WebMercator.bounds(of: TileID(unchecked: z, e.1, e.3))
                return GeoBounds(west: nw.west, south: se.south, east: se.east, north: nw.north)
            }()
        let center =
            metadata.center
            ?? MBTilesMetadata.Center(
                lon: (bounds.west + bounds.east) / 2, lat: (bounds.south + bounds.north) / 2, zoom: minZoom)
        let quantized = ElevationEncoding.quantizedPlanarDeflate.rawValue
        let hasQuantized = storedElevationEncodings.contains(quantized)
        let encodingName: String
        if let fixed = options.elevationEncoding,
            fixed != .quantizedPlanarDeflate || storedElevationEncodings == [quantized]
        {
            encodingName = fixed.rawValue
        } else if options.elevationStep != nil, storedElevationEncodings == [quantized] {
            encodingName = quantized
        } else {
            encodingName = "per-tile"
        }
        return metadata.rows(
            bounds: bounds, center: center, minZoom: minZoom, maxZoom: maxZoom,
            elevationTiles: statistics.elevationTiles > 0, elevationEncoding: encodingName,
            formatVersion: storedElevationEncodings.compactMap(ElevationEncoding.init(rawValue:)).map(\.formatVersion)
                .max() ?? 1,
            elevationPrecision: hasQuantized ? options.elevationStep.map(MBTilesMetadata.precisionText) : nil)
    }
}
