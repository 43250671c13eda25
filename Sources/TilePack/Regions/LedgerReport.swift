#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePackCore

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
