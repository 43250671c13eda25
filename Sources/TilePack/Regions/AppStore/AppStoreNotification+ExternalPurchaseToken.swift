#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
extension AppStoreNotification {
    /// A notification's `externalPurchaseToken`: an external purchase the app reported.
    public struct ExternalPurchaseToken: Codable, Sendable, Hashable {
        /// The token's identifier; `SANDBOX…` for Sandbox tokens.
        public var externalPurchaseId: String?
        /// When the token was created, ms since 1970.
        public var tokenCreationDate: Date?
        /// The app's App Store identifier.
        public var appAppleId: Int64?
        /// The app's bundle identifier.
        public var bundleId: String?

        /// Every field is optional, as in Apple's payloads; nil fields are not encoded.
        public init(
            externalPurchaseId: String? = nil,
            tokenCreationDate: Date? = nil,
            appAppleId: Int64? = nil,
            bundleId: String? = nil
        ) {
            self.externalPurchaseId = externalPurchaseId
            self.tokenCreationDate = tokenCreationDate
            self.appAppleId = appAppleId
            self.bundleId = bundleId
        }

        enum CodingKeys: String, CodingKey {
            case externalPurchaseId, tokenCreationDate, appAppleId, bundleId
        }

        /// Unknown fields are ignored (Apple adds fields); dates accept a fraction (see `AppStoreDate`).
        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            externalPurchaseId = try c.decodeIfPresent(String.self, forKey: .externalPurchaseId)
            tokenCreationDate = try c.decodeAppStoreDate(forKey: .tokenCreationDate)
            appAppleId = try c.decodeIfPresent(Int64.self, forKey: .appAppleId)
            bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        }

        /// Apple's field names; dates as whole milliseconds since 1970; nil fields left out.
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encodeIfPresent(externalPurchaseId, forKey: .externalPurchaseId)
            try c.encodeAppStoreDate(tokenCreationDate, forKey: .tokenCreationDate)
            try c.encodeIfPresent(appAppleId, forKey: .appAppleId)
            try c.encodeIfPresent(bundleId, forKey: .bundleId)
        }
    }
}
