import Foundation
import Synchronization
import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackArchive
@testable import TilePackEncoders
@testable import TilePackStore
@testable import TilePackRegions

/// The region store as `tilepack store …` and `tilepack query` use it: ``RegionLibrary`` over
/// a small library (catalog, real MBTiles archives of PNG tiles), its ledger and simulator,
/// the access policy it hands the tile store, and ``LedgerEntitlements`` over time.
@Suite struct RegionsLibraryTests {
    /// 2024-01-01T00:00:00Z.
    static let t0 = 1_704_067_200.0
    static let day = 86_400.0

    static let regionA = "t.region.a"
    static let regionB = "t.region.b"
    static let bundleID = "t.bundle"
    static let subscriptionID = "t.updates"
    static let missingID = "t.region.missing"

    /// Interior points of the two regions (north-west A, south-east B; far enough apart that
    /// no z12 tile of one touches the other).
    static let pointA = (lon: 6.83, lat: 45.92)
    static let pointB = (lon: 6.95, lat: 45.79)
    static let freeMaxZoom = 8

    /// A clock the test moves.
    final class MovableClock: RegionClock {
        private let seconds: Mutex<Double>
        init(_ seconds: Double) { self.seconds = Mutex(seconds) }
        func now() -> Double { seconds.withLock { $0 } }
        func set(_ value: Double) { seconds.withLock { $0 = value } }
    }

    /// Errors collected from threads.
    final class Failures: Sendable {
        private let list = Mutex<[String]>([])
        func add(_ message: String) { list.withLock { $0.append(message) } }
        var all: [String] { list.withLock { $0 } }
    }

    static func tile(_ lon: Double, _ lat: Double, _ z: Int) -> TileID {
        WebMercator.tile(lon: lon, lat: lat, zoom: z)!.tile
    }

    /// A closed lon/lat ring (a pentagon-ish shape, not a box) around `(lon, lat)`.
    static func ring(_ lon: Double, _ lat: Double, _ r: Double = 0.02) -> String {
        let points = [(lon - r, lat - r), (lon + r, lat - r), (lon + r * 1.5, lat), (lon + r, lat + r), (lon - r, lat + r), (lon - r, lat - r)]
        return "[[" + points.map { "[\($0.0), \($0.1)]" }.joined(separator: ", ") + "]]"
    }

    static func region(_ id: String, price: String, lon: Double, lat: Double, archive: String) -> String {
        """
        {"id": "\(id)", "title": "Region \(id)", "price": "\(price)", "currency": "EUR", "kind": "region",
         "area": \(ring(lon, lat)), "minzoom": 9, "maxzoom": 12, "archives": ["\(archive)"]}
        """
    }

    /// A solid 256² PNG.
    static func png(_ r: UInt8, _ g: UInt8, _ b: UInt8) throws -> [UInt8] {
        var rgba = [UInt8](repeating: 255, count: 256 * 256 * 4)
        for i in 0..<(256 * 256) { rgba[i * 4] = r; rgba[i * 4 + 1] = g; rgba[i * 4 + 2] = b }
        return try PNGEncoder().encode(rgba: rgba, width: 256, height: 256)
    }

    /// An archive of solid PNG tiles covering the square `±r` around the point at zooms
    /// `freeMaxZoom - 1 … 12` (free and sold zooms).
    static func writeArchive(_ path: String, lon: Double, lat: Double, r: Double = 0.03, colour: [UInt8]) throws {
        let writer = try MBTilesWriter(path: path, metadata: MBTilesMetadata(name: path, format: "png", codec: "png"))
        let payload = try png(colour[0], colour[1], colour[2])
        for z in (freeMaxZoom - 1)...12 {
            let nw = tile(lon - r, lat + r, z), se = tile(lon + r, lat - r, z)
            for x in nw.x...se.x {
                for y in nw.y...se.y { try writer.write(payload, for: TileID(z: z, x: x, y: y)!) }
            }
        }
        try writer.finish()
    }

    /// A library: regions A (2.99) and B (1.99) each in its own archive, a bundle of both
    /// (3.99), a monthly subscription including the bundle (0.99), and a region whose
    /// archive is missing (unavailable). Ledger and simulator in `dir`, none created yet.
    struct Library {
        let dir = TemporaryDirectory()
        var libraryPath: String { dir.file("library") }
        var ledgerPath: String { dir.file("device/ledger.sqlite") }
        var simulatorPath: String { dir.file("store") }

