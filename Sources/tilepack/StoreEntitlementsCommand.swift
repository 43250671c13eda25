import ArgumentParser
import TilePack

/// `tilepack store entitlements`: what the ledger's verified transactions entitle now.
struct StoreEntitlementsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "entitlements",
        abstract: "Show what this account owns, derived from the ledger's verified transactions.",
        discussion:
            """
            Rows that do not verify (edited, another chain, another bundle or account) are reported on stderr and \
            never counted. Opens the ledger read-only.
            """
    )

    @OptionGroup var options: RegionLibraryOptions

    @Flag(
        help:
            """
            Print one JSON object per entitlement: product_id, type, transaction_id, original_transaction_id, \
            purchase_date, expires_date (ms since 1970, null when it never expires).
            """
    )
    var json = false

    func run() throws {
        try exitingOnError {
            let library = try options.open(readOnly: true)
            reportProblems(library)
            let report = try library.report()
            for problem in report.problems { printError(problem) }
            for e in report.entitlements {
                if json {
                    print(try JSONOutput.string(e))
                } else {
                    let expiry = e.expiresDate.map { " until \($0.appStoreMilliseconds / 1000) (unix s)" } ?? ""
                    print("\(e.productID)  transaction \(e.transactionID)\(expiry)")
                }
            }
            if report.entitlements.isEmpty && !json { print("no entitlements") }
        }
    }
}
