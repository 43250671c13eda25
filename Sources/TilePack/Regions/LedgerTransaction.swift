#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePackCore

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
