import TilePackCore
import TilePackStore

/// Replays an ``AccessTrace`` against a byte budget, with the real eviction-policy code or
/// with Belady's optimal, and counts hits: how the tile store's policy was chosen.
///
/// The simulated cache behaves as the store's does: every miss loads the tile and caches it
/// (no bypass), evicting entries in the policy's order until it fits; slots come from a stack
/// of free slots, so a slot freed by an eviction is the next one reused. A tile larger than
/// the whole budget is a miss that caches nothing.
public enum CacheSimulation {
    /// 32 KiB: a 256² PVRTC 4 bpp payload, what the store keeps for a GPU (its decoded RGBA
    /// would be 256 KiB). With every entry the same size Belady's MIN is the true optimum.
    public static let defaultTileBytes = 32 * 1024

    /// What replaying a trace gave.
    public struct Outcome: Sendable, Equatable {
        public var hits = 0
        public var misses = 0
        public var evictions = 0
        public var requests: Int { hits + misses }
        /// Hits over requests; 0 for no requests.
        public var hitRate: Double { requests == 0 ? 0 : Double(hits) / Double(requests) }
        public init() {}
    }

    /// A policy to replay: a real one, or the offline optimum.
    public enum Contender: Sendable, Hashable, CustomStringConvertible {
        case policy(EvictionPolicyKind)
        /// Belady's MIN: evicts the entry whose next use is farthest in the future.
        case belady
        public var description: String {
            switch self {
            case .policy(let k): k.rawValue
            case .belady: "belady"
            }
        }
    }

    /// One line of a comparison.
    public struct Row: Sendable, Equatable, Encodable {
        public var trace: String
        public var budgetTiles: Int
        public var budgetBytes: Int
        public var policy: String
        public var hits: Int
        public var misses: Int
        public var hitRate: Double
        /// This row's hit rate over Belady's on the same trace and budget (1 = optimal).
        public var ofBelady: Double

        enum CodingKeys: String, CodingKey {
            case trace, policy, hits, misses
            case budgetTiles = "budget_tiles", budgetBytes = "budget_bytes", hitRate = "hit_rate", ofBelady =
                "of_belady"
        }
    }

    /// Dense ids for the tiles of a request sequence, so the replay indexes arrays instead of
    /// hashing a `TileID` per step.
    struct Interned {
        var ids: [Int32]
        var tiles: [TileID]
        init(_ requests: [TileID]) {
            var index: [TileID: Int32] = [:]
            ids = []; ids.reserveCapacity(requests.count)
            tiles = []
            for t in requests {
                if let i = index[t] { ids.append(i); continue }
                let i = Int32(tiles.count)
                index[t] = i
                tiles.append(t)
                ids.append(i)
            }
        }
    }

    /// Replays `requests` through a cache of `budgetBytes` run by `kind`'s policy.
    /// - Parameter size: bytes of each tile's entry (default ``defaultTileBytes``).
    /// - Cost: O(requests) time (plus the policy's own costs), O(distinct tiles) memory.
    public static func replay(
        _ requests: [TileID], budgetBytes: Int, policy kind: EvictionPolicyKind,
        size: (TileID) -> Int = { _ in defaultTileBytes }
    ) -> Outcome {
        let interned = Interned(requests)
        let sizes = interned.tiles.map { max(0, size($0)) }
        return replay(interned.ids, sizes: sizes, budgetBytes: budgetBytes, policy: kind.makePolicy())
    }

    /// The replay proper, over dense ids; `policy` is a fresh policy.
    static func replay(_ ids: [Int32], sizes: [Int], budgetBytes: Int, policy start: any EvictionPolicy) -> Outcome {
        var policy = start
        var slotOf = [Int32](repeating: -1, count: sizes.count)  // tile id → slot
        var tileIn: [Int32] = []  // slot → tile id
        var freeSlots: [Int] = []
        var resident = 0
        var out = Outcome()
        for id in ids {
            let t = Int(id)
            let s = slotOf[t]
            if s >= 0 {
                out.hits += 1
                policy.accessed(Int(s))
                continue
            }
            out.misses += 1
            let bytes = sizes[t]
            guard bytes <= budgetBytes else { continue }
            while resident + bytes > budgetBytes, let v = policy.victim(where: { _ in true }) {
                let gone = Int(tileIn[v])
                resident -= sizes[gone]
                slotOf[gone] = -1
                policy.removed(v)
                freeSlots.append(v)
                out.evictions += 1
            }
            // A policy that offers no victim while the cache is over budget is broken; the
            // tile is then not cached, so the simulation never exceeds the budget either.
            guard resident + bytes <= budgetBytes else { continue }
            let slot: Int
            if let f = freeSlots.popLast() { slot = f } else { slot = tileIn.count; tileIn.append(-1) }
            tileIn[slot] = id
            slotOf[t] = Int32(slot)
            resident += bytes
            policy.inserted(slot, bytes: bytes)
        }
        return out
    }

    /// Replays `requests` with Belady's MIN: on a miss the tile is cached and, while over
    /// budget, the cached entry used again farthest in the future (or never) is evicted.
    /// With equal tile sizes no policy that caches every miss hits more often (Belady 1966;
    /// Mattson et al. 1970); with unequal sizes it is the usual heuristic, not a bound.
    /// - Cost: O(requests · log(distinct tiles)) time, O(requests) memory (the next-use table).
    public static func belady(
        _ requests: [TileID], budgetBytes: Int,
        size: (TileID) -> Int = { _ in defaultTileBytes }
    ) -> Outcome {
        let interned = Interned(requests)
        return belady(interned.ids, sizes: interned.tiles.map { max(0, size($0)) }, budgetBytes: budgetBytes)
    }

