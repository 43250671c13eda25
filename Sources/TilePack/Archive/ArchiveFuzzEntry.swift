import TilePackCodec
import TilePackCore

/// What the `fuzz-mbtiles` target (Fuzz/) does with one input, here so that
/// `FuzzCrashReplayTests` replays saved crashes through the same code.
///
/// Invariant: every input ends in a return or a thrown ``TilePackError``; a trap is a bug.
public enum ArchiveFuzzEntry {
    /// The largest zoom level whose tiles an input is read through: a mutated metadata row may
    /// claim zooms 0…24, and listing an empty zoom costs one query.
    public static let maxZoom = 4

    /// The input as an MBTiles file (written to ``FuzzScratchFile``, opened read-only by
    /// ``MBTilesReader``): metadata, tile count, then every tile of zooms up to ``maxZoom``
    /// decoded with the archive's codec at its declared tile size, and every elevation tile —
    /// what `query`, `serve` and the tile store read.
    /// - Cost: one file write of the input, then SQLite's reads and one decode per tile.
    public static func mbtiles(_ bytes: [UInt8]) throws {
        let path = FuzzScratchFile.path(extension: "mbtiles")
        guard FuzzScratchFile.write(bytes, to: path) else { return }
        defer { FuzzScratchFile.remove(path) }
        let reader = try MBTilesReader(path: path)
        let decoder = TileCodecChoice(metadata: reader.metadata)?.decoder()
        let size = reader.tileSize
        _ = try reader.tileCount
        let zooms = reader.zoomRange ?? 0...2
        for zoom in zooms.clamped(to: 0...maxZoom) {
            for id in try reader.tileIDs(zoom: zoom) {
                if let data = try reader.tile(id), let decoder {
                    _ = try decoder.decode(data, width: size, height: size)
                }
                _ = try reader.elevation(id)
            }
        }
    }
}
