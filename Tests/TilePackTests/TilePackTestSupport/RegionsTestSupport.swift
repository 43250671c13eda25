import Crypto
import Foundation
import Testing
import TilePackCore
import TilePackRegions
import TilePackSQLite
import TilePackTools
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the region store's tests share: the publisher's key and a catalog signer, a test App
/// Store with the trust anchors that pin its root, a clock the test moves, and the records an
/// earlier tilepack left behind (a schema-1 ledger, the old simulator's Ed25519 rows).
package enum RegionsFixture {
    /// 2024-01-01T00:00:00Z: the tests' "now" (inside the test CA's 2020…2049 validity).
    package static let t0 = Date(timeIntervalSince1970: 1_704_067_200)
    /// Seconds in a day, to add to a date.
    package static let day: TimeInterval = 86_400
    package static let bundleID = "com.tilepack.tests"
    /// StoreKit `appAccountToken`s.
    package static let account = "6f1c2a4e-8b3d-4c5e-9f70-1a2b3c4d5e6f"
    package static let otherAccount = "0d9e8f7a-6b5c-4d3e-8f1a-2b3c4d5e6f70"

    /// The publisher's catalog key (the publisher keeps it; devices get `publicJWK`).
    package static let publisher = JWK.newPrivateKey()

    /// Signs the catalog of the library in `libraryDirectory` as `tilepack catalog sign` does:
    /// `json` (default: the library's `catalog.json`) with `archive_sha256` filled in from the
    /// archives, signed with `key`, written to `catalog.jws`. Returns the JWS.
    @discardableResult
    package static func signCatalog(
        libraryDirectory: String, json: [UInt8]? = nil, key: JWK = publisher
    ) throws -> String {
        let path = libraryDirectory + "/" + Catalog.fileName
        let bytes = json ?? readFile(path)
        let payload = try CatalogPayload(filling: bytes, path: path, libraryDirectory: libraryDirectory)
        let jws = try SignedCatalog.sign(payload, key: try key.privateKey(source: "publisher key"), path: path)
        writeFile(libraryDirectory + "/" + SignedCatalog.fileName, Array(jws.utf8))
        return jws
    }

    /// The anchors of an app that trusts `store`'s root for Sandbox and the publisher's key.
    package static func trust(
        _ store: TestAppStore, bundleID: String = bundleID,
        publisherKeys: [JWK] = [publisher.publicJWK]
    ) -> TrustAnchors {
        TrustAnchors(
            appStoreRoots: [store.ca.rootCertificateDER], bundleID: bundleID, environments: [.sandbox],
            publisherKeys: publisherKeys)
    }

    /// A subscription term.
    package static func period(_ iso8601: String) -> SubscriptionPeriod {
        guard let period = SubscriptionPeriod(iso8601: iso8601) else { preconditionFailure("bad period \(iso8601)") }
        return period
    }

    /// What a device of `account` asks the store for.
    package static func request(
        _ productID: String, type: AppStoreProductType = .nonConsumable, account: String = account,
        period: String? = nil, bundleID: String = bundleID
    ) -> PurchaseRequest {
        PurchaseRequest(
            productID: productID, type: type, bundleID: bundleID, account: account, period: period.map(Self.period))
    }

    /// Milliseconds since 1970 of `date`, as the store signs dates and the ledger counts time.
    package static func ms(_ date: Date) -> Int64 { date.appStoreMilliseconds }
}

/// A clock the test moves (shared by a store, a ledger and a library as one machine's clock).
package final class MovableClock: RegionClock {
    private let date: Locked<Date>
    package init(_ date: Date) { self.date = Locked(date) }
    package func now() -> Date { date.withLock { $0 } }
    package func set(_ value: Date) { date.withLock { $0 = value } }
}

/// Errors collected from threads.
package final class ThreadFailures: Sendable {
    package init() {}
    private let list = Locked<[String]>([])
    package func add(_ message: String) { list.withLock { $0.append(message) } }
    package var all: [String] { list.withLock { $0 } }
}

