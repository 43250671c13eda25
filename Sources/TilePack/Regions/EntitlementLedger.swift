#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePackCore
import TilePackSQLite
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One product the account may use now, derived from a verified transaction.
/// JSON (`tilepack store entitlements --json`): `product_id`, `type`, `transaction_id`,
/// `original_transaction_id`, `purchase_date`, `expires_date` (ms since 1970 UTC; `null` for
/// a purchase that does not expire).
public struct Entitlement: Codable, Sendable, Hashable {
    public var productID: String
    /// StoreKit's product type the App Store signed (must match the catalog's kind).
    public var type: AppStoreProductType
    public var transactionID: String
    public var originalTransactionID: String
    public var purchaseDate: Date
    /// Nil for a purchase that does not expire.
    public var expiresDate: Date?

    public init(
        productID: String, type: AppStoreProductType, transactionID: String, originalTransactionID: String,
        purchaseDate: Date, expiresDate: Date?
    ) {
        self.productID = productID
        self.type = type
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
    }

    init(_ t: LedgerTransaction) {
        self.init(
            productID: t.productID, type: t.type, transactionID: t.transactionID,
            originalTransactionID: t.originalTransactionID, purchaseDate: Date(appStoreMilliseconds: t.purchaseDate),
            expiresDate: t.expiresDate.map(Date.init(appStoreMilliseconds:)))
    }

    enum CodingKeys: String, CodingKey {
        case productID = "product_id", type, transactionID = "transaction_id"
        case originalTransactionID = "original_transaction_id"
        case purchaseDate = "purchase_date", expiresDate = "expires_date"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(productID, forKey: .productID)
        try c.encode(type, forKey: .type)
        try c.encode(transactionID, forKey: .transactionID)
        try c.encode(originalTransactionID, forKey: .originalTransactionID)
        try c.encode(purchaseDate.appStoreMilliseconds, forKey: .purchaseDate)
        try c.encodeOrNull(expiresDate?.appStoreMilliseconds, forKey: .expiresDate)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        productID = try c.decode(String.self, forKey: .productID)
        type = try c.decode(AppStoreProductType.self, forKey: .type)
        transactionID = try c.decode(String.self, forKey: .transactionID)
        originalTransactionID = try c.decode(String.self, forKey: .originalTransactionID)
        guard let purchased = try c.decodeAppStoreDate(forKey: .purchaseDate) else {
            throw DecodingError.valueNotFound(
                Date.self,
                .init(codingPath: c.codingPath + [CodingKeys.purchaseDate], debugDescription: "no purchase_date"))
        }
        purchaseDate = purchased
        expiresDate = try c.decodeAppStoreDate(forKey: .expiresDate)
    }
}

/// A verified transaction with every field the ledger needs present: what a JWS the
/// ``AppStoreVerifier`` accepted becomes once ``init(_:jws:source:)`` has checked that
/// nothing the entitlement rests on is missing.
struct LedgerTransaction: Sendable, Equatable {
    var jws: String
    var transactionID: String
    var originalTransactionID: String
    var productID: String
    var account: String
    var type: AppStoreProductType
    var purchaseDate: Int64
    var expiresDate: Int64?
    var revocationDate: Int64?
    var signedDate: Int64

    init(_ t: AppStoreTransaction, jws: String, source: String) throws(AppStoreVerificationError) {
        func need<T>(_ value: T?, _ name: String) throws(AppStoreVerificationError) -> T {
            guard let value else {
                throw AppStoreVerificationError(.malformed, source: source, "the transaction has no \(name)")
            }
            return value
        }
        self.jws = jws
        transactionID = try need(t.transactionId, "transactionId")
        originalTransactionID = try need(t.originalTransactionId, "originalTransactionId")
        productID = try need(t.productId, "productId")
        account = try need(t.appAccountToken, "appAccountToken")
        type = try need(t.type, "type")
        purchaseDate = try need(t.purchaseDate, "purchaseDate").appStoreMilliseconds
        signedDate = try need(t.signedDate, "signedDate").appStoreMilliseconds
        expiresDate = t.expiresDate?.appStoreMilliseconds
        revocationDate = t.revocationDate?.appStoreMilliseconds
        for (name, value) in [
            ("transactionId", transactionID), ("originalTransactionId", originalTransactionID),
            ("productId", productID), ("appAccountToken", account),
        ] {
            if let problem = AccountToken.problem(value) {
                throw AppStoreVerificationError(.malformed, source: source, "\(name) \(problem)")
            }
        }
        if type == .autoRenewable, expiresDate == nil {
            throw AppStoreVerificationError(.malformed, source: source, "a subscription transaction has no expiresDate")
        }
    }

