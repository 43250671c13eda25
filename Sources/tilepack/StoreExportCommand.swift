import ArgumentParser
import TilePack

/// `tilepack store export -o DIR`: the account's signed transactions and renewal infos as files.
struct StoreExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write the account's signed transactions and renewal infos (JWS) from the store as files.",
        discussion:
            """
            One file per token: transaction-ID.jws and renewal-ORIGINAL_ID.jws, for checks (`tilepack store \
            verify`, Apple's own verifiers) and for support.
            """
    )

    @OptionGroup var options: RegionLibraryOptions

    @Option(name: .shortAndLong, help: "Directory to write into (created when missing).")
    var output: String

    func run() throws {
        try exitingOnError {
            let library = try options.open(readOnly: true)
            let ledger = try library.requireLedger()
            guard let trust = library.trust, let store = library.storefront else {
                throw LedgerError(.store, subject: options.simulator ?? "store", "no test App Store to export from")
            }
            try RegionFiles.makeDirectories(output)
            var written = 0
            for jws in try store.transactions(account: ledger.account, bundleID: trust.bundleID) {
                let id = (try? ledger.verifier.verifyTransaction(jws, source: "store").transactionId) ?? nil
                try RegionFiles.writeAtomically(
                    path: "\(output)/transaction-\(id ?? String(written)).jws", bytes: Array((jws + "\n").utf8),
                    mode: 0o644)
                written += 1
            }
            for jws in try store.renewalInfos(account: ledger.account, bundleID: trust.bundleID) {
                let id = (try? ledger.verifier.verifyRenewalInfo(jws, source: "store").originalTransactionId) ?? nil
                try RegionFiles.writeAtomically(
                    path: "\(output)/renewal-\(id ?? String(written)).jws", bytes: Array((jws + "\n").utf8), mode: 0o644
                )
                written += 1
            }
            print("wrote \(written) token\(written == 1 ? "" : "s") to \(output)")
        }
    }
}
