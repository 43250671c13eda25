import TilePackCore
import TilePackSQLite
import TilePackRegions
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A test App Store, as StoreKit Testing is one: it stands for Apple's servers, OUTSIDE the
/// device. It sells, refunds and redelivers, and signs every transaction in the App Store's
/// format (ES256, `x5c` = [leaf, intermediate, root] of its own test CA with Apple's OIDs,
/// environment `Sandbox`). It publishes only its root certificate (`AppStoreRoot.der`); a
/// device trusts it only when the user puts that root in the trust file
/// (`tilepack store trust`), and then verifies its tokens with the same code as Apple's.
///
/// Directory (default `$XDG_DATA_HOME/tilepack/simulator`): the CA (``TestAppStoreCA``: keys
/// mode 0600, certificates), and `store.sqlite` with every transaction's latest signed version,
/// whether the device has finished it, and each app's product types (the first sale of a
/// product id fixes its type, as App Store Connect does). WAL; each change one
/// `BEGIN IMMEDIATE` transaction, so concurrent buyers neither lose nor duplicate a purchase.
///
/// Records of an earlier tilepack's simulator (Ed25519 transactions) are re-issued in the new
/// format the first time the account asks for them, so nothing bought is lost.
///
/// ```swift
/// let store = try TestAppStore(directory: dir)
/// let library = try RegionLibrary(directory: "SampleRegions", trust: trust, storefront: store)
/// try library.buy("com.tilepack.samples.montblanc.chamonix")
/// ```
///
/// Threads: Sendable; calls are serialized on its connection. Cost: a purchase or refund is
/// one ES256 signature and one small SQLite commit.
public final class TestAppStore: Storefront, Sendable {
    /// The environment it signs.
    public static let environment = AppStoreEnvironment.sandbox

    public let directory: String
    public let ca: TestAppStoreCA
    private let clock: any RegionClock
    /// Used only inside `lock` (``write(doing:_:)``): SQLiteConnection is not Sendable, and the
    /// lock is what makes sharing this store between threads sound.
    private nonisolated(unsafe) let connection: SQLiteConnection
    private let lock = Locked(())

    public var databasePath: String { directory + "/store.sqlite" }
    /// The root certificate a trust file names (DER).
    public var rootCertificatePath: String { ca.rootCertificatePath }

    /// `$XDG_DATA_HOME/tilepack/simulator`, else `~/.local/share/tilepack/simulator`.
    public static func defaultDirectory() -> String { RegionFiles.dataDirectory() + "/simulator" }

    /// Opens (creating when missing) the store in `directory`, or the default one.
    public init(directory: String? = nil, clock: any RegionClock = SystemRegionClock()) throws(LedgerError) {
        let directory = directory ?? TestAppStore.defaultDirectory()
        self.directory = directory
        self.clock = clock
        ca = try LedgerError.mapping(path: directory, doing: "opening the test App Store's CA") {
            try RegionFiles.makeDirectories(directory)
            return try TestAppStoreCA(directory: directory)
        }
        let path = directory + "/store.sqlite"
        let db = try LedgerError.mapping(path: path, doing: "opening the store") {
            let db = try SQLiteConnection(path: path, mode: .readWriteCreate)
            try db.execute("PRAGMA busy_timeout = 10000")
            try db.inTransaction {
                try db.execute(
                    """
                    CREATE TABLE IF NOT EXISTS transactions (
                        seq INTEGER PRIMARY KEY,
                        transaction_id TEXT NOT NULL UNIQUE,
                        account TEXT NOT NULL,
                        product_id TEXT NOT NULL,
                        jws TEXT NOT NULL);
                    CREATE INDEX IF NOT EXISTS transactions_account ON transactions(account, seq);
                    CREATE TABLE IF NOT EXISTS products (
                        bundle_id TEXT NOT NULL, product_id TEXT NOT NULL, type TEXT NOT NULL,
                        PRIMARY KEY (bundle_id, product_id));
                    """)
                // Columns an earlier simulator's table lacks (its rows are re-issued on demand).
                let info = try db.prepare("PRAGMA table_info(transactions)")
                var have: Set<String> = []
                while try info.step() { if let name = info.string(at: 1) { have.insert(name) } }
                for (name, type) in [
                    ("bundle_id", "TEXT"), ("type", "TEXT"), ("expires_date", "INTEGER"),
                    ("revoked", "INTEGER NOT NULL DEFAULT 0"), ("finished", "INTEGER NOT NULL DEFAULT 1"),
                ]
                where !have.contains(name) {
                    try db.execute("ALTER TABLE transactions ADD COLUMN \(name) \(type)")
                }
            }
            return db
        }
        connection = db
    }

    // MARK: - Storefront

