import ArgumentParser
import TilePack

/// `tilepack store restore`: re-imports this account's transactions from the store.
struct StoreRestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "restore", abstract: "Re-import this account's signed transactions from the store (idempotent).")

    @OptionGroup var options: RegionLibraryOptions

    func run() throws {
        try exitingOnError {
            let summary = try options.open().restore()
            print("restored: \(summary.inserted) new, \(summary.replaced) updated, \(summary.unchanged) unchanged")
        }
    }
}
