import TilePackCore
import TilePackCodec
import TilePackEncoders
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// MBTiles ⇄ PMTiles, the `convert` entry point: every tile copied byte for byte, the
/// metadata rows carried over (as the PMTiles metadata JSON's string members), elevation
/// carried as PMTiles' sibling `NAME.terrain.pmtiles` of Terrarium PNG tiles (metadata
/// `encoding: terrarium`, 1/256 m steps) and back into an `elevation` table.
///
/// Lives in Build because writing Terrarium tiles needs the PNG encoder (Encoders), which
/// Archive may not use. Outputs are written atomically (temporary file, then rename).
public enum ArchiveConversion {
    /// What a conversion wrote.
    public struct Report: Sendable, Equatable {
        public var output: String
        public var kind: TileArchiveKind
        /// Tiles written (runs expanded).
        public var tiles = 0
        /// Distinct tile contents stored.
        public var distinctTiles = 0
        /// Elevation tiles written (Terrarium tiles of the sibling, or elevation rows).
        public var elevationTiles = 0
        /// The sibling terrain archive written, if any.
        public var terrainOutput: String?
    }

    /// Converts `input` (either kind, by content) to `output` (kind by extension).
    /// - Throws: ``ConversionError`` when `output` exists and `overwrite` is false (the
    ///   terrain sibling too), or both are the same kind; ``ArchiveError`` for a bad input or a
    ///   failed write.
    /// - Cost: one read of every tile (and elevation grid) and one write of the output.
    public static func convert(input: String, output: String, overwrite: Bool = false) throws -> Report {
        let from = TileArchiveKind(contentsOf: input), to = TileArchiveKind(outputPath: output)
        guard from != to else {
            throw ConversionError(
                .nothingToConvert, path: output,
                detail:
                    "input and output are both \(to.rawValue); name the output .\(to == .mbtiles ? "pmtiles" : "mbtiles")"
            )
        }
        if !overwrite, RegularFile.exists(output) {
            throw ConversionError(.outputExists, path: output, detail: "exists; pass --force to replace it")
        }
        switch to {
        case .pmtiles:
            let reader = try MBTilesReader(path: input)
            // A sibling left from before would be read as this archive's elevation.
            if !overwrite, let terrain = PMTilesReader.terrainPath(for: output), RegularFile.exists(terrain) {
                throw ConversionError(.outputExists, path: terrain, detail: "exists; pass --force to replace it")
            }
            return try toPMTiles(reader, output: output)
        case .mbtiles:
            return try toMBTiles(try PMTilesReader(path: input), output: output)
        }
    }

    /// Where `build --format pmtiles` builds the MBTiles archive it converts: `OUT.pmtiles`
    /// → `OUT.pmtiles.mbtiles`, a fixed name so that `--resume` finds an interrupted build.
    public static func intermediateMBTiles(for output: String) -> String { output + ".mbtiles" }

    /// The end of `build --format pmtiles`: the finished intermediate MBTiles archive
    /// converted to `output` (replacing it, as a build replaces its output) and removed.
    /// Building MBTiles first keeps one build pipeline (resume, shards, elevation encodings)
    /// and makes `build --format pmtiles` equal `build` then `convert` by construction; it
    /// costs one more write of the tiles.
    /// - Throws: as ``convert(input:output:overwrite:)``; the intermediate stays on failure.
    public static func finishPMTilesBuild(intermediate: String, output: String) throws -> Report {
        let report = try convert(input: intermediate, output: output, overwrite: true)
        unlink(intermediate)
        return report
    }

    /// The MBTiles archive `reader` as PMTiles at `output`, plus `NAME.terrain.pmtiles` when
    /// it stores elevation (a sibling already there is replaced, or removed when there is none).
    public static func toPMTiles(_ reader: MBTilesReader, output: String) throws -> Report {
        var ids: [TileID] = []
        for z in 0...TileID.maxZoom { ids += try reader.tileIDs(zoom: z) }
        ids.sort { $0.pmtilesID < $1.pmtilesID }
        let rows = reader.metadata
        var options = PMTilesWriter.Options()
        options.bounds = reader.bounds
        if let c = rows[MBTilesMetadata.Key.center].flatMap(MBTilesMetadata.Center.init(metadataValue:)) {
            options.center = (c.lon, c.lat, c.zoom)
        }
        let writer = try PMTilesWriter(
            path: output, metadata: rows,
            tileType: PMTilesTileType(mbtilesFormat: rows[MBTilesMetadata.Key.format] ?? ""), options: options)
        let terrainPath = PMTilesReader.terrainPath(for: output)
        var terrain: PMTilesWriter?  // made at the first elevation grid
        let png = PNGEncoder(level: 6)
        var report = Report(output: output, kind: .pmtiles)
        for id in ids {
            guard let bytes = try reader.tile(id) else { continue }
            try writer.write(bytes, for: id)
            report.tiles += 1
            guard reader.hasElevation, let terrainPath, let grid = try reader.elevation(id) else { continue }
            if terrain == nil {
                terrain = try PMTilesWriter(
                    path: terrainPath, metadata: terrainMetadata(rows), tileType: .png, options: options)
            }
            // A square grid keeps one pixel per sample; others are resampled to 256 × 256.
            let side = grid.width == grid.height ? grid.width : 256
            try terrain?.write(
                try png.encode(rgba: Terrarium.rgba(grid, side: side), width: side, height: side), for: id)
            report.elevationTiles += 1
        }
        try terrain?.finish()
        try writer.finish()
        if terrain != nil {
            report.terrainOutput = terrainPath
        } else if let terrainPath {
            unlink(terrainPath)
        }
        report.distinctTiles = writer.statistics.tileContents
        return report
    }

    /// The terrain sibling's metadata: Terrarium PNG, the colour archive's place and credit.
    static func terrainMetadata(_ rows: [String: String]) -> [String: String] {
        var meta: [String: String] = [
            MBTilesMetadata.Key.name: (rows[MBTilesMetadata.Key.name] ?? "") + " terrain",
            MBTilesMetadata.Key.format: "png", "encoding": Terrarium.encodingName,
            MBTilesMetadata.Key.type: "baselayer",
            MBTilesMetadata.Key.description: "elevation as Terrarium PNG: metres = R × 256 + G + B / 256 − 32768",
        ]
        for key in [
            MBTilesMetadata.Key.bounds, MBTilesMetadata.Key.center, MBTilesMetadata.Key.attribution,
            MBTilesMetadata.Key.version, MBTilesMetadata.Key.valueKind,
        ] {
            if let v = rows[key] { meta[key] = v }
        }
        return meta
    }

    /// The PMTiles archive `reader` as MBTiles at `output`; its terrain sibling's tiles, decoded
    /// from Terrarium, become the `elevation` table.
    public static func toMBTiles(_ reader: PMTilesReader, output: String) throws -> Report {
        guard let metadata = MBTilesMetadata(rows: reader.metadata) else {
            preconditionFailure("the reader fills name and format")
        }
        let writer = try MBTilesWriter(path: output, metadata: metadata)
        var report = Report(output: output, kind: .mbtiles)
        try reader.forEachTile { id, bytes in
            try writer.write(bytes, for: id)
            report.tiles += 1
            if reader.terrain != nil, let grid = try reader.elevation(id) {
                try writer.writeElevation(grid, for: id)
                report.elevationTiles += 1
            }
        }
        try writer.finish()
        report.distinctTiles = writer.statistics.distinctImages
        return report
    }
}
