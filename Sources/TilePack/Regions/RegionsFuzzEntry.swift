import TilePackCore
import Crypto

/// What the `fuzz-jws` and `fuzz-catalog` targets (Fuzz/) do with one input, here so that
/// `FuzzCrashReplayTests` replays saved crashes through the same code.
///
/// Invariant: every input ends in a return or a thrown ``TilePackError``; a trap is a bug.
/// The keys are fixed (derived from a constant seed) and no App Store root is trusted, so an
/// input can never be accepted as App Store signed data: what is fuzzed is everything the
/// verifier does with a token before and while it refuses it.
public enum RegionsFuzzEntry {
    /// The fuzz targets' publisher key: an Ed25519 key from 32 bytes of 0x5A. Public only in
    /// the sense that the fuzzer may use it; it is in no trust file.
    static let publisherKey: Curve25519.Signing.PrivateKey = {
        // 32 bytes is always a valid Ed25519 seed, so this cannot fail.
        (try? Curve25519.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 0x5A, count: 32)))
            ?? Curve25519.Signing.PrivateKey()
    }()

    /// A verifier that trusts no root (every chain is refused, after the header, the x5c
    /// certificates and the chain have been parsed).
    static let verifier = AppStoreVerifier(
        anchors: TrustAnchors(
            appStoreRoots: [], bundleID: "org.tilepack.fuzz", environments: Set(AppStoreEnvironment.allCases)))

    /// The input as UTF-8 text, verified as a transaction, a renewal info and a notification
    /// (App Store signed data: header, `x5c` DER chain, ES256), then as an EdDSA JWS of the
    /// publisher key, then its unverified header. The first typed error of each is ignored
    /// so that all four paths see every input; the last one's is thrown.
    /// - Cost: O(input) per path, plus one DER parse per `x5c` certificate.
    public static func jws(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        let source = "fuzz.jws"
        _ = try? verifier.verifyTransaction(text, source: source)
        _ = try? verifier.verifyRenewalInfo(text, source: source)
        _ = try? verifier.verifyNotification(text, source: source)
        let key = publisherKey.publicKey
        _ = try? JWS.verify(text, publicKeys: [JWK(publicKey: key).keyID: key], source: source)
        _ = try JWS.unverifiedHeader(text, source: source)
    }

    /// The input as a catalog: parsed and validated as `catalog.json`; when it parses, signed
    /// with the publisher key and verified back (the path a `catalog.jws` takes); and the input
    /// as `catalog.jws` text verified against that key.
    /// - Cost: O(input) for the parse and validation, one signature and one verification.
    public static func catalog(_ bytes: [UInt8]) throws {
        let path = "/fuzz/catalog.json"
        let keys = [JWK(publicKey: publisherKey.publicKey)]
        _ = try? SignedCatalog.verify(
            String(decoding: bytes, as: UTF8.self), publisherKeys: keys,
            path: "/fuzz/catalog.jws", libraryDirectory: nil)
        _ = try Catalog(json: bytes, path: path, libraryDirectory: nil)
        let jws = try SignedCatalog.sign(bytes, key: publisherKey, path: path)
        _ = try SignedCatalog.verify(jws, publisherKeys: keys, path: path, libraryDirectory: nil)
    }
}