    var isRevoked: Bool { revocationDate != nil }

    /// The latest date the store vouched for in this payload.
    var latestSignedTime: Int64 { max(signedDate, purchaseDate, revocationDate ?? 0) }

    /// Whether this version should replace `held`, another verified version of the same
    /// transaction: a revocation beats a purchase, then the later signature. A refund is
    /// never undone by putting an older signed copy back.
    func supersedes(_ held: LedgerTransaction) -> Bool {
        if isRevoked != held.isRevoked { return isRevoked }
        return signedDate > held.signedDate
    }

    /// The column values of its ledger row, in ``EntitlementLedger/columns`` order.
    var columns: [String?] {
        [
            transactionID, originalTransactionID, productID, account, type.rawValue, String(purchaseDate),
            expiresDate.map { String($0) }, revocationDate.map { String($0) }, String(signedDate), jws,
        ]
    }
}

/// A ledger row that was not counted, and why.
package struct RejectedLedgerRow: Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        /// The JWS failed the App Store checks (``verification`` says which).
        case unverified
        /// A verified transaction of another account.
        case otherAccount
        /// The row's columns say something the signed payload does not (an edited column).
        case columnMismatch
    }

    /// SQLite's rowid of the row.
    public var rowID: Int
    /// The `transaction_id` column as stored (may itself be what was edited).
    public var storedTransactionID: String?
    public var reason: Reason
    /// For ``Reason/unverified``: the verifier's reason (`chain`, `signature`, `bundle`, …).
    public var verification: AppStoreVerificationError.Reason?
    public var detail: String

    public var description: String {
        let why = verification.map { "\(reason.rawValue) (\($0.rawValue))" } ?? reason.rawValue
        return
            """
            row \(rowID) (transaction \(storedTransactionID.map(ErrorText.quoted) ?? "NULL")): \(why): \
            \(ErrorText.oneLine(detail))
            """
    }
}

/// What the ledger derived for one account at one moment: the entitlements, the rows it
/// refused to count, and whether the clock looks set back.
package struct LedgerReport: Sendable, Equatable {
    public var account: String
    /// The time asked about, ms since 1970.
    public var now: Int64
    public var entitlements: [Entitlement]
    public var rejected: [RejectedLedgerRow]
    /// `now` is before the latest time this device has seen or the store has vouched for:
    /// subscriptions count as expired.
    public var clockRolledBack: Bool
    /// The rollback reference (ms): the latest of the device-observed clock and every
    /// verified signed date.
    public var watermark: Int64
    /// Transactions that verified for this account (counted or not: revoked and expired too).
    public var verifiedTransactions: Int
    /// Subscriptions that ended (not revoked), the latest-ending per product: what they bought
    /// stays bought — the pack versions released before their signed `expiresDate`. Decided
    /// from signed dates alone, so a rolled-back clock changes nothing here.
    public var lapsed: [Entitlement] = []

    /// One line per problem, empty when the ledger is clean: `clock rolled back …` and each rejected row.
    public var problems: [String] {
        var lines: [String] = []
        if clockRolledBack {
            lines.append(
                """
                clock rolled back: now \(now) ms is before \(watermark) ms, the latest time this device has seen; \
                subscriptions are treated as expired
                """
            )
        }
        lines += rejected.map(\.description)
        return lines
    }
}

/// What importing signed transactions changed.
public struct LedgerImportSummary: Sendable, Equatable {
    /// Transactions the ledger did not have.
    public var inserted = 0
    /// Transactions replaced by a newer signed version (a refund) or repairing a damaged row.
    public var replaced = 0
    /// Transactions already held as given (re-imports, restores).
    public var unchanged = 0
    public init(inserted: Int = 0, replaced: Int = 0, unchanged: Int = 0) {
        self.inserted = inserted
        self.replaced = replaced
        self.unchanged = unchanged
    }
}

