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
            the tiles that span shards from the exact pixels the shards kept, so the result \
            equals the single-machine build tile for tile. Written atomically like a build.
            """
    )

    @Argument(help: "The N shard archives, in any order.")
    var shards: [String]

    @Option(name: [.short, .long], help: "Output archive.")
    var output: String

    @Option(help: "Threads making the tiles that span shards (default: all cores).")
    var workers: Int?

    @Flag(help: "Print no progress, only the summary.")
    var quiet = false

    func validate() throws {
        if shards.isEmpty { throw ValidationError("give the shard archives to merge") }
        if let workers, !(1...256).contains(workers) { throw ValidationError("--workers \(workers) must be 1–256") }
        if TileArchiveKind(outputPath: output) == .pmtiles {
            throw ValidationError("merge writes MBTiles: name -o \(output) .mbtiles, then `tilepack convert` it")
        }
    }

    func run() throws {
        let display = BuildProgressDisplay(
            style: quiet ? .none : ProgressStyle.auto.resolved(stderrIsTerminal: stderrIsTerminal))
        do {
            try OutputPath.checkDirectory(of: output)
            var merge = ShardMerge(shardPaths: shards, outputPath: output)
            if let workers { merge.workers = workers }
            let result = try merge.run { display.update($0) }
            display.finish()
            let r = result.levels
            print(
                """
                wrote \(result.outputPath): \(result.archive.tiles) tiles (\(result.archive.distinctImages) \
                distinct, \(result.archive.storedBytes) bytes) from \(result.shards) shards
                """
            )
            print(
                """
                  tiles spanning shards (above the shard zoom \(result.shardZoom)): \(r.tilesWritten) built, \
                \(r.emptySkipped) empty skipped; \(String(format2: result.seconds)) s
                """
            )
            print(
                """
                  time: check \(String(format2: result.checkSeconds)) s, copy \
                \(String(format2: result.copySeconds)) s, 
                """
                    + """
                    spanning tiles \(String(format2: r.seconds)) s, finish \
                    \(String(format2: result.finishSeconds)) s
                    """
            )
        } catch let error as any TilePackError {
            display.interrupt()
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }
}
