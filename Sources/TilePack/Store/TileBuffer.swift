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
struct BufferPool {
    let perClass: Int
    private var idle: [Int: [TileBuffer]] = [:]
    /// Accounted bytes of every idle buffer.
    private(set) var idleBytes = 0

    init(perClass: Int) { self.perClass = perClass }

    /// An idle buffer of exactly `capacity`, if any. - Cost: O(1).
    mutating func take(capacity: Int) -> TileBuffer? {
        guard let buffer = idle[capacity]?.popLast() else { return nil }
        idleBytes -= buffer.accountedBytes
        return buffer
    }

    /// Keeps `buffer` for reuse; false (and the caller drops it) when its class is full.
    mutating func give(_ buffer: TileBuffer) -> Bool {
        if idle[buffer.capacity] == nil {
            idle[buffer.capacity] = []
            idle[buffer.capacity]?.reserveCapacity(perClass)
        }
        guard let n = idle[buffer.capacity]?.count, n < perClass else { return false }
        idle[buffer.capacity]?.append(buffer)
        idleBytes += buffer.accountedBytes
        return true
    }

    /// Drops one idle buffer, preferring classes other than `keep`; returns the bytes freed
    /// (0 when the pool is empty). - Cost: O(classes).
    mutating func dropOne(keeping keep: Int? = nil) -> Int {
        var chosen: Int?
        for (capacity, list) in idle where !list.isEmpty {
            chosen = capacity
            if capacity != keep { break }
        }
        guard let c = chosen, let buffer = idle[c]?.popLast() else { return 0 }
        idleBytes -= buffer.accountedBytes
        return buffer.accountedBytes
    }

    /// Drops every idle buffer; returns the bytes freed.
    mutating func dropAll() -> Int {
        let freed = idleBytes
        for key in idle.keys { idle[key]?.removeAll(keepingCapacity: true) }
        idleBytes = 0
        return freed
    }

    /// Recomputes ``idleBytes`` (for invariant checks).
    func recount() -> Int { idle.values.reduce(0) { $0 + $1.reduce(0) { $0 + $1.accountedBytes } } }
}
