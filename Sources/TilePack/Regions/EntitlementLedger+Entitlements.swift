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

/// Deriving entitlements: every row verified again after a change, the rejected ones reported,
/// the clock checked against the rollback reference; answers reused while nothing changed.
///
/// Cost: as ``EntitlementLedger/report(account:now:)``: a verification per row after a change,
/// O(1) while the ledger and the time's expiry window are unchanged.
extension EntitlementLedger {
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

    func nowMilliseconds(_ date: Date) throws(LedgerError) -> Int64 {
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
