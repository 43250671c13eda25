import TilePackCore
import TilePackArchive
import Histogram

// MARK: - State under the lock

/// What an entry holds. The masked layers are copies of `pixels` and `elevation` with the
/// pixels outside an owned mask cleared, keyed by the mask's fingerprint.
enum TileLayer: UInt8, Sendable { case payload, pixels, elevation, maskedPixels, maskedElevation }

struct TileKey: Hashable, Sendable {
    var archive: Int
    var layer: TileLayer
    var tile: TileID
    /// What else the content depends on: for a tile made from finer zooms the fingerprint of
    /// its descendants' access answers (``TileStore/plainKey(_:_:_:)``), mixed for a masked
    /// layer with the ``TileMask/fingerprint``; 0 for a stored zoom's plain layers.
    var mask: UInt64 = 0
}

extension TileStore {
    struct Entry {
        enum Status { case loading, ready, absent }
        var key: TileKey
        var status: Status
        var buffer: TileBuffer?
        var elevation: ElevationTile?
        /// Accounted bytes: overhead plus buffer or grid.
        var bytes: Int
        var leases: Int32
        /// The zoom the data came from (``TileLease/sourceZoom``).
        var sourceZoom: Int

        var bufferBytes: UnsafeRawBufferPointer {
            buffer?.bytes ?? UnsafeRawBufferPointer(start: nil, count: 0)
        }
    }

    struct State {
        let budget: Int
        var resident = 0
        var peak = 0
        /// Accounted bytes of buffers handed to loads in flight (part of `resident`).
        var inFlightBytes = 0
        var entries: [Entry] = []
        var freeSlots: [Int] = []
        var index: [TileKey: Int] = [:]
        var policy: any EvictionPolicy
        var pool: BufferPool
        var latencies = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .two)
        let warnings: SimulatedMemoryWarnings?
        var warningRandom: SplitMix64
        var loadsSinceWarning = 0

        /// Loads that failed for the row's own fault (``rememberedFailures`` at most).
        var failures = FailureMemory(capacity: TileStore.rememberedFailures)
        var hits = 0, misses = 0, loads = 0, singleFlightWaits = 0, evictions = 0
        var violations = 0, memoryWarnings = 0, bytesFreedByPressure = 0, bufferAllocations = 0

        init(budget: Int, options: TileStoreOptions) {
            self.budget = budget
            policy = options.policy.makePolicy()
            pool = BufferPool(perClass: options.pooledBuffersPerClass)
            warnings = options.simulatedWarnings
            if case .random(let seed)? = options.simulatedWarnings {
                warningRandom = SplitMix64(seed: seed)
            } else {
                warningRandom = SplitMix64(seed: 0)
            }
            entries.reserveCapacity(1024)
            index.reserveCapacity(1024)
        }

        func isEvictable(_ slot: Int) -> Bool {
            entries[slot].leases == 0 && entries[slot].status != .loading
        }

        mutating func notePeak() {
            if resident > peak { peak = resident }
            if resident > budget { violations += 1 }
        }

        /// Makes room for `bytes` more: idle buffers go first, then unleased entries in the
        /// policy's order. With `wantCapacity`, an evicted buffer of exactly that capacity is
        /// handed back for reuse instead (its bytes stay counted; nothing more is needed).
        @discardableResult
        mutating func makeRoom(
            for bytes: Int, evict allowEviction: Bool, subject: String, wantCapacity: Int? = nil
        )
            throws(TileStoreError) -> TileBuffer?
        {
            while resident + bytes > budget {
                if pool.idleBytes > 0 {
                    if let want = wantCapacity, let same = pool.take(capacity: want) { return same }
                    resident -= pool.dropOne(keeping: wantCapacity)
                    continue
                }
                guard allowEviction, let victim = policy.victim(where: { isEvictable($0) }) else {
                    let leased = entries.indices.reduce(0) { $0 + (entries[$1].leases > 0 ? 1 : 0) }
                    throw TileStoreError(
                        .budgetExhausted, subject: subject,
                        detail: allowEviction
                            ? """
                            budget of \(ByteSize.format(budget)) exhausted: \(ByteSize.format(resident)) held by \
                            \(leased) leased tiles and loads in flight (this one included), \
                            \(ByteSize.format(bytes)) more needed
                            """
                            : "no free budget for a prefetch")
                }
                if let want = wantCapacity, entries[victim].buffer?.capacity == want,
                    let buffer = entries[victim].buffer
                {
                    entries[victim].buffer = nil
                    entries[victim].bytes -= buffer.accountedBytes
                    evict(victim, recycle: false)
                    return buffer
                }
                evict(victim, recycle: true)
            }
            return nil
        }

        /// Removes an entry; its buffer goes to the pool (`recycle`, still counted) or is
        /// freed. Returns the bytes no longer counted.
        @discardableResult
        mutating func evict(_ slot: Int, recycle: Bool) -> Int {
            var freed = entries[slot].bytes
            if let buffer = entries[slot].buffer, recycle, pool.give(buffer) { freed -= buffer.accountedBytes }
            resident -= freed
            evictions += 1
            remove(slot)
            return freed
        }

