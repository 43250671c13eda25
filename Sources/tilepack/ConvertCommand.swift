import ArgumentParser
import TilePack

/// `tilepack convert IN OUT [--to png]`: an archive in another container (MBTiles ⇄ PMTiles,
/// tiles as they are: ``ArchiveConversion``) or with its tiles in another format (`--to png`:
/// ``TileFormatConversion``). Both live in TilePackBuild; this file parses, chooses and prints.
struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract:
            """
            Convert an archive between MBTiles and PMTiles v3 (by OUT's extension), or rewrite its tiles as PNG \
            (--to png: for GDAL, QGIS and other MBTiles readers).
            """,
        discussion: """
            IN.mbtiles OUT.pmtiles writes a clustered PMTiles v3 archive (Hilbert tile ids, identical \
            tiles stored once, runs of them run-length encoded, gzip'd directories), tiles byte for \
            byte; an archive with elevation also writes OUT.terrain.pmtiles, its elevation as \
            Terrarium PNG tiles (metadata encoding: terrarium). IN.pmtiles OUT.mbtiles does the \
            reverse (a sibling IN.terrain.pmtiles becomes the elevation table).

            --to png decodes every tile of IN.mbtiles (KTX2 GPU tiles, ASTC or PVRTC, or any \
            archive tilepack reads) and writes OUT.mbtiles with PNG tiles, the same metadata \
            (format png, tilepack:codec png) and the elevation table copied byte for byte. GDAL \
            3.6 ignores an archive's format and cannot decode KTX2 tiles: convert first.

            Outputs appear whole or not at all (a temporary file renamed when done); an existing \
            output is refused unless --force, and the input is never overwritten.
            """)

    @Argument(help: "The archive to read (.mbtiles or .pmtiles; told apart by content).")
    var input: String

    @Argument(help: "The archive to write: .pmtiles for PMTiles, .mbtiles for MBTiles.")
    var output: String

    @Option(
        help: """
            Rewrite the tiles in this format (\(TileFormatConversion.Target.allCases.map(\.rawValue).joined(separator: ", "))) \
            instead of changing the container; IN and OUT are then MBTiles.
            """)
    var to: TileFormatConversion.Target?

    @Flag(help: "Replace OUT (and its terrain sibling) when it exists.")
    var force = false

    @Option(help: "With --to: threads decoding and encoding tiles (default: all cores).")
    var workers: Int?

    @Flag(help: "With --to: print no progress, only the summary.")
    var quiet = false

    func validate() throws {
        if let workers, !(1...256).contains(workers) { throw ValidationError("--workers \(workers) must be 1–256") }
        // The one place the output's kind is chosen: by its extension.
        let lower = output.lowercased()
        guard lower.hasSuffix(".mbtiles") || lower.hasSuffix(".pmtiles") else {
            throw ValidationError("OUT \(output) must end in .mbtiles or .pmtiles")
        }
        if to != nil, !lower.hasSuffix(".mbtiles") {
            throw ValidationError(
                "--to writes MBTiles: OUT \(output) must end in .mbtiles (convert that to .pmtiles after)")
        }
        if to == nil, workers != nil || quiet { throw ValidationError("--workers and --quiet go with --to") }
    }

    func run() throws {
        try exitingOnError {
            if let to { try convertTiles(to) } else { try convertContainer() }
        }
    }

    /// MBTiles ⇄ PMTiles, tiles byte for byte.
    func convertContainer() throws {
        let r = try ArchiveConversion.convert(input: input, output: output, overwrite: force)
        print("wrote \(r.output): \(r.tiles) tiles (\(r.distinctTiles) distinct), \(r.kind.rawValue)")
        if let terrain = r.terrainOutput {
            print("  elevation: \(r.elevationTiles) Terrarium tiles in \(terrain)")
        } else if r.elevationTiles > 0 {
            print("  elevation: \(r.elevationTiles) tiles")
        }
    }

    /// Every tile decoded and encoded in `target`.
    func convertTiles(_ target: TileFormatConversion.Target) throws {
        var conversion = TileFormatConversion(inputPath: input, outputPath: output, target: target, force: force)
        if let workers { conversion.workers = workers }
        let result = try conversion.run { done, total in
            if !quiet, stderrIsTerminal { printProgress("\rconverting: \(done)/\(total) tiles") }
        }
        if !quiet, stderrIsTerminal { printProgress("\n") }
        let a = result.archive
        print(
            """
            wrote \(result.outputPath): \(a.tiles) \(target.rawValue) tiles from \(result.from) \
            (\(a.distinctImages) distinct, \(a.storedBytes) bytes), \(a.elevationTiles) elevation rows, \
            \(String(format2: result.seconds)) s
            """)
    }
}

extension TileFormatConversion.Target: ExpressibleByArgument {}
