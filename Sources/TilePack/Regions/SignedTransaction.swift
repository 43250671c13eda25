import TilePackCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a purchase is, in StoreKit's words (`Product.ProductType` raw values).
public enum TransactionProductType: String, Codable, Sendable, CaseIterable {
    /// A region or a bundle: owned for good unless refunded.
    case nonConsumable = "Non-Consumable"
    /// Map updates: entitled until `expiresDate`.
    case autoRenewable = "Auto-Renewable Subscription"
}

/// The signed body of a transaction, modelled on StoreKit 2's `JWSTransactionDecodedPayload`:
/// the same field names and units (dates are milliseconds since 1970 UTC). A refund is the
/// same transaction signed again with ``revocationDate`` and ``revocationReason`` set and a
/// later ``signedDate``, as StoreKit reports a revoked transaction.
public struct TransactionPayload: Codable, Sendable, Equatable, Hashable {
    public var transactionId: String
    /// The first purchase of a subscription (renewals share it); equals `transactionId` otherwise.
    public var originalTransactionId: String
    public var productId: String
    public var purchaseDate: Int64
    /// Subscriptions only: the end of the paid period.
    public var expiresDate: Int64?
    /// The account the purchase belongs to (StoreKit's `appAccountToken`).
    public var appAccountToken: String
    /// `LocalSimulator` for the store simulator (StoreKit: `Xcode`, `Sandbox`, `Production`).
    public var environment: String
    public var type: TransactionProductType
    /// When the store signed this version of the transaction.
    public var signedDate: Int64
    /// Set when refunded or revoked: the transaction then grants nothing.
    public var revocationDate: Int64?
    /// StoreKit's reasons: 0 other, 1 a problem in the app.
    public var revocationReason: Int?

    public init(transactionId: String, originalTransactionId: String, productId: String, purchaseDate: Int64,
                expiresDate: Int64?, appAccountToken: String, environment: String, type: TransactionProductType,
                signedDate: Int64, revocationDate: Int64? = nil, revocationReason: Int? = nil) {
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

    /// Whether this version of the transaction records a refund or revocation.
    public var isRevoked: Bool { revocationDate != nil }

    /// The latest date the store vouched for in this payload (the ledger's clock watermark).
    public var latestSignedTime: Int64 { max(signedDate, purchaseDate, revocationDate ?? 0) }

    /// Dates after year 9999 or before 1970 are refused: no real store signs them.
    public static let maxDate: Int64 = 253_402_300_799_999

    /// Checks what the signature cannot: identifiers are short printable text, dates are in
    /// range and ordered. Returns the problem, or nil when the payload is sound.
    public func problem() -> String? {
        for (name, value) in [("transactionId", transactionId), ("originalTransactionId", originalTransactionId),
                              ("productId", productId), ("appAccountToken", appAccountToken), ("environment", environment)] {
            if let problem = TransactionPayload.identifierProblem(value) { return "\(name) \(problem)" }
        }
        for (name, value) in [("purchaseDate", purchaseDate), ("signedDate", signedDate),
                              ("expiresDate", expiresDate ?? 0), ("revocationDate", revocationDate ?? 0)] {
            if value < 0 || value > TransactionPayload.maxDate { return "\(name) \(value) is outside 1970…9999" }
        }
        switch type {
        case .autoRenewable:
            guard let expiresDate else { return "a subscription transaction has no expiresDate" }
            if expiresDate <= purchaseDate { return "expiresDate is not after purchaseDate" }
        case .nonConsumable:
            if expiresDate != nil { return "a non-consumable transaction has an expiresDate" }
        }
        if (revocationDate == nil) != (revocationReason == nil) { return "revocationDate and revocationReason must come together" }
        return nil
    }

    /// Why `value` is not an acceptable identifier (1–128 printable ASCII characters), or nil.
    public static func identifierProblem(_ value: String) -> String? {
        if value.isEmpty { return "is empty" }
        if value.utf8.count > 128 { return "is longer than 128 bytes" }
        if value.utf8.contains(where: { $0 < 0x21 || $0 > 0x7E }) {
            return "\(ErrorText.quoted(value)) has characters outside printable ASCII"
        }
        return nil
    }
}

/// A transaction as the store sends it: a JWS in compact serialization whose payload is a
/// ``TransactionPayload``, like StoreKit's `signedTransactionInfo`. Holding one proves
/// nothing; ``TransactionVerifier`` says whether the store signed it.
public struct SignedTransaction: Sendable, Hashable, CustomStringConvertible {
    /// The compact JWS `header.payload.signature`.
    public let jws: String
    public init(jws: String) { self.jws = jws }
    public var description: String { jws }
}

/// Checks signed transactions against the store's public keys (JWKs, by `kid`) and an
/// expected environment. Sendable; share one.
///
/// Cost: ``verify(_:source:)`` is one Ed25519 verification (~50 µs) and a small JSON decode.
public struct TransactionVerifier: Sendable {
    public let publicKeys: [String: Curve25519.Signing.PublicKey]
    public let environment: String

    /// Keys from JWKs (their `kid`, or thumbprint); `source` names them in errors.
    public init(publicKeys jwks: [JWK], environment: String = StoreSimulator.environment,
                source: String = "public key") throws(JWSError) {
        var keys: [String: Curve25519.Signing.PublicKey] = [:]
        for jwk in jwks { keys[jwk.keyID] = try jwk.publicKey(source: source) }
        self.publicKeys = keys
        self.environment = environment
    }

    /// Reads the public JWK file at `path` (what the device holds).
    public init(publicKeyFile path: String, environment: String = StoreSimulator.environment) throws(JWSError) {
        try self.init(publicKeys: [JWK.read(path: path)], environment: environment, source: path)
    }

    /// The payload of `signed` when the signature verifies with one of our keys and the
    /// payload is a sound transaction for our environment; else a ``JWSError`` naming `source`.
    public func verify(_ signed: SignedTransaction, source: String = "signed transaction") throws(JWSError) -> TransactionPayload {
        let bytes = try JWS.verify(signed.jws, publicKeys: publicKeys, source: source)
        let payload: TransactionPayload
        do {
            payload = try JSONDecoder().decode(TransactionPayload.self, from: Data(bytes))
        } catch {
            throw JWSError(.invalidPayload, source: source, "payload is not a transaction (\(TransactionVerifier.decodingProblem(error)))")
        }
        if let problem = payload.problem() { throw JWSError(.invalidPayload, source: source, problem) }
        guard payload.environment == environment else {
            throw JWSError(.invalidPayload, source: source,
                           "environment \(ErrorText.quoted(payload.environment)) is not \(ErrorText.quoted(environment))")
        }
        return payload
    }

    private static func decodingProblem(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not JSON" }
        switch error {
        case .keyNotFound(let key, _): return "missing \(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? "not a JSON object" : "bad \(path)"
        @unknown default: return "not JSON"
        }
    }
}
