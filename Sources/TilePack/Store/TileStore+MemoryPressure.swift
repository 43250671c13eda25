import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Memory warnings and the counters: what an app calls from outside the tile path.

extension TileStore {
    /// Gives memory back: a `warning` drops idle buffers and evicts unleased tiles until the
    /// store holds at most ``TileStoreOptions/lowWaterFraction`` of the budget; `critical`
    /// keeps only leased tiles and loads in flight. Returns the bytes freed. Safe from any
    /// thread at any moment, mid-load included (a load in flight keeps its reservation).
    /// - Cost: O(entries evicted), under the lock.
    @discardableResult
    public func handleMemoryPressure(_ level: MemoryPressure) -> Int {
        let freed = dropForPressure(level)
        // Freed tile buffers go back to glibc's per-thread arenas, which keep them as
        // resident pages; the system asked for memory, so hand the free pages to the kernel.
        if freed > 0, let trim = Self.mallocTrim { _ = trim(0) }
        return freed
    }

    private func dropForPressure(_ level: MemoryPressure) -> Int {
        lock.lock()
        defer { lock.unlock() }
        let target = level == .critical ? 0 : Int(Double(budget.bytes) * options.lowWaterFraction)
        var freed = state.pool.dropAll()
        state.resident -= freed
        while state.resident > target, let victim = state.policy.victim(where: { state.isEvictable($0) }) {
            freed += state.evict(victim, recycle: false)
        }
        state.memoryWarnings += 1
        state.bytesFreedByPressure += freed
        state.checkInvariants()
        return freed
    }

    /// Counters since the store was made (or since ``resetStatistics()``).
    public var statistics: TileStoreStatistics {
        lock.withLock { state.statistics(budget: budget.bytes) }
    }

    /// Zeroes the counters and the peak (not the cache).
    public func resetStatistics() {
        lock.withLock { state.resetCounters() }
    }

    /// Recomputes the byte accounting from the entries and the pool and checks it against the
    /// running total and the budget; a description of the first mismatch, or nil. For tests
    /// and the stress command: cheap enough to call between operations, O(entries).
    public func accountingProblem() -> String? {
        lock.withLock { state.accountingProblem() }
    }

    /// glibc's `malloc_trim`, looked up at run time (Swift's Glibc module does not import
    /// <malloc.h>); nil on other C libraries, where there is nothing to trim.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()
}