    public func purchase(_ request: PurchaseRequest) throws -> PurchaseOutcome {
        for (name, value) in [
            ("product id", request.productID), ("account", request.account), ("bundle id", request.bundleID),
        ] {
            if let problem = AccountToken.problem(value) { throw LedgerError(.invalidArgument, subject: name, problem) }
        }
        guard request.type == .nonConsumable || request.type == .autoRenewable else {
            throw LedgerError(
                .invalidArgument, subject: request.productID,
                "the test App Store sells non-consumables and auto-renewable subscriptions only")
        }
        let now = try nowMilliseconds()
        var expires: Int64?
        if request.type == .autoRenewable {
            guard let period = request.period, let end = period.expiry(after: Double(now) / 1000) else {
                throw LedgerError(
                    .invalidArgument, subject: request.productID,
                    "a subscription needs a period whose end can be computed")
            }
            expires = Int64(end * 1000)
        }
        return try write(doing: "recording a purchase") { db in
            try reissueLegacy(db, account: request.account, bundleID: request.bundleID, now: now)
            try register(db, request)
            // Owned already: an unrevoked non-consumable, or a subscription still running.
            let owned = try db.prepare(
                """
                SELECT jws FROM transactions WHERE account = ? AND bundle_id = ? AND product_id = ? AND revoked = 0
                    AND (expires_date IS NULL OR expires_date > ?) ORDER BY seq LIMIT 1
                """)
            try owned.bind(request.account, at: 1)
            try owned.bind(request.bundleID, at: 2)
            try owned.bind(request.productID, at: 3)
            try owned.bind(Int(now), at: 4)
            if try owned.step(), let jws = owned.string(at: 0) { return .alreadyOwned(jws) }
            // A clash of random 16-digit ids is astronomically rare; the UNIQUE constraint is
            // the guarantee, and the loop makes a clash a retry, not a failure.
            for _ in 0..<8 {
                let id = String(UInt64.random(in: 1_000_000_000_000_000..<10_000_000_000_000_000))
                let exists = try db.prepare("SELECT 1 FROM transactions WHERE transaction_id = ?")
                try exists.bind(id, at: 1)
                if try exists.step() { continue }
                let payload = AppStoreTransaction(
                    transactionId: id, originalTransactionId: id, bundleId: request.bundleID,
                    productId: request.productID,
                    purchaseDate: Date(appStoreMilliseconds: now),
                    originalPurchaseDate: Date(appStoreMilliseconds: now),
                    expiresDate: expires.map(Date.init(appStoreMilliseconds:)), quantity: 1, type: request.type,
                    appAccountToken: request.account, inAppOwnershipType: "PURCHASED",
                    signedDate: Date(appStoreMilliseconds: now),
                    environment: Self.environment, transactionReason: "PURCHASE")
                let jws = try ca.sign(payload)
                let insert = try db.prepare(
                    """
                    INSERT INTO transactions (transaction_id, account, product_id, jws, bundle_id, type, expires_date, revoked, finished)
                    VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0)
                    """)
                for (i, v) in [id, request.account, request.productID, jws, request.bundleID, request.type.rawValue]
                    .enumerated()
                {
                    try insert.bind(v, at: Int32(i + 1))
                }
                if let expires { try insert.bind(Int(expires), at: 7) }
                try insert.run()
                return .purchased(jws)
            }
            throw LedgerError(.storage, subject: databasePath, "could not draw an unused transaction id")
        }
    }

    /// Signs the transaction again with `revocationDate` now and `reason` (0 other, 1 an
    /// issue in the app), records it as an update the device has not finished, returns it.
    /// Refunding twice returns the first refund.
    public func refund(transactionID: String, reason: Int) throws -> String {
        if let problem = AccountToken.problem(transactionID) {
            throw LedgerError(.invalidArgument, subject: "transaction id", problem)
        }
        guard reason == 0 || reason == 1 else {
            throw LedgerError(
                .invalidArgument, subject: "revocation reason", "\(reason) is not 0 (other) or 1 (app issue)")
        }
        let now = try nowMilliseconds()
        return try write(doing: "recording a refund") { db in
            let select = try db.prepare("SELECT jws, revoked, bundle_id FROM transactions WHERE transaction_id = ?")
            try select.bind(transactionID, at: 1)
            guard try select.step(), let jws = select.string(at: 0) else {
                throw LedgerError(
                    .notFound, subject: "transaction id",
                    "\(ErrorText.quoted(transactionID)) is not a transaction of this store")
            }
            if select.int(at: 1) != 0 { return jws }
            guard select.string(at: 2) != nil else {
                throw LedgerError(
                    .invalidArgument, subject: "transaction id",
                    "\(transactionID) is a record of an earlier tilepack: run tilepack store restore first")
            }
            var payload = try Self.payload(of: jws)
            let purchased = payload.purchaseDate ?? Date(appStoreMilliseconds: now)
            payload.revocationDate = max(Date(appStoreMilliseconds: now), purchased)
            payload.revocationReason = reason
            payload.revocationType = "REFUND_FULL"
            payload.signedDate = Date(
                appStoreMilliseconds: max(now, (payload.signedDate?.appStoreMilliseconds ?? 0) + 1))
            let revoked = try ca.sign(payload)
            let update = try db.prepare(
                "UPDATE transactions SET jws = ?, revoked = 1, finished = 0 WHERE transaction_id = ?")
            try update.bind(revoked, at: 1)
            try update.bind(transactionID, at: 2)
            try update.run()
            return revoked
        }
    }