/// The device's record of purchases: the App Store's signed transactions (ES256, `x5c` to a
/// pinned root), kept in their own SQLite file, from which entitlements are DERIVED on every
/// read. Nothing in the file is trusted: each row's JWS is verified with the app's
/// ``AppStoreVerifier`` (chain to the pinned root, signature, bundle id, environment), its
/// columns must agree with the signed payload, and it must belong to the account asked about;
/// a row that fails is reported in ``LedgerReport/rejected`` and never counted. Editing the
/// file by hand — any table, any column — therefore grants nothing; putting back an older
/// signed copy of a refunded transaction is undone as soon as the store is reachable (the
/// store's versions, imported or held in memory with ``overlay(_:source:)``, win: a
/// revocation always beats a purchase), and never fools an instance that has already verified
/// the revocation (it keeps every revocation it saw in memory).
///
/// Time: `meta.observed_ms` is the latest wall-clock time the device has seen (raised on every
/// use, never lowered by the ledger); with the newest signed date of any verified row it is
/// the rollback reference: a clock earlier than it (beyond ``clockTolerance``) expires every
/// subscription. Deleting `meta` or rows lowers it at most to the newest signed date still
/// present.
///
/// File: default `$XDG_DATA_HOME/tilepack/ledger.sqlite`, else
/// `~/.local/share/tilepack/ledger.sqlite`. WAL; every change one `BEGIN IMMEDIATE`
/// transaction; a 10 s busy timeout, so several processes may import at once. Opened
/// ``OpenMode/readOnly``, nothing is written and no write access is needed (a WAL ledger on
/// a read-only file system without its `-wal`/`-shm` files opens immutable).
///
/// Threads: Sendable; calls on one instance share one connection under a lock.
/// Cost: the first read after a change verifies every row (one ES256 verification each,
/// the chain cached per certificate pair); later reads reuse the verified rows while
/// `PRAGMA data_version` is unchanged, and the last answer while `now` crosses no expiry or
/// rollback boundary.
public final class EntitlementLedger: Sendable {
    public static let schemaVersion = "2"
    /// Slack for clocks: the store's signed dates come from another machine's clock.
    public static let clockTolerance: Int64 = 5 * 60 * 1000

    public enum OpenMode: Sendable, Equatable {
        /// Read and write, creating the file when missing.
        case readWrite
        /// Never writes; a missing file is an empty ledger.
        case readOnly
        /// As ``readWrite``, and a ledger of an earlier tilepack is emptied (keeping its
        /// account) so that a restore can fill it again: what `store restore` opens.
        case upgradingLegacy
    }

    public let path: String
    /// The device's account: given, or the one stored in the ledger, or a new random one
    /// (``accountWasDrawn``).
    public let account: String
    /// True when this open drew a new random account (a fresh ledger without `--account`).
    public let accountWasDrawn: Bool
    public let verifier: AppStoreVerifier
    public let clock: any RegionClock
    public let mode: OpenMode
    private let state: Locked<State>
    private let memo = Locked<ReportMemo?>(nil)

    private struct ReportMemo {
        var token: ChangeToken
        var account: String
        var validFrom: Int64
        var validUntil: Int64
        var report: LedgerReport
    }

    /// Changes whenever what the ledger derives may change: another connection's commit
    /// (`data_version`), our own commits and overlays (`generation`).
    public struct ChangeToken: Sendable, Equatable, Hashable {
        var dataVersion: Int
        var generation: Int
    }

    private struct VerifiedRow {
        var rowID: Int
        var transaction: LedgerTransaction
    }

    /// What verifying the file gave, valid while neither we nor another connection write.
    private struct Snapshot {
        var token: ChangeToken
        var verified: [VerifiedRow]
        var rejected: [RejectedLedgerRow]
        var watermark: Int64
    }

    private struct State {
        /// nil: a read-only open of a ledger that does not exist (an empty ledger).
        let db: SQLiteConnection?
        /// `PRAGMA data_version`, prepared once: the cache check on every read.
        let dataVersion: SQLiteStatement?
        /// Bumped by our own commits and overlays, which `data_version` does not count.
        var generation = 0
        var snapshot: Snapshot?
        /// Verified versions held in memory, by transaction id: the store's (``overlay(_:source:)``,
        /// for read-only opens) and every revocation this instance has verified, so that a refund
        /// once seen is not undone by an older signed copy put back in the file while it runs.
        var overlay: [String: LedgerTransaction] = [:]
    }

    /// `$XDG_DATA_HOME/tilepack/ledger.sqlite`, else `~/.local/share/tilepack/ledger.sqlite`.
    public static func defaultPath() -> String { RegionFiles.dataDirectory() + "/ledger.sqlite" }

    static let columns =
        """
        transaction_id, original_transaction_id, product_id, account, type, purchase_date, expires_date, \
        revocation_date, signed_date, jws
        """

    /// Longer values are never read whole: a row holding one is cut here, which no signed
    /// payload matches (a token is at most ``AppStoreVerifier/maxCompactLength``), so it is
    /// rejected without this process allocating what the file's owner wrote into it.
    static let maxValueBytes = AppStoreVerifier.maxCompactLength + 1

    /// ``columns`` as a SELECT list whose values are cut at ``maxValueBytes``.
    static let cappedColumns = columns.split(separator: ",")
        .map { "substr(\($0.trimmingPrefix(" ")), 1, \(maxValueBytes))" }.joined(separator: ", ")

