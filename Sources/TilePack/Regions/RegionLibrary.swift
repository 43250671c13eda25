import TilePackCore
import TilePackStore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A region library as a person uses it: the catalog beside the archives, the device's
/// entitlement ledger, the store that signs purchases (the local simulator), and the access
/// policy the tile store asks. What `tilepack store …` and `tilepack query` run.
///
/// The device side trusts only the store's public key (`store-public.jwk` in the simulator
/// directory, as an app would ship it); the simulator's private key and records stay in
/// their own directory.
public final class RegionLibrary: Sendable {
    public let directory: String
    /// nil when the library has no `catalog.json` (everything is open).
    public let catalog: Catalog?
    public let ledgerPath: String
    public let simulatorDirectory: String
    public let clock: any RegionClock
    /// The store account this device is signed in to; nil: the one the ledger file records
    /// (a fresh ledger draws a new random account).
    public let account: String?
    /// What every policy of ``accessPolicy()`` asks; refreshed by ``buy(_:)``, ``refund(_:)``
    /// and ``restore()``.
    private let entitlements = LibraryEntitlements()

    /// Opens the library at `directory` (its catalog is validated now).
    ///
    /// `account` names the store account, as a device signed in to an App Store account: it
    /// is what lets ``restore()`` into a fresh ledger file (a new device, a deleted ledger)
    /// find the purchases, which are the account's, not the file's. Without it a fresh
    /// ledger gets a new random account and a restore finds nothing.
    /// - Throws: ``CatalogError`` for a bad catalog.
    public init(directory: String, ledgerPath: String? = nil, simulatorDirectory: String? = nil,
                clock: any RegionClock = SystemRegionClock(), account: String? = nil) throws(CatalogError) {
        self.directory = directory
        self.catalog = try Catalog.load(libraryDirectory: directory)
        self.ledgerPath = ledgerPath ?? EntitlementLedger.defaultPath()
        self.simulatorDirectory = simulatorDirectory ?? StoreSimulator.defaultDirectory()
        self.clock = clock
        self.account = account
    }

    /// The catalog, or a one-line error naming the library when it has none.
    public func requireCatalog() throws(CatalogError) -> Catalog {
        guard let catalog else {
            throw CatalogError(path: directory + "/" + Catalog.fileName, field: nil, kind: .notFound,
                               detail: "no catalog in this library: nothing is for sale")
        }
        return catalog
    }

    /// The store (created with its key on first use).
    public func simulator() throws(LedgerError) -> StoreSimulator {
        try StoreSimulator(directory: simulatorDirectory, clock: clock)
    }

    /// The device's ledger, trusting the store's public key.
    public func ledger() throws(LedgerError) -> EntitlementLedger {
        try EntitlementLedger(path: ledgerPath, publicKeys: [try simulator().publicKey], account: account, clock: clock)
    }

    /// The policy for the tile store: ``OpenAccess`` without a catalog; otherwise the catalog's
    /// free tier plus what the ledger's verified transactions entitle. Before anything was
    /// ever bought (no store key, no ledger) nothing is entitled, and nothing is created.
    ///
    /// Every policy it returns shares one entitlement source that this library's ``buy(_:)``,
    /// ``refund(_:)`` and ``restore()`` refresh, so a policy the tile store already holds sees
    /// them at once (a change made by another process shows after the next `accessPolicy()`).
    public func accessPolicy() throws -> any AccessPolicy {
        guard let catalog else { return OpenAccess() }
        try entitlements.refresh(self)
        return RegionAccessPolicy(catalog: catalog, entitlements: entitlements)
    }

    /// Whether the ledger and the store's public key both exist (before, nothing was bought
    /// and nothing needs opening).
    fileprivate var ledgerFilesExist: Bool {
        access(simulatorDirectory + "/store-public.jwk", F_OK) == 0 && access(ledgerPath, F_OK) == 0
    }

    /// The library's `.mbtiles` files in drawing order (the first at the bottom): the order in
    /// which the catalog's products name them when there is a catalog, then the rest by file
    /// name. What `render` and `serve` composite.
    public func archivePathsInDrawingOrder() throws(InputFileError) -> [String] {
        let paths = try PointQuery.archives(in: directory)
        guard let catalog else { return paths }
        var rank: [String: Int] = [:]
        for product in catalog.products {
            for name in product.archives where rank[name] == nil { rank[name] = rank.count }
        }
        func fileName(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }
        return paths.enumerated().sorted { l, r in
            let a = rank[fileName(l.element)] ?? Int.max, b = rank[fileName(r.element)] ?? Int.max
            return a != b ? a < b : l.offset < r.offset
        }.map(\.element)
    }

