import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The ledger as the access policy's ``EntitlementSource``: the verified entitlements whose
/// type matches the product's kind in the trusted catalog, re-derived when the ledger file
/// changes (a refund or purchase by another process: `tilepack store refund` while `serve`
/// runs), when this process imports or overlays, and when the earliest subscription expires.
///
/// Why a time-gated check: the policy asks ``generation`` on every tile request, and must
/// stay under 2 µs there (BENCHMARKS.md). Asking SQLite (`PRAGMA data_version`) costs a few
/// microseconds, so it is asked at most once per ``checkInterval`` (monotonic clock): a
/// change made by another process shows within that interval, one made in this process at
/// once (``refresh()``).
///
/// Cost: ``generation`` is one monotonic clock read and one uncontended lock; every
/// ``checkInterval`` one `data_version` step; a re-derivation verifies the changed ledger
/// (one ES256 verification per row).
public final class LedgerEntitlements: EntitlementSource {
    /// How often another process's ledger changes are looked for.
    public static let checkInterval: Duration = .milliseconds(5)

    public let ledger: EntitlementLedger
    private let accepts: @Sendable (Entitlement) -> Bool
    private struct Snapshot {
        var ids: Set<String>
        /// Lapsed subscriptions: product id → the latest signed `expiresDate` (ms).
        var lapsed: [String: Int64] = [:]
        /// When the first time-limited entitlement in `ids` ends (ms), or Int64.max.
        var nextExpiry: Int64
        var token: EntitlementLedger.ChangeToken?
        var generation: UInt64
        /// Monotonic ns of the last look at the ledger.
        var checkedAt: UInt64
        /// Entitlements refused by `accepts`, as problem lines.
        var refused: [String]
    }
    private let state: Locked<Snapshot>

    /// `accepts` filters what the ledger verified (the library binds each transaction's type
    /// to the product's kind there); it must be pure.
    public init(
        ledger: EntitlementLedger, accepts: @escaping @Sendable (Entitlement) -> Bool = { _ in true }
    ) throws {
        self.ledger = ledger
        self.accepts = accepts
        state = Locked(Snapshot(ids: [], nextExpiry: .min, token: nil, generation: 0, checkedAt: 0, refused: []))
        try refresh()
    }

    /// Derives the entitlements again from the ledger and bumps the generation.
    public func refresh() throws {
        let token = try ledger.changeToken()
        let report = try ledger.report()
        let kept = report.entitlements.filter(accepts)
        let refused = report.entitlements.filter { !accepts($0) }.map {
            """
            transaction \($0.transactionID): a \($0.type.rawValue) does not buy \($0.productID) (the catalog \
            sells it as another kind)
            """
        }
        let expiry = kept.compactMap { $0.expiresDate?.appStoreMilliseconds }.min() ?? .max
        var lapsed: [String: Int64] = [:]
        for e in report.lapsed where accepts(e) {
            if let end = e.expiresDate?.appStoreMilliseconds {
                lapsed[e.productID] = max(lapsed[e.productID] ?? .min, end)
            }
        }
        let now = Self.monotonicNanoseconds()
        state.withLock { s in
            s.ids = Set(kept.map(\.productID))
            s.lapsed = lapsed
            s.nextExpiry = report.clockRolledBack ? .max : expiry
            s.token = token
            s.generation &+= 1
            s.checkedAt = now
            s.refused = refused
        }
    }

    public func entitledProductIDs() -> Set<String> { state.withLock { $0.ids } }

    /// Subscriptions that ended, by product id, with their latest signed `expiresDate` (ms):
    /// they keep the pack versions released before it.
    public func lapsedSubscriptions() -> [String: Int64] { state.withLock { $0.lapsed } }

    /// Entitlements the catalog's kinds refused, one line each (for `store entitlements`).
    public var refusedEntitlements: [String] { state.withLock { $0.refused } }

    public var generation: UInt64 {
        let now = Self.monotonicNanoseconds()
        let interval = UInt64(Self.checkInterval.components.attoseconds / 1_000_000_000)
        let (due, token) = state.withLock { s -> (Bool, EntitlementLedger.ChangeToken?) in
            guard now &- s.checkedAt >= interval || s.token == nil else { return (false, nil) }
            s.checkedAt = now
            return (true, s.token)
        }
        if due {
            let wall = ledger.clock.now().appStoreMilliseconds
            let expired = state.withLock { wall >= $0.nextExpiry }
            let changed = (try? ledger.changeToken()).map { $0 != token } ?? true
            // A failure to re-derive leaves nothing entitled rather than something stale.
            if (changed || expired), (try? refresh()) == nil {
                state.withLock { s in
                    s.ids = []; s.nextExpiry = .max; s.generation &+= 1
                }
            }
        }
        return state.withLock { $0.generation }
    }

    static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        #if canImport(Glibc)
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts)
        #else
        clock_gettime(CLOCK_MONOTONIC, &ts)
        #endif
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}
