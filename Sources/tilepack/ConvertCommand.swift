import ArgumentParser
import TilePack

/// `tilepack convert IN OUT`: MBTiles ⇄ PMTiles, the output's kind by its extension.
struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Convert an archive between MBTiles and PMTiles v3 (the output's kind by its extension).",
        discussion: """
            IN.mbtiles OUT.pmtiles writes a clustered PMTiles v3 archive (Hilbert tile ids, identical \
            tiles stored once, runs of them run-length encoded, gzip'd directories), tiles byte for \
            byte; an archive with elevation also writes OUT.terrain.pmtiles, its elevation as \
            Terrarium PNG tiles (metadata encoding: terrarium). IN.pmtiles OUT.mbtiles does the \
            reverse (a sibling IN.terrain.pmtiles becomes the elevation table). An existing output \
            is refused unless --force; outputs appear whole or not at all.
            """)

    @Argument(help: "The archive to read (.mbtiles or .pmtiles; told apart by content).")
    var input: String

    @Argument(help: "The archive to write: .pmtiles for PMTiles, anything else MBTiles.")
    var output: String

    @Flag(help: "Replace an existing output (and terrain sibling).")
    var force = false

    func run() throws {
        try exitingOnError {
            let r = try ArchiveConversion.convert(input: input, output: output, overwrite: force)
            print("wrote \(r.output): \(r.tiles) tiles (\(r.distinctTiles) distinct), \(r.kind.rawValue)")
            if let terrain = r.terrainOutput {
                print("  elevation: \(r.elevationTiles) Terrarium tiles in \(terrain)")
            } else if r.elevationTiles > 0 {
                print("  elevation: \(r.elevationTiles) tiles")
            }
        }
    }
}
