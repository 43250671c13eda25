import TilePackCore
import TilePackRegions
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes App Store signed data: a compact JWS with header
/// `{"alg":"ES256","typ":"JWT","x5c":[leaf, intermediate, root]}` (standard base64 DER, as the
/// App Store writes it), the payload as sorted-key JSON, and a raw ES256 signature (r‖s,
/// 64 bytes) by the leaf's key; every part base64url without padding.
///
/// ``TestAppStoreCA`` makes one for its leaf; tests build others with a changed chain
/// (``withCertificateChain(_:)``) to show that the chain, not the header, decides trust.
/// - Cost: one P-256 signature (~40 µs) plus JSON and base64 linear in the payload.
public struct AppStoreJWSSigner: Sendable {
    /// The DER certificates written to `x5c`, leaf first.
    public let certificateChain: [[UInt8]]
    private let leafKey: P256.Signing.PrivateKey

    public init(leafKey: P256.Signing.PrivateKey, certificateChain: [[UInt8]]) {
        self.leafKey = leafKey
        self.certificateChain = certificateChain
    }

    /// The same key with another `x5c`.
    public func withCertificateChain(_ chain: [[UInt8]]) -> AppStoreJWSSigner {
        AppStoreJWSSigner(leafKey: leafKey, certificateChain: chain)
    }

    /// `payload` as a compact JWS signed by the leaf key.
    public func sign(_ payload: some Encodable) throws -> String {
        let header = Header(alg: "ES256", typ: "JWT", x5c: certificateChain.map { Data($0).base64EncodedString() })
        let signingInput =
            Base64URL.encode(Array(try JSONOutput.string(header).utf8)) + "."
            + Base64URL.encode(Array(try JSONOutput.string(payload).utf8))
        let signature = try leafKey.signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    private struct Header: Encodable {
        var alg: String
        var typ: String
        var x5c: [String]
    }
}
