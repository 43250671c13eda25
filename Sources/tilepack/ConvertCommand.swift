import ArgumentParser
import TilePack

/// `tilepack convert IN.mbtiles OUT.mbtiles --to png`: an archive rewritten in a tile format
/// other tools read. The work is ``ArchiveConversion``'s (TilePackBuild); this file parses,
/// chooses the output and prints.
struct ConvertCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "convert",
        abstract: "Rewrite an archive's tiles in another format (--to png: for GDAL, QGIS and other MBTiles readers).",
        discussion: """
            Decodes every tile of IN (a KTX2 GPU archive, ASTC or PVRTC, or any archive tilepack \
            reads) and writes OUT with PNG tiles, the same metadata (format png, tilepack:codec png) \
            and the elevation table copied byte for byte. GDAL 3.6 ignores an archive's format and \
            cannot decode KTX2 tiles; convert first. OUT is written to a temporary file and renamed \
            when whole; an existing OUT is refused unless --force.
            """)

    @Argument(help: "The archive to read (.mbtiles).")
    var input: String

    @Argument(help: "The archive to write (.mbtiles).")
    var output: String

    @Option(help: "Tile format to write: \(ArchiveConversion.Target.allCases.map(\.rawValue).joined(separator: ", ")).")
    var to: ArchiveConversion.Target

    @Flag(help: "Replace OUT when it exists.")
    var force = false

    @Option(help: "Threads decoding and encoding tiles (default: all cores).")
    var workers: Int?

    @Flag(help: "Print no progress, only the summary.")
    var quiet = false

    func validate() throws {
        if let workers, !(1...256).contains(workers) { throw ValidationError("--workers \(workers) must be 1–256") }
        // The one place an output kind is chosen (by extension): MBTiles is the only writer today.
        guard output.lowercased().hasSuffix(".mbtiles") else {
            throw ValidationError("OUT \(output) must end in .mbtiles")
        }
    }

    func run() throws {
        try exitingOnError {
            var conversion = ArchiveConversion(inputPath: input, outputPath: output, target: to, force: force)
            if let workers { conversion.workers = workers }
            let result = try conversion.run { done, total in
                if !quiet, stderrIsTerminal { printProgress("\rconverting: \(done)/\(total) tiles") }
            }
            if !quiet, stderrIsTerminal { printProgress("\n") }
            let a = result.archive
            print(
                """
                wrote \(result.outputPath): \(a.tiles) \(to.rawValue) tiles from \(result.from) \
                (\(a.distinctImages) distinct, \(a.storedBytes) bytes), \(a.elevationTiles) elevation rows, \
                \(String(format2: result.seconds)) s
                """)
        }
    }
}

extension ArchiveConversion.Target: ExpressibleByArgument {}
