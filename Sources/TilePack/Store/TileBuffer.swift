/// A fixed-capacity byte buffer the tile store fills once per load and reuses across loads.
///
/// `@unchecked Sendable`: a buffer is written only by the one thread that loads into it,
/// before the store publishes it under its lock; after that it is read-only until the store
/// takes it back, which it does only when no lease on it is held.
final class TileBuffer: @unchecked Sendable {
    /// What the store counts for a buffer beyond its bytes: the object itself (header,
    /// fields) as malloc rounds it.
    static let objectOverhead = 64

    let capacity: Int
    let base: UnsafeMutableRawPointer
    /// Bytes in use (≤ capacity).
    var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(byteCount: Swift.max(capacity, 1), alignment: 16)
    }

    deinit { base.deallocate() }

    /// Bytes the store's budget counts for this buffer.
    var accountedBytes: Int { capacity + Self.objectOverhead }

    /// The first `count` bytes, for filling.
    func mutableBytes(_ count: Int) -> UnsafeMutableRawBufferPointer {
        precondition(count <= capacity)
        self.count = count
        return UnsafeMutableRawBufferPointer(start: base, count: count)
    }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// The allocation size for a request of `bytes`: 4 KiB steps up to 64 KiB, then eighths
    /// of the next power of two, so a class wastes at most 12.5 % and nearby sizes (PNG tiles
    /// of different lengths) share buffers.
    /// - Cost: O(1).
    static func capacityClass(for bytes: Int) -> Int {
        let n = Swift.max(bytes, 1)
        if n <= 65_536 { return (n + 4095) & ~4095 }
        let top = Int.bitWidth - (n - 1).leadingZeroBitCount  // 2^top ≥ n
        let step = 1 << (top - 3)
        return (n + step - 1) / step * step
    }
}

/// Idle buffers by capacity class, at most `perClass` each (a reuse queue, the way table
/// views reuse cells). The store counts idle buffers in its budget and drops them first
/// when it needs room.
///
/// The classes are two parallel arrays searched linearly, not a `[Int: [TileBuffer]]`:
/// changing a dictionary's value in place (`idle[c]?.append(b)`, `idle[c]?.popLast()`) goes
/// through Dictionary's `_modify` coroutines, and their frames were malloc'd on every call —
/// three mallocs per take and three per give, six per steady-state load (found with ordo-one's
/// `--allocation-stacks`). A store sees a handful of classes (PVRTC: two).
struct BufferPool {
    let perClass: Int
    /// The capacity classes seen so far; `idle[i]` holds the idle buffers of `capacities[i]`.
    private var capacities: [Int] = []
    private var idle: [[TileBuffer]] = []
    /// Accounted bytes of every idle buffer.
    private(set) var idleBytes = 0

    init(perClass: Int) { self.perClass = perClass }

    /// An idle buffer of exactly `capacity`, if any. - Cost: O(classes).
    mutating func take(capacity: Int) -> TileBuffer? {
        guard let i = capacities.firstIndex(of: capacity), let buffer = idle[i].popLast() else { return nil }
        idleBytes -= buffer.accountedBytes
        return buffer
    }

    /// Keeps `buffer` for reuse; false (and the caller drops it) when its class is full.
    mutating func give(_ buffer: TileBuffer) -> Bool {
        let i: Int
        if let known = capacities.firstIndex(of: buffer.capacity) {
            i = known
        } else {
            capacities.append(buffer.capacity)
            idle.append([])
            i = idle.count - 1
            idle[i].reserveCapacity(perClass)
        }
        guard idle[i].count < perClass else { return false }
        idle[i].append(buffer)
        idleBytes += buffer.accountedBytes
        return true
    }

    /// Drops one idle buffer, preferring classes other than `keep`; returns the bytes freed
    /// (0 when the pool is empty). - Cost: O(classes).
    mutating func dropOne(keeping keep: Int? = nil) -> Int {
        var chosen: Int?
        for i in idle.indices where !idle[i].isEmpty {
            chosen = i
            if capacities[i] != keep { break }
        }
        guard let c = chosen, let buffer = idle[c].popLast() else { return 0 }
        idleBytes -= buffer.accountedBytes
        return buffer.accountedBytes
    }

    /// Drops every idle buffer; returns the bytes freed.
    mutating func dropAll() -> Int {
        let freed = idleBytes
        for i in idle.indices { idle[i].removeAll(keepingCapacity: true) }
        idleBytes = 0
        return freed
    }

    /// Recomputes ``idleBytes`` (for invariant checks).
    func recount() -> Int { idle.reduce(0) { $0 + $1.reduce(0) { $0 + $1.accountedBytes } } }
}
