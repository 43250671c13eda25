import TilePackCore
import TilePackStore
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A region library as a device uses it: the archives, the publisher's signed catalog beside
/// them, the device's entitlement ledger, the store (a ``Storefront``) and the access policy
/// the tile store asks. What `tilepack query`, `render`, `serve` and `store …` open.
///
/// Two kinds (``Kind``), decided by the trust anchors alone, never by the library's files:
/// - **open** — no ``TrustAnchors``: personal maps, no store; every tile shows.
/// - **store** — trust anchors given (compiled into an app; `--trust FILE` for the CLI): the
///   catalog is `catalog.jws`, accepted only with a valid signature of a key in
///   ``TrustAnchors/publisherKeys`` and a serial no lower than the last one accepted;
///   purchases are App Store transactions verified against the pinned roots. A catalog that
///   is missing, unsigned, edited, looped, unreadable or older FAILS CLOSED: only the free
///   zooms of the last catalog this device accepted show (``catalogProblem`` says why), or
///   nothing above ``failClosedMaxZoom`` when it never accepted one.
///
/// Opening syncs with the storefront when it is reachable, as an app does with
/// `Transaction.updates` at launch: unfinished purchases are recorded and finished (a `buy`
/// killed after paying is delivered now), and the store's current version of every
/// transaction wins over the ledger's (a refund is never undone by an old copy in the file).
/// Read-only opens hold the store's versions in memory and write nothing.
///
/// Threads: Sendable. Cost: opening verifies the catalog (Ed25519), hashes the archives the
/// catalog names once, and verifies every ledger row (ES256, chains cached).
public final class RegionLibrary: Sendable {
    public enum Kind: String, Sendable, Codable {
        case store, open
    }

    /// Shown when a store library has no catalog it can trust and never accepted one.
    public static let failClosedMaxZoom = 0

    public let directory: String
    public let trust: TrustAnchors?
    public var kind: Kind { trust == nil ? .open : .store }
    /// Store: the verified signed catalog, or when ``catalogProblem`` is set, the last one this
    /// device accepted (used for its free zooms only). Open: `catalog.json` if there is one.
    public let catalog: Catalog?
    /// Why a store library's catalog was refused (it then fails closed); nil when accepted.
    public let catalogProblem: CatalogError?
    /// Why the store could not be asked at open (offline: the ledger alone answered).
    public let storeProblem: String?
    public let ledgerPath: String
    public let clock: any RegionClock
    public let storefront: (any Storefront)?
    public let readOnly: Bool
    /// The ledger, for store libraries.
    public let ledger: EntitlementLedger?
    /// What the access policies ask; nil for open libraries and failed catalogs.
    public let entitlements: LedgerEntitlements?
    /// The packs in `packs/` that passed every check (``VerifiedPack``), by pack id.
    public let installedPacks: [VerifiedPack]
    /// Why the other packs in `packs/` are not shown, one line each.
    public let packProblems: [String]

