import ArgumentParser
import TilePack

/// `tilepack library remove PACK_ID`: deletes an installed pack and any download of it.
struct LibraryRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove an installed pack (its manifest, pack file and any partial download), freeing the space.",
        discussion: "Exit status: 0 removed, 1 busy (a download of it is running) or I/O, 2 not installed.")

    @Argument(help: "Pack id from `tilepack library list`.")
    var packID: String

    @OptionGroup var options: RegionLibraryOptions

    func run() throws {
        try exitingOnError {
            let library = try options.open(readOnly: true)
            guard let trust = library.trust else {
                throw PackError(
                    .invalidInput, subject: library.directory,
                    "an open library (no trust anchors) has no packs: pass --trust FILE")
            }
            let freed = try InstalledPacks(library: library.directory, trust: trust).remove(packID)
            print("removed \(packID): \(freed) bytes freed")
        }
    }
}
