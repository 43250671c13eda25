/// Which entry a byte-budgeted cache gives up first when it needs room.
///
/// A policy sees only slot numbers (small integers the cache hands out and reuses) and
/// entry sizes, never keys or values, so the tile store, the trace simulator and the
/// benchmarks replay exactly the same code. Every method is O(1) except ``victim(where:)``,
/// which walks candidates in eviction order and skips those the cache cannot evict (leased
/// tiles): O(1 + skipped).
///
/// Not thread-safe: the cache calls it under its own lock.
package protocol EvictionPolicy: Sendable {
    /// A new entry now lives in `slot` and holds `bytes`.
    mutating func inserted(_ slot: Int, bytes: Int)
    /// The entry in `slot` was used again (a cache hit).
    mutating func accessed(_ slot: Int)
    /// The entry in `slot` left the cache (evicted, dropped under pressure, or failed).
    mutating func removed(_ slot: Int)
    /// The first slot, in eviction order, for which `evictable` is true; nil when none is.
    func victim(where evictable: (Int) -> Bool) -> Int?
}

/// The eviction policies a tile store can run, by the name the CLI and reports use.
public enum EvictionPolicyKind: String, Sendable, CaseIterable, Codable {
    /// Least recently used: the baseline.
    case lru
    /// Segmented LRU: entries enter a probation segment and move to a protected one (80 % of
    /// the cached bytes) on their second use, so a sweep of once-seen tiles evicts other
    /// once-seen tiles before the ones a user keeps coming back to.
    case slru

    /// The policy a tile store runs unless told otherwise: chosen from the hit rates
    /// `CacheSimulation.compare` measures against Belady's optimum (BENCHMARKS.md, "Tile
    /// store: eviction policy vs Belady").
    public static let `default`: EvictionPolicyKind = .lru

    /// A fresh policy of this kind. Cost: O(1).
    package func makePolicy() -> any EvictionPolicy {
        switch self {
        case .lru: LRUPolicy()
        case .slru: SegmentedLRUPolicy()
        }
    }
}

/// Doubly linked lists threaded through slot-indexed arrays: no allocation per entry once
/// the arrays have grown to the number of slots in use.
struct SlotLists: Sendable {
    static let none: Int32 = -1
    private(set) var next: [Int32] = []
    private(set) var prev: [Int32] = []
    /// Which list a slot is on (`none` when on none).
    private(set) var list: [Int32] = []
    private(set) var head: [Int32]  // most recently used end
    private(set) var tail: [Int32]  // eviction end

    init(lists: Int) {
        head = Array(repeating: Self.none, count: lists)
        tail = Array(repeating: Self.none, count: lists)
    }

    private mutating func grow(to slot: Int) {
        while next.count <= slot {
            next.append(Self.none); prev.append(Self.none); list.append(Self.none)
        }
    }

    func listOf(_ slot: Int) -> Int? {
        slot < list.count && list[slot] != Self.none ? Int(list[slot]) : nil
    }

    /// Puts `slot` at the most-recently-used end of list `l` (unlinking it first if needed).
    mutating func pushFront(_ slot: Int, list l: Int) {
        grow(to: slot)
        if list[slot] != Self.none { unlink(slot) }
        let s = Int32(slot)
        next[slot] = head[l]
        prev[slot] = Self.none
        if head[l] != Self.none { prev[Int(head[l])] = s } else { tail[l] = s }
        head[l] = s
        list[slot] = Int32(l)
    }

    mutating func unlink(_ slot: Int) {
        guard slot < list.count, list[slot] != Self.none else { return }
        let l = Int(list[slot])
        let p = prev[slot], n = next[slot]
        if p != Self.none { next[Int(p)] = n } else { head[l] = n }
        if n != Self.none { prev[Int(n)] = p } else { tail[l] = p }
        list[slot] = Self.none
    }

    /// Walks list `l` from its eviction end.
    func firstFromTail(list l: Int, where accept: (Int) -> Bool) -> Int? {
        var s = tail[l]
        while s != Self.none {
            if accept(Int(s)) { return Int(s) }
            s = prev[Int(s)]
        }
        return nil
    }
}

/// Least recently used. Cost: O(1) per operation.
package struct LRUPolicy: EvictionPolicy {
    private var lists = SlotLists(lists: 1)
    public init() {}
    public mutating func inserted(_ slot: Int, bytes: Int) { lists.pushFront(slot, list: 0) }
    public mutating func accessed(_ slot: Int) { lists.pushFront(slot, list: 0) }
    public mutating func removed(_ slot: Int) { lists.unlink(slot) }
    public func victim(where evictable: (Int) -> Bool) -> Int? { lists.firstFromTail(list: 0, where: evictable) }
}

/// Segmented LRU (Karedla, Love and Wherry, 1994): a probation list for entries seen once and
/// a protected list, at most `protectedShare` of the cached bytes, for entries seen again.
/// Victims come from probation first. Cost: O(1) per operation, plus the demotions that keep
/// the protected share (amortised O(1)).
package struct SegmentedLRUPolicy: EvictionPolicy {
    private static let probation = 0, protected = 1
    private var lists = SlotLists(lists: 2)
    private var bytes: [Int] = []
    private var totalBytes = 0
    private var protectedBytes = 0
    /// Share of cached bytes the protected segment may hold.
    public let protectedShare: Double

    public init(protectedShare: Double = 0.8) {
        precondition(protectedShare >= 0 && protectedShare < 1)
        self.protectedShare = protectedShare
    }

    public mutating func inserted(_ slot: Int, bytes size: Int) {
        while bytes.count <= slot { bytes.append(0) }
        bytes[slot] = size
        totalBytes += size
        lists.pushFront(slot, list: Self.probation)
        demoteOverflow()
    }

    public mutating func accessed(_ slot: Int) {
        if lists.listOf(slot) == Self.probation {
            protectedBytes += bytes[slot]
        }
        lists.pushFront(slot, list: Self.protected)
        demoteOverflow()
    }

    public mutating func removed(_ slot: Int) {
        guard let l = lists.listOf(slot) else { return }
        if l == Self.protected { protectedBytes -= bytes[slot] }
        totalBytes -= bytes[slot]
        lists.unlink(slot)
    }

    public func victim(where evictable: (Int) -> Bool) -> Int? {
        lists.firstFromTail(list: Self.probation, where: evictable)
            ?? lists.firstFromTail(list: Self.protected, where: evictable)
    }

    /// Moves the protected segment's least recent entries back to probation while it holds
    /// more than its share.
    private mutating func demoteOverflow() {
        let limit = Int(Double(totalBytes) * protectedShare)
        while protectedBytes > limit, let oldest = lists.firstFromTail(list: Self.protected, where: { _ in true }) {
            protectedBytes -= bytes[oldest]
            lists.pushFront(oldest, list: Self.probation)
        }
    }
}