    static func belady(_ ids: [Int32], sizes: [Int], budgetBytes: Int) -> Outcome {
        let never = Int(Int32.max)
        // nextUse[i]: the index of the next request for ids[i] after i, or `never`.
        var nextUse = [Int](repeating: never, count: ids.count)
        var seen = [Int](repeating: never, count: sizes.count)
        for i in stride(from: ids.count - 1, through: 0, by: -1) {
            nextUse[i] = seen[Int(ids[i])]
            seen[Int(ids[i])] = i
        }
        // Max-heap of (next use, tile) packed in one Int; an entry is stale once the tile has
        // been used again (its `due` moved) or evicted (`due` is -1).
        var heap = MaxHeap()
        var due = [Int](repeating: -1, count: sizes.count)
        var resident = 0
        var out = Outcome()
        for (i, id) in ids.enumerated() {
            let t = Int(id)
            if due[t] >= 0 {
                out.hits += 1
            } else {
                out.misses += 1
                let bytes = sizes[t]
                guard bytes <= budgetBytes else { continue }
                while resident + bytes > budgetBytes, let top = heap.pop() {
                    let (when, gone) = (top >> 32, top & 0xFFFF_FFFF)
                    guard due[gone] == when else { continue }  // stale
                    due[gone] = -1
                    resident -= sizes[gone]
                    out.evictions += 1
                }
                resident += bytes
            }
            due[t] = nextUse[i]
            heap.push(nextUse[i] << 32 | t)
            // Lazy deletion lets stale entries pile up; rebuild when they dominate.
            if heap.count > 4 * sizes.count + 64 { heap.rebuild(keeping: { due[$0 & 0xFFFF_FFFF] == $0 >> 32 }) }
        }
        return out
    }

    /// Hit rates of `contenders` on every trace at every budget (in tiles of `tileBytes`),
    /// with each one's share of Belady's hit rate. Rows come trace by trace, budget by budget,
    /// in the order of `contenders`.
    /// - Cost: O(traces × budgets × contenders × requests).
    public static func compare(
        traces: [AccessTrace], budgets: [Int],
        contenders: [Contender] = [.policy(.lru), .policy(.slru), .belady],
        tileBytes: Int = defaultTileBytes
    ) -> [Row] {
        var rows: [Row] = []
        for trace in traces {
            let interned = Interned(trace.requests)
            let sizes = [Int](repeating: tileBytes, count: interned.tiles.count)
            for tiles in budgets {
                let budget = tiles * tileBytes
                let optimum = belady(interned.ids, sizes: sizes, budgetBytes: budget)
                for c in contenders {
                    let o =
                        switch c {
                        case .belady: optimum
                        case .policy(let k):
                            replay(interned.ids, sizes: sizes, budgetBytes: budget, policy: k.makePolicy())
                        }
                    rows.append(
                        Row(
                            trace: trace.kind.rawValue, budgetTiles: tiles, budgetBytes: budget, policy: c.description,
                            hits: o.hits, misses: o.misses, hitRate: o.hitRate,
                            ofBelady: optimum.hitRate == 0 ? 1 : o.hitRate / optimum.hitRate))
                }
            }
        }
        return rows
    }

    /// A Markdown table of `rows`: one line per trace and budget, one column per policy, each
    /// cell the hit rate in percent, for policies its share of Belady's, and the misses (hit
    /// rates near 100 % hide how many more loads one policy causes than another).
    /// - Cost: O(rows).
    public static func table(_ rows: [Row]) -> String {
        var policies: [String] = []
        for r in rows where !policies.contains(r.policy) { policies.append(r.policy) }
        var lines = [
            "| trace | budget (tiles) | requests | " + policies.joined(separator: " | ") + " |",
            "|---|---:|---:|" + String(repeating: "---:|", count: policies.count),
        ]
        var i = 0
        while i < rows.count {
            let key = (rows[i].trace, rows[i].budgetTiles)
            var cells = [String](repeating: "–", count: policies.count)
            var j = i
            while j < rows.count, (rows[j].trace, rows[j].budgetTiles) == key {
                if let p = policies.firstIndex(of: rows[j].policy) {
                    let pct = percent(rows[j].hitRate)
                    let share = rows[j].policy == "belady" ? "" : " (\(percent(rows[j].ofBelady)))"
                    cells[p] = "\(pct)\(share), \(rows[j].misses) misses"
                }
                j += 1
            }
            lines.append(
                "| \(key.0) | \(key.1) | \(rows[i].hits + rows[i].misses) | " + cells.joined(separator: " | ") + " |")
            i = j
        }
        return lines.joined(separator: "\n")
    }

    /// "93.4 %" with one decimal, without Foundation's formatters.
    static func percent(_ v: Double) -> String {
        let tenths = Int((v * 1000).rounded())
        return "\(tenths / 10).\(tenths % 10) %"
    }
}

/// A binary max-heap of Ints.
private struct MaxHeap {
    private var a: [Int] = []
    var count: Int { a.count }

    mutating func push(_ v: Int) {
        a.append(v)
        var i = a.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            guard a[p] < a[i] else { break }
            a.swapAt(p, i); i = p
        }
    }

    mutating func pop() -> Int? {
        guard let top = a.first else { return nil }
        let last = a.removeLast()
        if !a.isEmpty { a[0] = last; siftDown(0) }
        return top
    }

    mutating func rebuild(keeping keep: (Int) -> Bool) {
        a = a.filter(keep)
        for i in stride(from: a.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    private mutating func siftDown(_ start: Int) {
        var i = start
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < a.count, a[l] > a[m] { m = l }
            if r < a.count, a[r] > a[m] { m = r }
            if m == i { return }
            a.swapAt(i, m); i = m
        }
    }
}
