/// What a device trusts, given to it and never found in the data it checks: the App Store
/// root certificates purchases must chain to, the app's bundle id, the environments it accepts,
/// its `appAppleId`, and the publisher's catalog keys.
///
/// An app compiles its anchors in; the CLI reads them from a trust file
/// (``init(contentsOf:)``, default ``defaultPath(environment:)``), never from a library or a
/// ledger directory. A root reaches a device only through here: a token's own `x5c` root is
/// ignored by ``AppStoreVerifier``.
///
/// ```swift
/// let anchors = TrustAnchors(appStoreRoots: [appleRootCAG3DER], bundleID: "com.example.maps",
///                            environments: [.production], appAppleID: 1_234_567_890)
/// let verifier = AppStoreVerifier(anchors: anchors)
/// ```
///
/// Cost: a few small arrays; the roots are parsed once, by ``AppStoreVerifier/init(anchors:)``.
public struct TrustAnchors: Sendable, Equatable {
    /// DER certificates of the App Store roots (Apple Root CA - G3 in Production; a test App
    /// Store's root for Sandbox). Production and Sandbox tokens must chain to one of them.
    public var appStoreRoots: [[UInt8]]
    /// DER certificates that StoreKit Testing in Xcode signs with (its self-signed certificate):
    /// Xcode tokens are accepted only when ``environments`` holds `.xcode` and they chain here.
    public var xcodeRoots: [[UInt8]]
    /// The app's bundle identifier; transactions and notifications must name it.
    public var bundleID: String
    /// The environments whose signed data is accepted.
    public var environments: Set<AppStoreEnvironment>
    /// The app's App Store identifier: when set, a Production notification must carry it and
    /// any notification that carries one must match.
    public var appAppleID: Int64?
    /// The publisher's Ed25519 public keys (public JWKs) that sign the catalog.
    public var publisherKeys: [JWK]

    public init(
        appStoreRoots: [[UInt8]], xcodeRoots: [[UInt8]] = [], bundleID: String,
        environments: Set<AppStoreEnvironment>, appAppleID: Int64? = nil, publisherKeys: [JWK] = []
    ) {
        self.appStoreRoots = appStoreRoots
        self.xcodeRoots = xcodeRoots
        self.bundleID = bundleID
        self.environments = environments
        self.appAppleID = appAppleID
        self.publisherKeys = publisherKeys
    }

    /// Where the CLI looks for the trust file when `--trust` is not given:
    /// `$XDG_CONFIG_HOME/tilepack/trust.json` (an absolute XDG_CONFIG_HOME only, as the XDG
    /// base-directory rule says), else `$HOME/.config/tilepack/trust.json`; nil without either.
    /// - Cost: two dictionary lookups.
    public static func defaultPath(environment: [String: String]) -> String? {
        if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
            return xdg + "/tilepack/trust.json"
        }
        if let home = environment["HOME"], !home.isEmpty {
            return (home.hasSuffix("/") ? String(home.dropLast()) : home) + "/.config/tilepack/trust.json"
        }
        return nil
    }
}
