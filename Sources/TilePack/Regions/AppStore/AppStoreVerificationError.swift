import TilePackCore

/// Why App Store signed data (a transaction, renewal info or notification) was refused: one
/// line, `SOURCE: REASON: detail`, where ``source`` names the file or ledger row the token came
/// from and ``reason`` is the stable word a script matches.
///
/// Reasons come in the order ``AppStoreVerifier`` checks them, which is the order of Apple's
/// `SignedDataVerifier`: the token's shape, its certificate chain and signature, then what the
/// payload says (bundle id, app id, environment). `expired` and `revoked` are never thrown by the
/// verifier; they are what ``AppStoreTransaction/problem(at:)`` answers for a sound transaction.
public struct AppStoreVerificationError: TilePackError, Equatable {
    public enum Reason: String, Sendable, Equatable, CaseIterable {
        /// Not a compact JWS of three base64url parts, a header or payload that is not the
        /// expected JSON, `alg` other than ES256, no `x5c` or one of the wrong length, a date
        /// outside 1970…9999, or a token over 64 KiB.
        case malformed
        /// A certificate of `x5c` is not DER, or the leaf and intermediate do not chain to a
        /// pinned root with Apple's OIDs at the payload's `signedDate`; an Xcode token whose
        /// certificate is not a pinned Xcode root.
        case chain
        /// The ES256 signature is not 64 bytes or does not verify with the leaf's key.
        case signature
        /// The payload's `bundleId` is not the app's.
        case bundle
        /// A notification's `appAppleId` is not the app's.
        case appID = "app_id"
        /// The payload's environment is not one the anchors accept (an Xcode-signed token
        /// when Xcode is not accepted included).
        case environment
        /// A subscription whose `expiresDate` has passed.
        case expired
        /// A transaction with a `revocationDate` (refunded or revoked).
        case revoked
    }

    public var reason: Reason
    /// Where the token came from: a file, an argument, `ledger row 12`.
    public var source: String
    /// The problem, without the source or the reason.
    public var detail: String

    public init(_ reason: Reason, source: String, _ detail: String) {
        self.reason = reason
        self.source = source
        self.detail = detail
    }

    public var category: TilePackErrorCategory { .invalidInput }

    public var description: String { "\(ErrorText.oneLine(source)): \(reason.rawValue): \(ErrorText.oneLine(detail))" }
}
