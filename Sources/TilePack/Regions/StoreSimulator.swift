import TilePackCore
import TilePackSQLite
import Crypto
import Synchronization

/// A local stand-in for the App Store, used by the CLI and the tests: it sells products,
/// signs each transaction as a JWS with its own Ed25519 key, refunds, and lists an account's
/// transactions for restore.
///
/// It lives in its own directory, apart from the device's ledger (default
/// `$XDG_DATA_HOME/tilepack/simulator`, else `~/.local/share/tilepack/simulator`):
/// - `store-private.jwk`: the signing key (mode 0600, created once, atomically, by whichever
///   process gets there first),
/// - `store-public.jwk`: the public JWK a device needs (``publicKeyPath``),
/// - `store.sqlite`: every transaction's latest signed version (WAL; each change one
///   `BEGIN IMMEDIATE` transaction, so concurrent buyers in threads or processes neither lose
///   nor duplicate a purchase; transaction ids are random 16-digit numbers under a UNIQUE
///   constraint).
///
/// ```swift
/// let store = try StoreSimulator(directory: dir)
/// let signed = try store.purchase(productID: "chamonix", account: account)
/// try ledger.import(signed)
/// ```
///
/// Threads: Sendable; calls on one instance are serialized on its connection. Cost: a
/// purchase or refund is one Ed25519 signature (~50 µs) and one small SQLite commit.
public final class StoreSimulator: Sendable {
    /// The `environment` it writes into every transaction.
    public static let environment = "LocalSimulator"

    public let directory: String
    /// The public half of the store's key, as the device should hold it.
    public let publicKey: JWK
    private let privateKey: Curve25519.Signing.PrivateKey
    private let clock: any RegionClock
    private let connection: Mutex<SQLiteConnection>

    public var publicKeyPath: String { directory + "/store-public.jwk" }
    public var privateKeyPath: String { directory + "/store-private.jwk" }
    public var databasePath: String { directory + "/store.sqlite" }

    /// `$XDG_DATA_HOME/tilepack/simulator`, else `~/.local/share/tilepack/simulator`.
    public static func defaultDirectory() -> String { RegionFiles.dataDirectory() + "/simulator" }

    /// Opens (creating when missing) the simulator in `directory`, or the default one.
    public init(directory: String? = nil, clock: any RegionClock = SystemRegionClock()) throws(LedgerError) {
        let directory = directory ?? StoreSimulator.defaultDirectory()
        self.directory = directory
        self.clock = clock
        let privatePath = directory + "/store-private.jwk"
        let (key, jwk) = try LedgerError.mapping(path: privatePath, doing: "loading the store key") {
            try RegionFiles.makeDirectories(directory)
            return try StoreSimulator.loadOrCreateKey(path: privatePath)
        }
        privateKey = key
        publicKey = jwk.publicJWK
        let publicPath = directory + "/store-public.jwk"
        let databasePath = directory + "/store.sqlite"
        let db = try LedgerError.mapping(path: databasePath, doing: "opening the store") {
            let publicText = Array((try jwk.publicJWK.jsonString() + "\n").utf8)
            if (try? RegionFiles.contents(path: publicPath, limit: 64 * 1024)) != publicText {
                try RegionFiles.writeAtomically(path: publicPath, bytes: publicText, mode: 0o644)
            }
            let db = try SQLiteConnection(path: databasePath, mode: .readWriteCreate)
            try db.inTransaction {
                try db.execute("""
                    CREATE TABLE IF NOT EXISTS transactions (
                        seq INTEGER PRIMARY KEY,
                        transaction_id TEXT NOT NULL UNIQUE,
                        account TEXT NOT NULL,
                        product_id TEXT NOT NULL,
                        jws TEXT NOT NULL);
                    CREATE INDEX IF NOT EXISTS transactions_account ON transactions(account, seq);
                    """)
            }
            return db
        }
        connection = Mutex(db)
    }

    private static func loadOrCreateKey(path: String) throws -> (Curve25519.Signing.PrivateKey, JWK) {
        let fresh = Curve25519.Signing.PrivateKey()
        let freshJWK = JWK(privateKey: fresh)
        if try RegionFiles.createExclusively(path: path, bytes: Array((try freshJWK.jsonString() + "\n").utf8), mode: 0o600) {
            return (fresh, freshJWK)
        }
        let jwk = try JWK.read(path: path, requirePrivate: true)
        return (try jwk.privateKey(source: path), jwk)
    }