    /// Opens the ledger at `path` (default ``defaultPath()``), verifying transactions with
    /// `verifier`. ``OpenMode/readWrite`` also records the current time as observed.
    /// - Throws: ``LedgerError`` (`legacyLedger` for an earlier tilepack's ledger, except
    ///   when `mode` is ``OpenMode/upgradingLegacy``).
    public init(
        path: String? = nil, verifier: AppStoreVerifier, account: String? = nil,
        clock: any RegionClock = SystemRegionClock(), mode: OpenMode = .readWrite
    ) throws {
        let resolved = path ?? EntitlementLedger.defaultPath()
        self.path = resolved
        self.clock = clock
        self.verifier = verifier
        self.mode = mode
        if let account, let problem = AccountToken.problem(account) {
            throw LedgerError(.invalidArgument, subject: "account", problem)
        }
        let opened: (SQLiteConnection?, String, Bool) = try LedgerError.mapping(
            path: resolved, doing: "opening the ledger"
        ) {
            if mode == .readOnly {
                return try EntitlementLedger.openReadOnly(path: resolved, account: account)
            }
            if path == nil, let slash = resolved.lastIndex(of: "/") {
                try RegionFiles.makeDirectories(String(resolved[..<slash]))
            }
            let (db, stored, drawn) = try EntitlementLedger.open(
                path: resolved, account: account, upgrade: mode == .upgradingLegacy)
            return (db, stored, drawn)
        }
        self.account = opened.1
        self.accountWasDrawn = opened.2
        let dataVersion = try LedgerError.mapping(path: resolved, doing: "opening the ledger") {
            try opened.0?.prepare("PRAGMA data_version")
        }
        state = Locked(State(db: opened.0, dataVersion: dataVersion))
        if mode != .readOnly { try observe() }
    }

    /// Read-only: the file if it exists (immutable when its file system is read-only and the
    /// `-shm` is missing), else nothing. Never creates, never writes.
    private static func openReadOnly(path: String, account: String?) throws -> (SQLiteConnection?, String, Bool) {
        guard access(path, F_OK) == 0 else {
            return (nil, account ?? AccountToken.random(), account == nil)
        }
        var db = try SQLiteConnection(path: path, mode: .readOnly)
        do {
            try db.execute("PRAGMA busy_timeout = 10000")
            _ = try storedSchema(db)
        } catch let error as SQLiteError where error.code ~= .cantOpen || error.code ~= .readOnly {
            // A WAL database whose -shm cannot be created (a read-only mount): nothing can
            // change it there, so read it as immutable.
            db = try SQLiteConnection(path: path, mode: .readOnlyImmutable)
        }
        let (version, stored) = try storedSchema(db)
        guard version == schemaVersion else { throw legacyError(path: path, version: version) }
        guard let stored = account ?? stored else {
            throw LedgerError(.storage, subject: path, "meta has no account")
        }
        return (db, stored, false)
    }

    private static func storedSchema(_ db: SQLiteConnection) throws -> (String?, String?) {
        let hasMeta = try db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
        guard try hasMeta.step() else { return (nil, nil) }
        let select = try db.prepare(
            "SELECT key, substr(value, 1, 256) FROM meta WHERE key IN ('schema_version', 'account')")
        var version: String?, account: String?
        while try select.step() {
            if select.string(at: 0) == "schema_version" {
                version = select.string(at: 1)
            } else {
                account = select.string(at: 1)
            }
        }
        if let account, AccountToken.problem(account) != nil {
            throw LedgerError(.storage, subject: db.path, "meta account is not a valid account id")
        }
        return (version, account)
    }

    private static func legacyError(path: String, version: String?) -> LedgerError {
        if version == "1" {
            return LedgerError(
                .legacyLedger, subject: path,
                "written by an earlier tilepack (Ed25519-signed transactions): run tilepack store restore")
        }
        return LedgerError(
            .storage, subject: path,
            "ledger schema version \(version.map(ErrorText.quoted) ?? "missing") is not \(schemaVersion)",
            storageCategory: .unsupported)
    }

