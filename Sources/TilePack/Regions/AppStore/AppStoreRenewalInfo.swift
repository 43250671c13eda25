#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
/// A signed renewal info's payload: StoreKit 2's `JWSRenewalInfoDecodedPayload`, with Apple's
/// field names and units (dates in milliseconds since 1970 UTC). It says what a subscription
/// will do next; it carries no bundle id, so only its chain, signature and environment are checked.
///
/// Cost: decoding is a JSON parse of well under 1 KiB; the type holds no buffers.
public struct AppStoreRenewalInfo: Codable, Sendable, Hashable {
    /// Why the subscription expired: 1 cancelled, 2 billing error, 3 price increase refused, 4 product unavailable, 5
    /// other.
    public var expirationIntent: Int?
    /// The subscription's original transaction.
    public var originalTransactionId: String?
    /// The product the subscription renews to.
    public var autoRenewProductId: String?
    /// The product of the current period.
    public var productId: String?
    /// 1 when the subscription renews automatically, 0 when it is turned off.
    public var autoRenewStatus: Int?
    /// The App Store is trying to renew after a billing failure.
    public var isInBillingRetryPeriod: Bool?
    /// 0 the customer has not yet answered a price increase, 1 consented.
    public var priceIncreaseStatus: Int?
    /// End of the billing grace period, ms since 1970.
    public var gracePeriodExpiresDate: Date?
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int?
    /// The offer the subscription renews with.
    public var offerIdentifier: String?
    /// When the App Store signed this payload, ms since 1970: the time the chain is checked at.
    public var signedDate: Date?
    /// Which App Store environment signed it.
    public var environment: AppStoreEnvironment?
    /// Start of the latest unbroken run of paid periods, ms since 1970.
    public var recentSubscriptionStartDate: Date?
    /// When the next period starts, ms since 1970.
    public var renewalDate: Date?
    /// ISO 4217 currency code of ``renewalPrice``.
    public var currency: String?
    /// The next period's price in milliunits of ``currency``.
    public var renewalPrice: Int64?
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, `ONE_TIME`.
    public var offerDiscountType: String?
    /// Win-back offers the customer may redeem.
    public var eligibleWinBackOfferIds: [String]?
    /// The app's own account identifier (a UUID) given at purchase.
    public var appAccountToken: String?
    /// The app download's transaction identifier.
    public var appTransactionId: String?
    /// The offer's duration (ISO 8601 duration).
    public var offerPeriod: String?

    /// Every field is optional, as in Apple's payloads; nil fields are not encoded.
    public init(
        expirationIntent: Int? = nil,
        originalTransactionId: String? = nil,
        autoRenewProductId: String? = nil,
        productId: String? = nil,
        autoRenewStatus: Int? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        priceIncreaseStatus: Int? = nil,
        gracePeriodExpiresDate: Date? = nil,
        offerType: Int? = nil,
        offerIdentifier: String? = nil,
        signedDate: Date? = nil,
        environment: AppStoreEnvironment? = nil,
        recentSubscriptionStartDate: Date? = nil,
        renewalDate: Date? = nil,
        currency: String? = nil,
        renewalPrice: Int64? = nil,
        offerDiscountType: String? = nil,
        eligibleWinBackOfferIds: [String]? = nil,
        appAccountToken: String? = nil,
        appTransactionId: String? = nil,
        offerPeriod: String? = nil
    ) {
        self.expirationIntent = expirationIntent
        self.originalTransactionId = originalTransactionId
        self.autoRenewProductId = autoRenewProductId
        self.productId = productId
        self.autoRenewStatus = autoRenewStatus
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.priceIncreaseStatus = priceIncreaseStatus
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.signedDate = signedDate
        self.environment = environment
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.renewalDate = renewalDate
        self.currency = currency
        self.renewalPrice = renewalPrice
        self.offerDiscountType = offerDiscountType
        self.eligibleWinBackOfferIds = eligibleWinBackOfferIds
        self.appAccountToken = appAccountToken
        self.appTransactionId = appTransactionId
        self.offerPeriod = offerPeriod
    }

