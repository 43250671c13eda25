import ArgumentParser
import TilePack

/// `tilepack store`: browse and buy the regions of a library, as an app's store screen does.
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Browse, buy, refund and restore the regions a library sells.",
        discussion: """
            Purchases go through a local store simulator that signs each transaction (a JWS, \
            EdDSA) with its own key; this device's ledger stores the signed transactions and \
            derives entitlements from them on every read. See docs/REGIONS.md.
            """,
        subcommands: [StoreListCommand.self, StoreBuyCommand.self, StoreRestoreCommand.self,
                      StoreRefundCommand.self, StoreEntitlementsCommand.self, StoreVerifyCommand.self, StoreTrustCommand.self]
    )
}