    // MARK: - Purchases

    /// What the catalog sells, with whether this account owns each (directly or through a
    /// bundle or subscription).
    public func listings() throws -> [ProductListing] {
        let catalog = try requireCatalog()
        let owned = ledgerFilesExist
            ? catalog.entitlementClosure(of: try ledger().entitledProductIDs()) : []
        return catalog.products.map { p in
            ProductListing(id: p.id, kind: p.kind.rawValue, title: p.title, price: p.price.description, currency: p.currency,
                           bounds: catalog.bounds(of: p.id), zoomRange: catalog.zoomRange(of: p.id),
                           owned: owned.contains(p.id), available: p.isAvailable)
        }
    }

    /// Buys `productID` from the store and records the signed transaction in the ledger.
    /// - Throws: ``CatalogError`` for an unknown or unavailable product (naming it),
    ///   ``LedgerError`` when the store or the ledger fails.
    public func buy(_ productID: String) throws -> Entitlement {
        let catalog = try requireCatalog()
        guard let product = catalog.product(id: productID) else {
            throw CatalogError(path: directory + "/" + Catalog.fileName, field: nil, kind: .unknownProduct,
                               detail: "no product \(ErrorText.quoted(productID)) in the catalog")
        }
        if case .unavailable(let reason) = product.availability {
            throw CatalogError(path: directory + "/" + Catalog.fileName, field: nil, kind: .unknownProduct,
                               detail: "product \(ErrorText.quoted(productID)) is not available: \(reason)")
        }
        let ledger = try ledger()
        var period: Duration?
        if let p = product.period {
            let now = clock.now()
            guard let end = p.expiry(after: now) else {
                throw CatalogError(path: directory + "/" + Catalog.fileName, field: nil, kind: .invalidValue,
                                   detail: "product \(ErrorText.quoted(productID)) has a period whose end cannot be computed")
            }
            period = .milliseconds(Int64(((end - now) * 1000).rounded()))
        }
        let signed = try simulator().purchase(productID: productID, account: ledger.account, period: period)
        try ledger.import(signed: signed, source: "store purchase")
        refreshPolicies()
        let payload = try ledger.verifier.verify(signed, source: "store purchase")
        return Entitlement(productID: payload.productId, transactionID: payload.transactionId,
                           originalTransactionID: payload.originalTransactionId,
                           purchaseDate: payload.purchaseDate, expiresDate: payload.expiresDate)
    }

    /// Refunds `transactionID` at the store and records the signed revocation.
    public func refund(_ transactionID: String) throws(LedgerError) -> LedgerImportSummary {
        let ledger = try ledger()
        let revocation = try simulator().refund(transactionID: transactionID)
        defer { refreshPolicies() }
        return try ledger.import(signed: revocation, source: "store refund")
    }

    /// Re-imports every transaction of this account from the store (idempotent).
    public func restore() throws(LedgerError) -> LedgerImportSummary {
        let ledger = try ledger()
        defer { refreshPolicies() }
        return try ledger.restore(from: try simulator())
    }

    /// After a change recorded in the ledger: the policies handed out re-derive their
    /// entitlements. A failure to re-read is not the change's failure (it is recorded); the
    /// next ``accessPolicy()`` tries again.
    private func refreshPolicies() {
        try? entitlements.refresh(self)
    }

    /// The ledger's report now: entitlements, rejected rows and why, clock rollback.
    public func report() throws(LedgerError) -> LedgerReport {
        try ledger().report()
    }
}

/// One product as `tilepack store list` shows it.
public struct ProductListing: Sendable, Encodable {
    public let id: String
    public let kind: String
    public let title: String
    /// Decimal text as the catalog writes it.
    public let price: String
    public let currency: String
    public let bounds: GeoBounds?
    public let zoomRange: ClosedRange<Int>?
    public let owned: Bool
    public let available: Bool

    enum CodingKeys: String, CodingKey {
        case id, kind, title, price, currency, bounds, minzoom, maxzoom, owned, available
    }