        mutating func insertLoading(_ key: TileKey) -> Int {
            let entry = Entry(
                key: key, status: .loading, buffer: nil, elevation: nil, bytes: TileStore.entryOverhead, leases: 1,
                sourceZoom: key.tile.z)
            let slot: Int
            if let free = freeSlots.popLast() {
                entries[free] = entry
                slot = free
            } else {
                entries.append(entry)
                slot = entries.count - 1
            }
            index[key] = slot
            resident += TileStore.entryOverhead
            notePeak()
            return slot
        }

        /// Makes a loaded entry visible; true when a simulated warning is due.
        mutating func publish(_ slot: Int, _ loaded: Loaded, nanos: Int64) -> Bool {
            switch loaded {
            case .buffer(let buffer, let sourceZoom):
                inFlightBytes -= buffer.accountedBytes
                entries[slot].sourceZoom = sourceZoom
                entries[slot].buffer = buffer
                entries[slot].bytes += buffer.accountedBytes
                entries[slot].status = .ready
                loads += 1
            case .elevation(let grid, let bytes, let sourceZoom):
                inFlightBytes -= bytes
                entries[slot].sourceZoom = sourceZoom
                entries[slot].elevation = grid
                entries[slot].bytes += bytes
                entries[slot].status = .ready
                loads += 1
            case .absent:
                entries[slot].status = .absent
                entries[slot].leases = 0
            }
            policy.inserted(slot, bytes: entries[slot].bytes)
            _ = latencies.record(UInt64(max(0, nanos)))
            return warningDue()
        }

        /// Drops the loading entry of a failed load.
        mutating func abandon(_ slot: Int) {
            resident -= entries[slot].bytes
            remove(slot)
        }

        private mutating func remove(_ slot: Int) {
            policy.removed(slot)
            index[entries[slot].key] = nil
            entries[slot].buffer = nil
            entries[slot].elevation = nil
            entries[slot].bytes = 0
            entries[slot].leases = 0
            entries[slot].status = .absent
            freeSlots.append(slot)
        }

        private mutating func warningDue() -> Bool {
            switch warnings {
            case nil: return false
            case .every(let n)?:
                loadsSinceWarning += 1
                if loadsSinceWarning >= n { loadsSinceWarning = 0; return true }
                return false
            case .random?:
                return warningRandom.below(32) == 0
            }
        }

        func statistics(budget: Int) -> TileStoreStatistics {
            var s = TileStoreStatistics()
            s.hits = hits; s.misses = misses; s.loads = loads; s.singleFlightWaits = singleFlightWaits
            s.evictions = evictions; s.residentBytes = resident; s.peakResidentBytes = peak; s.budgetBytes = budget
            s.budgetViolations = violations; s.memoryWarnings = memoryWarnings
            s.bytesFreedByPressure = bytesFreedByPressure; s.bufferAllocations = bufferAllocations
            s.cachedEntries = index.count
            s.leasedEntries = index.values.reduce(0) { $0 + (entries[$1].leases > 0 ? 1 : 0) }
            if latencies.totalCount > 0 {
                s.loadP50Micros = Double(latencies.valueAtPercentile(50)) / 1000
                s.loadP99Micros = Double(latencies.valueAtPercentile(99)) / 1000
            }
            return s
        }

        mutating func resetCounters() {
            hits = 0; misses = 0; loads = 0; singleFlightWaits = 0; evictions = 0
            violations = 0; memoryWarnings = 0; bytesFreedByPressure = 0; bufferAllocations = 0
            peak = resident
            latencies.reset()
        }

        func accountingProblem() -> String? {
            var sum = inFlightBytes + pool.recount()
            for slot in index.values { sum += entries[slot].bytes }
            if pool.recount() != pool.idleBytes {
                return "pool counts \(pool.idleBytes) idle bytes, holds \(pool.recount())"
            }
            if sum != resident { return "resident \(resident) bytes, entries + pool + loads in flight hold \(sum)" }
            if resident > budget { return "resident \(resident) bytes exceeds the budget of \(budget)" }
            return nil
        }

        /// Debug builds check the whole accounting after every operation (O(entries)).
        func checkInvariants() {
            #if DEBUG
            if let problem = accountingProblem() { assertionFailure("TileStore accounting: \(problem)") }
            #endif
        }
    }
}

/// A bounded map of failed loads, oldest forgotten first: the tile store's negative cache.
/// Cost: O(1) per lookup and insert.
struct FailureMemory {
    let capacity: Int
    private var errors: [TileKey: TileStoreError] = [:]
    private var order: [TileKey] = []
    private var next = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { errors.count }

    func error(for key: TileKey) -> TileStoreError? { errors[key] }

    /// Remembers `error` for `key`, forgetting the oldest remembered failure when full.
    mutating func remember(_ key: TileKey, _ error: TileStoreError) {
        if errors.updateValue(error, forKey: key) != nil { return }
        if order.count < capacity {
            order.append(key)
        } else {
            errors[order[next]] = nil
            order[next] = key
            next = (next + 1) % capacity
        }
    }
}