    /// Opens the library at `directory`.
    /// - Parameters:
    ///   - trust: the app's trust anchors; nil opens the library as an open one.
    ///   - account: the store account (`appAccountToken`); nil: the ledger's, or a new one.
    ///   - storefront: the store to sync with and buy from; nil: offline.
    ///   - readOnly: open the ledger read-only (query, render, serve, list, entitlements).
    ///   - upgradingLegacyLedger: empty an earlier tilepack's ledger for a restore.
    /// - Throws: ``LedgerError`` when the ledger cannot be opened; ``CatalogError`` for an open
    ///   library's bad `catalog.json`. A store library's bad catalog is not thrown: it fails
    ///   closed and says so in ``catalogProblem``.
    public init(
        directory: String, trust: TrustAnchors?, ledgerPath: String? = nil, account: String? = nil,
        storefront: (any Storefront)? = nil, clock: any RegionClock = SystemRegionClock(),
        readOnly: Bool = false, upgradingLegacyLedger: Bool = false
    ) throws {
        self.directory = directory
        self.trust = trust
        self.clock = clock
        self.storefront = storefront
        self.readOnly = readOnly
        let givenLedgerPath = ledgerPath
        let ledgerPath = ledgerPath ?? EntitlementLedger.defaultPath()
        self.ledgerPath = ledgerPath
        (installedPacks, packProblems) = VerifiedPack.open(
            libraryDirectory: directory, publisherKeys: trust?.publisherKeys)
        guard let trust else {
            catalog = try Catalog.load(libraryDirectory: directory)
            catalogProblem = nil
            storeProblem = nil
            ledger = nil
            entitlements = nil
            return
        }
        // The path as given: nil lets the ledger create its default directory on a fresh home.
        let ledger = try EntitlementLedger(
            path: givenLedgerPath, verifier: AppStoreVerifier(anchors: trust), account: account,
            clock: clock, mode: readOnly ? .readOnly : (upgradingLegacyLedger ? .upgradingLegacy : .readWrite))
        if readOnly { EntitlementLedger.recordObservedTime(path: ledgerPath, now: clock.now()) }
        self.ledger = ledger
        let (catalog, problem) = Self.trustedCatalog(directory: directory, trust: trust, ledger: ledger)
        self.catalog = catalog
        catalogProblem = problem
        storeProblem = storefront.flatMap { Self.sync(ledger, with: $0, bundleID: trust.bundleID) }
        if problem == nil, let catalog {
            entitlements = try LedgerEntitlements(ledger: ledger, accepts: { Self.kindMatches($0, catalog) })
        } else {
            entitlements = nil
        }
    }

    /// The signed catalog, or the fallback and the reason it failed closed.
    private static func trustedCatalog(
        directory: String, trust: TrustAnchors,
        ledger: EntitlementLedger
    ) -> (Catalog?, CatalogError?) {
        let accepted = ledger.acceptedCatalog()
        let fallback = accepted.flatMap {
            try? SignedCatalog.verify(
                $0.jws, publisherKeys: trust.publisherKeys, path: "accepted catalog", libraryDirectory: directory)
        }
        let path = directory + "/" + SignedCatalog.fileName
        guard !trust.publisherKeys.isEmpty else {
            return (
                fallback,
                CatalogError(
                    path: path, field: nil, code: .badSignature,
                    detail: "the trust anchors name no publisher key: no catalog can be trusted")
            )
        }
        do {
            let (catalog, jws) = try SignedCatalog.load(libraryDirectory: directory, publisherKeys: trust.publisherKeys)
            if let accepted, let serial = catalog.serial, serial < accepted.serial {
                return (
                    fallback,
                    CatalogError(
                        path: path, field: "serial", code: .staleSerial,
                        detail: "\(serial) is lower than \(accepted.serial), which this device already accepted")
                )
            }
            if let serial = catalog.serial { try? ledger.recordAcceptedCatalog(serial: serial, jws: jws) }
            return (catalog, nil)
        } catch let error as CatalogError {
            return (fallback, error)
        } catch {
            return (fallback, CatalogError(path: path, field: nil, code: .cannotRead, detail: "\(error)"))
        }
    }

    /// Records the store's unfinished transactions and its current version of every one of
    /// the account's (in memory when read-only); nil, or why the store could not be asked.
    private static func sync(_ ledger: EntitlementLedger, with store: any Storefront, bundleID: String) -> String? {
        let account = ledger.account
        let current: [String], unfinished: [String]
        do {
            current = try store.transactions(account: account, bundleID: bundleID)
            unfinished = try store.unfinishedTransactions(account: account, bundleID: bundleID)
        } catch {
            return "the store did not answer (\(error)); the ledger alone decides"
        }
        // One by one: a token that does not verify is skipped, not allowed to block the rest.
        for jws in Array(Set(current + unfinished)) {
            if ledger.mode == .readOnly {
                try? ledger.overlay([jws])
            } else if (try? ledger.import(signed: [jws], source: "store transaction")) != nil, unfinished.contains(jws),
                let id = try? ledger.verifier.verifyTransaction(jws, source: "store").transactionId
            {
                try? store.finish(transactionID: id)
            }
        }
        return nil
    }

