extension AppStoreNotification {
    /// A notification's `data`: the app and the transaction it is about.
    public struct NotificationData: Codable, Sendable, Hashable {
        /// The app's App Store identifier (absent in Sandbox for apps not yet released).
        public var appAppleId: Int64?
        /// The app's bundle identifier.
        public var bundleId: String?
        /// The app's build version.
        public var bundleVersion: String?
        /// Which App Store environment sent it.
        public var environment: AppStoreEnvironment?
        /// The transaction, a JWS (verify with ``AppStoreVerifier/verifyTransaction(_:source:)``).
        public var signedTransactionInfo: String?
        /// The renewal info, a JWS (verify with ``AppStoreVerifier/verifyRenewalInfo(_:source:)``).
        public var signedRenewalInfo: String?
        /// Subscription status: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
        public var status: Int?
        /// Why a refund of a consumable was requested.
        public var consumptionRequestReason: String?

        /// Every field is optional, as in Apple's payloads; nil fields are not encoded.
        public init(
            appAppleId: Int64? = nil,
            bundleId: String? = nil,
            bundleVersion: String? = nil,
            environment: AppStoreEnvironment? = nil,
            signedTransactionInfo: String? = nil,
            signedRenewalInfo: String? = nil,
            status: Int? = nil,
            consumptionRequestReason: String? = nil
        ) {
            self.appAppleId = appAppleId
            self.bundleId = bundleId
            self.bundleVersion = bundleVersion
            self.environment = environment
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
            self.status = status
            self.consumptionRequestReason = consumptionRequestReason
        }

        enum CodingKeys: String, CodingKey {
            case appAppleId, bundleId, bundleVersion, environment, signedTransactionInfo, signedRenewalInfo, status,
                consumptionRequestReason
        }

        /// Unknown fields are ignored (Apple adds fields); dates accept a fraction (see `AppStoreDate`).
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            appAppleId = try c.decodeIfPresent(Int64.self, forKey: .appAppleId)
            bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
            bundleVersion = try c.decodeIfPresent(String.self, forKey: .bundleVersion)
            environment = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
            signedTransactionInfo = try c.decodeIfPresent(String.self, forKey: .signedTransactionInfo)
            signedRenewalInfo = try c.decodeIfPresent(String.self, forKey: .signedRenewalInfo)
            status = try c.decodeIfPresent(Int.self, forKey: .status)
            consumptionRequestReason = try c.decodeIfPresent(String.self, forKey: .consumptionRequestReason)
        }
    }
}