        init(extraProducts: [String] = []) throws {
            let lib = dir.file("library")
            #expect(mkdir(lib, 0o755) == 0 && mkdir(dir.file("device"), 0o755) == 0)
            let products = [
                RegionsLibraryTests.region(RegionsLibraryTests.regionA, price: "2.99", lon: pointA.lon, lat: pointA.lat, archive: "a.mbtiles"),
                RegionsLibraryTests.region(RegionsLibraryTests.regionB, price: "1.99", lon: pointB.lon, lat: pointB.lat, archive: "b.mbtiles"),
                """
                {"id": "\(bundleID)", "title": "Both", "price": "3.99", "currency": "EUR", "kind": "bundle",
                 "includes": ["\(regionA)", "\(regionB)"]}
                """,
                """
                {"id": "\(subscriptionID)", "title": "Updates", "price": "0.99", "currency": "EUR", "kind": "subscription",
                 "period": "P1M", "includes": ["\(bundleID)"]}
                """,
                RegionsLibraryTests.region(missingID, price: "0.49", lon: 7.5, lat: 46.5, archive: "missing.mbtiles"),
            ] + extraProducts
            let json = "{\"version\": 1, \"free_max_zoom\": \(freeMaxZoom), \"products\": [\(products.joined(separator: ",\n"))]}"
            _ = try dir.write("library/catalog.json", Array(json.utf8))
            try writeArchive(lib + "/a.mbtiles", lon: pointA.lon, lat: pointA.lat, colour: [200, 10, 10])
            try writeArchive(lib + "/b.mbtiles", lon: pointB.lon, lat: pointB.lat, colour: [10, 10, 200])
        }

        func open(clock: any RegionClock = FixedRegionClock(RegionsLibraryTests.t0), ledger: String? = nil,
                  account: String? = nil) throws -> RegionLibrary {
            try RegionLibrary(directory: libraryPath, ledgerPath: ledger ?? ledgerPath, simulatorDirectory: simulatorPath,
                              clock: clock, account: account)
        }

        var archives: [String] { [libraryPath + "/a.mbtiles", libraryPath + "/b.mbtiles"] }
    }

    static let zA = tile(pointA.lon, pointA.lat, 12), zB = tile(pointB.lon, pointB.lat, 12)

    /// Whether an owned region opens the tile: access is per pixel, and a region's small
    /// polygon lies inside its zoom-12 tile, so that tile is partial (the region's pixels).
    static func opens(_ access: TileAccess) -> Bool { access.isAllowed || access.mask?.isEmpty == false }

    static func offerIDs(_ access: TileAccess) -> [String]? {
        if case .denied(let offers) = access { return offers.map(\.id) }
        return nil
    }

    /// The answer for `point` at zoom 12 from the archive whose bounds contain it.
    static func answer(_ point: (lon: Double, lat: Double), _ store: TileStore) throws -> PointAnswer {
        let answers = try PointQuery.answer(TileQuery(lat: point.lat, lon: point.lon, zoom: 12), store: store)
        try #require(answers.count == 1)
        return answers[0]
    }

    // MARK: - (a) Before any purchase

    @Test func beforeAnyPurchaseSoldZoomsAreLockedFreeZoomsOpenAndNothingIsCreated() throws {
        let lib = try Library()
        let library = try lib.open()
        let policy = try library.accessPolicy()
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
        // Zoom 13 is beyond every product's range: nothing unlocks it.
        #expect(policy.access(Self.tile(Self.pointA.lon, Self.pointA.lat, 13)) == .denied(unlockedBy: []))
        // The unavailable product is never offered.
        #expect(Self.offerIDs(policy.access(Self.tile(7.5, 46.5, 12))) == [])
        // Asking created nothing: no ledger, no store key.
        #expect(!fileExists(lib.ledgerPath))
        #expect(!fileExists(lib.simulatorPath))
        #expect(try library.listings().allSatisfy { !$0.owned })
        #expect(!fileExists(lib.ledgerPath) && !fileExists(lib.simulatorPath))
    }

    // MARK: - (b) Buy a region