    public func transactions(account: String, bundleID: String) throws -> [String] {
        try select(account: account, bundleID: bundleID, unfinishedOnly: false)
    }

    public func unfinishedTransactions(account: String, bundleID: String) throws -> [String] {
        try select(account: account, bundleID: bundleID, unfinishedOnly: true)
    }

    public func finish(transactionID: String) throws {
        try write(doing: "finishing a transaction") { db in
            let update = try db.prepare("UPDATE transactions SET finished = 1 WHERE transaction_id = ?")
            try update.bind(transactionID, at: 1)
            try update.run()
        }
    }

    /// One signed renewal info per subscription the account holds (its latest transaction):
    /// auto-renew on unless refunded, renewing at its `expiresDate`.
    public func renewalInfos(account: String, bundleID: String) throws -> [String] {
        let now = try nowMilliseconds()
        var latest: [String: AppStoreTransaction] = [:]
        for jws in try transactions(account: account, bundleID: bundleID) {
            let t = try Self.payload(of: jws)
            guard t.type == .autoRenewable, let original = t.originalTransactionId else { continue }
            if let held = latest[original], (held.purchaseDate ?? .distantPast) >= (t.purchaseDate ?? .distantPast) {
                continue
            }
            latest[original] = t
        }
        return try latest.keys.sorted().compactMap { key in
            guard let t = latest[key] else { return nil }
            let info = AppStoreRenewalInfo(
                originalTransactionId: t.originalTransactionId, autoRenewProductId: t.productId, productId: t.productId,
                autoRenewStatus: t.revocationDate == nil ? 1 : 0, signedDate: Date(appStoreMilliseconds: now),
                environment: Self.environment,
                recentSubscriptionStartDate: t.purchaseDate, renewalDate: t.expiresDate,
                appAccountToken: t.appAccountToken)
            return try ca.sign(info)
        }
    }

    /// The latest signed version of transaction `id` of `bundleID` (a refund's when it was
    /// refunded), nil when this store holds no such transaction. An earlier simulator's record
    /// (no bundle id until its account restores) is not found.
    ///
    /// Cost: one indexed SELECT (the UNIQUE transaction_id index).
    public func currentTransaction(id: String, bundleID: String) throws -> String? {
        if let problem = AccountToken.problem(id) {
            throw LedgerError(.invalidArgument, subject: "transaction id", problem)
        }
        return try write(doing: "looking up a transaction") { db in
            let select = try db.prepare("SELECT jws FROM transactions WHERE transaction_id = ? AND bundle_id = ?")
            try select.bind(id, at: 1)
            try select.bind(bundleID, at: 2)
            return try select.step() ? select.string(at: 0) : nil
        }
    }

    // MARK: - Private

    private func select(account: String, bundleID: String, unfinishedOnly: Bool) throws -> [String] {
        if let problem = AccountToken.problem(account) {
            throw LedgerError(.invalidArgument, subject: "account", problem)
        }
        let now = try nowMilliseconds()
        return try write(doing: "listing transactions") { db in
            try reissueLegacy(db, account: account, bundleID: bundleID, now: now)
            let select = try db.prepare(
                """
                SELECT jws FROM transactions WHERE account = ? AND bundle_id = ?\(unfinishedOnly ? " AND finished = 0" : "") ORDER BY seq
                """)
            try select.bind(account, at: 1)
            try select.bind(bundleID, at: 2)
            var out: [String] = []
            while try select.step() { if let jws = select.string(at: 0) { out.append(jws) } }
            return out
        }
    }

    /// The first sale of a product id in an app fixes its type; a later request for another
    /// type (a catalog elsewhere selling the subscription's id as a region) is refused.
    private func register(_ db: SQLiteConnection, _ request: PurchaseRequest) throws {
        let insert = try db.prepare("INSERT OR IGNORE INTO products (bundle_id, product_id, type) VALUES (?, ?, ?)")
        try insert.bind(request.bundleID, at: 1)
        try insert.bind(request.productID, at: 2)
        try insert.bind(request.type.rawValue, at: 3)
        try insert.run()
        let select = try db.prepare("SELECT type FROM products WHERE bundle_id = ? AND product_id = ?")
        try select.bind(request.bundleID, at: 1)
        try select.bind(request.productID, at: 2)
        if try select.step(), let type = select.string(at: 0), type != request.type.rawValue {
            throw LedgerError(
                .invalidArgument, subject: request.productID,
                "is sold in \(request.bundleID) as a \(type), not a \(request.type.rawValue)")
        }
    }

