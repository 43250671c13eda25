import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackArchive
@testable import TilePackEncoders
@testable import TilePackStore
@testable import TilePackRegions
@testable import TilePackTools
import TilePackTestSupport

/// The region store as `tilepack store …`, `query` and `serve` use it: ``RegionLibrary`` over
/// a small library (a publisher-signed catalog, real MBTiles archives of PNG tiles), the
/// device's ledger and the test App Store, the access policy it hands the tile store, and
/// everything a device owner might try against it.
@Suite(.tags(.concurrent)) struct RegionsLibraryTests {
    static let t0 = RegionsFixture.t0
    static let day = RegionsFixture.day
    static func ms(_ date: Date) -> Int64 { RegionsFixture.ms(date) }

    static let regionA = RegionsLibraryFixture.regionA
    static let regionB = RegionsLibraryFixture.regionB
    static let bundleID = RegionsLibraryFixture.bundleID
    static let subscriptionID = RegionsLibraryFixture.subscriptionID
    static let missingID = RegionsLibraryFixture.missingID
    static let pointA = RegionsLibraryFixture.pointA
    static let pointB = RegionsLibraryFixture.pointB
    static let freeMaxZoom = RegionsLibraryFixture.freeMaxZoom
    static func tile(_ lon: Double, _ lat: Double, _ z: Int) -> TileID { RegionsLibraryFixture.tile(lon, lat, z) }
    static func ring(_ lon: Double, _ lat: Double, _ r: Double = 0.02) -> String {
        RegionsLibraryFixture.ring(lon, lat, r)
    }
    static func region(_ id: String, price: String, lon: Double, lat: Double, archive: String) -> String {
        RegionsLibraryFixture.region(id, price: price, lon: lon, lat: lat, archive: archive)
    }
    static func png(_ r: UInt8, _ g: UInt8, _ b: UInt8) throws -> [UInt8] { try RegionsLibraryFixture.png(r, g, b) }
    static func writeArchive(_ path: String, lon: Double, lat: Double, r: Double = 0.03, colour: [UInt8]) throws {
        try RegionsLibraryFixture.writeArchive(path, lon: lon, lat: lat, r: r, colour: colour)
    }
    static func catalogJSON(
        serial: Int, freeMaxZoom: Int = RegionsLibraryTests.freeMaxZoom, extraProducts: [String] = []
    ) -> [UInt8] {
        RegionsLibraryFixture.catalogJSON(serial: serial, freeMaxZoom: freeMaxZoom, extraProducts: extraProducts)
    }
    typealias Library = RegionsLibraryFixture.Library

    static let zA = tile(pointA.lon, pointA.lat, 12), zB = tile(pointB.lon, pointB.lat, 12)

    /// Whether an owned region opens the tile: access is per pixel, and a region's small
    /// polygon lies inside its zoom-12 tile, so that tile is partial (the region's pixels).
    static func opens(_ access: TileAccess) -> Bool { access.isAllowed || access.mask?.isEmpty == false }

    static func offerIDs(_ access: TileAccess) -> [String]? {
        if case .denied(let offers) = access { return offers.map(\.id) }
        return nil
    }

    /// The entitlement of a purchase that charged.
    static func bought(_ result: RegionLibrary.PurchaseResult) throws -> Entitlement {
        guard case .bought(let entitlement) = result else {
            Issue.record("not bought: \(result)")
            throw CancellationError()
        }
        return entitlement
    }

    /// The answer for `point` at zoom 12 from the archive whose bounds contain it.
    static func answer(_ point: (lon: Double, lat: Double), _ store: TileStore) throws -> PointAnswer {
        let answers = try PointQuery.answer(TileQuery(lat: point.lat, lon: point.lon, zoom: 12), store: store)
        try #require(answers.count == 1)
        return answers[0]
    }

    static func waitForTheCheckInterval() { RegionsLibraryFixture.waitForTheCheckInterval() }

    /// The ledger row of `transactionID`, every column as text, in the ledger's column order.
    static func row(_ path: String, _ transactionID: String) throws -> [String?] {
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        let select = try db.prepare("SELECT \(EntitlementLedger.columns) FROM transactions WHERE transaction_id = ?")
        try select.bind(transactionID, at: 1)
        try #require(try select.step())
        return (0..<select.columnCount).map { select.string(at: $0) }
    }

    /// Writes `values` back into the row of `transactionID`, as someone editing the file.
    static func setRow(_ path: String, _ transactionID: String, _ values: [String?]) throws {
        let db = try SQLiteConnection(path: path, mode: .readWriteExisting)
        let names = EntitlementLedger.columns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let update = try db.prepare(
            "UPDATE transactions SET " + names.enumerated().map { "\($1) = ?\($0 + 1)" }.joined(separator: ", ")
                + " WHERE transaction_id = ?\(names.count + 1)")
        for (i, value) in values.enumerated() { try update.bind(value, at: Int32(i + 1)) }
        try update.bind(transactionID, at: Int32(names.count + 1))
        try update.run()
    }

    // MARK: - (a) Before any purchase

    @Test func beforeAnyPurchaseSoldZoomsAreLockedFreeZoomsOpenAndNothingIsCreated() throws {
        let lib = try Library()
        let library = try lib.open(readOnly: true)
        #expect(library.kind == .store && library.catalogProblem == nil && library.storeProblem == nil)
        #expect(library.catalog?.serial == 2 && library.problems().isEmpty)
        let policy = library.accessPolicy()
        #expect(policy is RegionAccessPolicy)
        // Cheapest first: the subscription (0.99), B alone does not cover A, then A (2.99), the bundle (3.99).
        #expect(Self.offerIDs(policy.access(Self.zA)) == [Self.subscriptionID, Self.regionA, Self.bundleID])
        #expect(Self.offerIDs(policy.access(Self.zB)) == [Self.subscriptionID, Self.regionB, Self.bundleID])
        // Free zooms everywhere, sold or not; a sold zoom outside every area: denied, nothing offered.
        for z in 0...Self.freeMaxZoom {
            #expect(policy.access(Self.tile(Self.pointA.lon, Self.pointA.lat, z)) == .allowed)
            #expect(policy.access(Self.tile(-70, -30, z)) == .allowed)
        }
        #expect(policy.access(Self.tile(-70, -30, 12)) == .denied(unlockedBy: []))
        // Zoom 13 is past the top zoom sold (12): the map draws zoom 12 scaled up there, so
        // the products selling zoom 12 of A's archive unlock it.
        #expect(
            Self.offerIDs(policy.access(Self.tile(Self.pointA.lon, Self.pointA.lat, 13))) == [
                Self.subscriptionID, Self.regionA, Self.bundleID,
            ])
        // The unavailable product is never offered.
        #expect(Self.offerIDs(policy.access(Self.tile(7.5, 46.5, 12))) == [])
        #expect(try library.listings().allSatisfy { !$0.owned })
        #expect(try library.listings().first { $0.id == Self.missingID }?.available == false)
        // A read-only open of a ledger that does not exist created none.
        #expect(
            !fileExists(lib.ledgerPath) && !fileExists(lib.ledgerPath + "-wal") && lib.dir.listing().contains("device"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: lib.dir.file("device")).isEmpty)
    }

    // MARK: - (b) Buy a region

    @Test func buyingARegionUnlocksItsTilesInTheStoreAndOnlyThem() throws {
        let lib = try Library()
        let library = try lib.open()
        let bought = try Self.bought(library.buy(Self.regionA))
        #expect(bought.productID == Self.regionA && bought.type == .nonConsumable && bought.expiresDate == nil)
        #expect(bought.purchaseDate == Self.t0)
        // Recorded, then finished at the store: nothing is redelivered.
        #expect(try lib.unfinished().isEmpty)
        #expect(try lib.shop.storeCount() == 1)

        let policy = library.accessPolicy()
        #expect(Self.opens(policy.access(Self.zA)))
        #expect(Self.offerIDs(policy.access(Self.zB)) == [Self.subscriptionID, Self.regionB, Self.bundleID])

        let store = try library.openTileStore(budget: PointQuery.defaultBudget).store
        #expect(try store.pixels(Self.zA, archive: 0) != nil)
        #expect(throws: TileStoreError.self) { _ = try store.pixels(Self.zB, archive: 1) }
        do { _ = try store.tile(Self.zB, archive: 1); Issue.record("B's tile was served") } catch let error
            as TileStoreError
        {
            #expect(error.code == .locked)
            #expect(error.offers.map(\.id) == [Self.subscriptionID, Self.regionB, Self.bundleID])
        }
        // A free zoom of B is served.
        #expect(try store.pixels(Self.tile(Self.pointB.lon, Self.pointB.lat, Self.freeMaxZoom), archive: 1) != nil)

        let a = try Self.answer(Self.pointA, store)
        #expect(!a.locked && a.present && a.rgba == [200, 10, 10, 255] && a.unlock.isEmpty)
        let b = try Self.answer(Self.pointB, store)
        #expect(b.locked && !b.present && b.rgba == nil)
        #expect(b.unlock.map(\.id) == [Self.subscriptionID, Self.regionB, Self.bundleID])
        #expect(b.unlock.map(\.price) == ["0.99", "1.99", "3.99"])
        #expect(b.text.contains("locked:    buy Updates (0.99 EUR)"))

        #expect(Set(try library.listings().filter(\.owned).map(\.id)) == [Self.regionA])
    }

    // MARK: - (c) Bundle

    /// The one way a library becomes a tile store: its layers in the store's order, every tile
    /// asked of the library's policy (a tile locked before a purchase opens after it, in the
    /// same store), and a damaged master archive named rather than left out.
    @Test func openTileStoreGatesEveryLayerAndNamesADamagedArchive() throws {
        let lib = try Library()
        let library = try lib.open()
        let opened = try library.openTileStore(budget: PointQuery.defaultBudget)
        #expect(opened.layers.map(\.name) == ["a", "b"])
        #expect(opened.store.archivePaths == opened.layers.map(\.archive.path))
        #expect(try Self.answer(Self.pointA, opened.store).locked)
        _ = try Self.bought(library.buy(Self.regionA))
        #expect(try Self.answer(Self.pointA, opened.store).rgba == [200, 10, 10, 255])
        #expect(try Self.answer(Self.pointB, opened.store).locked)

        writeFile(lib.libraryPath + "/b.mbtiles", Array("not an archive".utf8))
        #expect {
            try library.openTileStore(budget: PointQuery.defaultBudget)
        } throws: { error in
            error is ArchiveError && "\(error)".hasPrefix(lib.libraryPath + "/b.mbtiles: ")
        }
    }

    @Test func aBundleUnlocksBothRegions() throws {
        let lib = try Library()
        let library = try lib.open()
        _ = try Self.bought(library.buy(Self.bundleID))
        let policy = library.accessPolicy()
        #expect(Self.opens(policy.access(Self.zA)) && Self.opens(policy.access(Self.zB)))
        let store = try library.openTileStore(budget: PointQuery.defaultBudget).store
        #expect(try Self.answer(Self.pointA, store).rgba == [200, 10, 10, 255])
        #expect(try Self.answer(Self.pointB, store).rgba == [10, 10, 200, 255])
        #expect(Set(try library.listings().filter(\.owned).map(\.id)) == [Self.regionA, Self.regionB, Self.bundleID])
    }

    // MARK: - (d) Subscription

    @Test func aSubscriptionLastsItsPeriod() throws {
        let lib = try Library()
        let bought = try Self.bought(lib.open().buy(Self.subscriptionID))
        // P1M from 2024-01-01: 31 days.
        #expect(bought.type == .autoRenewable && bought.expiresDate == Self.t0 + 31 * Self.day)

        lib.clock.set(Self.t0 + Self.day)
        let dayLater = try lib.open().accessPolicy()
        #expect(Self.opens(dayLater.access(Self.zA)) && Self.opens(dayLater.access(Self.zB)))
        lib.clock.set(Self.t0 + 40 * Self.day)
        let later = try lib.open()
        #expect(try later.report().entitlements.isEmpty)
        #expect(
            Self.offerIDs(later.accessPolicy().access(Self.zA)) == [Self.subscriptionID, Self.regionA, Self.bundleID])
        // Expired, it can be bought again (a renewal).
        let renewal = try Self.bought(later.buy(Self.subscriptionID))
        #expect(renewal.transactionID != bought.transactionID && Self.opens(later.accessPolicy().access(Self.zA)))
    }

    @Test func ledgerEntitlementsChangeGenerationWhenTheSubscriptionExpires() throws {
        let lib = try Library()
        let library = try lib.open()
        _ = try Self.bought(library.buy(Self.regionB))
        _ = try Self.bought(library.buy(Self.subscriptionID))
        let source = try #require(library.entitlements)
        let policy = library.accessPolicy()
        #expect(source.entitledProductIDs() == [Self.subscriptionID, Self.regionB])
        #expect(Self.opens(policy.access(Self.zA)))
        let g0 = source.generation
        lib.clock.set(Self.t0 + 30 * Self.day)
        Self.waitForTheCheckInterval()
        #expect(source.generation == g0, "no change before the expiry")
        #expect(Self.opens(policy.access(Self.zA)))
        lib.clock.set(Self.t0 + 31 * Self.day)  // the expiry itself: expired
        Self.waitForTheCheckInterval()
        let g1 = source.generation
        #expect(g1 != g0)
        #expect(source.entitledProductIDs() == [Self.regionB])
        #expect(Self.offerIDs(policy.access(Self.zA)) == [Self.subscriptionID, Self.regionA, Self.bundleID])
        #expect(Self.opens(policy.access(Self.zB)))
        // Nothing else expires: the generation stays.
        lib.clock.set(Self.t0 + 400 * Self.day)
        Self.waitForTheCheckInterval()
        #expect(source.generation == g1)
    }

    // MARK: - (e) Refund

    @Test func aRefundLocksTheRegionAgain() throws {
        let lib = try Library()
        let library = try lib.open()
        let bought = try Self.bought(library.buy(Self.regionA))
        #expect(Self.opens(library.accessPolicy().access(Self.zA)))
        #expect(try library.refund(bought.transactionID) == LedgerImportSummary(replaced: 1))
        let policy = library.accessPolicy()
        #expect(Self.offerIDs(policy.access(Self.zA)) == [Self.subscriptionID, Self.regionA, Self.bundleID])
        let store = try library.openTileStore(budget: PointQuery.defaultBudget).store
        #expect(try Self.answer(Self.pointA, store).locked)
        #expect(try library.report().entitlements.isEmpty)
        // The refund was delivered and finished; refunding again changes nothing.
        #expect(try lib.unfinished().isEmpty)
        #expect(try library.refund(bought.transactionID) == LedgerImportSummary(unchanged: 1))
    }

    /// A tile store opened once (as an app's map view) follows purchases, refunds and
    /// restores made through the same library at once, and another process's within the
    /// ledger's check interval.
    @Test func aPolicyHeldByAnOpenStoreFollowsBuyRefundAndRestore() throws {
        let lib = try Library()
        let library = try lib.open()
        let policy = library.accessPolicy()
        let store = try library.openTileStore(budget: PointQuery.defaultBudget).store
        #expect(try Self.answer(Self.pointA, store).locked)

        let bought = try Self.bought(library.buy(Self.regionA))
        #expect(Self.opens(policy.access(Self.zA)))
        #expect(try Self.answer(Self.pointA, store).rgba == [200, 10, 10, 255])
        #expect(try Self.answer(Self.pointB, store).locked)

        _ = try library.refund(bought.transactionID)
        #expect(try Self.answer(Self.pointA, store).locked)

        _ = try library.buy(Self.bundleID)
        #expect(try !Self.answer(Self.pointA, store).locked && !Self.answer(Self.pointB, store).locked)

        // A purchase by another library (another process on the same ledger).
        _ = try lib.open().buy(Self.subscriptionID)
        Self.waitForTheCheckInterval()
        _ = policy.access(Self.zA)
        #expect(library.entitlements?.entitledProductIDs() == [Self.bundleID, Self.subscriptionID])

        // A new device's policy, held while it is offline, follows another process's sync.
        let newLedger = lib.dir.file("device/new.sqlite")
        let device = try lib.open(ledger: newLedger, online: false)
        let held = device.accessPolicy()
        #expect(!held.access(Self.zB).isAllowed && device.storeProblem == nil)
        let online = try lib.open(ledger: newLedger)
        #expect(Set(try online.report().entitlements.map(\.productID)) == [Self.bundleID, Self.subscriptionID])
        Self.waitForTheCheckInterval()
        #expect(Self.opens(held.access(Self.zB)))
    }

    /// `serve` holds a read-only library; `store refund` is another process on the same
    /// ledger. The refund shows in the running policy within the check interval, even for a
    /// tile whose answer was cached.
    @Test func aRefundByAnotherProcessShowsWithinTheCheckInterval() throws {
        let lib = try Library()
        let bought = try Self.bought(lib.open().buy(Self.regionA))
        let server = try lib.open(readOnly: true)
        let policy = server.accessPolicy()
        #expect(Self.opens(policy.access(Self.zA)))
        let tileStore = try server.openTileStore(budget: PointQuery.defaultBudget).store
        #expect(try tileStore.pixels(Self.zA, archive: 0) != nil)

        _ = try lib.open().refund(bought.transactionID)
        Self.waitForTheCheckInterval()
        #expect(Self.offerIDs(policy.access(Self.zA)) == [Self.subscriptionID, Self.regionA, Self.bundleID])
        #expect(throws: TileStoreError.self) { _ = try tileStore.pixels(Self.zA, archive: 0) }
        #expect(try server.report().entitlements.isEmpty)

        // A purchase by another process shows the same way.
        _ = try lib.open().buy(Self.regionB)
        Self.waitForTheCheckInterval()
        #expect(Self.opens(policy.access(Self.zB)))
    }

    /// The signed purchase put back into the ledger row after a refund (a valid App Store
    /// signature, columns to match) grants nothing once the library has synced with the
    /// store, whether it can write the ledger or not.
    @Test func thePreRefundBlobPutBackGrantsNothingOnceTheLibrarySyncs() throws {
        let lib = try Library()
        let library = try lib.open()
        let bought = try Self.bought(library.buy(Self.regionA))
        let id = bought.transactionID
        let purchase = try Self.row(lib.ledgerPath, id)
        _ = try library.refund(id)
        let refund = try Self.row(lib.ledgerPath, id)
        #expect(refund[7] != nil && refund[9] != purchase[9])
        try Self.setRow(lib.ledgerPath, id, purchase)
        #expect(try Self.row(lib.ledgerPath, id) == purchase)

        // Offline, a fresh process has only the file: the old copy counts. This is why every
        // open asks the store.
        let offline = try lib.open(online: false, readOnly: true)
        #expect(Self.opens(offline.accessPolicy().access(Self.zA)))

        // Read-only with the store: the revocation is held in memory, the file is not written.
        let reader = try lib.open(readOnly: true)
        #expect(!reader.accessPolicy().access(Self.zA).isAllowed)
        #expect(try reader.report().entitlements.isEmpty)
        #expect(try Self.row(lib.ledgerPath, id) == purchase)

        // Read-write with the store: the revocation replaces the row.
        let writer = try lib.open()
        #expect(!writer.accessPolicy().access(Self.zA).isAllowed)
        #expect(try Self.row(lib.ledgerPath, id) == refund)

        // The processes that saw the revocation keep it: putting the purchase back again
        // under them changes nothing.
        try Self.setRow(lib.ledgerPath, id, purchase)
        Self.waitForTheCheckInterval()
        #expect(!writer.accessPolicy().access(Self.zA).isAllowed)
        #expect(!reader.accessPolicy().access(Self.zA).isAllowed)
        #expect(!library.accessPolicy().access(Self.zA).isAllowed)
        #expect(try writer.report().entitlements.isEmpty && library.report().entitlements.isEmpty)
    }

    // MARK: - (f) Restore and delivery

    @Test func restoreOnAFreshLedgerGetsThePurchasesBackIdempotently() throws {
        let lib = try Library()
        // A second device of the same account, opened before anything was bought.
        let fresh = lib.dir.file("device/fresh.sqlite")
        let device = try lib.open(ledger: fresh)
        #expect(try device.report().entitlements.isEmpty)

        let library = try lib.open()
        _ = try library.buy(Self.regionA)
        let refunded = try Self.bought(library.buy(Self.regionB))
        _ = try library.refund(refunded.transactionID)
        _ = try library.buy(Self.subscriptionID)
        let before = try library.report().entitlements
        #expect(Set(before.map(\.productID)) == [Self.regionA, Self.subscriptionID])

        #expect(try device.restore() == LedgerImportSummary(inserted: 3))
        #expect(try device.report().entitlements == before)
        #expect(try device.restore() == LedgerImportSummary(unchanged: 3))
        #expect(try device.report().entitlements == before)
        let policy = device.accessPolicy()
        #expect(Self.opens(policy.access(Self.zA)) && Self.opens(policy.access(Self.zB)))

        // A third device opening now receives everything at its open (as an app at launch).
        let third = try lib.open(ledger: lib.dir.file("device/third.sqlite"))
        #expect(try third.report().entitlements == before)
        // Offline, a device has nothing to restore from.
        let offline = try lib.open(ledger: lib.dir.file("device/offline.sqlite"), online: false)
        #expect(try offline.report().entitlements.isEmpty)
        #expect(thrown(LedgerError.self) { try offline.restore() }?.code == .store)

        // A fresh ledger of another account restores nothing.
        let stranger = try lib.open(ledger: lib.dir.file("device/other.sqlite"), account: RegionsFixture.otherAccount)
        #expect(try stranger.restore() == LedgerImportSummary())
        #expect(try stranger.report().entitlements.isEmpty)
    }

    /// A `buy` killed after the store charged: the purchase is unfinished at the store, and
    /// the next open delivers it and finishes it. A read-only open counts it without
    /// finishing it (it recorded nothing).
    @Test func aPurchaseNeverRecordedIsDeliveredByTheNextOpen() throws {
        let lib = try Library()
        let first = try lib.open()
        let charged = try lib.shop.sell(Self.regionA)
        #expect(try lib.unfinished() == [charged])
        #expect(try first.report().entitlements.isEmpty)

        let reader = try lib.open(readOnly: true)
        #expect(Self.opens(reader.accessPolicy().access(Self.zA)))
        #expect(try lib.unfinished() == [charged])

        let next = try lib.open()
        #expect(try next.report().entitlements.map(\.productID) == [Self.regionA])
        #expect(Self.opens(next.accessPolicy().access(Self.zA)))
        #expect(try lib.unfinished().isEmpty)
        // The library opened before sees the other process's import.
        Self.waitForTheCheckInterval()
        #expect(Self.opens(first.accessPolicy().access(Self.zA)))
        #expect(try lib.shop.storeCount() == 1)
    }

    @Test func buyingWhatIsOwnedChargesNothing() throws {
        let lib = try Library()
        let library = try lib.open()
        let bought = try Self.bought(library.buy(Self.regionA))
        #expect(try library.buy(Self.regionA) == .alreadyOwned(productID: Self.regionA))
        #expect(try lib.shop.storeCount() == 1)
        // Owned through a bundle; an active subscription.
        _ = try library.buy(Self.bundleID)
        #expect(try library.buy(Self.regionB) == .alreadyOwned(productID: Self.regionB))
        _ = try library.buy(Self.subscriptionID)
        #expect(try library.buy(Self.subscriptionID) == .alreadyOwned(productID: Self.subscriptionID))
        #expect(try lib.shop.storeCount() == 3)
        #expect(try library.report().entitlements.map(\.transactionID).contains(bought.transactionID))

        // Charged at the store after this device's open (a buy of the same account elsewhere,
        // killed before recording it): the store answers with the owning transaction, which is
        // recorded and finished; nothing is charged again.
        let device = try lib.open(ledger: lib.dir.file("device/late.sqlite"), account: RegionsFixture.otherAccount)
        let charged = try lib.shop.sell(Self.regionB, account: RegionsFixture.otherAccount)
        #expect(try device.buy(Self.regionB) == .alreadyOwned(productID: Self.regionB))
        #expect(try lib.shop.storeCount(account: RegionsFixture.otherAccount) == 1)
        #expect(try device.report().entitlements.map(\.transactionID) == [lib.shop.transactionID(charged)])
        #expect(try lib.unfinished(account: RegionsFixture.otherAccount).isEmpty)
    }

    /// A catalog elsewhere sold the subscription's product id as a non-consumable: the App
    /// Store signed that type, and this catalog sells the id as a subscription, so the
    /// transaction buys nothing here.
    @Test func aTransactionOfAnotherKindThanTheCatalogsEntitlesNothing() throws {
        let lib = try Library()
        _ = try lib.shop.sell(Self.subscriptionID, type: .nonConsumable)
        let library = try lib.open()
        // Verified and recorded, but of the wrong kind.
        #expect(try library.requireLedger().report().entitlements.map(\.productID) == [Self.subscriptionID])
        #expect(try library.report().entitlements.isEmpty)
        #expect(library.entitlements?.entitledProductIDs() == [])
        #expect(!library.accessPolicy().access(Self.zA).isAllowed)
        #expect(try library.listings().allSatisfy { !$0.owned })
        #expect(library.problems().contains { $0.contains("does not buy \(Self.subscriptionID)") })
        // Buying it as this catalog sells it: the store fixed the product's type at its first sale.
        #expect(thrown(LedgerError.self) { try library.buy(Self.subscriptionID) }?.code == .invalidArgument)
        #expect(try lib.shop.storeCount() == 1)
    }

    // MARK: - Read-only opens

    @Test func readOnlyLibrariesRecordNothing() throws {
        let lib = try Library()
        let writer = try lib.open()
        _ = try writer.buy(Self.regionA)
        let charged = try lib.shop.sell(Self.regionB)
        let before = try RegionsLedgerTests.dump(lib.ledgerPath)
        let reader = try lib.open(readOnly: true)
        #expect(Set(try reader.report().entitlements.map(\.productID)) == [Self.regionA, Self.regionB])
        #expect(throws: LedgerError.self) { try reader.requireLedger().import(signed: [charged]) }
        #expect(try RegionsLedgerTests.dump(lib.ledgerPath) == before)
        #expect(try lib.unfinished() == [charged])
        // A read-only open raises the time the device has seen when it can, and writes nothing else.
        lib.clock.set(Self.t0 + 3 * Self.day)
        _ = try lib.open(readOnly: true)
        let after = try RegionsLedgerTests.dump(lib.ledgerPath)
        #expect(after.filter { $0[1] != "observed_ms" } == before.filter { $0[1] != "observed_ms" })
        #expect(after.first { $0[1] == "observed_ms" }?[2] == String(Self.ms(Self.t0 + 3 * Self.day)))
    }

    // MARK: - Ledgers of an earlier tilepack

    @Test func anEarlierLedgerIsRefusedAndRestoreBringsItsPurchasesBack() throws {
        let legacyAccount = "acct-legacy-7"
        let (a, b, s) = ("1000000000000011", "1000000000000012", "1000000000000013")
        let bought = Self.ms(Self.t0 - 10 * Self.day)
        let lib = try Library(prepareStore: { dir in
            try LegacyRecords.writeSimulatorStore(
                directory: dir,
                [
                    .init(
                        transactionId: a, originalTransactionId: a, productId: Self.regionA, purchaseDate: bought,
                        appAccountToken: legacyAccount, type: "Non-Consumable", signedDate: bought),
                    .init(
                        transactionId: b, originalTransactionId: b, productId: Self.regionB, purchaseDate: bought,
                        appAccountToken: legacyAccount, type: "Non-Consumable", signedDate: bought + 5,
                        revocationDate: bought + 5, revocationReason: 0),
                    .init(
                        transactionId: s, originalTransactionId: s, productId: Self.subscriptionID,
                        purchaseDate: bought,
                        expiresDate: Self.ms(Self.t0 + 21 * Self.day), appAccountToken: legacyAccount,
                        type: "Auto-Renewable Subscription", signedDate: bought),
                ])
        })
        try LegacyRecords.writeLedger(path: lib.ledgerPath, account: legacyAccount)
        for readOnly in [false, true] {
            let refused = thrown(LedgerError.self) { try lib.open(account: nil, readOnly: readOnly) }
            #expect(
                refused?.code == .legacyLedger && refused?.description.contains("run tilepack store restore") == true)
        }
        // `store restore`: the ledger is emptied (keeping its account), the store re-issues its
        // earlier records in the App Store format, and they are imported.
        let upgraded = try lib.open(account: nil, upgrading: true)
        #expect(try upgraded.requireLedger().account == legacyAccount)
        let summary = try upgraded.restore()
        #expect(summary.inserted + summary.unchanged == 3 && summary.replaced == 0)
        let entitled = try upgraded.report().entitlements
        #expect(
            entitled.map(\.transactionID) == [a, s] && entitled.map(\.productID) == [Self.regionA, Self.subscriptionID])
        #expect(entitled.allSatisfy { $0.purchaseDate.appStoreMilliseconds == bought })
        #expect(entitled.last?.expiresDate == Self.t0 + 21 * Self.day)
        #expect(try upgraded.report().rejected.isEmpty && Self.opens(upgraded.accessPolicy().access(Self.zB)))
        // The store's records are now App Store transactions of this app (the refund kept).
        let reissued = try lib.store.transactions(account: legacyAccount, bundleID: RegionsFixture.bundleID)
        let payloads = try reissued.map { try lib.shop.verifier.verifyTransaction($0, source: "store") }
        #expect(payloads.map(\.transactionId) == [a, b, s])
        #expect(payloads.allSatisfy { $0.environment == .sandbox && $0.bundleId == RegionsFixture.bundleID })
        #expect(payloads[1].revocationDate?.appStoreMilliseconds == bought + 5)
        // And the ledger opens normally from now on, read-only too.
        #expect(try lib.open(account: nil, readOnly: true).report().entitlements == entitled)
    }

    // MARK: - (g) Bad products

    @Test func buyingAnUnknownOrUnavailableProductNamesIt() throws {
        let lib = try Library()
        let library = try lib.open()
        for (id, kind, words) in [
            ("t.nope", CatalogError.Code.unknownProduct, "no product"),
            (Self.missingID, .unknownProduct, "not available"),
        ] {
            do {
                _ = try library.buy(id)
                Issue.record("bought \(id)")
            } catch let error as CatalogError {
                #expect(error.code == kind)
                #expect(error.description.contains("\"\(id)\""))
                #expect(error.description.contains(words))
                #expect(!error.description.contains("\n"))
            }
        }
        #expect(library.catalog?.product(id: Self.missingID)?.isAvailable == false)
        // A refused purchase charged nothing.
        #expect(try lib.shop.storeCount() == 0)
    }

    // MARK: - Trust: the catalog fails closed, an open library is open

    /// Every way the catalog can be missing or untrusted leaves only what is free in the last
    /// catalog this device accepted (zooms ≤ 8 here) — owned regions included — or, before
    /// any was accepted, nothing above zoom 0.
    @Test func aStoreLibraryWithoutATrustedCatalogFailsClosed() throws {
        let lib = try Library()
        let jwsPath = lib.libraryPath + "/" + SignedCatalog.fileName
        let signed = readFile(jwsPath)
        // Never accepted one: nothing above zoom 0.
        unlink(jwsPath)
        let never = try lib.open(ledger: lib.dir.file("device/never.sqlite"))
        #expect(never.catalogProblem?.code == .notFound && never.entitlements == nil)
        let closed = try #require(never.accessPolicy() as? FreeZoomAccess)
        #expect(closed.maxZoom == RegionLibrary.failClosedMaxZoom)
        #expect(closed.access(TileID(z: 0, x: 0, y: 0)!) == .allowed)
        #expect(!closed.access(Self.tile(Self.pointA.lon, Self.pointA.lat, 1)).isAllowed)
        #expect(!closed.access(Self.tile(Self.pointA.lon, Self.pointA.lat, Self.freeMaxZoom)).isAllowed)
        #expect(never.problems().first?.contains("failing closed") == true)
        #expect(throws: CatalogError.self) { try never.buy(Self.regionA) }
        #expect(throws: CatalogError.self) { try never.listings() }

        // Accept the signed catalog, own region A.
        writeFile(jwsPath, signed)
        _ = try lib.open().buy(Self.regionA)
        #expect(Self.opens(try lib.open().accessPolicy().access(Self.zA)))

        let other = JWK.newPrivateKey()
        let cases: [(String, CatalogError.Code?, () throws -> Void)] = [
            ("missing", .notFound, { unlink(jwsPath) }),
            (
                "edited", .badSignature,
                {
                    var parts = String(decoding: signed, as: UTF8.self).split(separator: ".").map(String.init)
                    var payload = try Base64URL.decode(parts[1])
                    let text = String(decoding: payload, as: UTF8.self)
                        .replacingOccurrences(of: "\"free_max_zoom\":8", with: "\"free_max_zoom\":24")
                        .replacingOccurrences(of: "\"free_max_zoom\": 8", with: "\"free_max_zoom\": 24")
                    #expect(text != String(decoding: payload, as: UTF8.self))
                    payload = Array(text.utf8)
                    parts[1] = Base64URL.encode(payload)
                    writeFile(jwsPath, Array(parts.joined(separator: ".").utf8))
                }
            ),
            (
                "unsigned only, free_max_zoom 24", .notFound,
                {
                    unlink(jwsPath)
                    writeFile(lib.libraryPath + "/catalog.json", Self.catalogJSON(serial: 9, freeMaxZoom: 24))
                }
            ),
            ("signed by another key", .badSignature, { try lib.sign(serial: 9, freeMaxZoom: 24, key: other) }),
            ("an older serial", .staleSerial, { try lib.sign(serial: 1, freeMaxZoom: 24) }),
            (
                "a symlink loop", .cannotRead,
                {
                    unlink(jwsPath); symlink(jwsPath, jwsPath)
                }
            ),
            (
                "a directory", .notRegularFile,
                {
                    unlink(jwsPath); mkdir(jwsPath, 0o755)
                }
            ),
        ]
        for (name, kind, damage) in cases {
            try damage()
            let library = try lib.open()
            #expect(library.catalogProblem != nil, "\(name)")
            if let kind {
                #expect(library.catalogProblem?.code == kind, "\(name): \(String(describing: library.catalogProblem))")
            }
            #expect(library.catalog?.freeMaxZoom == Self.freeMaxZoom && library.entitlements == nil, "\(name)")
            let policy = library.accessPolicy()
            #expect(policy.access(Self.tile(Self.pointA.lon, Self.pointA.lat, Self.freeMaxZoom)) == .allowed, "\(name)")
            #expect(!policy.access(Self.zA).isAllowed, "\(name): an owned region shows")
            #expect(!policy.access(Self.zB).isAllowed && !policy.access(Self.tile(-70, -30, 12)).isAllowed, "\(name)")
            #expect(try library.report().entitlements.isEmpty, "\(name)")
            #expect(library.problems().first?.contains("failing closed") == true, "\(name)")
            // Put the good catalog back.
            rmdir(jwsPath); unlink(jwsPath)
            writeFile(jwsPath, signed)
            writeFile(lib.libraryPath + "/catalog.json", Self.catalogJSON(serial: 2))
            #expect(Self.opens(try lib.open().accessPolicy().access(Self.zA)), "after \(name)")
        }

        // Trust anchors that name no publisher key trust no catalog.
        var keyless = lib.trust
        keyless.publisherKeys = []
        let noKeys = try lib.open(trust: keyless)
        #expect(noKeys.catalogProblem?.code == .badSignature && !noKeys.accessPolicy().access(Self.zA).isAllowed)
        // A newer edition is accepted, and from then on the older one is stale.
        try lib.sign(serial: 3)
        #expect(try lib.open().catalogProblem == nil)
        writeFile(jwsPath, signed)
        #expect(try lib.open().catalogProblem?.code == .staleSerial)
    }

    /// An entitlement covers the archive the publisher hashed, not another file renamed to it.
    @Test func anArchiveSwappedUnderTheSignedCatalogOpensNothing() throws {
        let lib = try Library()
        _ = try lib.open().buy(Self.bundleID)
        #expect(Self.opens(try lib.open().accessPolicy().access(Self.zA)))
        try FileManager.default.removeItem(atPath: lib.libraryPath + "/a.mbtiles")
        try FileManager.default.copyItem(atPath: lib.libraryPath + "/b.mbtiles", toPath: lib.libraryPath + "/a.mbtiles")
        let library = try lib.open()
        #expect(library.catalogProblem == nil && library.catalog?.product(id: Self.regionA)?.isAvailable == false)
        #expect(!library.accessPolicy().access(Self.zA).isAllowed)
        #expect(Self.opens(library.accessPolicy().access(Self.zB)))
    }

    @Test func aLibraryWithoutTrustAnchorsIsOpen() throws {
        let lib = try Library()
        let library = try RegionLibrary(directory: lib.libraryPath, trust: nil, ledgerPath: lib.ledgerPath)
        #expect(library.kind == .open && library.ledger == nil && library.entitlements == nil)
        #expect(library.accessPolicy() is OpenAccess)
        #expect(Self.opens(library.accessPolicy().access(Self.zA)))
        #expect(thrown(LedgerError.self) { try library.requireLedger() }?.code == .invalidArgument)
        #expect(!fileExists(lib.ledgerPath))
        // Its catalog.json is read (for listings), unsigned: it decides nothing.
        #expect(library.catalog?.serial == 2)
        // An open library's bad catalog.json is an error, not a silent open.
        writeFile(lib.libraryPath + "/catalog.json", Array("{".utf8))
        #expect(throws: CatalogError.self) { try RegionLibrary(directory: lib.libraryPath, trust: nil) }
    }

    // MARK: - (h) Concurrency

    @Test func eightThreadsBuyingThroughSeparateLibrariesLoseAndDuplicateNothing() throws {
        let ids = (0..<8).map { "t.r\($0)" }
        let lib = try Library(
            extraProducts: ids.enumerated().map { i, id in
                Self.region(id, price: "1.\(i)0", lon: 6.0 + Double(i) * 0.1, lat: 45.0, archive: "a.mbtiles")
            })
        let failures = ThreadFailures()
        let done = DispatchGroup()
        let (libraryPath, ledgerPath, storePath, trust, clock) = (
            lib.libraryPath, lib.ledgerPath, lib.shop.storeDirectory, lib.trust, lib.clock
        )
        // No ledger exists yet: the threads race to create it; each has its own store connection.
        for id in ids {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                do {
                    let store = try TestAppStore(directory: storePath, clock: clock)
                    let library = try RegionLibrary(
                        directory: libraryPath, trust: trust, ledgerPath: ledgerPath,
                        account: RegionsFixture.account, storefront: store, clock: clock)
                    _ = try Self.bought(library.buy(id))
                } catch {
                    failures.add("\(id): \(error)")
                }
            }
            thread.start()
        }
        done.wait()
        #expect(failures.all == [])
        let library = try lib.open()
        let entitled = try library.report().entitlements
        #expect(entitled.count == 8)
        #expect(Set(entitled.map(\.productID)) == Set(ids))
        #expect(Set(entitled.map(\.transactionID)).count == 8)
        #expect(try lib.shop.storeCount() == 8)
        #expect(try lib.unfinished().isEmpty)
        #expect(try library.report().rejected.isEmpty)
    }
}
