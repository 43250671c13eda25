import ArgumentParser
import TilePack

/// `tilepack store refund TRANSACTION`: the store signs a revocation; the ledger records it.
struct StoreRefundCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refund",
        abstract: "Refund a transaction: the test App Store signs a revocation and the ledger records it.")

    @Argument(help: "Transaction id from `tilepack store entitlements`.")
    var transaction: String

    @OptionGroup var options: RegionLibraryOptions

    func run() throws {
        try exitingOnError {
            _ = try options.open(readOnly: false).refund(transaction)
            print("refunded transaction \(transaction)")
        }
    }
}
