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

/// Importing: signed transactions verified, then recorded in one transaction, a revocation
/// replacing its purchase; the store's versions held in memory.
///
/// Cost: one ES256 verification per blob (chains cached), one `BEGIN IMMEDIATE` per import.
extension EntitlementLedger {
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
    static func remember(_ t: LedgerTransaction, in state: inout State) {
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
}
