import TilePackCore
import Crypto
@_spi(FixedExpiryValidationTime) import X509
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Verifies App Store signed data — transactions, renewal infos and server notifications —
/// as Apple's `SignedDataVerifier` does offline, against anchors given to it.
///
/// Checks, in order; the first failure is thrown as an ``AppStoreVerificationError`` naming
/// `source` and its reason:
/// 1. at most 64 KiB, three non-empty base64url parts, a JSON header (`malformed`);
/// 2. `alg` is `ES256`, no `crit`, `x5c` holds three certificates (`malformed`), each
///    standard base64 DER, and a root is pinned to check them against (`chain`);
/// 3. the ES256 signature (raw r‖s, 64 bytes) over `header.payload` verifies with the leaf's
///    P-256 key (`signature`);
/// 4. the payload decodes (`malformed`; Apple's field names, unknown fields ignored);
/// 5. leaf → intermediate → one of ``TrustAnchors/appStoreRoots`` is a valid chain at the
///    payload's `signedDate` (the current time when it has none, as Apple does), RFC 5280 plus
///    Apple's leaf and intermediate OIDs (`chain`). The token's own `x5c[2]` is never used;
/// 6. `bundleId` is the app's — transactions and notifications; renewal infos carry none (`bundle`);
/// 7. a notification's `appAppleId` matches ``TrustAnchors/appAppleID`` when the anchors give
///    one: a Production notification must carry it, any that carries one must match (`app_id`);
/// 8. the environment is one ``TrustAnchors/environments`` accepts (`environment`).
///
/// Xcode tokens (one self-signed certificate in `x5c`, environment `Xcode`) take the same path
/// with ``TrustAnchors/xcodeRoots`` in place of the App Store roots and no OID check: when the
/// anchors do not accept Xcode they are refused before the signature (`environment`); when
/// they do, the certificate must be a pinned Xcode certificate or issued by one (`chain`) and the
/// payload's environment must be `Xcode`. They are never accepted unsigned. A token signed
/// through an App Store root must name Production or Sandbox, whatever the anchors list.
///
/// ```swift
/// let verifier = AppStoreVerifier(anchors: try TrustAnchors(contentsOf: trustPath))
/// let transaction = try verifier.verifyTransaction(jws, source: "ledger row 3")
/// ```
///
/// Sendable; share one. Chains already validated are cached per (leaf, intermediate) pair,
/// so re-verifying a ledger costs one ECDSA verification per token.
///
/// Cost (release build, 2-core x86-64, Apple's transactionInfo vector; measured while other
/// builds loaded the machine, when one bare P-256 verification took about 0.1 ms): a token
/// whose chain is not cached about 0.4–0.7 ms (three ECDSA verifications — the token's and the
/// two certificates' — DER parsing and swift-certificates' chain building); with its chain
/// cached about 0.1–0.2 ms, most of it the token's one ECDSA verification (base64, the header
/// and payload JSON are the rest).
public struct AppStoreVerifier: Sendable {
    /// Tokens longer than this are refused unread (App Store transactions are under 3 KiB).
    public static let maxCompactLength = 64 * 1024

    public let anchors: TrustAnchors
    private let appStoreRoots: [Certificate]
    private let xcodeRoots: [Certificate]
    /// Roots of the anchors that are not DER certificates (only possible for anchors built in code).
    private let rootProblems: [String]
    private let cache = AppStoreChainCache()

    /// A verifier for `anchors`; their roots are parsed here, once. A root that does not parse
    /// is left out (and named in the `chain` errors of tokens that find no root).
    /// - Cost: one DER parse per root.
    public init(anchors: TrustAnchors) {
        self.anchors = anchors
        var problems: [String] = []
        func parse(_ ders: [[UInt8]], _ name: String) -> [Certificate] {
            ders.enumerated().compactMap { i, der in
                if let certificate = try? Certificate(derEncoded: der) { return certificate }
                problems.append("\(name)[\(i)] is not a DER certificate")
                return nil
            }
        }
        appStoreRoots = parse(anchors.appStoreRoots, "app_store_roots")
        xcodeRoots = parse(anchors.xcodeRoots, "xcode_roots")
        rootProblems = problems
    }

    /// The payload of a signed transaction (StoreKit's `signedTransactionInfo`, a JWS) after
    /// every check, through the bundle id and the environment.
    /// It does not judge revocation or expiry: see ``AppStoreTransaction/problem(at:)``.
    public func verifyTransaction(
        _ jws: String, source: String
    ) throws -> AppStoreTransaction {
        let (transaction, signer) = try verifiedPayload(jws, source: source, as: AppStoreTransaction.self) {
            $0.signedDate?.appStoreMilliseconds
        }
        try checkBundle(transaction.bundleId, source: source)
        try checkEnvironment(transaction.environment, signer: signer, source: source)
        return transaction
    }

