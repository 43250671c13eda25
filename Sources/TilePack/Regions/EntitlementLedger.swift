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
    let state: Locked<State>
    let memo = Locked<ReportMemo?>(nil)

    struct ReportMemo {
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

    struct VerifiedRow {
        var rowID: Int
        var transaction: LedgerTransaction
    }

    /// What verifying the file gave, valid while neither we nor another connection write.
    struct Snapshot {
        var token: ChangeToken
        var verified: [VerifiedRow]
        var rejected: [RejectedLedgerRow]
        var watermark: Int64
    }

    struct State {
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

    static func raiseObserved(_ db: SQLiteConnection, to now: Int64) throws {
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
}
