/// A thread-safe map of values whose sizes the caller states, kept under a byte limit and
/// evicted by an ``EvictionPolicy`` (least recently used unless told otherwise): the one
/// byte-capped cache behind decoded TIFF blocks and the server's encoded tiles. The tile store
/// runs the same policies over its own index, which also leases and reserves.
///
/// Entries larger than ``maxEntryBytes`` are not kept (a put returns the value unkept), so one
/// huge value cannot flush everything else.
///
/// - Cost: O(1) per get and put, plus O(1) per entry evicted; one lock per call. Memory: the
///   values, a slot table and the policy's links (a few words an entry).
package final class ByteBudgetCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Entry {
        var key: Key
        var value: Value
        var bytes: Int
    }

    private struct State {
        var slots: [Key: Int] = [:]
        var entries: [Entry?] = []
        var free: [Int] = []
        var policy: any EvictionPolicy
        var bytes = 0

        /// Debug builds check that the running total is the entries' sum and under the limit.
        func checkInvariants(limit: Int) {
            #if DEBUG
            let sum = entries.reduce(0) { $0 + ($1?.bytes ?? 0) }
            assert(
                sum == bytes && bytes <= limit && slots.count == entries.count - free.count,
                "ByteBudgetCache accounting: \(bytes) counted, \(sum) held, limit \(limit)")
            #endif
        }
    }

    /// Most bytes held at once.
    package let limit: Int
    /// Largest entry kept.
    package let maxEntryBytes: Int
    private let state: Locked<State>

    package init(limit: Int, maxEntryBytes: Int? = nil, policy: EvictionPolicyKind = .lru) {
        self.limit = max(0, limit)
        self.maxEntryBytes = min(self.limit, maxEntryBytes ?? self.limit)
        state = Locked(State(policy: policy.makePolicy()))
    }

    /// The value under `key`, marked as used; nil when absent.
    package func get(_ key: Key) -> Value? {
        state.withLock { s in
            guard let slot = s.slots[key], let entry = s.entries[slot] else { return nil }
            s.policy.accessed(slot)
            return entry.value
        }
    }

    /// Keeps `value` (of `bytes` bytes) under `key`, evicting until it fits, and returns the
    /// value now cached under `key`: an entry already there wins (it is what other callers
    /// hold), else `value`. A value above ``maxEntryBytes`` is returned and not kept.
    @discardableResult
    package func put(_ key: Key, _ value: Value, bytes: Int) -> Value {
        guard bytes >= 0, bytes <= maxEntryBytes else { return value }
        return state.withLock { s in
            if let slot = s.slots[key], let existing = s.entries[slot] {
                s.policy.accessed(slot)
                return existing.value
            }
            while s.bytes + bytes > limit, let victim = s.policy.victim(where: { _ in true }) {
                remove(victim, from: &s)
            }
            let slot = s.free.popLast() ?? s.entries.count
            if slot == s.entries.count { s.entries.append(nil) }
            s.entries[slot] = Entry(key: key, value: value, bytes: bytes)
            s.slots[key] = slot
            s.bytes += bytes
            s.policy.inserted(slot, bytes: bytes)
            s.checkInvariants(limit: limit)
            return value
        }
    }

    /// Bytes held now (for tests and statistics).
    package var byteCount: Int { state.withLock { $0.bytes } }

    /// Entries held now.
    package var count: Int { state.withLock { $0.slots.count } }

    private func remove(_ slot: Int, from s: inout State) {
        guard let entry = s.entries[slot] else { return }
        s.policy.removed(slot)
        s.entries[slot] = nil
        s.slots[entry.key] = nil
        s.free.append(slot)
        s.bytes -= entry.bytes
    }
}
