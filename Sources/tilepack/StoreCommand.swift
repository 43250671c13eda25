import ArgumentParser
import TilePack

/// `tilepack store`: browse and buy the regions of a library, as an app's store screen does.
struct StoreCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Browse, buy, refund and restore the regions a library sells.",
        discussion: """
            Purchases go through a test App Store (standing for Apple's servers) that signs each \
            transaction in the App Store's format (ES256 with an x5c chain); this device trusts \
            only the roots, bundle id and publisher keys of its trust file (--trust), stores the \
            signed transactions in its ledger and derives entitlements from them on every read. \
            See docs/REGIONS.md.
            """,
        subcommands: [
            StoreListCommand.self, StoreBuyCommand.self, StoreRestoreCommand.self,
            StoreRefundCommand.self, StoreEntitlementsCommand.self, StoreExportCommand.self,
            StoreVerifyCommand.self, StoreTrustCommand.self,
        ]
    )
}