    /// `bounds` as [west, south, east, north], zooms as `minzoom`/`maxzoom` (null for none).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(kind, forKey: .kind)
        try c.encode(title, forKey: .title)
        try c.encode(price, forKey: .price)
        try c.encode(currency, forKey: .currency)
        try c.encodeOrNull(bounds.map { [$0.west, $0.south, $0.east, $0.north].map(JSONOutput.number) }, forKey: .bounds)
        try c.encodeOrNull(zoomRange?.lowerBound, forKey: .minzoom)
        try c.encodeOrNull(zoomRange?.upperBound, forKey: .maxzoom)
        try c.encode(owned, forKey: .owned)
        try c.encode(available, forKey: .available)
    }
}

/// What a ``RegionLibrary``'s access policies ask: nothing entitled while the ledger or the
/// store key is missing (asking creates neither), then the ledger's verified entitlements
/// (``LedgerEntitlements``, which also follows subscription expiry).
///
/// Why it exists: the policy re-reads entitlements only when its source's `generation`
/// changes. `accessPolicy()` used to hand each policy its own source (``FixedEntitlements``
/// before the first purchase, a ``LedgerEntitlements`` after), and `buy`/`refund`/`restore`
/// never bumped it: a tile store holding the policy kept a bought region locked and a
/// refunded one open until the process restarted. The library now refreshes this shared
/// source after each of them.
///
/// Cost: ``generation`` is one lock plus ``LedgerEntitlements/generation``.
final class LibraryEntitlements: EntitlementSource {
    private struct State {
        var ledger: LedgerEntitlements?
        /// Counts refreshes; `generation` adds the ledger source's own, so it changes when
        /// either does (both only grow).
        var refreshes: UInt64 = 0
    }
    private let state = Mutex(State())

    /// Re-derives from `library`'s ledger (opening it once it exists) and bumps the generation.
    func refresh(_ library: RegionLibrary) throws {
        defer { state.withLock { $0.refreshes &+= 1 } }
        if let current = state.withLock({ $0.ledger }) {
            try current.refresh()
        } else if library.ledgerFilesExist {
            let made = try LedgerEntitlements(ledger: try library.ledger())
            state.withLock { s in if s.ledger == nil { s.ledger = made } }
        }
    }

    func entitledProductIDs() -> Set<String> { state.withLock { $0.ledger }?.entitledProductIDs() ?? [] }

    var generation: UInt64 {
        let (ledger, refreshes) = state.withLock { ($0.ledger, $0.refreshes) }
        return refreshes &+ (ledger?.generation ?? 0)
    }
}

/// The ledger as the access policy's ``EntitlementSource``: a snapshot of the verified
/// entitlements, re-derived when the earliest subscription in it expires or on ``refresh()``
/// (after a purchase, refund or restore in this process).
///
/// Cost: ``generation`` is one clock read and one lock; a re-derivation verifies every
/// ledger row (Ed25519, ~50 µs each).
public final class LedgerEntitlements: EntitlementSource {
    private let ledger: EntitlementLedger
    private struct Snapshot {
        var ids: Set<String>
        /// When the first time-limited entitlement in `ids` ends (seconds), or +∞.
        var nextExpiry: Double
        var generation: UInt64
    }
    private let state: Mutex<Snapshot>

    public init(ledger: EntitlementLedger) throws(LedgerError) {
        self.ledger = ledger
        state = Mutex(Snapshot(ids: [], nextExpiry: -.infinity, generation: 0))
        try refresh()
    }

    /// Derives the entitlements again from the ledger and bumps the generation.
    public func refresh() throws(LedgerError) {
        let now = ledger.clock.now()
        let entitlements = try ledger.entitlements(now: now)
        let expiry = entitlements.compactMap { $0.expiresDate.map { Double($0) / 1000 } }.min() ?? .infinity
        state.withLock { s in
            s.ids = Set(entitlements.map(\.productID))
            s.nextExpiry = expiry
            s.generation &+= 1
        }
    }

    public func entitledProductIDs() -> Set<String> { state.withLock { $0.ids } }

    public var generation: UInt64 {
        let expired = state.withLock { ledger.clock.now() >= $0.nextExpiry }
        // A subscription ran out: re-derive (a failure leaves nothing entitled rather than stale).
        if expired, (try? refresh()) == nil {
            state.withLock { s in s.ids = []; s.nextExpiry = .infinity; s.generation &+= 1 }
        }
        return state.withLock { $0.generation }
    }
}