    enum CodingKeys: String, CodingKey {
        case expirationIntent, originalTransactionId, autoRenewProductId, productId, autoRenewStatus,
            isInBillingRetryPeriod, priceIncreaseStatus, gracePeriodExpiresDate, offerType, offerIdentifier, signedDate,
            environment, recentSubscriptionStartDate, renewalDate, currency, renewalPrice, offerDiscountType,
            eligibleWinBackOfferIds, appAccountToken, appTransactionId, offerPeriod
    }

    /// Unknown fields are ignored (Apple adds fields); dates accept a fraction (see `AppStoreDate`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        expirationIntent = try c.decodeIfPresent(Int.self, forKey: .expirationIntent)
        originalTransactionId = try c.decodeIfPresent(String.self, forKey: .originalTransactionId)
        autoRenewProductId = try c.decodeIfPresent(String.self, forKey: .autoRenewProductId)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        autoRenewStatus = try c.decodeIfPresent(Int.self, forKey: .autoRenewStatus)
        isInBillingRetryPeriod = try c.decodeIfPresent(Bool.self, forKey: .isInBillingRetryPeriod)
        priceIncreaseStatus = try c.decodeIfPresent(Int.self, forKey: .priceIncreaseStatus)
        gracePeriodExpiresDate = try c.decodeAppStoreDate(forKey: .gracePeriodExpiresDate)
        offerType = try c.decodeIfPresent(Int.self, forKey: .offerType)
        offerIdentifier = try c.decodeIfPresent(String.self, forKey: .offerIdentifier)
        signedDate = try c.decodeAppStoreDate(forKey: .signedDate)
        environment = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        recentSubscriptionStartDate = try c.decodeAppStoreDate(forKey: .recentSubscriptionStartDate)
        renewalDate = try c.decodeAppStoreDate(forKey: .renewalDate)
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        renewalPrice = try c.decodeIfPresent(Int64.self, forKey: .renewalPrice)
        offerDiscountType = try c.decodeIfPresent(String.self, forKey: .offerDiscountType)
        eligibleWinBackOfferIds = try c.decodeIfPresent([String].self, forKey: .eligibleWinBackOfferIds)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
        appTransactionId = try c.decodeIfPresent(String.self, forKey: .appTransactionId)
        offerPeriod = try c.decodeIfPresent(String.self, forKey: .offerPeriod)
    }

    /// Apple's field names; dates as whole milliseconds since 1970; nil fields left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(expirationIntent, forKey: .expirationIntent)
        try c.encodeIfPresent(originalTransactionId, forKey: .originalTransactionId)
        try c.encodeIfPresent(autoRenewProductId, forKey: .autoRenewProductId)
        try c.encodeIfPresent(productId, forKey: .productId)
        try c.encodeIfPresent(autoRenewStatus, forKey: .autoRenewStatus)
        try c.encodeIfPresent(isInBillingRetryPeriod, forKey: .isInBillingRetryPeriod)
        try c.encodeIfPresent(priceIncreaseStatus, forKey: .priceIncreaseStatus)
        try c.encodeAppStoreDate(gracePeriodExpiresDate, forKey: .gracePeriodExpiresDate)
        try c.encodeIfPresent(offerType, forKey: .offerType)
        try c.encodeIfPresent(offerIdentifier, forKey: .offerIdentifier)
        try c.encodeAppStoreDate(signedDate, forKey: .signedDate)
        try c.encodeIfPresent(environment, forKey: .environment)
        try c.encodeAppStoreDate(recentSubscriptionStartDate, forKey: .recentSubscriptionStartDate)
        try c.encodeAppStoreDate(renewalDate, forKey: .renewalDate)
        try c.encodeIfPresent(currency, forKey: .currency)
        try c.encodeIfPresent(renewalPrice, forKey: .renewalPrice)
        try c.encodeIfPresent(offerDiscountType, forKey: .offerDiscountType)
        try c.encodeIfPresent(eligibleWinBackOfferIds, forKey: .eligibleWinBackOfferIds)
        try c.encodeIfPresent(appAccountToken, forKey: .appAccountToken)
        try c.encodeIfPresent(appTransactionId, forKey: .appTransactionId)
        try c.encodeIfPresent(offerPeriod, forKey: .offerPeriod)
    }
}