    /// A transaction buys a product only as the kind the catalog sells it: a region or a
    /// bundle is a non-consumable, a subscription an auto-renewable subscription.
    static func kindMatches(_ entitlement: Entitlement, _ catalog: Catalog) -> Bool {
        guard let product = catalog.product(id: entitlement.productID) else { return false }
        return entitlement.type == Self.storeType(of: product.kind)
    }

    /// The App Store product type of a catalog kind.
    public static func storeType(of kind: Catalog.Product.Kind) -> AppStoreProductType {
        kind == .subscription ? .autoRenewable : .nonConsumable
    }

    /// The catalog, or a one-line error naming the library when it has none it can use.
    public func requireCatalog() throws -> Catalog {
        if let catalogProblem { throw catalogProblem }
        guard let catalog else {
            throw CatalogError(
                path: directory + "/" + Catalog.fileName, field: nil, code: .notFound,
                detail: "no catalog in this library: nothing is for sale")
        }
        return catalog
    }

    /// The policy for the tile store: ``OpenAccess`` for an open library; for a store library
    /// the catalog's free zooms plus what the ledger's verified transactions entitle, or,
    /// failing closed, the free zooms of the last accepted catalog (else nothing above
    /// ``failClosedMaxZoom``). Every policy it returns shares one entitlement source, so a
    /// purchase, refund or expiry shows in all of them.
    public func accessPolicy() -> any AccessPolicy {
        guard kind == .store else { return OpenAccess() }
        let base: any AccessPolicy
        if catalogProblem == nil, let catalog, let entitlements {
            base = RegionAccessPolicy(
                catalog: catalog, entitlements: entitlements, storedMaxZooms: storedMaxZooms(catalog))
        } else if let catalog {
            base = RegionAccessPolicy(
                catalog: catalog, entitlements: FixedEntitlements(), storedMaxZooms: storedMaxZooms(catalog))
        } else {
            base = FreeZoomAccess(maxZoom: Self.failClosedMaxZoom)
        }
        guard !installedPacks.isEmpty else { return base }
        return packPolicy(base: base)
    }

    /// The highest zoom each available archive of `catalog` stores (the files the signed
    /// catalog hashed; an unavailable or unreadable one is left out, so no product reaches past
    /// its `maxzoom` there). Cost: opens each named archive (O(1) pages each).
    private func storedMaxZooms(_ catalog: Catalog) -> [String: Int] {
        var out: [String: Int] = [:]
        let available = Set(catalog.products.filter(\.isAvailable).flatMap(\.archives))
        for name in available {
            if let top = (try? MBTilesReader(path: directory + "/" + name))?.zoomRange?.upperBound { out[name] = top }
        }
        return out
    }

    /// The pack gates over `base`: trusted catalog and entitlements, or (failing closed)
    /// the fallback catalog's free zooms and `free` alone.
    private func packPolicy(base: any AccessPolicy) -> PackAccessPolicy {
        var gates: [String: PackAccessPolicy.Gate] = [:]
        for pack in installedPacks {
            for (i, _) in pack.reader.layers.enumerated() {
                guard let layer = pack.reader.layer(i) else { continue }
                gates[layer.accessName] = PackAccessPolicy.Gate(
                    packID: pack.manifest.packID, productID: pack.manifest.productID,
                    releasedAt: pack.manifest.releasedAt)
            }
        }
        return PackAccessPolicy(
            base: base, catalog: catalog, entitlements: catalogProblem == nil ? entitlements : nil, layers: gates)
    }

    /// Whether installed pack `packID` shows now: free, owned, or kept by a lapsed
    /// subscription (see ``PackAccessPolicy``). An open library shows every pack.
    public func isPackOpen(_ packID: String) -> Bool {
        guard kind == .store else { return true }
        return packPolicy(base: FreeZoomAccess(maxZoom: Self.failClosedMaxZoom)).isOpen(packID: packID)
    }

