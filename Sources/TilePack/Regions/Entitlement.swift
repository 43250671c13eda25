#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePackCore

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
