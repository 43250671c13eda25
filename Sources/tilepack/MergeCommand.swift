import ArgumentParser
import TilePack

/// `tilepack merge`: the shard archives of one build in, the single-machine build's archive out.
struct MergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Join the shard archives of one build (`tilepack build --shard K/N`) into one archive.",
        discussion: """
            Checks that every file is a shard of the same source, options and split, with none \
            missing or given twice (the error names the file), copies their tiles, and builds \
            the zooms above the shard zoom from the exact pixels the shards kept, so the result \
            equals the single-machine build tile for tile. Written atomically like a build.
            """
    )

    @Argument(help: "The N shard archives, in any order.")
    var shards: [String]

    @Option(name: [.short, .long], help: "Output archive.")
    var output: String

    @Flag(help: "Print no progress, only the summary.")
    var quiet = false

    func validate() throws {
        if shards.isEmpty { throw ValidationError("give the shard archives to merge") }
    }

    func run() throws {
        let display = BuildProgressDisplay(style: quiet ? .none : ProgressStyle.auto.resolved(stderrIsTerminal: stderrIsTerminal))
        do {
            let result = try ShardMerge(shardPaths: shards, outputPath: output).run { display.update($0) }
            display.finish()
            let r = result.levels
            print("wrote \(result.outputPath): \(result.archive.tiles) tiles (\(result.archive.distinctImages) distinct, \(result.archive.storedBytes) bytes) from \(result.shards) shards")
            print("  zooms above the shard zoom \(result.shardZoom): \(r.tilesWritten) tiles built, \(r.emptySkipped) empty skipped; \(String(format2: result.seconds)) s")
        } catch let error as any TilePackError {
            display.interrupt()
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }
}