    /// The name the tile store and the access policy give an archive: its path's last component.
    static func archiveName(_ path: String) -> String { path.split(separator: "/").last.map(String.init) ?? path }

    /// One archive to draw: a master archive of the library or a layer of an installed pack.
    public struct DrawingLayer: Sendable {
        /// The name routes and messages use: `montblanc-color` for a master,
        /// `montblanc-color@<pack id>` for a pack's layer.
        public let name: String
        public let archive: any TileArchive
        /// The archive's credit (a pack's: its signed manifest's attribution and licence).
        public let attribution: String
    }

    /// Every archive to draw, the first at the bottom: the master archives
    /// (``archivePathsInDrawingOrder()``), then the installed packs (`free` first), each
    /// pack's layers in its order.
    /// - Throws: ``ArchiveError`` for a damaged master archive.
    public func drawingLayers() throws -> [DrawingLayer] {
        var layers: [DrawingLayer] = []
        for path in try archivePathsInDrawingOrder() {
            let reader = try MBTilesReader(path: path)
            var name = Self.archiveName(path)
            if name.hasSuffix(".mbtiles") { name.removeLast(".mbtiles".count) }
            let credit = reader.metadata[MBTilesMetadata.Key.attribution] ?? ""
            layers.append(
                DrawingLayer(name: name, archive: reader, attribution: credit.isEmpty ? reader.summary.name : credit))
        }
        for path in try pmtilesPaths() {
            let reader = try PMTilesReader(path: path)
            let file = Self.archiveName(path)
            var name = String(file.dropLast(".pmtiles".count))
            // Beside an MBTiles archive of the same name, the PMTiles one keeps its extension.
            if layers.contains(where: { $0.name == name }) { name = file }
            let credit = reader.metadata[MBTilesMetadata.Key.attribution] ?? ""
            layers.append(
                DrawingLayer(name: name, archive: reader, attribution: credit.isEmpty ? reader.summary.name : credit))
        }
        let packs = installedPacks.sorted {
            ($0.manifest.productID != nil ? 1 : 0, $0.manifest.packID) < (
                $1.manifest.productID != nil ? 1 : 0, $1.manifest.packID
            )
        }
        for pack in packs {
            let credit = [
                pack.manifest.attribution, pack.manifest.license.isEmpty ? "" : "licence: " + pack.manifest.license,
            ]
            .filter { !$0.isEmpty }.joined(separator: ", ")
            for (i, info) in pack.reader.layers.enumerated() {
                guard let layer = pack.reader.layer(i) else { continue }
                var base = info.archive
                if base.hasSuffix(".mbtiles") { base.removeLast(".mbtiles".count) }
                layers.append(
                    DrawingLayer(name: base + "@" + pack.manifest.packID, archive: layer, attribution: credit))
            }
        }
        return layers
    }

    /// The library's PMTiles archives (`*.pmtiles`, not the `*.terrain.pmtiles` elevation
    /// siblings), by name: drawn above the MBTiles masters in an open library.
    /// - Throws: ``ArchiveError`` in a store library that holds any: its masters are the MBTiles
    ///   files the signed catalog names and hashes, and the store gates their tiles; a PMTiles
    ///   file there would be an archive outside the catalog, so the library refuses to open
    ///   rather than show it ungated or drop it silently.
    public func pmtilesPaths() throws -> [String] {
        let paths = try PointQuery.archives(in: directory, suffix: ".pmtiles").filter {
            !$0.hasSuffix(".terrain.pmtiles")
        }
        if kind == .store, let first = paths.first {
            throw ArchiveError(
                path: first, code: .invalidArgument,
                detail:
                    "a store library's archives are MBTiles masters named by its signed catalog; serve PMTiles archives from an open library (no --trust)"
            )
        }
        return paths
    }

