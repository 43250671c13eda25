import ArgumentParser
import TilePack

/// `tilepack store restore`: re-imports this account's transactions from the store.
struct StoreRestoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Re-import this account's signed transactions from the store (idempotent).",
        discussion: """
            On a new device, pass --account with the account the purchases were made with. A \
            ledger written by an earlier tilepack (Ed25519 transactions) is emptied and filled \
            again with the store's re-issued App Store transactions.
            """)

    @OptionGroup var options: RegionLibraryOptions

    func run() throws {
        try exitingOnError {
            let library = try options.open(readOnly: false, upgradingLegacyLedger: true)
            announceDrawnAccount(library)
            let summary = try library.restore()
            print("restored: \(summary.inserted) new, \(summary.replaced) updated, \(summary.unchanged) unchanged")
        }
    }
}