    /// The payload of a signed renewal info (`signedRenewalInfo`) after every check; it has no
    /// bundle id, so only its chain, signature and environment are checked.
    public func verifyRenewalInfo(
        _ jws: String, source: String
    ) throws -> AppStoreRenewalInfo {
        let (info, signer) = try verifiedPayload(jws, source: source, as: AppStoreRenewalInfo.self) {
            $0.signedDate?.appStoreMilliseconds
        }
        try checkEnvironment(info.environment, signer: signer, source: source)
        return info
    }

    /// The payload of an App Store Server Notification V2 (`signedPayload`) after every check:
    /// bundle id, then app id, then environment, from ``AppStoreNotification/appIdentity``.
    /// The transaction and renewal info inside stay JWS strings; verify them on their own.
    public func verifyNotification(
        _ jws: String, source: String
    ) throws -> AppStoreNotification {
        let (notification, signer) = try verifiedPayload(jws, source: source, as: AppStoreNotification.self) {
            $0.signedDate?.appStoreMilliseconds
        }
        let identity = notification.appIdentity
        try checkBundle(identity.bundleId, source: source)
        if let expected = anchors.appAppleID, identity.environment == .production || identity.appAppleId != nil,
            identity.appAppleId != expected
        {
            let found = identity.appAppleId.map(String.init) ?? "none"
            throw AppStoreVerificationError(.appID, source: source, "appAppleId \(found) is not this app's \(expected)")
        }
        try checkEnvironment(identity.environment, signer: signer, source: source)
        return notification
    }

    /// Checks that `leaf` and `intermediate` (DER) chain to one of the anchors' App Store roots
    /// with Apple's OIDs, valid at `date` (to the second) — the chain step of verification alone.
    /// - Cost: one chain validation (not cached).
    public func verifyChain(leaf: [UInt8], intermediate: [UInt8], at date: Date) throws {
        let source = "certificate chain"
        guard date.isInAppStoreRange else {
            throw AppStoreVerificationError(
                .chain, source: source, "validation time \(date.timeIntervalSince1970) is outside 1970…9999")
        }
        let seconds = date.appStoreMilliseconds / 1000
        let leafCertificate = try parseCertificate(leaf, name: "leaf", source: source)
        let intermediateCertificate = try parseCertificate(intermediate, name: "intermediate", source: source)
        _ = try validateChain(
            leaf: leafCertificate, intermediate: intermediateCertificate, at: seconds * 1000, source: source)
    }

    /// How many validated chains are cached (for tests and reports).
    public var cachedChainCount: Int { cache.count }

    // MARK: - The common path

    /// Who signed: the App Store (three certificates) or StoreKit Testing in Xcode (one).
    private enum Signer { case appStore, xcode }

