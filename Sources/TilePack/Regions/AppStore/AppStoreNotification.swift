#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
/// A signed notification's payload: App Store Server Notifications V2's
/// `ResponseBodyV2DecodedPayload`, with Apple's field names. The bundle id, app id and
/// environment it is checked against come from ``data``, else ``summary``, else
/// ``externalPurchaseToken`` (whose environment is Sandbox when its `externalPurchaseId` starts
/// with `SANDBOX`, else Production), else ``appData`` — Apple's order; see ``appIdentity``.
///
/// Cost: decoding is a JSON parse of a few KiB (the nested signed transaction and renewal
/// info stay JWS strings, verified separately when needed).
public struct AppStoreNotification: Codable, Sendable, Hashable {
    /// `SUBSCRIBED`, `DID_RENEW`, `REFUND`, `TEST`, … (App Store Server Notifications V2).
    public var notificationType: String?
    /// Details of ``notificationType`` (`INITIAL_BUY`, `VOLUNTARY`, …).
    public var subtype: String?
    /// The notification's unique identifier.
    public var notificationUUID: String?
    /// The app and the signed transaction and renewal info the notification is about.
    public var data: NotificationData?
    /// The notification format version (`2.0`).
    public var version: String?
    /// When the App Store signed this payload, ms since 1970: the time the chain is checked at.
    public var signedDate: Date?
    /// For a subscription-renewal-date extension across many customers.
    public var summary: Summary?
    /// For an external purchase token notification.
    public var externalPurchaseToken: ExternalPurchaseToken?
    /// For an app-level notification (no transaction).
    public var appData: AppData?

    /// Every field is optional, as in Apple's payloads; nil fields are not encoded.
    public init(
        notificationType: String? = nil,
        subtype: String? = nil,
        notificationUUID: String? = nil,
        data: NotificationData? = nil,
        version: String? = nil,
        signedDate: Date? = nil,
        summary: Summary? = nil,
        externalPurchaseToken: ExternalPurchaseToken? = nil,
        appData: AppData? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.data = data
        self.version = version
        self.signedDate = signedDate
        self.summary = summary
        self.externalPurchaseToken = externalPurchaseToken
        self.appData = appData
    }

    enum CodingKeys: String, CodingKey {
        case notificationType, subtype, notificationUUID, data, version, signedDate, summary, externalPurchaseToken,
            appData
    }

    /// Unknown fields are ignored (Apple adds fields); dates accept a fraction (see `AppStoreDate`).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        notificationType = try c.decodeIfPresent(String.self, forKey: .notificationType)
        subtype = try c.decodeIfPresent(String.self, forKey: .subtype)
        notificationUUID = try c.decodeIfPresent(String.self, forKey: .notificationUUID)
        data = try c.decodeIfPresent(NotificationData.self, forKey: .data)
        version = try c.decodeIfPresent(String.self, forKey: .version)
        signedDate = try c.decodeAppStoreDate(forKey: .signedDate)
        summary = try c.decodeIfPresent(Summary.self, forKey: .summary)
        externalPurchaseToken = try c.decodeIfPresent(ExternalPurchaseToken.self, forKey: .externalPurchaseToken)
        appData = try c.decodeIfPresent(AppData.self, forKey: .appData)
    }

    /// Apple's field names; dates as whole milliseconds since 1970; nil fields left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(notificationType, forKey: .notificationType)
        try c.encodeIfPresent(subtype, forKey: .subtype)
        try c.encodeIfPresent(notificationUUID, forKey: .notificationUUID)
        try c.encodeIfPresent(data, forKey: .data)
        try c.encodeIfPresent(version, forKey: .version)
        try c.encodeAppStoreDate(signedDate, forKey: .signedDate)
        try c.encodeIfPresent(summary, forKey: .summary)
        try c.encodeIfPresent(externalPurchaseToken, forKey: .externalPurchaseToken)
        try c.encodeIfPresent(appData, forKey: .appData)
    }

    /// The bundle id, app id and environment the notification is about, taken from the first
    /// of ``data``, ``summary``, ``externalPurchaseToken`` and ``appData`` that is present.
    public var appIdentity: (bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?) {
        if let data { return (data.bundleId, data.appAppleId, data.environment) }
        if let summary { return (summary.bundleId, summary.appAppleId, summary.environment) }
        if let token = externalPurchaseToken {
            let sandbox = token.externalPurchaseId?.hasPrefix("SANDBOX") ?? false
            return (token.bundleId, token.appAppleId, sandbox ? .sandbox : .production)
        }
        if let appData { return (appData.bundleId, appData.appAppleId, appData.environment) }
        return (nil, nil, nil)
    }
}
