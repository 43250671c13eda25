import X509
import SwiftASN1

/// The part of App Store chain validation RFC 5280 does not cover: a chain of exactly leaf →
/// intermediate → pinned root whose intermediate carries Apple's WWDR intermediate marker
/// (OID 1.2.840.113635.100.6.2.1) and whose leaf carries Apple's receipt-signing marker
/// (OID 1.2.840.113635.100.6.11.1), as extensions of any value. An Authority Key Identifier is
/// not demanded: Apple's own test certificates have none.
///
/// For Xcode tokens (``requireAppleOIDs`` false) it only bounds the chain to the pinned
/// certificate itself or one it issued.
/// - Cost: a scan of each certificate's extensions (a handful).
struct AppStoreChainPolicy: VerifierPolicy {
    static let intermediateOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 2, 1]
    static let leafOID: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 11, 1]
    /// Every failure reason of this policy starts so, to tell it from RFC 5280's.
    static let reasonPrefix = "App Store chain policy: "

    let requireAppleOIDs: Bool

    /// The markers are enforced here, so a certificate may mark them critical.
    var verifyingCriticalExtensions: [ASN1ObjectIdentifier] {
        requireAppleOIDs ? [Self.intermediateOID, Self.leafOID] : []
    }

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        let certificates = Array(chain)
        guard requireAppleOIDs else {
            return certificates.count <= 2
                ? .meetsPolicy
                : .failsToMeetPolicy(
                    reason: Self.reasonPrefix
                        + "an Xcode token's certificate must be pinned or issued by a pinned certificate")
        }
        guard certificates.count == 3 else {
            return .failsToMeetPolicy(
                reason: Self.reasonPrefix
                    + "the chain has \(certificates.count) certificates, expected leaf, intermediate and root")
        }
        guard certificates[1].extensions.contains(where: { $0.oid == Self.intermediateOID }) else {
            return .failsToMeetPolicy(
                reason: Self.reasonPrefix
                    + "the intermediate certificate lacks Apple's intermediate OID 1.2.840.113635.100.6.2.1")
        }
        guard certificates[0].extensions.contains(where: { $0.oid == Self.leafOID }) else {
            return .failsToMeetPolicy(
                reason: Self.reasonPrefix
                    + "the leaf certificate lacks Apple's receipt-signing OID 1.2.840.113635.100.6.11.1")
        }
        return .meetsPolicy
    }
}