    @Test func buyingARegionUnlocksItsTilesInTheStoreAndOnlyThem() throws {
        let lib = try Library()
        let library = try lib.open()
        let bought = try library.buy(Self.regionA)
        #expect(bought.productID == Self.regionA && bought.expiresDate == nil)
        #expect(bought.purchaseDate == Int64(Self.t0 * 1000))

        let policy = try library.accessPolicy()
        #expect(Self.opens(policy.access(Self.zA)))
        #expect(Self.offerIDs(policy.access(Self.zB)) == [Self.subscriptionID, Self.regionB, Self.bundleID])

        let store = try PointQuery.openStore(lib.archives, accessPolicy: policy)
        #expect(try store.pixels(Self.zA, archive: 0) != nil)
        #expect(throws: TileStoreError.self) { _ = try store.pixels(Self.zB, archive: 1) }
        do { _ = try store.tile(Self.zB, archive: 1); Issue.record("B's tile was served") } catch {
            #expect(error.problem == .locked)
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

        let owned = Set(try library.listings().filter(\.owned).map(\.id))
        #expect(owned == [Self.regionA])
    }

    // MARK: - (c) Bundle

    @Test func aBundleUnlocksBothRegions() throws {
        let lib = try Library()
        let library = try lib.open()
        _ = try library.buy(Self.bundleID)
        let policy = try library.accessPolicy()
        #expect(Self.opens(policy.access(Self.zA)) && Self.opens(policy.access(Self.zB)))
        let store = try PointQuery.openStore(lib.archives, accessPolicy: policy)
        #expect(try Self.answer(Self.pointA, store).rgba == [200, 10, 10, 255])
        #expect(try Self.answer(Self.pointB, store).rgba == [10, 10, 200, 255])
        #expect(Set(try library.listings().filter(\.owned).map(\.id)) == [Self.regionA, Self.regionB, Self.bundleID])
    }

    // MARK: - (d) Subscription

    @Test func aSubscriptionLastsItsPeriod() throws {
        let lib = try Library()
        let bought = try lib.open().buy(Self.subscriptionID)
        // P1M from 2024-01-01: 31 days.
        #expect(bought.expiresDate == Int64((Self.t0 + 31 * Self.day) * 1000))

        let dayLater = try lib.open(clock: FixedRegionClock(Self.t0 + Self.day)).accessPolicy()
        #expect(Self.opens(dayLater.access(Self.zA)) && Self.opens(dayLater.access(Self.zB)))
        let later = try lib.open(clock: FixedRegionClock(Self.t0 + 40 * Self.day))
        #expect(try later.report().entitlements.isEmpty)
        let expired = try later.accessPolicy()
        #expect(Self.offerIDs(expired.access(Self.zA)) == [Self.subscriptionID, Self.regionA, Self.bundleID])
    }

    @Test func ledgerEntitlementsChangeGenerationWhenTheSubscriptionExpires() throws {
        let lib = try Library()
        let clock = MovableClock(Self.t0)
        let library = try lib.open(clock: clock)
        _ = try library.buy(Self.subscriptionID)
        _ = try library.buy(Self.regionB)
        let source = try LedgerEntitlements(ledger: library.ledger())
        let policy = RegionAccessPolicy(catalog: try library.requireCatalog(), entitlements: source)
        #expect(source.entitledProductIDs() == [Self.subscriptionID, Self.regionB])
        #expect(Self.opens(policy.access(Self.zA)))
        let g0 = source.generation
        clock.set(Self.t0 + 30 * Self.day)
        #expect(source.generation == g0, "no change before the expiry")
        #expect(Self.opens(policy.access(Self.zA)))
        clock.set(Self.t0 + 31 * Self.day)  // the expiry itself: expired
        let g1 = source.generation
        #expect(g1 != g0)
        #expect(source.entitledProductIDs() == [Self.regionB])
        #expect(Self.offerIDs(policy.access(Self.zA)) == [Self.subscriptionID, Self.regionA, Self.bundleID])
        #expect(Self.opens(policy.access(Self.zB)))
        // Nothing else expires: the generation stays.
        clock.set(Self.t0 + 400 * Self.day)
        #expect(source.generation == g1)
    }

    // MARK: - (e) Refund

    @Test func aRefundLocksTheRegionAgain() throws {
        let lib = try Library()
        let library = try lib.open()
        let bought = try library.buy(Self.regionA)
        #expect(Self.opens(try library.accessPolicy().access(Self.zA)))
        let summary = try library.refund(bought.transactionID)
        #expect(summary.replaced == 1)
        let policy = try library.accessPolicy()
        #expect(Self.offerIDs(policy.access(Self.zA)) == [Self.subscriptionID, Self.regionA, Self.bundleID])
        let store = try PointQuery.openStore(lib.archives, accessPolicy: policy)
        #expect(try Self.answer(Self.pointA, store).locked)
        #expect(try library.report().entitlements.isEmpty)
        // Refunding again changes nothing.
        #expect(try library.refund(bought.transactionID) == LedgerImportSummary(unchanged: 1))
    }

    /// A tile store opened once (as an app's map view) follows purchases, refunds and
    /// restores made through the same library, including the first purchase (the policy was
    /// handed out before any ledger existed). This was broken: each policy had a source
    /// nobody bumped, so a bought region stayed locked in an open store.
    @Test func aPolicyHeldByAnOpenStoreFollowsBuyRefundAndRestore() throws {
        let lib = try Library()
        let library = try lib.open()
        let policy = try library.accessPolicy()
        let store = try PointQuery.openStore(lib.archives, accessPolicy: policy)
        #expect(try Self.answer(Self.pointA, store).locked)
        #expect(!fileExists(lib.ledgerPath))

        let bought = try library.buy(Self.regionA)
        #expect(Self.opens(policy.access(Self.zA)))
        #expect(try Self.answer(Self.pointA, store).rgba == [200, 10, 10, 255])
        #expect(try Self.answer(Self.pointB, store).locked)

        _ = try library.refund(bought.transactionID)
        #expect(try Self.answer(Self.pointA, store).locked)

        _ = try library.buy(Self.bundleID)
        #expect(try !Self.answer(Self.pointA, store).locked && !Self.answer(Self.pointB, store).locked)

        // A purchase by another library (another process) shows after the next accessPolicy().
        let second = try lib.open()
        let later = try second.accessPolicy()
        _ = try lib.open().buy(Self.subscriptionID)
        #expect(Set(try second.report().entitlements.map(\.productID)) == [Self.bundleID, Self.subscriptionID])
        _ = try second.accessPolicy()
        #expect(Self.opens(later.access(Self.zA)))

        // A new device's policy, held before its ledger exists, follows a restore.
        let device = try lib.open(ledger: lib.dir.file("device/new.sqlite"), account: try library.ledger().account)
        let held = try device.accessPolicy()
        #expect(!held.access(Self.zB).isAllowed && !fileExists(lib.dir.file("device/new.sqlite")))
        _ = try device.restore()
        #expect(Self.opens(held.access(Self.zB)))
    }

    // MARK: - (f) Restore

    @Test func restoreOnAFreshLedgerGetsThePurchasesBackIdempotently() throws {
        let lib = try Library()
        let library = try lib.open()
        _ = try library.buy(Self.regionA)
        _ = try library.buy(Self.subscriptionID)
        let refunded = try library.buy(Self.regionB)
        _ = try library.refund(refunded.transactionID)
        let account = try library.ledger().account
        let before = try library.report().entitlements

        // A fresh ledger file (a new device) signed in to the same account.
        let fresh = lib.dir.file("device/fresh.sqlite")
        let device = try lib.open(ledger: fresh, account: account)
        #expect(try device.report().entitlements.isEmpty)
        #expect(try device.restore() == LedgerImportSummary(inserted: 3))
        #expect(try device.report().entitlements == before)
        #expect(try device.restore() == LedgerImportSummary(unchanged: 3))
        #expect(try device.report().entitlements == before)
        #expect(Set(before.map(\.productID)) == [Self.regionA, Self.subscriptionID])
        let policy = try device.accessPolicy()
        #expect(Self.opens(policy.access(Self.zA)) && Self.opens(policy.access(Self.zB)))

        // A fresh ledger of another account restores nothing.
        let stranger = try lib.open(ledger: lib.dir.file("device/other.sqlite"))
        #expect(try stranger.restore() == LedgerImportSummary())
        #expect(try stranger.report().entitlements.isEmpty)
    }

    // MARK: - (g) Bad products

    @Test func buyingAnUnknownOrUnavailableProductNamesIt() throws {
        let lib = try Library()
        let library = try lib.open()
        for (id, kind, words) in [("t.nope", CatalogError.Kind.unknownProduct, "no product"),
                                  (Self.missingID, .unknownProduct, "not available")] {
            do {
                _ = try library.buy(id)
                Issue.record("bought \(id)")
            } catch let error as CatalogError {
                #expect(error.kind == kind)
                #expect(error.description.contains("\"\(id)\""))
                #expect(error.description.contains(words))
                #expect(!error.description.contains("\n"))
            }
        }
        #expect(library.catalog?.product(id: Self.missingID)?.isAvailable == false)
        // A refused purchase created nothing.
        #expect(!fileExists(lib.ledgerPath) && !fileExists(lib.simulatorPath))
    }

    // MARK: - (h) Concurrency

    @Test func eightThreadsBuyingThroughSeparateLibrariesLoseAndDuplicateNothing() throws {
        let ids = (0..<8).map { "t.r\($0)" }
        let lib = try Library(extraProducts: ids.enumerated().map { i, id in
            Self.region(id, price: "1.\(i)0", lon: 6.0 + Double(i) * 0.1, lat: 45.0, archive: "a.mbtiles")
        })
        let failures = Failures()
        let done = DispatchGroup()
        let (libraryPath, ledgerPath, simulatorPath) = (lib.libraryPath, lib.ledgerPath, lib.simulatorPath)
        // Nothing exists yet: the threads race to create the store key, its database and the ledger.
        for id in ids {
            done.enter()
            let thread = Thread {
                defer { done.leave() }
                do {
                    let library = try RegionLibrary(directory: libraryPath, ledgerPath: ledgerPath, simulatorDirectory: simulatorPath,
                                                    clock: FixedRegionClock(Self.t0))
                    _ = try library.buy(id)
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
        #expect(try library.simulator().transactions(account: library.ledger().account).count == 8)
        #expect(try library.report().rejected.isEmpty)
    }
}
