import ArgumentParser
import TilePack
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Where a region library, this device's purchases and its trust anchors live; shared by
/// `store …`, `query`, `render` and `serve`.
struct RegionLibraryOptions: ParsableArguments {
    @Option(
        help:
            """
            Region library directory: the .mbtiles archives and the signed catalog.jws (default: the current \
            directory).
            """
    )
    var library: String?

    @Option(
        help:
            """
            Entitlement ledger (SQLite) of this device (default: $XDG_DATA_HOME/tilepack/ledger.sqlite, else \
            ~/.local/share/tilepack/ledger.sqlite).
            """
    )
    var ledger: String?

    @Option(
        help:
            "Directory of the test App Store (stands for Apple's servers; default: $XDG_DATA_HOME/tilepack/simulator).")
    var simulator: String?

    @Option(
        help:
            """
            Trust file: pinned App Store roots, bundle id, environments, publisher keys (default: \
            $XDG_CONFIG_HOME/tilepack/trust.json, else ~/.config/tilepack/trust.json). Without one the library is \
            open: no store, every tile shows.
            """
    )
    var trust: String?

    @Option(
        help:
            """
            The store account (StoreKit's appAccountToken, a UUID) that buys and restores (default: the ledger's; \
            a fresh ledger draws one and prints it).
            """
    )
    var account: String?

    /// The trust anchors: `--trust` (which must exist), else the default file when it exists,
    /// else nil (an open library).
    func trustAnchors() throws -> TrustAnchors? { try Self.trustAnchors(file: trust) }

    /// The anchors of trust file `file`, else of the default one when it exists, else nil.
    static func trustAnchors(file trust: String?) throws -> TrustAnchors? {
        if let trust { return try TrustAnchors(contentsOf: trust) }
        guard let path = TrustAnchors.defaultPath(environment: ProcessInfo.processInfo.environment),
            access(path, F_OK) == 0
        else { return nil }
        return try TrustAnchors(contentsOf: path)
    }

    /// Opens the library at `directory` (default: --library, else the current directory).
    /// Read-only opens write nothing (the store is asked only if its directory exists);
    /// others open, or create, the test App Store.
    func open(directory: String? = nil, readOnly: Bool, upgradingLegacyLedger: Bool = false) throws -> RegionLibrary {
        let anchors = try trustAnchors()
        var store: (any Storefront)?
        if anchors != nil {
            let dir = simulator ?? TestAppStore.defaultDirectory()
            if readOnly {
                store = access(dir + "/store.sqlite", F_OK) == 0 ? try? TestAppStore(directory: dir) : nil
            } else {
                store = try TestAppStore(directory: dir)
            }
        }
        return try RegionLibrary(
            directory: directory ?? library ?? ".", trust: anchors, ledgerPath: ledger, account: account,
            storefront: store, readOnly: readOnly, upgradingLegacyLedger: upgradingLegacyLedger)
    }
}

/// Runs `body`, printing a `TilePackError` as one line and exiting with its category's status.
func exitingOnError(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as any TilePackError {
        printError(error.description)
        throw ExitCode(error.category.exitStatus)
    }
}

/// Prints the library's problems (failing closed, store offline, rejected rows) on stderr.
func reportProblems(_ library: RegionLibrary) {
    for line in library.problems() { printNotice("warning: " + line) }
}

/// Says on stderr that a fresh ledger drew an account, and how to use it elsewhere.
func announceDrawnAccount(_ library: RegionLibrary) {
    if let ledger = library.ledger, ledger.accountWasDrawn {
        printNotice(
            """
            note: new store account \(ledger.account): pass --account \(ledger.account) to restore these \
            purchases on another device
            """
        )
    }
}
