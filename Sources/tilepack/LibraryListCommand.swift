import ArgumentParser
import TilePack

/// `tilepack library list`: installed packs with version, size and whether the account owns them.
struct LibraryListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the installed packs: id, version, bytes, product, whether this account owns it.",
        discussion: """
            A pack is owned when it shows: it is the free pack, the ledger's verified transactions \
            entitle its product (directly, through a bundle or a subscription), or a lapsed \
            subscription released it before it ended. A pack whose manifest does not verify, or \
            whose tile index is not the signed one, is listed with the problem and is never owned.
            """)

    @OptionGroup var options: RegionLibraryOptions

    @Flag(help: "Print one JSON object per pack: pack_id, version, bytes, product_id, owned, problem.")
    var json = false

    func run() throws {
        try exitingOnError {
            let library = try options.open(readOnly: true)
            reportProblems(library)
            for line in try library.installedPackListings() {
                if json {
                    print(try JSONOutput.string(line))
                } else {
                    let version = line.version.map { "v\($0)" } ?? "v?"
                    let state = line.problem.map { "damaged: \($0)" } ?? (line.owned ? "owned" : "not owned")
                    print("\(line.packID)  \(version)  \(line.bytes) bytes  \(state)")
                }
            }
        }
    }
}
