#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
/// A signed transaction's payload: StoreKit 2's `JWSTransactionDecodedPayload`, with Apple's
/// field names and units (prices in milliunits); dates are `Date`s, whole milliseconds on the
/// wire as Apple writes them.
///
/// Obtain one from ``AppStoreVerifier/verifyTransaction(_:source:)``; one built by hand
/// proves nothing. A refund is the same transaction signed again with ``revocationDate`` set.
///
/// ```swift
/// let transaction = try verifier.verifyTransaction(jws, source: "ledger row 3")
/// if let problem = transaction.problem(at: Date()) { … }   // .revoked, .expired
/// ```
///
/// Cost: decoding is a JSON parse of about 1 KiB (tens of microseconds); the type holds no buffers.
public struct AppStoreTransaction: Codable, Sendable, Hashable {
    /// The transaction's identifier (a renewal or restore gets a new one).
    public var transactionId: String?
    /// The first transaction of this purchase (renewals of a subscription share it).
    public var originalTransactionId: String?
    /// Subscriptions: the purchase event across devices.
    public var webOrderLineItemId: String?
    /// The app's bundle identifier: must be the app's (``TrustAnchors/bundleID``).
    public var bundleId: String?
    /// The product bought.
    public var productId: String?
    /// Subscriptions: the group the product belongs to.
    public var subscriptionGroupIdentifier: String?
    /// When the App Store charged (or a subscription renewed), ms since 1970.
    public var purchaseDate: Date?
    /// When the original transaction was bought, ms since 1970.
    public var originalPurchaseDate: Date?
    /// Subscriptions: when this period ends, ms since 1970.
    public var expiresDate: Date?
    /// Consumables: how many were bought.
    public var quantity: Int?
    /// What sort of product.
    public var type: AppStoreProductType?
    /// The app's own account identifier (a UUID) given at purchase.
    public var appAccountToken: String?
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var inAppOwnershipType: String?
    /// When the App Store signed this payload, ms since 1970: the time the chain is checked at.
    public var signedDate: Date?
    /// Set with ``revocationDate``: 0 other, 1 an issue in the app.
    public var revocationReason: Int?
    /// When the App Store refunded or revoked the transaction, ms since 1970.
    public var revocationDate: Date?
    /// Subscriptions: the user upgraded to another product of the group.
    public var isUpgraded: Bool?
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int?
    /// The promotional offer or offer code.
    public var offerIdentifier: String?
    /// Which App Store environment signed it.
    public var environment: AppStoreEnvironment?
    /// The storefront's ISO 3166-1 alpha-3 country code.
    public var storefront: String?
    /// The App Store's storefront identifier.
    public var storefrontId: String?
    /// `PURCHASE` or `RENEWAL`.
    public var transactionReason: String?
    /// ISO 4217 currency code of ``price``.
    public var currency: String?
    /// The price in milliunits of ``currency`` (9990 for 9.99).
    public var price: Int64?
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, `ONE_TIME`.
    public var offerDiscountType: String?
    /// The app download's transaction identifier.
    public var appTransactionId: String?
    /// The offer's duration (ISO 8601 duration).
    public var offerPeriod: String?
    /// How a refund was made: `REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`.
    public var revocationType: String?
    /// A prorated refund's share, in thousandths of a percent.
    public var revocationPercentage: Int?

    /// Every field is optional, as in Apple's payloads; nil fields are not encoded.
    public init(
        transactionId: String? = nil,
        originalTransactionId: String? = nil,
        webOrderLineItemId: String? = nil,
        bundleId: String? = nil,
        productId: String? = nil,
        subscriptionGroupIdentifier: String? = nil,
        purchaseDate: Date? = nil,
        originalPurchaseDate: Date? = nil,
        expiresDate: Date? = nil,
        quantity: Int? = nil,
        type: AppStoreProductType? = nil,
        appAccountToken: String? = nil,
        inAppOwnershipType: String? = nil,
        signedDate: Date? = nil,
        revocationReason: Int? = nil,
        revocationDate: Date? = nil,
        isUpgraded: Bool? = nil,
        offerType: Int? = nil,
        offerIdentifier: String? = nil,
        environment: AppStoreEnvironment? = nil,
        storefront: String? = nil,
        storefrontId: String? = nil,
        transactionReason: String? = nil,
        currency: String? = nil,
        price: Int64? = nil,
        offerDiscountType: String? = nil,
        appTransactionId: String? = nil,
        offerPeriod: String? = nil,
        revocationType: String? = nil,
        revocationPercentage: Int? = nil
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.bundleId = bundleId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.type = type
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.revocationReason = revocationReason
        self.revocationDate = revocationDate
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.environment = environment
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.transactionReason = transactionReason
        self.currency = currency
        self.price = price
        self.offerDiscountType = offerDiscountType
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
    }

    enum CodingKeys: String, CodingKey {
        case transactionId, originalTransactionId, webOrderLineItemId, bundleId, productId, subscriptionGroupIdentifier,
            purchaseDate, originalPurchaseDate, expiresDate, quantity, type, appAccountToken, inAppOwnershipType,
            signedDate, revocationReason, revocationDate, isUpgraded, offerType, offerIdentifier, environment,
            storefront, storefrontId, transactionReason, currency, price, offerDiscountType, appTransactionId,
            offerPeriod, revocationType, revocationPercentage
    }

