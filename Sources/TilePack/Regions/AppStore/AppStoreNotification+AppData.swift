extension AppStoreNotification {
    /// A notification's `appData`: an app-level notification with no transaction.
    public struct AppData: Codable, Sendable, Hashable {
        /// The app's App Store identifier.
        public var appAppleId: Int64?
        /// The app's bundle identifier.
        public var bundleId: String?
        /// Which App Store environment sent it.
        public var environment: AppStoreEnvironment?
        /// The app transaction, a JWS.
        public var signedAppTransactionInfo: String?

        /// Every field is optional, as in Apple's payloads; nil fields are not encoded.
        public init(
            appAppleId: Int64? = nil,
            bundleId: String? = nil,
            environment: AppStoreEnvironment? = nil,
            signedAppTransactionInfo: String? = nil
        ) {
            self.appAppleId = appAppleId
            self.bundleId = bundleId
            self.environment = environment
            self.signedAppTransactionInfo = signedAppTransactionInfo
        }

        enum CodingKeys: String, CodingKey {
            case appAppleId, bundleId, environment, signedAppTransactionInfo
        }

        /// Unknown fields are ignored (Apple adds fields); dates accept a fraction (see `AppStoreDate`).
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            appAppleId = try c.decodeIfPresent(Int64.self, forKey: .appAppleId)
            bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
            environment = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
            signedAppTransactionInfo = try c.decodeIfPresent(String.self, forKey: .signedAppTransactionInfo)
        }
    }
}
