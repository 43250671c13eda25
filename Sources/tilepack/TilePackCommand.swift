import ArgumentParser
import TilePack

@main
struct TilePackCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tilepack",
        abstract: "Package georeferenced rasters into offline map regions of GPU-compressed tiles.",
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
