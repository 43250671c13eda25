import ArgumentParser
import TilePack

/// `tilepack library`: the packs installed in a region library.
struct LibraryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "library",
        abstract: "List and remove the region packs installed in a library (offline).",
        subcommands: [LibraryListCommand.self, LibraryRemoveCommand.self]
    )
}
