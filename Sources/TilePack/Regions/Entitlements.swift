import TilePackCore

/// Where the access policy learns what this account owns: the entitlement ledger (verified
/// signed transactions) in the app and the CLI, ``FixedEntitlements`` in tests.
///
/// The policy caches its answers per tile and asks ``generation`` on every check to know
/// whether they still hold, so reading it must be cheap (an atomic load, not a query).
public protocol EntitlementSource: Sendable {
    /// The product ids currently entitled (a bundle's id alone is enough: the policy expands
    /// bundles through the catalog). Called only after ``generation`` changed.
    func entitledProductIDs() -> Set<String>

    /// Changes whenever ``entitledProductIDs()`` may answer differently: a purchase, a
    /// refund, a restore, and a subscription reaching its expiry (a source whose answer
    /// changes with time must count that as a change too).
    var generation: UInt64 { get }

    /// Subscriptions that ended (not revoked), by product id, with their signed `expiresDate`
    /// (ms): they keep the pack versions released before it. Defaults to none.
    func lapsedSubscriptions() -> [String: Int64]
}

extension EntitlementSource {
    public func lapsedSubscriptions() -> [String: Int64] { [:] }
}

/// An in-memory entitlement set (tests, demos, and an app that keeps its own records).
/// Every change bumps ``generation``.
///
/// Cost: ``generation`` is one lock; changes copy the set.
public final class FixedEntitlements: EntitlementSource {
    private let state: Locked<(ids: Set<String>, generation: UInt64)>

    public init(_ ids: Set<String> = []) {
        state = Locked((ids, 0))
    }

    public func entitledProductIDs() -> Set<String> { state.withLock { $0.ids } }
    public var generation: UInt64 { state.withLock { $0.generation } }

    /// Replaces the whole set.
    public func set(_ ids: Set<String>) {
        state.withLock { $0 = (ids, $0.generation &+ 1) }
    }

    /// Adds one product (a purchase).
    public func grant(_ id: String) {
        state.withLock {
            $0.ids.insert(id); $0.generation &+= 1
        }
    }

    /// Removes one product (a refund, an expiry).
    public func revoke(_ id: String) {
        state.withLock {
            $0.ids.remove(id); $0.generation &+= 1
        }
    }
}