/// A test App Store in a scratch directory on a movable clock, and the trust anchors of the
/// app `RegionsFixture.bundleID` that pin its root. `prepare` runs on the store's directory
/// before the store opens it (to leave an earlier simulator's records there).
package struct TestStoreFixture {
    package let dir = TemporaryDirectory()
    package let clock: MovableClock
    package let store: TestAppStore
    package let trust: TrustAnchors
    package let verifier: AppStoreVerifier

    package var storeDirectory: String { dir.file("store") }

    package init(clock date: Date = RegionsFixture.t0, prepare: (String) throws -> Void = { _ in }) throws {
        clock = MovableClock(date)
        #expect(mkdir(dir.file("store"), 0o700) == 0)
        try prepare(dir.file("store"))
        store = try TestAppStore(directory: dir.file("store"), clock: clock)
        trust = RegionsFixture.trust(store)
        verifier = AppStoreVerifier(anchors: trust)
    }

    /// What a device of `account` asks the store for.
    package func request(
        _ productID: String, type: AppStoreProductType = .nonConsumable, account: String = RegionsFixture.account,
        period: String? = nil, bundleID: String = RegionsFixture.bundleID
    ) -> PurchaseRequest {
        RegionsFixture.request(productID, type: type, account: account, period: period, bundleID: bundleID)
    }

    /// Buys at the store (nothing recorded on any device): the signed transaction.
    package func sell(
        _ productID: String, type: AppStoreProductType = .nonConsumable, account: String = RegionsFixture.account,
        period: String? = nil, bundleID: String = RegionsFixture.bundleID
    ) throws -> String {
        try store.purchase(request(productID, type: type, account: account, period: period, bundleID: bundleID)).jws
    }

    /// The transaction id of a signed transaction (verified with the fixture's anchors).
    package func transactionID(_ jws: String) throws -> String {
        try #require(try verifier.verifyTransaction(jws, source: "test").transactionId)
    }

    /// How many transactions the store holds for `account` (charges, whatever their state).
    package func storeCount(account: String = RegionsFixture.account) throws -> Int {
        try store.transactions(account: account, bundleID: RegionsFixture.bundleID).count
    }
}

/// Files an earlier tilepack wrote, made by hand from its schema.
package enum LegacyRecords {
    /// What the old simulator signed (Ed25519, `kid` its key's thumbprint): StoreKit's field
    /// names, environment `LocalSimulator`, no bundle id.
    package struct Payload: Encodable {
        package var transactionId: String
        package var originalTransactionId: String
        package var productId: String
        package var purchaseDate: Int64
        package var expiresDate: Int64?
        package var appAccountToken: String
        package var environment = "LocalSimulator"
        package var type: String
        package var signedDate: Int64
        package var revocationDate: Int64?
        package var revocationReason: Int?

        package init(
            transactionId: String, originalTransactionId: String, productId: String, purchaseDate: Int64,
            expiresDate: Int64? = nil, appAccountToken: String, environment: String = "LocalSimulator", type: String,
            signedDate: Int64, revocationDate: Int64? = nil, revocationReason: Int? = nil
        ) {
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.purchaseDate = purchaseDate
            self.expiresDate = expiresDate
            self.appAccountToken = appAccountToken
            self.environment = environment
            self.type = type
            self.signedDate = signedDate
            self.revocationDate = revocationDate
            self.revocationReason = revocationReason
        }
    }

    /// Creates the old simulator's `store.sqlite` in `directory` (columns seq, transaction_id,
    /// account, product_id, jws) holding `payloads`, each signed with a fresh Ed25519 key.
    package static func writeSimulatorStore(directory: String, _ payloads: [Payload]) throws {
        let key = Curve25519.Signing.PrivateKey()
        let kid = JWK(publicKey: key.publicKey).keyID
        let db = try SQLiteConnection(path: directory + "/store.sqlite", mode: .readWriteCreate)
        try db.execute(
            """
            CREATE TABLE transactions (
                seq INTEGER PRIMARY KEY,
                transaction_id TEXT NOT NULL UNIQUE,
                account TEXT NOT NULL,
                product_id TEXT NOT NULL,
                jws TEXT NOT NULL);
            CREATE INDEX transactions_account ON transactions(account, seq);
            """)
        for payload in payloads {
            let insert = try db.prepare(
                "INSERT INTO transactions (transaction_id, account, product_id, jws) VALUES (?, ?, ?, ?)")
            try insert.bind(payload.transactionId, at: 1)
            try insert.bind(payload.appAccountToken, at: 2)
            try insert.bind(payload.productId, at: 3)
            try insert.bind(try JWS.sign(payload, key: key, kid: kid), at: 4)
            try insert.run()
        }
    }

    /// Creates a schema-1 ledger at `path` for `account` (its tables as the old ledger made
    /// them), with one row holding an Ed25519 JWS the new code cannot verify.
    package static func writeLedger(path: String, account: String) throws {
        let db = try SQLiteConnection(path: path, mode: .readWriteCreate)
        try db.execute(
            """
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE transactions (
                transaction_id TEXT PRIMARY KEY,
                original_transaction_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                account TEXT NOT NULL,
                purchase_date INTEGER NOT NULL,
                expires_date INTEGER,
                revocation_date INTEGER,
                signed_date INTEGER NOT NULL,
                jws TEXT NOT NULL);
            INSERT INTO meta (key, value) VALUES ('schema_version', '1'), ('account', '\(account)'), ('watermark_ms', '1704067200000');
            INSERT INTO transactions VALUES ('1000000000000001', '1000000000000001', 'old.product', '\(account)',
                1704067200000, NULL, NULL, 1704067200000, 'eyJhbGciOiJFZERTQSJ9.e30.AAAA');
            """)
    }
}
