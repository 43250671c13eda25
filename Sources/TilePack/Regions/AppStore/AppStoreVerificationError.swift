import TilePackCore

/// Why App Store signed data (a transaction, renewal info or notification) was refused: one
/// line, `SOURCE: REASON: detail`: `subject` names the file or ledger row the token came
/// from and `code` (its `rawValue`) is the stable word a script matches.
///
/// Reasons come in the order ``AppStoreVerifier`` checks them, which is the order of Apple's
/// `SignedDataVerifier`: the token's shape, its certificate chain and signature, then what the
/// payload says (bundle id, app id, environment). `expired` and `revoked` are never thrown by the
/// verifier; they are what ``AppStoreTransaction/problem(at:)`` answers for a sound transaction.
public struct AppStoreVerificationError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`;
    /// `rawValue` is the stable word scripts and JSON see.
    public struct Code: TilePackErrorCode, RawRepresentable, Codable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// Not a compact JWS of three base64url parts, a header or payload that is not the
        /// expected JSON, `alg` other than ES256, no `x5c` or one of the wrong length, a date
        /// outside 1970…9999, or a token over 64 KiB.
        public static let malformed = Code(rawValue: "malformed")
        /// A certificate of `x5c` is not DER, or the leaf and intermediate do not chain to a
        /// pinned root with Apple's OIDs at the payload's `signedDate`; an Xcode token whose
        /// certificate is not a pinned Xcode root.
        public static let chain = Code(rawValue: "chain")
        /// The ES256 signature is not 64 bytes or does not verify with the leaf's key.
        public static let signature = Code(rawValue: "signature")
        /// The payload's `bundleId` is not the app's.
        public static let bundle = Code(rawValue: "bundle")
        /// A notification's `appAppleId` is not the app's.
        public static let appID = Code(rawValue: "app_id")
        /// The payload's environment is not one the anchors accept (an Xcode-signed token
        /// when Xcode is not accepted included).
        public static let environment = Code(rawValue: "environment")
        /// A subscription whose `expiresDate` has passed.
        public static let expired = Code(rawValue: "expired")
        /// A transaction with a `revocationDate` (refunded or revoked).
        public static let revoked = Code(rawValue: "revoked")
        /// Every code, in the order the verifier checks them.
        public static let allCases: [Code] = [
            .malformed, .chain, .signature, .bundle, .appID, .environment, .expired, .revoked,
        ]
    }

    /// The verifier's vocabulary (also ``AppStoreTransaction/problem(at:)``'s answer).
    public typealias Reason = Code

    public let code: Code
    /// Where the token came from: a file, an argument, `ledger row 12` (on one line).
    public let subject: String
    /// "REASON: problem", on one line; ``explanation`` is the problem alone.
    public let detail: String
    public var cause: (any Error)? { nil }

    public init(_ code: Code, source: String, _ detail: String) {
        self.code = code
        self.subject = ErrorText.oneLine(source)
        self.detail = "\(code.rawValue): \(ErrorText.oneLine(detail))"
    }

    /// The problem without the reason word (what `tilepack store verify --json` prints as `detail`).
    public var explanation: String { String(detail.dropFirst(code.rawValue.count + 2)) }

    public var category: TilePackErrorCategory { .invalidInput }
}
