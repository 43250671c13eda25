import TilePackCore

/// A small, thread-safe cache of decoded blocks, bounded by bytes and evicting the least
/// recently used block first.
///
/// Windowed reads that walk a raster in tiles touch each block a few times (neighbouring
/// windows share edge blocks); the cache turns those repeats into copies. Decoding happens
/// outside the lock: two threads asking for the same missing block may both decode it, which
/// costs time but never correctness.
final class TIFFBlockCache: Sendable {
    struct Key: Hashable, Sendable {
        var image: Int
        var block: Int
    }

    private struct Entry {
        var bytes: [UInt8]
        var lastUse: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    /// Most bytes kept; a block larger than this is returned but not kept.
    let capacity: Int
    private let state = Locked(State())

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// The cached block, marking it recently used.
    func get(_ key: Key) -> [UInt8]? {
        state.withLock { s in
            guard var e = s.entries[key] else { return nil }
            s.clock += 1
            e.lastUse = s.clock
            s.entries[key] = e
            return e.bytes
        }
    }

    /// Keeps a decoded block, evicting least recently used blocks until it fits.
    /// - Cost: O(blocks cached) per eviction (the cache holds tens of blocks, not thousands).
    func put(_ key: Key, _ bytes: [UInt8]) {
        guard bytes.count <= capacity else { return }
        state.withLock { s in
            s.clock += 1
            if let old = s.entries.updateValue(Entry(bytes: bytes, lastUse: s.clock), forKey: key) {
                s.bytes -= old.bytes.count
            }
            s.bytes += bytes.count
            while s.bytes > capacity, let victim = s.entries.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                s.bytes -= victim.value.bytes.count
                s.entries.removeValue(forKey: victim.key)
            }
        }
    }

    /// Bytes currently held (for tests and statistics).
    var byteCount: Int { state.withLock { $0.bytes } }
}