    private static func open(path: String, account: String?, upgrade: Bool) throws -> (SQLiteConnection, String, Bool) {
        var attempt = 0
        while true {
            do {
                let db = try SQLiteConnection(path: path, mode: .readWriteCreate)
                try db.execute("PRAGMA busy_timeout = 10000")
                let result = try db.inTransaction { () throws -> (String, Bool) in
                    try db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                    let (found, stored) = try storedSchema(db)
                    if let found, found != schemaVersion {
                        guard upgrade, found == "1" else { throw legacyError(path: path, version: found) }
                        // The Ed25519 rows cannot be verified any more: the store re-issues them.
                        try db.execute("DROP TABLE IF EXISTS transactions; DELETE FROM meta WHERE key <> 'account'")
                    }
                    try db.execute(
                        """
                        CREATE TABLE IF NOT EXISTS transactions (
                            transaction_id TEXT PRIMARY KEY,
                            original_transaction_id TEXT NOT NULL,
                            product_id TEXT NOT NULL,
                            account TEXT NOT NULL,
                            type TEXT NOT NULL,
                            purchase_date INTEGER NOT NULL,
                            expires_date INTEGER,
                            revocation_date INTEGER,
                            signed_date INTEGER NOT NULL,
                            jws TEXT NOT NULL);
                        INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', '\(schemaVersion)');
                        """)
                    if let account { return (account, stored == nil) }
                    if let stored { return (stored, false) }
                    let drawn = AccountToken.random()
                    let insert = try db.prepare("INSERT INTO meta (key, value) VALUES ('account', ?)")
                    try insert.bind(drawn, at: 1)
                    try insert.run()
                    return (drawn, true)
                }
                if let account, result.1 {
                    // The first account a ledger is opened with is its own (a later open
                    // without --account restores into the same one).
                    let insert = try db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('account', ?)")
                    try insert.bind(account, at: 1)
                    try insert.run()
                    return (db, account, false)
                }
                return (db, result.0, result.1)
            } catch let error as SQLiteError where error.code ~= .busy && attempt < 5 {
                // Switching a fresh file to WAL takes an exclusive lock that a second opener
                // of the same new file may not get at once.
                attempt += 1
                usleep(useconds_t(50_000 * attempt))
            }
        }
    }

    // MARK: Time

    /// Raises `meta.observed_ms` to the clock's now (never lowers it). Read-only: nothing.
    public func observe() throws {
        guard mode != .readOnly else { return }
        let now = try nowMilliseconds(clock.now())
        try LedgerError.mapping(path: path, doing: "recording the time") {
            try state.withLock { state in
                guard let db = state.db else { return }
                try db.inTransaction {
                    try Self.raiseObserved(db, to: now)
                }
                state.generation += 1
            }
        }
    }

    /// For read-only commands: raises the observed time in the ledger at `path` if the file
    /// exists and can be written, and does nothing otherwise (a read-only file system, a
    /// locked file). The only write a read-only command attempts, and it never creates.
    public static func recordObservedTime(path: String, now: Date) {
        guard access(path, W_OK) == 0, now.isInAppStoreRange else { return }
        guard let db = try? SQLiteConnection(path: path, mode: .readWriteExisting) else { return }
        try? db.execute("PRAGMA busy_timeout = 200")
        try? db.inTransaction { try raiseObserved(db, to: now.appStoreMilliseconds) }
    }

    private static func raiseObserved(_ db: SQLiteConnection, to now: Int64) throws {
        let update = try db.prepare(
            """
            INSERT INTO meta (key, value) VALUES ('observed_ms', ?1)
            ON CONFLICT (key) DO UPDATE SET value = CAST(MAX(CAST(value AS INTEGER), CAST(?1 AS INTEGER)) AS TEXT)
            """)
        try update.bind(String(now), at: 1)
        try update.run()
    }

    // MARK: The catalog this device accepted

    /// The highest catalog serial this ledger has accepted and that catalog's JWS (the
    /// device's "last trusted catalog", re-verified by whoever uses it), or nil.
    public func acceptedCatalog() -> (serial: Int64, jws: String)? {
        state.withLock { state -> (Int64, String)? in
            guard let db = state.db,
                let select = try? db.prepare(
                    """
                    SELECT key, substr(value, 1, \(SignedCatalog.maxFileBytes)) FROM meta WHERE key IN \
                    ('catalog_serial', 'catalog_jws')
                    """
                )
            else { return nil }
            var serial: Int64?, jws: String?
            while (try? select.step()) == true {
                if select.string(at: 0) == "catalog_serial" {
                    serial = select.string(at: 1).flatMap { Int64($0) }
                } else {
                    jws = select.string(at: 1)
                }
            }
            guard let serial, let jws else { return nil }
            return (serial, jws)
        }
    }