    /// The library's `.mbtiles` files in drawing order (the first at the bottom): the order in
    /// which the catalog's products name them when there is a catalog, then the rest by file
    /// name. What `render` and `serve` composite.
    public func archivePathsInDrawingOrder() throws -> [String] {
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

    /// The ledger, or the error saying this library has no store.
    public func requireLedger() throws -> EntitlementLedger {
        guard let ledger else {
            throw LedgerError(
                .invalidArgument, subject: "--trust",
                "this library has no trust anchors (an open library has no store): pass --trust FILE")
        }
        return ledger
    }

    private func requireStorefront() throws(LedgerError) -> any Storefront {
        guard let storefront else { throw LedgerError(.store, subject: "store", "no store to buy from") }
        return storefront
    }

    /// What the catalog sells, with whether this account owns each (directly or through a
    /// bundle or subscription).
    public func listings() throws -> [ProductListing] {
        let catalog = try requireCatalog()
        let owned = catalog.entitlementClosure(of: entitlements?.entitledProductIDs() ?? [])
        return catalog.products.map { p in
            ProductListing(
                id: p.id, kind: p.kind.rawValue, title: p.title, price: p.price.description, currency: p.currency,
                bounds: catalog.bounds(of: p.id), zoomRange: catalog.zoomRange(of: p.id),
                owned: owned.contains(p.id), available: p.isAvailable)
        }
    }

    /// What a purchase did.
    public enum PurchaseResult: Sendable, Equatable {
        case bought(Entitlement)
        /// Nothing charged: the account already owns the product (directly or through a
        /// bundle or subscription).
        case alreadyOwned(productID: String)
    }

    /// Buys `productID`: the store signs a transaction, the ledger records it, and only then is
    /// it finished at the store (a kill in between leaves it unfinished, and the next open
    /// delivers it). An owned non-consumable or active subscription is not bought again.
    /// - Throws: ``CatalogError`` for an unknown or unavailable product (naming it),
    ///   ``LedgerError`` when the store or the ledger fails.
    public func buy(_ productID: String) throws -> PurchaseResult {
        let catalog = try requireCatalog()
        guard let product = catalog.product(id: productID) else {
            throw CatalogError(
                path: directory + "/" + SignedCatalog.fileName, field: nil, code: .unknownProduct,
                detail: "no product \(ErrorText.quoted(productID)) in the catalog")
        }
        if case .unavailable(let reason) = product.availability {
            throw CatalogError(
                path: directory + "/" + SignedCatalog.fileName, field: nil, code: .unknownProduct,
                detail: "product \(ErrorText.quoted(productID)) is not available: \(reason)")
        }
        let ledger = try requireLedger()
        let store = try requireStorefront()
        guard let trust else { throw LedgerError(.invalidArgument, subject: "--trust", "no trust anchors") }
        if let entitlements {
            try entitlements.refresh()
            if catalog.entitlementClosure(of: entitlements.entitledProductIDs()).contains(productID) {
                return .alreadyOwned(productID: productID)
            }
        }
        let request = PurchaseRequest(
            productID: productID, type: Self.storeType(of: product.kind), bundleID: trust.bundleID,
            account: ledger.account, period: product.period)
        let outcome: PurchaseOutcome
        do { outcome = try store.purchase(request) } catch let error as any TilePackError { throw error } catch {
            throw LedgerError(.store, subject: "store", "the purchase failed: \(error)")
        }
        try ledger.import(signed: [outcome.jws], source: "store purchase")
        let verified = try LedgerTransaction(
            try ledger.verifier.verifyTransaction(outcome.jws, source: "store purchase"),
            jws: outcome.jws, source: "store purchase")
        // Recorded now, so finished whichever the answer: an owned product's transaction may be
        // one a killed `buy` left unfinished, and would otherwise be redelivered forever.
        try store.finish(transactionID: verified.transactionID)
        try entitlements?.refresh()
        if case .alreadyOwned = outcome { return .alreadyOwned(productID: productID) }
        return .bought(Entitlement(verified))
    }

    /// Refunds `transactionID` at the store and records the signed revocation.
    public func refund(_ transactionID: String) throws -> LedgerImportSummary {
        let ledger = try requireLedger()
        let revocation = try requireStorefront().refund(transactionID: transactionID, reason: 0)
        let summary = try ledger.import(signed: [revocation], source: "store refund")
        try requireStorefront().finish(transactionID: transactionID)
        try entitlements?.refresh()
        return summary
    }

    /// Re-imports every transaction of this account from the store (idempotent) and finishes
    /// what was unfinished.
    public func restore() throws -> LedgerImportSummary {
        let ledger = try requireLedger()
        let store = try requireStorefront()
        guard let trust else { throw LedgerError(.invalidArgument, subject: "--trust", "no trust anchors") }
        let signed = try store.transactions(account: ledger.account, bundleID: trust.bundleID)
        let unfinished = try store.unfinishedTransactions(account: ledger.account, bundleID: trust.bundleID)
        let summary =
            signed.isEmpty ? LedgerImportSummary() : try ledger.import(signed: signed, source: "store transaction")
        for jws in unfinished {
            if let id = try? ledger.verifier.verifyTransaction(jws, source: "store").transactionId {
                try store.finish(transactionID: id)
            }
        }
        try entitlements?.refresh()
        return summary
    }

    /// The signed transaction a device presents to download the pack of `productID`: one of
    /// this account's verified, unrevoked, unexpired transactions (of the kind the catalog
    /// sells) whose product's entitlement closure includes `productID` — the product itself, a
    /// bundle holding it, or a subscription including it. Non-expiring ones first, then the
    /// latest expiry. Nil when none (the server then answers 401 `missingTransaction`).
    /// - Cost: one ledger report (cached while the ledger is unchanged), a closure per entitlement.
    public func transactionForPack(productID: String) -> String? {
        guard let ledger, let catalog, catalogProblem == nil, let entitlements = try? ledger.entitlements() else {
            return nil
        }
        let candidates =
            entitlements
            .filter {
                Self.kindMatches($0, catalog) && catalog.entitlementClosure(of: [$0.productID]).contains(productID)
            }
            .sorted {
                ($0.expiresDate ?? .distantFuture, $0.transactionID) > (
                    $1.expiresDate ?? .distantFuture, $1.transactionID
                )
            }
        for entitlement in candidates {
            if let jws = try? ledger.signedTransaction(id: entitlement.transactionID) { return jws }
        }
        return nil
    }

    /// The ledger's report now: entitlements (those the catalog's kinds accept), rejected rows
    /// and why, clock rollback.
    package func report() throws -> LedgerReport {
        var report = try requireLedger().report()
        if let catalog, catalogProblem == nil {
            report.entitlements = report.entitlements.filter { Self.kindMatches($0, catalog) }
        } else {
            report.entitlements = []
        }
        return report
    }

    /// Problem lines a person should see: the catalog failing closed, the store offline,
    /// entitlements of the wrong kind, rejected ledger rows.
    public func problems() -> [String] {
        var lines: [String] = packProblems
        if let catalogProblem { lines.append("\(catalogProblem) (failing closed: only free zooms show)") }
        if let storeProblem { lines.append(storeProblem) }
        lines += entitlements?.refusedEntitlements ?? []
        return lines
    }
}

/// A store library with no catalog it can trust: zooms up to `maxZoom` show, nothing else.
public struct FreeZoomAccess: AccessPolicy {
    public let maxZoom: Int
    public init(maxZoom: Int) { self.maxZoom = maxZoom }
    public func access(_ tile: TileID) -> TileAccess { tile.z <= maxZoom ? .allowed : .denied(unlockedBy: []) }
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
        try c.encodeOrNull(
            bounds.map { [$0.west, $0.south, $0.east, $0.north].map(JSONOutput.number) }, forKey: .bounds)
        try c.encodeOrNull(zoomRange?.lowerBound, forKey: .minzoom)
        try c.encodeOrNull(zoomRange?.upperBound, forKey: .maxzoom)
        try c.encode(owned, forKey: .owned)
        try c.encode(available, forKey: .available)
    }
}