    /// Sells `productID` to `account`: a non-consumable without `period`, else an
    /// auto-renewable subscription expiring `period` after now. Returns the signed transaction.
    public func purchase(productID: String, account: String, period: Duration? = nil) throws(LedgerError) -> SignedTransaction {
        if let problem = TransactionPayload.identifierProblem(productID) {
            throw LedgerError(.invalidArgument, subject: "product id", problem)
        }
        if let problem = TransactionPayload.identifierProblem(account) {
            throw LedgerError(.invalidArgument, subject: "account", problem)
        }
        var expiresAfter: Int64?
        if let period {
            let ms = period.nanoseconds / 1_000_000
            guard ms > 0 else { throw LedgerError(.invalidArgument, subject: "period", "a subscription period must be positive") }
            expiresAfter = ms
        }
        let now = try nowMilliseconds()
        let path = databasePath
        return try LedgerError.mapping(path: path, doing: "recording a purchase") {
            try connection.withLock { db in
                try db.inTransaction {
                    // A clash of random 16-digit ids is astronomically rare; the UNIQUE constraint
                    // is the guarantee, and the loop makes a clash a retry, not a failure.
                    for _ in 0..<8 {
                        let id = String(UInt64.random(in: 1_000_000_000_000_000..<10_000_000_000_000_000))
                        let exists = try db.prepare("SELECT 1 FROM transactions WHERE transaction_id = ?")
                        try exists.bind(id, at: 1)
                        if try exists.step() { continue }
                        let payload = TransactionPayload(
                            transactionId: id, originalTransactionId: id, productId: productID, purchaseDate: now,
                            expiresDate: expiresAfter.map { now + $0 }, appAccountToken: account,
                            environment: StoreSimulator.environment,
                            type: expiresAfter == nil ? .nonConsumable : .autoRenewable, signedDate: now)
                        let jws = try JWS.sign(payload, key: privateKey, kid: publicKey.keyID)
                        let insert = try db.prepare(
                            "INSERT INTO transactions (transaction_id, account, product_id, jws) VALUES (?, ?, ?, ?)")
                        try insert.bind(id, at: 1)
                        try insert.bind(account, at: 2)
                        try insert.bind(productID, at: 3)
                        try insert.bind(jws, at: 4)
                        try insert.run()
                        return SignedTransaction(jws: jws)
                    }
                    throw LedgerError(.storage, subject: path, "could not draw an unused transaction id")
                }
            }
        }
    }

    /// Refunds transaction `transactionID`: signs it again with `revocationDate` now and
    /// `reason` (StoreKit: 0 other, 1 app issue), records that version and returns it.
    /// Refunding twice returns the first refund.
    public func refund(transactionID: String, reason: Int = 0) throws(LedgerError) -> SignedTransaction {
        if let problem = TransactionPayload.identifierProblem(transactionID) {
            throw LedgerError(.invalidArgument, subject: "transaction id", problem)
        }
        guard reason == 0 || reason == 1 else {
            throw LedgerError(.invalidArgument, subject: "revocation reason", "\(reason) is not 0 (other) or 1 (app issue)")
        }
        let now = try nowMilliseconds()
        let path = databasePath
        let verifier = try LedgerError.mapping(path: path, doing: "refunding") { try TransactionVerifier(publicKeys: [publicKey]) }
        return try LedgerError.mapping(path: path, doing: "recording a refund") {
            try connection.withLock { db in
                try db.inTransaction {
                    let select = try db.prepare("SELECT jws FROM transactions WHERE transaction_id = ?")
                    try select.bind(transactionID, at: 1)
                    guard try select.step(), let jws = select.string(at: 0) else {
                        throw LedgerError(.notFound, subject: "transaction id", "\(ErrorText.quoted(transactionID)) is not a transaction of this store")
                    }
                    var payload = try verifier.verify(SignedTransaction(jws: jws), source: "\(path) transaction \(transactionID)")
                    if payload.isRevoked { return SignedTransaction(jws: jws) }
                    payload.revocationDate = max(now, payload.purchaseDate)
                    payload.revocationReason = reason
                    payload.signedDate = max(now, payload.signedDate)
                    let revoked = try JWS.sign(payload, key: privateKey, kid: publicKey.keyID)
                    let update = try db.prepare("UPDATE transactions SET jws = ? WHERE transaction_id = ?")
                    try update.bind(revoked, at: 1)
                    try update.bind(transactionID, at: 2)
                    try update.run()
                    return SignedTransaction(jws: revoked)
                }
            }
        }
    }

    /// The latest signed version of every transaction of `account`, oldest purchase first
    /// (what `restore` imports). Cost: one indexed query.
    public func transactions(account: String) throws(LedgerError) -> [SignedTransaction] {
        if let problem = TransactionPayload.identifierProblem(account) {
            throw LedgerError(.invalidArgument, subject: "account", problem)
        }
        return try LedgerError.mapping(path: databasePath, doing: "listing transactions") {
            try connection.withLock { db in
                let select = try db.prepare("SELECT jws FROM transactions WHERE account = ? ORDER BY seq")
                try select.bind(account, at: 1)
                var out: [SignedTransaction] = []
                while try select.step() {
                    if let jws = select.string(at: 0) { out.append(SignedTransaction(jws: jws)) }
                }
                return out
            }
        }
    }

    private func nowMilliseconds() throws(LedgerError) -> Int64 {
        let seconds = clock.now()
        guard seconds.isFinite, seconds >= 0, seconds * 1000 < Double(TransactionPayload.maxDate) else {
            throw LedgerError(.invalidArgument, subject: "clock", "the time \(seconds) is outside 1970…9999")
        }
        return Int64(seconds * 1000)
    }
}
