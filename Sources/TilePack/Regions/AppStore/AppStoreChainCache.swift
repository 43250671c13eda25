import TilePackCore
import Crypto
import Synchronization

/// Chains already validated by one ``AppStoreVerifier``, per (leaf, intermediate) DER pair:
/// the leaf's key and the span of time in which every certificate of the validated chain is
/// valid. Re-verifying a token whose pair is here and whose `signedDate` falls in that span is
/// one ECDSA verification; outside the span the chain is validated again (and fails).
///
/// Only successes are kept (a failure may be a time outside the span). The anchors are fixed
/// for a verifier, so a pair's verdict cannot change otherwise.
/// - Cost: one dictionary lookup under a ``Locked``, hashing about 1 KiB of DER (~1 µs); at most
///   ``capacity`` entries (a few KiB each), emptied when full.
final class AppStoreChainCache: Sendable {
    struct Key: Hashable, Sendable {
        var leaf: [UInt8]
        /// Empty for an Xcode token (one certificate).
        var intermediate: [UInt8]

        /// Hashes the bytes in bulk (the synthesized hash combines them one by one, 4× slower).
        func hash(into hasher: inout Hasher) {
            hasher.combine(leaf.count)
            leaf.withUnsafeBytes { hasher.combine(bytes: $0) }
            intermediate.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    struct Entry: Sendable {
        var leafKey: P256.Signing.PublicKey
        /// Milliseconds since 1970: latest notBefore and earliest notAfter of the chain.
        var validFrom: Int64
        var validUntil: Int64

        func covers(_ milliseconds: Int64) -> Bool { validFrom <= milliseconds && milliseconds <= validUntil }
    }

    /// The App Store signs with a few leaves at a time; a ledger holds tokens of a few more.
    static let capacity = 64

    private let entries = Locked<[Key: Entry]>([:])

    func entry(_ key: Key) -> Entry? { entries.withLock { $0[key] } }

    func store(_ entry: Entry, for key: Key) {
        entries.withLock {
            if $0.count >= Self.capacity { $0.removeAll(keepingCapacity: true) }
            $0[key] = entry
        }
    }

    var count: Int { entries.withLock { $0.count } }
}