    /// Records a verified catalog when its serial is at least the one held (read-only: nothing).
    public func recordAcceptedCatalog(serial: Int64, jws: String) throws {
        guard mode != .readOnly else { return }
        if let held = acceptedCatalog(), held.serial > serial || (held.serial == serial && held.jws == jws) { return }
        try LedgerError.mapping(path: path, doing: "recording the catalog") {
            try state.withLock { state in
                guard let db = state.db else { return }
                try db.inTransaction {
                    let write = try db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)")
                    for (key, value) in [("catalog_serial", String(serial)), ("catalog_jws", jws)] {
                        try write.bind(key, at: 1)
                        try write.bind(value, at: 2)
                        try write.run()
                        write.reset()
                    }
                }
                state.generation += 1
            }
        }
    }

    // MARK: Importing

    /// Verifies every blob first (any failure throws before writing), then records them all
    /// in one transaction (idempotent by `transactionId`): a new transaction is inserted; a
    /// signed revocation replaces a purchase; an unrevoked copy never replaces a revoked one;
    /// the same blob again changes nothing (but repairs edited columns).
    /// - Throws: ``LedgerError/Code/rejected`` for a blob that does not verify; nothing is
    ///   written then. Read-only ledgers refuse (``LedgerError/Code/storage``).
    /// - Cost: one ES256 verification per blob (and per replaced row), one commit.
    @discardableResult
    public func `import`(
        signed batch: [String], source: String = "signed transaction"
    ) throws -> LedgerImportSummary {
        let verified = try verify(batch, source: source)
        guard mode != .readOnly else {
            throw LedgerError(
                .storage, subject: path, "opened read-only: cannot record transactions",
                storageCategory: .invalidArgument)
        }
        let verifier = verifier
        return try LedgerError.mapping(path: path, doing: "importing transactions") {
            try state.withLock { state in
                guard let db = state.db else { return LedgerImportSummary() }
                let summary = try db.inTransaction { () throws -> LedgerImportSummary in
                    var summary = LedgerImportSummary()
                    for transaction in verified {
                        try EntitlementLedger.record(transaction, db: db, verifier: verifier, summary: &summary)
                    }
                    return summary
                }
                for transaction in verified { Self.remember(transaction, in: &state) }
                state.generation += 1
                return summary
            }
        }
    }

    /// Holds the store's current versions of transactions in memory, as if imported, for a
    /// ledger that cannot be written (read-only commands): a revocation the store knows of
    /// counts even when the file says otherwise. Verified like an import.
    public func overlay(_ batch: [String], source: String = "store transaction") throws {
        let verified = try verify(batch, source: source)
        state.withLock { state in
            for t in verified where state.overlay[t.transactionID].map({ t.supersedes($0) }) ?? true {
                state.overlay[t.transactionID] = t
            }
            state.generation += 1
        }
    }

    /// Keeps a verified revocation in memory (when it supersedes what is held there).
    private static func remember(_ t: LedgerTransaction, in state: inout State) {
        guard t.isRevoked, state.overlay[t.transactionID].map({ t.supersedes($0) }) ?? true else { return }
        state.overlay[t.transactionID] = t
    }

    private func verify(_ batch: [String], source: String) throws(LedgerError) -> [LedgerTransaction] {
        var out: [LedgerTransaction] = []
        for (index, jws) in batch.enumerated() {
            let origin = batch.count == 1 ? source : "\(source) \(index + 1)"
            do {
                out.append(
                    try LedgerTransaction(verifier.verifyTransaction(jws, source: origin), jws: jws, source: origin))
            } catch let error as AppStoreVerificationError {
                throw LedgerError(error)
            } catch {
                throw LedgerError(.rejected, subject: origin, "\(error)", cause: error)
            }
        }
        return out
    }

    private static func record(
        _ t: LedgerTransaction, db: SQLiteConnection, verifier: AppStoreVerifier,
        summary: inout LedgerImportSummary
    ) throws {
        let select = try db.prepare("SELECT \(cappedColumns) FROM transactions WHERE transaction_id = ?")
        try select.bind(t.transactionID, at: 1)
        var winner = t
        let exists = try select.step()
        if exists {
            let stored = (0..<10).map { select.string(at: Int32($0)) }
            select.reset()
            if let jws = stored[9], jws != t.jws,
                let verified = try? verifier.verifyTransaction(jws, source: "ledger"),
                let held = try? LedgerTransaction(verified, jws: jws, source: "ledger"),
                held.transactionID == t.transactionID, !t.supersedes(held)
            {
                winner = held
            }
            if stored == winner.columns {
                summary.unchanged += 1
                return
            }
            summary.replaced += 1
        } else {
            summary.inserted += 1
        }
        // UPDATE in place when the row exists, so its rowid (and a restore's result) stays the same.
        let write =
            exists
            ? try db.prepare(
                """
                UPDATE transactions SET transaction_id = ?1, original_transaction_id = ?2, product_id = ?3, account = ?4,
                    type = ?5, purchase_date = ?6, expires_date = ?7, revocation_date = ?8, signed_date = ?9, jws = ?10
                WHERE transaction_id = ?1
                """)
            : try db.prepare("INSERT INTO transactions (\(columns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)")
        for (index, value) in winner.columns.enumerated() {
            try write.bind(value, at: Int32(index + 1))
        }
        // Dates as integers, so the column types match what a reader compares.
        try write.bind(Int(winner.purchaseDate), at: 6)
        if let e = winner.expiresDate { try write.bind(Int(e), at: 7) }
        if let r = winner.revocationDate { try write.bind(Int(r), at: 8) }
        try write.bind(Int(winner.signedDate), at: 9)
        try write.run()
        // The newest signed date is the floor of the rollback reference.
        try raiseObserved(db, to: winner.latestSignedTime)
    }

    // MARK: Deriving entitlements

    /// What changes when the ledger's answers may change: cheap (one pragma step under a lock).
    public func changeToken() throws -> ChangeToken {
        try LedgerError.mapping(path: path, doing: "reading the ledger") {
            try state.withLock { state in try Self.token(&state) }
        }
    }

    private static func token(_ state: inout State) throws -> ChangeToken {
        guard let version = state.dataVersion else { return ChangeToken(dataVersion: 0, generation: state.generation) }
        defer { version.reset() }
        return ChangeToken(dataVersion: try version.step() ? version.int(at: 0) : -1, generation: state.generation)
    }

    /// Entitlements of `account` (default: the ledger's) at `now` (default: the clock), with
    /// every row not counted and the clock check.
    package func report(account: String? = nil, now: Date? = nil) throws(LedgerError) -> LedgerReport {
        let account = account ?? self.account
        let nowMs = try nowMilliseconds(now ?? clock.now())
        let (snapshot, overlay) = try currentSnapshot()
        if let hit = memo.withLock({ memo -> LedgerReport? in
            guard let memo, memo.token == snapshot.token, memo.account == account,
                memo.validFrom <= nowMs, nowMs < memo.validUntil
            else { return nil }
            return memo.report
        }) {
            var report = hit
            report.now = nowMs
            return report
        }
        var rejected = snapshot.rejected
        // The strongest verified version per transaction: the file's rows and the store's
        // versions held in memory; revoked beats unrevoked, then the later signature.
        var latest: [String: LedgerTransaction] = [:]
        var watermark = snapshot.watermark
        for row in snapshot.verified {
            let t = row.transaction
            guard t.account == account else {
                rejected.append(
                    RejectedLedgerRow(
                        rowID: row.rowID, storedTransactionID: t.transactionID, reason: .otherAccount,
                        detail: "signed for another account, not \(ErrorText.quoted(account))"))
                continue
            }
            if let held = latest[t.transactionID], !t.supersedes(held) { continue }
            latest[t.transactionID] = t
        }
        for t in overlay.values where t.account == account {
            watermark = max(watermark, t.latestSignedTime)
            if let held = latest[t.transactionID], !t.supersedes(held) { continue }
            latest[t.transactionID] = t
        }
        let rolledBack = nowMs + Self.clockTolerance < watermark
        // Valid for every `now` on the same side of the rollback line and of each expiry.
        var validFrom = Int64.min, validUntil = Int64.max
        if rolledBack {
            validUntil = watermark - Self.clockTolerance
        } else {
            validFrom = watermark - Self.clockTolerance
        }
        var best: [String: LedgerTransaction] = [:]
        var lapsed: [String: LedgerTransaction] = [:]
        for t in latest.values where !t.isRevoked {
            if let expires = t.expiresDate {
                if nowMs >= expires {
                    validFrom = max(validFrom, expires)
                } else {
                    validUntil = min(validUntil, expires)
                }
                if rolledBack || nowMs >= expires {
                    if (lapsed[t.productID]?.expiresDate ?? .min) < expires { lapsed[t.productID] = t }
                    continue
                }
            }
            if let held = best[t.productID] {
                // Prefer the one that lasts longest (nil: forever), then the earlier purchase.
                let heldEnd = held.expiresDate ?? .max, end = t.expiresDate ?? .max
                if heldEnd > end || (heldEnd == end && held.purchaseDate <= t.purchaseDate) { continue }
            }
            best[t.productID] = t
        }
        let report = LedgerReport(
            account: account, now: nowMs,
            entitlements: best.values.map(Entitlement.init).sorted { $0.productID < $1.productID },
            rejected: rejected.sorted { $0.rowID < $1.rowID }, clockRolledBack: rolledBack,
            watermark: watermark, verifiedTransactions: latest.count,
            lapsed: lapsed.values.map(Entitlement.init).sorted { $0.productID < $1.productID })
        memo.withLock {
            $0 = ReportMemo(
                token: snapshot.token, account: account, validFrom: validFrom, validUntil: validUntil, report: report)
        }
        return report
    }

    /// The products `account` may use at `now` (defaults as in ``report(account:now:)``).
    public func entitlements(account: String? = nil, now: Date? = nil) throws -> [Entitlement] {
        try report(account: account, now: now).entitlements
    }

    /// The signed token (JWS) of transaction `id` of this ledger's account as the ledger holds
    /// it now: the strongest verified version (a revocation beats a purchase, then the later
    /// signature), from the file's rows or the store's versions held in memory; nil when no
    /// verified version exists. What a device presents to a pack server (`Authorization: Bearer`).
    /// - Cost: as ``report(account:now:)`` when the ledger changed; a dictionary scan otherwise.
    public func signedTransaction(id: String) throws -> String? {
        let (snapshot, overlay) = try currentSnapshot()
        var best: LedgerTransaction?
        for t in snapshot.verified.map(\.transaction) + Array(overlay.values)
        where t.transactionID == id && t.account == account {
            if let held = best, !t.supersedes(held) { continue }
            best = t
        }
        return best?.jws
    }

    private func nowMilliseconds(_ date: Date) throws(LedgerError) -> Int64 {
        guard date.isInAppStoreRange else {
            throw LedgerError(
                .invalidArgument, subject: "clock", "the time \(date.timeIntervalSince1970) is outside 1970…9999")
        }
        return date.appStoreMilliseconds
    }

    private func currentSnapshot() throws(LedgerError) -> (Snapshot, [String: LedgerTransaction]) {
        let verifier = verifier
        let path = path
        return try LedgerError.mapping(path: path, doing: "reading the ledger") {
            try state.withLock { state in
                let token = try Self.token(&state)
                if let cached = state.snapshot, cached.token == token { return (cached, state.overlay) }
                guard let db = state.db else {
                    let empty = Snapshot(token: token, verified: [], rejected: [], watermark: 0)
                    state.snapshot = empty
                    return (empty, state.overlay)
                }
                // One read transaction: rows and the observed time from the same commit.
                try db.execute("BEGIN")
                defer { db.rollbackQuietly() }
                var verified: [VerifiedRow] = []
                var rejected: [RejectedLedgerRow] = []
                // A garbled observed time is ignored: the verified rows below set the floor.
                var watermark: Int64 = 0
                if let select = try? db.prepare("SELECT substr(value, 1, 32) FROM meta WHERE key = 'observed_ms'"),
                    (try? select.step()) == true, let text = select.string(at: 0), let value = Int64(text)
                {
                    watermark = value
                }
                let select = try db.prepare(
                    "SELECT rowid, \(EntitlementLedger.cappedColumns) FROM transactions ORDER BY rowid")
                while try select.step() {
                    let rowID = select.int(at: 0)
                    let stored = (1...10).map { select.string(at: Int32($0)) }
                    let source = "\(path) row \(rowID)"
                    let transaction: LedgerTransaction
                    do throws(AppStoreVerificationError) {
                        guard let jws = stored[9] else {
                            throw AppStoreVerificationError(.malformed, source: source, "no jws")
                        }
                        let verified = try AppStoreVerificationError.typed({
                            try verifier.verifyTransaction(jws, source: source)
                        }) { AppStoreVerificationError(.malformed, source: source, "\($0)") }
                        transaction = try LedgerTransaction(verified, jws: jws, source: source)
                    } catch {
                        rejected.append(
                            RejectedLedgerRow(
                                rowID: rowID, storedTransactionID: stored[0], reason: .unverified,
                                verification: error.code, detail: error.explanation))
                        continue
                    }
                    let names = EntitlementLedger.columns.split(separator: ",").map { $0.trimmingPrefix(" ") }
                    if let differing = zip(names, zip(stored, transaction.columns)).first(where: { $0.1.0 != $0.1.1 }) {
                        rejected.append(
                            RejectedLedgerRow(
                                rowID: rowID, storedTransactionID: stored[0], reason: .columnMismatch,
                                detail:
                                    """
                                    column \(differing.0) is \(differing.1.0.map(ErrorText.quoted) ?? "NULL"), \
                                    the signed payload says \(differing.1.1.map(ErrorText.quoted) ?? "NULL")
                                    """
                            ))
                        continue
                    }
                    watermark = max(watermark, transaction.latestSignedTime)
                    verified.append(VerifiedRow(rowID: rowID, transaction: transaction))
                    Self.remember(transaction, in: &state)
                }
                let snapshot = Snapshot(token: token, verified: verified, rejected: rejected, watermark: watermark)
                state.snapshot = snapshot
                return (snapshot, state.overlay)
            }
        }
    }
}