    /// Re-signs the account's records of an earlier tilepack (Ed25519, environment
    /// `LocalSimulator`, no bundle id) as App Store transactions of `bundleID`: same ids,
    /// products, dates and refunds. The store trusts its own records; the device sees only the
    /// new signatures.
    private func reissueLegacy(_ db: SQLiteConnection, account: String, bundleID: String, now: Int64) throws {
        let select = try db.prepare(
            "SELECT transaction_id, jws FROM transactions WHERE account = ? AND bundle_id IS NULL")
        try select.bind(account, at: 1)
        var legacy: [(String, String)] = []
        while try select.step() {
            if let id = select.string(at: 0), let jws = select.string(at: 1) { legacy.append((id, jws)) }
        }
        for (id, jws) in legacy {
            let old = try Self.legacyPayload(of: jws, transactionID: id)
            let payload = AppStoreTransaction(
                transactionId: old.transactionId, originalTransactionId: old.originalTransactionId, bundleId: bundleID,
                productId: old.productId, purchaseDate: Date(appStoreMilliseconds: old.purchaseDate),
                originalPurchaseDate: Date(appStoreMilliseconds: old.purchaseDate),
                expiresDate: old.expiresDate.map(Date.init(appStoreMilliseconds:)), quantity: 1, type: old.type,
                appAccountToken: account, inAppOwnershipType: "PURCHASED",
                signedDate: Date(appStoreMilliseconds: max(now, old.signedDate)),
                revocationReason: old.revocationReason,
                revocationDate: old.revocationDate.map(Date.init(appStoreMilliseconds:)), environment: Self.environment,
                transactionReason: "PURCHASE")
            let update = try db.prepare(
                """
                UPDATE transactions SET jws = ?, bundle_id = ?, type = ?, expires_date = ?, revoked = ?, finished = 1
                WHERE transaction_id = ?
                """)
            try update.bind(try ca.sign(payload), at: 1)
            try update.bind(bundleID, at: 2)
            try update.bind(old.type.rawValue, at: 3)
            if let e = old.expiresDate { try update.bind(Int(e), at: 4) } else { try update.bindNull(at: 4) }
            try update.bind(old.revocationDate == nil ? 0 : 1, at: 5)
            try update.bind(id, at: 6)
            try update.run()
            try register(
                db, PurchaseRequest(productID: old.productId, type: old.type, bundleID: bundleID, account: account))
        }
    }

    /// The payload of one of our own tokens (no verification: the store's own record).
    static func payload(of jws: String) throws -> AppStoreTransaction {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw LedgerError(.storage, subject: "store record", "not a compact JWS") }
        return try JSONDecoder().decode(
            AppStoreTransaction.self, from: Data(try Base64URL.decode(parts[1], source: "store record")))
    }

    /// What an earlier tilepack's simulator signed (Ed25519; field names as StoreKit's).
    struct LegacyPayload: Decodable {
        var transactionId: String
        var originalTransactionId: String
        var productId: String
        var purchaseDate: Int64
        var expiresDate: Int64?
        var type: AppStoreProductType
        var signedDate: Int64
        var revocationDate: Int64?
        var revocationReason: Int?
    }

    static func legacyPayload(of jws: String, transactionID: String) throws -> LegacyPayload {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw LedgerError(.storage, subject: "store record \(transactionID)", "not a compact JWS")
        }
        do {
            return try JSONDecoder().decode(
                LegacyPayload.self, from: Data(try Base64URL.decode(parts[1], source: "store record")))
        } catch {
            throw LedgerError(
                .storage, subject: "store record \(transactionID)", "an earlier record that cannot be read: \(error)")
        }
    }

    private func write<T: Sendable>(doing: String, _ body: (SQLiteConnection) throws -> T) throws(LedgerError) -> T {
        let db = connection
        return try LedgerError.mapping(path: databasePath, doing: doing) {
            try lock.withLock { _ in try db.inTransaction { try body(db) } }
        }
    }

    private func nowMilliseconds() throws(LedgerError) -> Int64 {
        let now = clock.now()
        guard now.isInAppStoreRange else {
            throw LedgerError(
                .invalidArgument, subject: "clock", "the time \(now.timeIntervalSince1970) is outside 1970…9999")
        }
        return now.appStoreMilliseconds
    }
}
