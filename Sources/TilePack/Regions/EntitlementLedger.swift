import TilePackCore
import TilePackSQLite
import Synchronization

/// One product the account may use now, derived from a verified transaction.
/// JSON (`tilepack store entitlements --json`): `product_id`, `transaction_id`,
/// `original_transaction_id`, `purchase_date`, `expires_date` (ms since 1970 UTC; `null` for
/// a purchase that does not expire).
public struct Entitlement: Codable, Sendable, Hashable {
    public var productID: String
    public var transactionID: String
    public var originalTransactionID: String
    public var purchaseDate: Int64
    public var expiresDate: Int64?

    public init(productID: String, transactionID: String, originalTransactionID: String, purchaseDate: Int64, expiresDate: Int64?) {
        self.productID = productID
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.purchaseDate = purchaseDate
        self.expiresDate = expiresDate
    }

    init(_ payload: TransactionPayload) {
        self.init(productID: payload.productId, transactionID: payload.transactionId,
                  originalTransactionID: payload.originalTransactionId, purchaseDate: payload.purchaseDate,
                  expiresDate: payload.expiresDate)
    }

    enum CodingKeys: String, CodingKey {
        case productID = "product_id", transactionID = "transaction_id"
        case originalTransactionID = "original_transaction_id"
        case purchaseDate = "purchase_date", expiresDate = "expires_date"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(productID, forKey: .productID)
        try c.encode(transactionID, forKey: .transactionID)
        try c.encode(originalTransactionID, forKey: .originalTransactionID)
        try c.encode(purchaseDate, forKey: .purchaseDate)
        try c.encodeOrNull(expiresDate, forKey: .expiresDate)
    }
}

/// A ledger row that was not counted, and why.
public struct RejectedLedgerRow: Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Equatable {
        /// Not a well-formed JWS, or the signed payload is not a sound transaction.
        case malformed
        /// Signed by a key we do not hold (or no kid).
        case unknownKey
        /// `alg` other than EdDSA (`none` included).
        case badAlgorithm
        /// The signature does not verify: the header or payload was edited, or the signature.
        case badSignature
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
    public var detail: String

    public var description: String {
        "row \(rowID) (transaction \(storedTransactionID.map(ErrorText.quoted) ?? "NULL")): \(reason.rawValue): \(ErrorText.oneLine(detail))"
    }
}

/// What the ledger derived for one account at one moment: the entitlements, the rows it
/// refused to count, and whether the clock looks set back.
public struct LedgerReport: Sendable, Equatable {
    public var account: String
    /// The time asked about, ms since 1970.
    public var now: Int64
    public var entitlements: [Entitlement]
    public var rejected: [RejectedLedgerRow]
    /// `now` is before the latest time the store has vouched for: subscriptions count as expired.
    public var clockRolledBack: Bool
    /// The latest store-signed time the ledger has seen (ms), the rollback reference.
    public var watermark: Int64
    /// Transactions that verified for this account (counted or not: revoked and expired too).
    public var verifiedTransactions: Int

