/// The server environment App Store signed data names in its `environment` field.
///
/// ``TrustAnchors/environments`` lists the ones a device accepts: `Production` for a
/// released app, `Sandbox` for TestFlight and the test App Store, `Xcode` for StoreKit Testing
/// (only with a pinned Xcode certificate). `LocalTesting` is never read from a trust file.
public enum AppStoreEnvironment: String, Codable, Sendable, CaseIterable {
    case production = "Production"
    case sandbox = "Sandbox"
    case xcode = "Xcode"
    case localTesting = "LocalTesting"

    /// Whether data of this environment is signed by the App Store (an `x5c` of three
    /// certificates to an App Store root) rather than by Xcode's one self-signed certificate.
    public var isSignedByAppStore: Bool { self == .production || self == .sandbox }
}
