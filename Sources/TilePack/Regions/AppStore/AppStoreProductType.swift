/// A transaction's `type`: StoreKit 2's product types, with Apple's raw values.
public enum AppStoreProductType: String, Codable, Sendable, CaseIterable {
    case autoRenewable = "Auto-Renewable Subscription"
    case nonConsumable = "Non-Consumable"
    case consumable = "Consumable"
    case nonRenewing = "Non-Renewing Subscription"
}