    /// One line per problem, empty when the ledger is clean: `clock rolled back …` and each rejected row.
    public var problems: [String] {
        var lines: [String] = []
        if clockRolledBack {
            lines.append("clock rolled back: now \(now) ms is before \(watermark) ms, the latest time the store signed; subscriptions are treated as expired")
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

/// The device's record of purchases: the store's signed transactions, kept in their own
/// SQLite file, from which entitlements are DERIVED on every read. Nothing in the file is
/// trusted: each row's JWS is verified with the store's public key, its columns must agree
/// with the signed payload, and it must belong to the account asked about; a row that fails
/// is reported in ``LedgerReport/rejected`` and never counted. Editing the file by hand — any
/// table, any column — therefore grants nothing (replaying an older signed copy of a refunded
/// transaction is a rollback of the whole file, which `restore` repairs).
///
/// A product is entitled when a verified, unrevoked transaction for it exists for the account
/// and, for a subscription, `now < expiresDate` and the clock is not set back before the
/// latest time the store signed (the watermark, kept in `meta` and recomputed from the
/// verified rows, so lowering it by hand changes nothing).
///
/// File: default `$XDG_DATA_HOME/tilepack/ledger.sqlite`, else
/// `~/.local/share/tilepack/ledger.sqlite`. WAL; every change one `BEGIN IMMEDIATE`
/// transaction; a 10 s busy timeout, so several processes may import at once.
///
/// ```swift
/// let ledger = try EntitlementLedger(publicKeys: [storePublicJWK])
/// try ledger.import(signed: store.purchase(productID: "chamonix", account: ledger.account))
/// ledger.entitledProductIDs()   // ["chamonix"]
/// ```
///
/// Threads: Sendable; calls on one instance share one connection under a Mutex.
/// Cost: the first read after a change verifies every row (~50 µs each, Ed25519); later
/// reads reuse the verified rows while `PRAGMA data_version` is unchanged, and the last
/// answer while `now` crosses no expiry or rollback boundary (one pragma step and two locks).
public final class EntitlementLedger: Sendable {
    public static let schemaVersion = "1"

    public let path: String
    /// The device's account: given, or the one stored in the ledger, or a new random one.
    public let account: String
    public let verifier: TransactionVerifier
    public let clock: any RegionClock
    private let state: Mutex<State>
    /// The last report, reusable while the file is unchanged, for the same account, and for
    /// any `now` in `validFrom..<validUntil` (no expiry and no rollback boundary inside).
    private let memo = Mutex<ReportMemo?>(nil)

    private struct ReportMemo {
        var dataVersion: Int
        var generation: Int
        var account: String
        var validFrom: Int64
        var validUntil: Int64
        var report: LedgerReport
    }

    private struct VerifiedRow {
        var rowID: Int
        var payload: TransactionPayload
    }

    /// What verifying the file gave, valid while neither we nor another connection write.
    private struct Snapshot {
        var dataVersion: Int
        var generation: Int
        var verified: [VerifiedRow]
        var rejected: [RejectedLedgerRow]
        var watermark: Int64
    }

    private struct State {
        let db: SQLiteConnection
        /// `PRAGMA data_version`, prepared once: the cache check on every read.
        let dataVersion: SQLiteStatement
        /// Bumped by our own commits, which `data_version` does not count.
        var generation = 0
        var snapshot: Snapshot?
    }

    /// `$XDG_DATA_HOME/tilepack/ledger.sqlite`, else `~/.local/share/tilepack/ledger.sqlite`.
    public static func defaultPath() -> String { RegionFiles.dataDirectory() + "/ledger.sqlite" }

    /// Opens (creating when missing) the ledger at `path` (default ``defaultPath()``), trusting
    /// transactions signed by `publicKeys`.
    public init(path: String? = nil, publicKeys: [JWK], account: String? = nil,
                clock: any RegionClock = SystemRegionClock()) throws(LedgerError) {
        let resolved = path ?? EntitlementLedger.defaultPath()
        self.path = resolved
        self.clock = clock
        if let account, let problem = TransactionPayload.identifierProblem(account) {
            throw LedgerError(.invalidArgument, subject: "account", problem)
        }
        verifier = try LedgerError.mapping(path: resolved, doing: "loading keys") { try TransactionVerifier(publicKeys: publicKeys) }
        let (db, stored) = try LedgerError.mapping(path: resolved, doing: "opening the ledger") {
            if path == nil, let slash = resolved.lastIndex(of: "/") {
                try RegionFiles.makeDirectories(String(resolved[..<slash]))
            }
            return try EntitlementLedger.open(path: resolved, account: account)
        }
        self.account = stored
        let dataVersion = try LedgerError.mapping(path: resolved, doing: "opening the ledger") {
            try db.prepare("PRAGMA data_version")
        }
        state = Mutex(State(db: db, dataVersion: dataVersion))
    }

    private static func open(path: String, account: String?) throws -> (SQLiteConnection, String) {
        var attempt = 0
        while true {
            do {
                let db = try SQLiteConnection(path: path, mode: .readWriteCreate)
                try db.execute("PRAGMA busy_timeout = 10000")
                let stored = try db.inTransaction { () throws -> String in
                    try db.execute("""
                        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                        CREATE TABLE IF NOT EXISTS transactions (
                            transaction_id TEXT PRIMARY KEY,
                            original_transaction_id TEXT NOT NULL,
                            product_id TEXT NOT NULL,
                            account TEXT NOT NULL,
                            purchase_date INTEGER NOT NULL,
                            expires_date INTEGER,
                            revocation_date INTEGER,
                            signed_date INTEGER NOT NULL,
                            jws TEXT NOT NULL);
                        INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '1');
                        """)
                    let version = try db.prepare("SELECT value FROM meta WHERE key = 'schema_version'")
                    let found = try version.step() ? version.string(at: 0) : nil
                    guard found == schemaVersion else {
                        throw LedgerError(.storage, subject: path,
                                          "ledger schema version \(found.map(ErrorText.quoted) ?? "missing") is not \(schemaVersion)",
                                          storageCategory: .unsupported)
                    }
                    let insert = try db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('account', ?)")
                    try insert.bind(account ?? newAccountID(), at: 1)
                    try insert.run()
                    if let account { return account }
                    let select = try db.prepare("SELECT value FROM meta WHERE key = 'account'")
                    guard try select.step(), let value = select.string(at: 0),
                          TransactionPayload.identifierProblem(value) == nil else {
                        throw LedgerError(.storage, subject: path, "meta account is not a valid account id")
                    }
                    return value
                }
                return (db, stored)
            } catch let error as SQLiteError where error.code ~= .busy && attempt < 5 {
                // Switching a fresh file to WAL takes an exclusive lock that a second opener
                // of the same new file may not get at once.
                attempt += 1
                usleepMilliseconds(50 * attempt)
            }
        }
    }

    private static func newAccountID() -> String {
        let hex = String(UInt64.random(in: .min ... .max), radix: 16) + String(UInt64.random(in: .min ... .max), radix: 16)
        return "acct-" + hex
    }

    // MARK: Importing

    /// Verifies `signed` and records it (idempotent by `transactionId`): a new transaction is
    /// inserted; a signed revocation of one held replaces it; an unrevoked copy never replaces
    /// a revoked one; the same blob again changes nothing (but repairs edited columns).
    /// Throws ``LedgerError/Kind/rejected`` for a blob that does not verify; nothing is written then.
    @discardableResult
    public func `import`(signed: SignedTransaction, source: String = "signed transaction") throws(LedgerError) -> LedgerImportSummary {
        try `import`(signed: [signed], source: source)
    }

    /// Verifies every blob first (any failure throws before writing), then records them all
    /// in one transaction.
    /// - Cost: one Ed25519 verification per blob (and per replaced row), one commit.
    @discardableResult
    public func `import`(signed batch: [SignedTransaction], source: String = "signed transaction") throws(LedgerError) -> LedgerImportSummary {
        var payloads: [(SignedTransaction, TransactionPayload)] = []
        for (index, signed) in batch.enumerated() {
            do {
                let origin = batch.count == 1 ? source : "\(source) \(index + 1)"
                payloads.append((signed, try verifier.verify(signed, source: origin)))
            } catch {
                throw LedgerError(error)
            }
        }
        let verifier = verifier
        return try LedgerError.mapping(path: path, doing: "importing transactions") {
            try state.withLock { state in
                let db = state.db
                let summary = try db.inTransaction { () throws -> LedgerImportSummary in
                    var summary = LedgerImportSummary()
                    var watermark = try EntitlementLedger.storedWatermark(db) ?? 0
                    for (signed, payload) in payloads {
                        watermark = max(watermark, payload.latestSignedTime)
                        try EntitlementLedger.record(signed, payload, db: db, verifier: verifier, summary: &summary)
                    }
                    let meta = try db.prepare("INSERT INTO meta (key, value) VALUES ('watermark_ms', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
                    try meta.bind(String(watermark), at: 1)
                    try meta.run()
                    return summary
                }
                state.generation += 1
                return summary
            }
        }
    }

    /// Re-imports every transaction the store holds for `account` (default: the ledger's).
    /// Idempotent: a second restore reports everything unchanged and leaves the same rows.
    @discardableResult
    public func restore(from store: StoreSimulator, account: String? = nil) throws(LedgerError) -> LedgerImportSummary {
        let signed = try store.transactions(account: account ?? self.account)
        if signed.isEmpty { return LedgerImportSummary() }
        return try `import`(signed: signed, source: "\(store.databasePath) transaction")
    }

    private static let columns = "transaction_id, original_transaction_id, product_id, account, purchase_date, expires_date, revocation_date, signed_date, jws"

    /// The column values a row holding `jws` with `payload` must have, in ``columns`` order.
    private static func expectedColumns(_ payload: TransactionPayload, jws: String) -> [String?] {
        [payload.transactionId, payload.originalTransactionId, payload.productId, payload.appAccountToken,
         String(payload.purchaseDate), payload.expiresDate.map { String($0) }, payload.revocationDate.map { String($0) },
         String(payload.signedDate), jws]
    }

    private static func record(_ signed: SignedTransaction, _ payload: TransactionPayload, db: SQLiteConnection,
                               verifier: TransactionVerifier, summary: inout LedgerImportSummary) throws {
        let select = try db.prepare("SELECT \(columns) FROM transactions WHERE transaction_id = ?")
        try select.bind(payload.transactionId, at: 1)
        var winner = (signed.jws, payload)
        let exists = try select.step()
        if exists {
            let stored = (0..<9).map { select.string(at: Int32($0)) }
            select.reset()
            if let jws = stored[8], jws != signed.jws,
               let held = try? verifier.verify(SignedTransaction(jws: jws)), held.transactionId == payload.transactionId {
                // Both verify: keep the revoked one, else the later signature.
                let keepHeld = (held.isRevoked && !payload.isRevoked)
                    || (held.isRevoked == payload.isRevoked && held.signedDate >= payload.signedDate)
                if keepHeld { winner = (jws, held) }
            }
            let expected = expectedColumns(winner.1, jws: winner.0)
            if stored == expected {
                summary.unchanged += 1
                return
            }
            summary.replaced += 1
        } else {
            summary.inserted += 1
        }
        // UPDATE in place when the row exists, so its rowid (and a restore's result) stays the same.
        let write = exists
            ? try db.prepare("""
                UPDATE transactions SET transaction_id = ?1, original_transaction_id = ?2, product_id = ?3, account = ?4,
                    purchase_date = ?5, expires_date = ?6, revocation_date = ?7, signed_date = ?8, jws = ?9
                WHERE transaction_id = ?1
                """)
            : try db.prepare("INSERT INTO transactions (\(columns)) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)")
        for (index, value) in expectedColumns(winner.1, jws: winner.0).enumerated() {
            try write.bind(value, at: Int32(index + 1))
        }
        // Dates as integers, so the column types match what a reader compares.
        try write.bind(Int(winner.1.purchaseDate), at: 5)
        if let e = winner.1.expiresDate { try write.bind(Int(e), at: 6) }
        if let r = winner.1.revocationDate { try write.bind(Int(r), at: 7) }
        try write.bind(Int(winner.1.signedDate), at: 8)
        try write.run()
    }

    private static func storedWatermark(_ db: SQLiteConnection) throws -> Int64? {
        let select = try db.prepare("SELECT value FROM meta WHERE key = 'watermark_ms'")
        guard try select.step(), let text = select.string(at: 0) else { return nil }
        return Int64(text)
    }

    // MARK: Deriving entitlements

    /// Entitlements of `account` (default: the ledger's) at `now` (seconds since 1970;
    /// default: the clock), with every row not counted and the clock check.
    public func report(account: String? = nil, now: Double? = nil) throws(LedgerError) -> LedgerReport {
        let account = account ?? self.account
        let seconds = now ?? clock.now()
        guard seconds.isFinite, seconds >= 0, seconds * 1000 < Double(TransactionPayload.maxDate) else {
            throw LedgerError(.invalidArgument, subject: "now", "the time \(seconds) is outside 1970…9999")
        }
        let nowMs = Int64(seconds * 1000)
        let snapshot = try currentSnapshot()
        if let hit = memo.withLock({ memo -> LedgerReport? in
            guard let memo, memo.dataVersion == snapshot.dataVersion, memo.generation == snapshot.generation,
                  memo.account == account, memo.validFrom <= nowMs, nowMs < memo.validUntil else { return nil }
            return memo.report
        }) {
            var report = hit
            report.now = nowMs
            return report
        }
        var rejected = snapshot.rejected
        var best: [String: TransactionPayload] = [:]
        var verifiedCount = 0
        // The strongest verified version per transaction: revoked beats unrevoked, then later signature.
        var latest: [String: TransactionPayload] = [:]
        for row in snapshot.verified {
            let p = row.payload
            guard p.appAccountToken == account else {
                rejected.append(RejectedLedgerRow(rowID: row.rowID, storedTransactionID: p.transactionId, reason: .otherAccount,
                                                  detail: "signed for another account, not \(ErrorText.quoted(account))"))
                continue
            }
            if let held = latest[p.transactionId],
               (held.isRevoked && !p.isRevoked) || (held.isRevoked == p.isRevoked && held.signedDate >= p.signedDate) {
                continue
            }
            latest[p.transactionId] = p
        }
        let rolledBack = nowMs < snapshot.watermark
        // The span of `now` over which this answer holds: up to the watermark when rolled
        // back; else from the watermark and the last expiry passed to the next expiry ahead.
        var validFrom = rolledBack ? Int64.min : snapshot.watermark
        var validUntil = rolledBack ? snapshot.watermark : Int64.max
        for p in latest.values {
            verifiedCount += 1
            if p.isRevoked { continue }
            if let expires = p.expiresDate, !rolledBack {
                if nowMs >= expires { validFrom = max(validFrom, expires) } else { validUntil = min(validUntil, expires) }
            }
            if let expires = p.expiresDate, rolledBack || nowMs >= expires { continue }
            if let held = best[p.productId] {
                // Prefer the one that lasts longest (nil: forever), then the earlier purchase.
                let heldEnd = held.expiresDate ?? .max, end = p.expiresDate ?? .max
                if heldEnd > end || (heldEnd == end && held.purchaseDate <= p.purchaseDate) { continue }
            }
            best[p.productId] = p
        }
        let report = LedgerReport(account: account, now: nowMs,
                                  entitlements: best.values.map(Entitlement.init).sorted { $0.productID < $1.productID },
                                  rejected: rejected.sorted { $0.rowID < $1.rowID }, clockRolledBack: rolledBack,
                                  watermark: snapshot.watermark, verifiedTransactions: verifiedCount)
        memo.withLock {
            $0 = ReportMemo(dataVersion: snapshot.dataVersion, generation: snapshot.generation, account: account,
                            validFrom: validFrom, validUntil: validUntil, report: report)
        }
        return report
    }

    /// The products `account` may use at `now` (seconds; defaults as in ``report(account:now:)``).
    public func entitlements(account: String? = nil, now: Double? = nil) throws(LedgerError) -> [Entitlement] {
        try report(account: account, now: now).entitlements
    }

    /// The ids of the products `account` may use at `now`.
    public func entitledProductIDs(account: String? = nil, now: Double? = nil) throws(LedgerError) -> Set<String> {
        Set(try report(account: account, now: now).entitlements.map(\.productID))
    }

    /// The ledger's account's products now, by the ledger's clock; EMPTY when the ledger
    /// cannot be read (failing closed: an unreadable ledger unlocks nothing). The shape an
    /// access policy asks (`EntitlementSource`).
    public func entitledProductIDs() -> Set<String> {
        (try? entitledProductIDs(account: nil, now: nil)) ?? []
    }

    private func currentSnapshot() throws(LedgerError) -> Snapshot {
        let verifier = verifier
        let path = path
        return try LedgerError.mapping(path: path, doing: "reading the ledger") {
            try state.withLock { state in
                let db = state.db
                let version = state.dataVersion
                defer { version.reset() }
                let dataVersion = try version.step() ? version.int(at: 0) : -1
                if let cached = state.snapshot, cached.dataVersion == dataVersion, cached.generation == state.generation {
                    return cached
                }
                // One read transaction: rows and watermark from the same commit.
                try db.execute("BEGIN")
                defer { db.rollbackQuietly() }
                var verified: [VerifiedRow] = []
                var rejected: [RejectedLedgerRow] = []
                // A garbled stored watermark is ignored: the verified rows below set the floor.
                let storedMark: Int64? = (try? EntitlementLedger.storedWatermark(db)) ?? nil
                var watermark = storedMark ?? 0
                let select = try db.prepare("SELECT rowid, \(EntitlementLedger.columns) FROM transactions ORDER BY rowid")
                while try select.step() {
                    let rowID = select.int(at: 0)
                    let stored = (1...9).map { select.string(at: Int32($0)) }
                    let source = "\(path) row \(rowID)"
                    guard let jws = stored[8] else {
                        rejected.append(RejectedLedgerRow(rowID: rowID, storedTransactionID: stored[0], reason: .malformed, detail: "no jws"))
                        continue
                    }
                    let payload: TransactionPayload
                    do throws(JWSError) {
                        payload = try verifier.verify(SignedTransaction(jws: jws), source: source)
                    } catch {
                        let reason: RejectedLedgerRow.Reason = switch error.kind {
                        case .unknownKey: .unknownKey
                        case .badAlgorithm: .badAlgorithm
                        case .badSignature: .badSignature
                        case .malformed, .invalidPayload, .badKey: .malformed
                        }
                        rejected.append(RejectedLedgerRow(rowID: rowID, storedTransactionID: stored[0], reason: reason, detail: error.detail))
                        continue
                    }
                    let expected = EntitlementLedger.expectedColumns(payload, jws: jws)
                    let names = EntitlementLedger.columns.split(separator: ",").map { $0.trimmingPrefix(" ") }
                    if let differing = zip(names, zip(stored, expected)).first(where: { $0.1.0 != $0.1.1 }) {
                        rejected.append(RejectedLedgerRow(
                            rowID: rowID, storedTransactionID: stored[0], reason: .columnMismatch,
                            detail: "column \(differing.0) is \(differing.1.0.map(ErrorText.quoted) ?? "NULL"), the signed payload says \(differing.1.1.map(ErrorText.quoted) ?? "NULL")"))
                        continue
                    }
                    watermark = max(watermark, payload.latestSignedTime)
                    verified.append(VerifiedRow(rowID: rowID, payload: payload))
                }
                let snapshot = Snapshot(dataVersion: dataVersion, generation: state.generation,
                                        verified: verified, rejected: rejected, watermark: watermark)
                state.snapshot = snapshot
                return snapshot
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private func usleepMilliseconds(_ ms: Int) { usleep(useconds_t(ms * 1000)) }