    private func verifiedPayload<T: Decodable>(
        _ jws: String, source: String, as type: T.Type,
        signedDate: (T) -> Int64?
    ) throws(AppStoreVerificationError) -> (T, Signer) {
        func fail(_ reason: AppStoreVerificationError.Reason, _ detail: String) -> AppStoreVerificationError {
            AppStoreVerificationError(reason, source: source, detail)
        }
        guard jws.utf8.count <= Self.maxCompactLength else {
            throw fail(.malformed, "token is \(jws.utf8.count) bytes, over the \(Self.maxCompactLength)-byte limit")
        }
        // Split on the bytes, not on Characters: a third of the cached path's time otherwise.
        let text = Array(jws.utf8)
        let dots = text.indices.filter { text[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else {
            throw fail(
                .malformed,
                "a compact JWS has 3 dot-separated parts (header.payload.signature), this has \(dots.count + 1)")
        }
        let parts = [text[..<dots[0]], text[(dots[0] + 1)..<dots[1]], text[(dots[1] + 1)...]]
        guard parts.allSatisfy({ !$0.isEmpty }) else {
            throw fail(.malformed, "the JWS has an empty part (unsigned or detached tokens are not accepted)")
        }
        let headerBytes: [UInt8], payloadBytes: [UInt8], signatureBytes: [UInt8]
        do {
            headerBytes = try Base64URL.decode(String(decoding: parts[0], as: UTF8.self), source: source)
            payloadBytes = try Base64URL.decode(String(decoding: parts[1], as: UTF8.self), source: source)
            signatureBytes = try Base64URL.decode(String(decoding: parts[2], as: UTF8.self), source: source)
        } catch {
            throw fail(.malformed, error.detailText)
        }
        let header: AppStoreJWSHeader
        do {
            header = try JSONDecoder().decode(AppStoreJWSHeader.self, from: Data(headerBytes))
        } catch {
            throw fail(.malformed, "the JWS header is not a JSON object with string alg and an x5c array of strings")
        }
        guard header.alg == "ES256" else {
            throw fail(
                .malformed,
                "alg \(header.alg.map(ErrorText.quoted) ?? "missing") is not ES256, the App Store's algorithm")
        }
        if let crit = header.crit {
            throw fail(
                .malformed,
                "unsupported critical header parameters \(crit.map(ErrorText.quoted).joined(separator: ", "))")
        }
        guard let x5c = header.x5c else { throw fail(.malformed, "the header has no x5c certificate chain") }
        let signer: Signer
        switch x5c.count {
        case 3: signer = .appStore
        case 1:
            signer = .xcode
            guard anchors.environments.contains(.xcode) || anchors.environments.contains(.localTesting) else {
                throw fail(
                    .environment,
                    """
                    an Xcode-signed token (one self-signed certificate in x5c, kid \
                    \(header.kid.map(ErrorText.quoted) ?? "none")); Xcode tokens are accepted only when the trust \
                    lists Xcode
                    """
                )
            }
        default:
            throw fail(.malformed, "x5c holds \(x5c.count) certificates, expected 3 (leaf, intermediate, root)")
        }
        if (signer == .appStore ? appStoreRoots : xcodeRoots).isEmpty {
            throw fail(.chain, noRootProblem(appStore: signer == .appStore))
        }
        var certificates: [[UInt8]] = []
        for (i, text) in x5c.prefix(signer == .appStore ? 2 : 1).enumerated() {
            guard let data = Data(base64Encoded: text), !data.isEmpty else {
                throw fail(.chain, "x5c[\(i)] is not standard base64")
            }
            certificates.append(Array(data))
        }

        // The leaf's key: from the cache when this pair was validated before, else parsed
        // (and not trusted until the chain below is validated).
        let key = AppStoreChainCache.Key(
            leaf: certificates[0], intermediate: signer == .appStore ? certificates[1] : [])
        let cached = cache.entry(key)
        var parsed: (leaf: Certificate, intermediate: Certificate?)?
        let leafKey: P256.Signing.PublicKey
        if let cached {
            leafKey = cached.leafKey
        } else {
            let leaf = try parseCertificate(certificates[0], name: "x5c[0] (leaf)", source: source)
            let intermediate =
                signer == .appStore
                ? try parseCertificate(certificates[1], name: "x5c[1] (intermediate)", source: source) : nil
            guard let p256 = P256.Signing.PublicKey(leaf.publicKey) else {
                throw fail(.chain, "the leaf certificate's key is not P-256, so it cannot sign ES256")
            }
            parsed = (leaf, intermediate)
            leafKey = p256
        }

        guard signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        else {
            throw fail(.signature, "the ES256 signature is \(signatureBytes.count) bytes, expected 64 (r‖s)")
        }
        guard leafKey.isValidSignature(signature, for: text[..<dots[1]]) else {
            throw fail(.signature, "the ES256 signature does not verify with the leaf certificate's key")
        }

        let payload: T
        do {
            payload = try JSONDecoder().decode(T.self, from: Data(payloadBytes))
        } catch {
            throw fail(.malformed, "payload: \(appStoreDecodingProblem(error))")
        }

        let at = signedDate(payload) ?? Self.nowMilliseconds()
        if let cached, cached.covers(at) { return (payload, signer) }
        if parsed == nil {
            let leaf = try parseCertificate(certificates[0], name: "x5c[0] (leaf)", source: source)
            let intermediate =
                signer == .appStore
                ? try parseCertificate(certificates[1], name: "x5c[1] (intermediate)", source: source) : nil
            parsed = (leaf, intermediate)
        }
        let span = try validateChain(leaf: parsed!.leaf, intermediate: parsed!.intermediate, at: at, source: source)
        cache.store(.init(leafKey: leafKey, validFrom: span.lowerBound, validUntil: span.upperBound), for: key)
        return (payload, signer)
    }

    private func checkBundle(_ bundleId: String?, source: String) throws(AppStoreVerificationError) {
        guard bundleId == anchors.bundleID else {
            throw AppStoreVerificationError(
                .bundle, source: source,
                """
                bundleId \(bundleId.map(ErrorText.quoted) ?? "missing") is not this app's \
                \(ErrorText.quoted(anchors.bundleID))
                """
            )
        }
    }

    private func checkEnvironment(
        _ environment: AppStoreEnvironment?, signer: Signer, source: String
    ) throws(AppStoreVerificationError) {
        guard let environment else {
            throw AppStoreVerificationError(.environment, source: source, "the payload names no environment")
        }
        let accepted = AppStoreEnvironment.allCases.filter(anchors.environments.contains).map(\.rawValue).joined(
            separator: ", ")
        guard anchors.environments.contains(environment) else {
            throw AppStoreVerificationError(
                .environment, source: source,
                "environment \(environment.rawValue) is not accepted (accepted: \(accepted))")
        }
        guard environment.isSignedByAppStore == (signer == .appStore) else {
            let by = signer == .appStore ? "an App Store root" : "an Xcode certificate"
            throw AppStoreVerificationError(
                .environment, source: source, "environment \(environment.rawValue) cannot be signed through \(by)")
        }
    }

    // MARK: - Certificates

    private func parseCertificate(
        _ der: [UInt8], name: String, source: String
    ) throws(AppStoreVerificationError) -> Certificate {
        do {
            return try Certificate(derEncoded: der)
        } catch {
            throw AppStoreVerificationError(.chain, source: source, "\(name) is not a DER X.509 certificate")
        }
    }

    /// Validates leaf (→ intermediate) → pinned root at `milliseconds`; returns the span in
    /// which every certificate of the validated chain is valid.
    private func validateChain(
        leaf: Certificate, intermediate: Certificate?, at milliseconds: Int64,
        source: String
    ) throws(AppStoreVerificationError) -> ClosedRange<Int64> {
        let appStore = intermediate != nil
        let roots = appStore ? appStoreRoots : xcodeRoots
        guard !roots.isEmpty else {
            throw AppStoreVerificationError(.chain, source: source, noRootProblem(appStore: appStore))
        }
        let time = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        let result = CallerThreadExecutor.run { [leaf, intermediate, roots] in
            var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
                RFC5280Policy(fixedExpiryValidationTime: time)
                AppStoreChainPolicy(requireAppleOIDs: appStore)
            }
            return await verifier.validate(leaf: leaf, intermediates: CertificateStore(intermediate.map { [$0] } ?? []))
        }
        switch result {
        case .validCertificate(let chain):
            var from = Int64.min, until = Int64.max
            for certificate in chain {
                from = max(from, Self.milliseconds(certificate.notValidBefore))
                until = min(until, Self.milliseconds(certificate.notValidAfter))
            }
            return from...max(from, until)
        case .couldNotValidate(let failures):
            throw AppStoreVerificationError(
                .chain, source: source,
                chainProblem(leaf: leaf, intermediate: intermediate, at: milliseconds, failures: failures))
        }
    }

    private func noRootProblem(appStore: Bool) -> String {
        let problems = rootProblems.isEmpty ? "" : " (\(rootProblems.joined(separator: "; ")))"
        return appStore
            ? "no App Store root is pinned\(problems)" : "no Xcode certificate is pinned (xcode_roots)\(problems)"
    }

    /// Why a chain failed, in words: a certificate of the token outside its validity at the
    /// validation time, else a missing Apple OID, else RFC 5280's first reason, else no path.
    private func chainProblem(
        leaf: Certificate, intermediate: Certificate?, at milliseconds: Int64,
        failures: [CertificateValidationResult.PolicyFailure]
    ) -> String {
        let when = "\(AppStoreDate.text(milliseconds: milliseconds)) (signedDate)"
        for (name, certificate) in [("leaf", leaf), ("intermediate", intermediate)] {
            guard let certificate else { continue }
            let from = Self.milliseconds(certificate.notValidBefore),
                until = Self.milliseconds(certificate.notValidAfter)
            if milliseconds < from {
                return
                    """
                    the \(name) certificate is not valid before \(AppStoreDate.text(milliseconds: from)), after \
                    \(when)
                    """
            }
            if milliseconds > until {
                return "the \(name) certificate expired at \(AppStoreDate.text(milliseconds: until)), before \(when)"
            }
        }
        let reasons = failures.map(\.policyFailureReason.description)
        if let ours = reasons.first(where: { $0.hasPrefix(AppStoreChainPolicy.reasonPrefix) }) {
            return String(ours.dropFirst(AppStoreChainPolicy.reasonPrefix.count))
        }
        if let first = reasons.first {
            let line = ErrorText.oneLine(first)
            return line.count > 300 ? String(line.prefix(300)) + "…" : line
        }
        let problems = rootProblems.isEmpty ? "" : "; \(rootProblems.joined(separator: "; "))"
        if let intermediate {
            if leaf.issuer != intermediate.subject
                || !intermediate.publicKey.isValidSignature(leaf.signature, for: leaf)
            {
                return "the leaf certificate is not issued by the intermediate in x5c[1]"
            }
            return
                """
                the intermediate does not chain to a pinned App Store root (its issuer is \
                \(ErrorText.quoted(String(describing: intermediate.issuer))))\(problems)
                """
        }
        return
            """
            the certificate is not a pinned Xcode certificate nor issued by one (its issuer is \
            \(ErrorText.quoted(String(describing: leaf.issuer))))\(problems)
            """
    }

    private static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded(.down)
        return Int64(max(-9.0e15, min(9.0e15, value)))
    }

    private static func nowMilliseconds() -> Int64 { milliseconds(Date()) }
}
