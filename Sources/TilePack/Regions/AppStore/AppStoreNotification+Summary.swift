extension AppStoreNotification {
    /// A notification's `summary`: the outcome of a subscription-renewal-date extension request.
    public struct Summary: Codable, Sendable, Hashable {
        /// The renewal-date extension request.
        public var requestIdentifier: String?
        /// Which App Store environment sent it.
        public var environment: AppStoreEnvironment?
        /// The app's App Store identifier.
        public var appAppleId: Int64?
        /// The app's bundle identifier.
        public var bundleId: String?
        /// The subscription product.
        public var productId: String?
        /// The storefronts the request covered.
        public var storefrontCountryCodes: [String]?
        /// Subscriptions the extension failed for.
        public var failedCount: Int64?
        /// Subscriptions the extension succeeded for.
        public var succeededCount: Int64?

        /// Every field is optional, as in Apple's payloads; nil fields are not encoded.
        public init(
            requestIdentifier: String? = nil,
            environment: AppStoreEnvironment? = nil,
            appAppleId: Int64? = nil,
            bundleId: String? = nil,
            productId: String? = nil,
            storefrontCountryCodes: [String]? = nil,
            failedCount: Int64? = nil,
            succeededCount: Int64? = nil
        ) {
            self.requestIdentifier = requestIdentifier
            self.environment = environment
            self.appAppleId = appAppleId
            self.bundleId = bundleId
            self.productId = productId
            self.storefrontCountryCodes = storefrontCountryCodes
            self.failedCount = failedCount
            self.succeededCount = succeededCount
        }

        enum CodingKeys: String, CodingKey {
            case requestIdentifier, environment, appAppleId, bundleId, productId, storefrontCountryCodes, failedCount,
                succeededCount
        }

        /// Unknown fields are ignored (Apple adds fields); dates accept a fraction (see `AppStoreDate`).
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            requestIdentifier = try c.decodeIfPresent(String.self, forKey: .requestIdentifier)
            environment = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
            appAppleId = try c.decodeIfPresent(Int64.self, forKey: .appAppleId)
            bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
            productId = try c.decodeIfPresent(String.self, forKey: .productId)
            storefrontCountryCodes = try c.decodeIfPresent([String].self, forKey: .storefrontCountryCodes)
            failedCount = try c.decodeIfPresent(Int64.self, forKey: .failedCount)
            succeededCount = try c.decodeIfPresent(Int64.self, forKey: .succeededCount)
        }
    }
}
