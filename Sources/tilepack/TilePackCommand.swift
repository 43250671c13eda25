import ArgumentParser
import TilePack

@main
struct TilePackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tilepack",
        abstract: "Package georeferenced rasters into offline map regions of GPU-compressed tiles.",
        discussion: """
            Exit status (every command):
              0    success
              1    the environment failed (cannot write, port in use, I/O error)
              2    bad or missing input (no such file, unreadable, nothing to draw)
              3    locked: a region not bought (render still writes the picture)
              64   usage: unknown option, malformed or contradictory argument
              130  interrupted by SIGINT (Ctrl-C); 143 by SIGTERM
            Errors are one line on stderr (error: SUBJECT: PROBLEM); results go to stdout.
            """,
        version: TilePackVersion.current,
        subcommands: [
            BuildCommand.self, CatalogCommand.self, ConvertCommand.self, DownloadCommand.self, InfoCommand.self,
            LibraryCommand.self,
            MergeCommand.self, PackCommand.self, QueryCommand.self, RenderCommand.self, ServeCommand.self,
            StoreCommand.self, StressCommand.self, CodecCommand.self, ProjectCommand.self, SampleRegionCommand.self,
            TileMathCommand.self, VerifyCommand.self,
        ]
    )
}