    /// Unknown fields are ignored (Apple adds fields); dates accept a fraction (see `AppStoreDate`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        transactionId = try c.decodeIfPresent(String.self, forKey: .transactionId)
        originalTransactionId = try c.decodeIfPresent(String.self, forKey: .originalTransactionId)
        webOrderLineItemId = try c.decodeIfPresent(String.self, forKey: .webOrderLineItemId)
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        subscriptionGroupIdentifier = try c.decodeIfPresent(String.self, forKey: .subscriptionGroupIdentifier)
        purchaseDate = try c.decodeAppStoreDate(forKey: .purchaseDate)
        originalPurchaseDate = try c.decodeAppStoreDate(forKey: .originalPurchaseDate)
        expiresDate = try c.decodeAppStoreDate(forKey: .expiresDate)
        quantity = try c.decodeIfPresent(Int.self, forKey: .quantity)
        type = try c.decodeIfPresent(AppStoreProductType.self, forKey: .type)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
        inAppOwnershipType = try c.decodeIfPresent(String.self, forKey: .inAppOwnershipType)
        signedDate = try c.decodeAppStoreDate(forKey: .signedDate)
        revocationReason = try c.decodeIfPresent(Int.self, forKey: .revocationReason)
        revocationDate = try c.decodeAppStoreDate(forKey: .revocationDate)
        isUpgraded = try c.decodeIfPresent(Bool.self, forKey: .isUpgraded)
        offerType = try c.decodeIfPresent(Int.self, forKey: .offerType)
        offerIdentifier = try c.decodeIfPresent(String.self, forKey: .offerIdentifier)
        environment = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        storefront = try c.decodeIfPresent(String.self, forKey: .storefront)
        storefrontId = try c.decodeIfPresent(String.self, forKey: .storefrontId)
        transactionReason = try c.decodeIfPresent(String.self, forKey: .transactionReason)
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        price = try c.decodeIfPresent(Int64.self, forKey: .price)
        offerDiscountType = try c.decodeIfPresent(String.self, forKey: .offerDiscountType)
        appTransactionId = try c.decodeIfPresent(String.self, forKey: .appTransactionId)
        offerPeriod = try c.decodeIfPresent(String.self, forKey: .offerPeriod)
        revocationType = try c.decodeIfPresent(String.self, forKey: .revocationType)
        revocationPercentage = try c.decodeIfPresent(Int.self, forKey: .revocationPercentage)
    }

    /// Apple's field names; dates as whole milliseconds since 1970; nil fields left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(transactionId, forKey: .transactionId)
        try c.encodeIfPresent(originalTransactionId, forKey: .originalTransactionId)
        try c.encodeIfPresent(webOrderLineItemId, forKey: .webOrderLineItemId)
        try c.encodeIfPresent(bundleId, forKey: .bundleId)
        try c.encodeIfPresent(productId, forKey: .productId)
        try c.encodeIfPresent(subscriptionGroupIdentifier, forKey: .subscriptionGroupIdentifier)
        try c.encodeAppStoreDate(purchaseDate, forKey: .purchaseDate)
        try c.encodeAppStoreDate(originalPurchaseDate, forKey: .originalPurchaseDate)
        try c.encodeAppStoreDate(expiresDate, forKey: .expiresDate)
        try c.encodeIfPresent(quantity, forKey: .quantity)
        try c.encodeIfPresent(type, forKey: .type)
        try c.encodeIfPresent(appAccountToken, forKey: .appAccountToken)
        try c.encodeIfPresent(inAppOwnershipType, forKey: .inAppOwnershipType)
        try c.encodeAppStoreDate(signedDate, forKey: .signedDate)
        try c.encodeIfPresent(revocationReason, forKey: .revocationReason)
        try c.encodeAppStoreDate(revocationDate, forKey: .revocationDate)
        try c.encodeIfPresent(isUpgraded, forKey: .isUpgraded)
        try c.encodeIfPresent(offerType, forKey: .offerType)
        try c.encodeIfPresent(offerIdentifier, forKey: .offerIdentifier)
        try c.encodeIfPresent(environment, forKey: .environment)
        try c.encodeIfPresent(storefront, forKey: .storefront)
        try c.encodeIfPresent(storefrontId, forKey: .storefrontId)
        try c.encodeIfPresent(transactionReason, forKey: .transactionReason)
        try c.encodeIfPresent(currency, forKey: .currency)
        try c.encodeIfPresent(price, forKey: .price)
        try c.encodeIfPresent(offerDiscountType, forKey: .offerDiscountType)
        try c.encodeIfPresent(appTransactionId, forKey: .appTransactionId)
        try c.encodeIfPresent(offerPeriod, forKey: .offerPeriod)
        try c.encodeIfPresent(revocationType, forKey: .revocationType)
        try c.encodeIfPresent(revocationPercentage, forKey: .revocationPercentage)
    }

    /// Why this transaction grants nothing at `date`, or nil when it does:
    /// ``AppStoreVerificationError/Code/revoked`` when it carries a ``revocationDate``,
    /// ``AppStoreVerificationError/Code/expired`` when its ``expiresDate`` is at or before now.
    /// - Cost: two comparisons.
    public func problem(at date: Date) -> AppStoreVerificationError.Reason? {
        if revocationDate != nil { return .revoked }
        if let expiresDate, expiresDate <= date { return .expired }
        return nil
    }
}
