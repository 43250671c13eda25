// `tilepack-bench store ARCHIVE [options]`: the tile store's figures for issue 9's Must-show 3,
// each beside its floor measured in the same process on the same blobs in the same order.
//
//   --hits N            hits per hit-path run (default 1,000,000)
//   --runs R            runs per figure; the median is reported (default 7)
//   --passes K          timed passes over every tile in the steady-state (evicting) runs (default 3)
//   --steady-tiles T    budget of the steady-state runs, in tiles (default 64)
//   --keys-out FILE     write the keys read ("z x tms_y" per line, in order) for the Python peer
//
// Figures (one line each, then one JSON line):
// - hit: `store.tile(id)` on a cached tile, lease dropped at once; ns/op = run time / N.
// - cold: a fresh store (budget 1 GiB), every tile loaded once (payload: the SQLite read, the
//   copy or inflate into a pooled buffer); tiles/s. With `pixels`: plus the PVRTC decode.
// - steady: a store whose budget holds T tiles, cycling through every tile (each request a
//   miss that evicts); one warm-up pass, then K timed passes; buffers allocated in them.
// - floor: the bare SQLite C API (sqlite3_bind/step/column_blob, memcpy into one reused
//   buffer), the same prepared SELECT the reader uses, the same keys; and the same plus an
//   inflate of the zlib-wrapped blobs (the store's payload load does that too).
// - sync: a minimal cache (dictionary lookup + hit counter) behind Synchronization.Mutex,
//   behind an actor awaited from a task, and behind a pthread mutex (the store's
//   ConditionLock is `package` to tilepack, so its code is copied below); 1 and 2 threads.
import TilePack
import CSQLiteFloor
import Synchronization
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

func runStoreBench(_ args: [String]) {
    guard let path = args.first, !path.hasPrefix("-") else {
        fail("usage: tilepack-bench store ARCHIVE [--hits N] [--runs R] [--passes K] [--steady-tiles T] [--keys-out FILE]")
    }
    func option(_ name: String, _ fallback: Int) -> Int {
        guard let i = args.firstIndex(of: name), i + 1 < args.count, let n = Int(args[i + 1]), n > 0 else { return fallback }
        return n
    }
    let hits = option("--hits", 1_000_000)
    let runs = option("--runs", 7)
    let passes = option("--passes", 3)
    let steadyTiles = option("--steady-tiles", 64)
    let keysOut = args.firstIndex(of: "--keys-out").flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil }

    do {
        let reader = try MBTilesReader(path: path)
        guard let zooms = reader.zoomRange else { fail("\(path): no tiles") }
        var ids: [TileID] = []
        for z in zooms { ids += try reader.tileIDs(zoom: z) }
        guard !ids.isEmpty else { fail("\(path): no tiles") }
        let summary = reader.summary
        guard let codec = summary.codec else { fail("\(path): codec \(summary.codecName) is not one tilepack decodes") }
        let payloadCodec = try TilePayloadCodec(codec: codec, tileSize: summary.tileSize)

        // Warm the OS page cache and count what is stored.
        var storedBytes = 0, wrapped = 0
        for id in ids {
            _ = try reader.withTile(id) { stored in
                storedBytes += stored.count
                if let raw = payloadCodec.fixedPayloadByteCount, CFloor.zlibLevel(stored, raw: raw) != nil {
                    wrapped += 1
                }
            }
        }
        if let keysOut {
            let text = ids.map { "\($0.z) \($0.x) \($0.tmsY)\n" }.joined()
            guard let f = fopen(keysOut, "w") else { fail("cannot write \(keysOut)") }
            fputs(text, f)
            fclose(f)
        }
        var json: [(String, String)] = []
        func report(_ key: String, _ value: Double, _ line: String) {
            print(line)
            json.append((key, value.isFinite ? String(value) : "null"))
        }
        print("archive: \(path), \(ids.count) tiles, zooms \(zooms), \(codec.rawValue) \(summary.tileSize)², \(storedBytes) stored bytes, \(wrapped) zlib-wrapped")
        print("runs: \(runs) per figure (median; min–max in brackets)")
        json.append(("tiles", String(ids.count)))
        json.append(("zlib_wrapped", String(wrapped)))
        json.append(("stored_bytes", String(storedBytes)))

        // (d) The floor first, then the store, then the floor again: a drift of the shared
        // machine shows as a gap between the two floor figures.
        let floor = try CFloor(path: path)
        defer { floor.close() }
        let inflater = try Zlib.Inflater()
        let raw = payloadCodec.fixedPayloadByteCount
        let floorA = Stat((0..<runs).map { _ in rate(ids.count) { floor.readAll(ids, inflater: nil, raw: raw) } })
        report("floor_c_tiles_per_s", floorA.median, "floor, bare C API (bind/step/column_blob/memcpy): \(floorA.rateText) tiles/s")
        // With no zlib-wrapped blob (PNG) this is the plain floor again.
        let floorZ = Stat((0..<runs).map { _ in rate(ids.count) { floor.readAll(ids, inflater: inflater, raw: raw) } })
        report("floor_c_inflate_tiles_per_s", floorZ.median,
               "floor + inflate of the zlib-wrapped blobs (\(wrapped) of \(ids.count)): \(floorZ.rateText) tiles/s")

        // (a) Hit path.
        let big = try MemoryBudget(bytes: 1 << 30)
        let hitStore = try TileStore(archives: [reader], budget: big)
        let hot = ids[ids.count / 2]
        guard try hitStore.tile(hot) != nil else { fail("tile \(hot) missing") }
        var sink = 0
        let hit = Stat(try (0..<runs).map { _ in
            try nanosPerOp(hits) { for _ in 0..<hits { if let lease = try hitStore.tile(hot) { sink &+= lease.count } } }
        })
        report("hit_ns", hit.median, "hit path, store.tile(id), 1 thread: \(hit.nsText) ns/op")
        let perCall = try perCallMedian(100_000) { if let lease = try hitStore.tile(hot) { sink &+= lease.count } }
        report("hit_per_call_median_ns", perCall,
               "hit path, per-call median of 100,000 individually timed calls (clock pair subtracted): \(fmt(perCall)) ns")
        let hit2 = Stat(try (0..<runs).map { _ in
            try nanosPerOp(hits) {
                try concurrent(2) { for _ in 0..<hits / 2 { if let lease = try hitStore.tile(hot) { _ = lease.count } } }
            }
        })
        report("hit_2_threads_ns", hit2.median, "hit path, 2 threads on the same tile: \(hit2.nsText) ns/op (wall time / all ops)")

        // (b) Cold loads, payloads only.
        var allocations = 0
        let cold = Stat(try (0..<runs).map { _ in
            let store = try TileStore(archives: [reader], budget: big)
            let r = try rate(ids.count) { for id in ids { if let lease = try store.tile(id) { sink &+= lease.count } } }
            let s = store.statistics
            guard s.loads == ids.count else { fail("cold run loaded \(s.loads) of \(ids.count) tiles") }
            allocations = s.bufferAllocations
            return r
        })
        report("cold_tiles_per_s", cold.median, "cold loads, payload (no decode), fresh store: \(cold.rateText) tiles/s, \(allocations) buffers allocated per run")

        // Steady state, evicting: the budget holds `steadyTiles` payloads.
        let payloadCapacity = capacityClass(raw ?? (storedBytes / ids.count * 2))
        let steadyBudget = try MemoryBudget(bytes: steadyTiles * (payloadCapacity + 64 + TileStore.entryOverhead))
        let steady = try steadyState(reader, ids, budget: steadyBudget, passes: passes, runs: runs) { store, id in
            if let lease = try store.tile(id) { sink &+= lease.count }
        }
        report("steady_tiles_per_s", steady.rate.median,
               "steady state, payload, budget \(steadyBudget) (\(steadyTiles) tiles), evicting: \(steady.rate.rateText) tiles/s; per timed pass set: \(steady.loads) loads, \(steady.evictions) evictions, \(steady.allocations) buffers allocated")
        json.append(("steady_buffer_allocations", String(steady.allocations)))
        json.append(("steady_loads", String(steady.loads)))

        // (c) Cold loads with decoding.
        let coldPixels = Stat(try (0..<runs).map { _ in
            let store = try TileStore(archives: [reader], budget: big)
            return try rate(ids.count) { for id in ids { if let lease = try store.pixels(id) { sink &+= lease.count } } }
        })
        report("cold_pixels_tiles_per_s", coldPixels.median, "cold loads with decoding (pixels), fresh store: \(coldPixels.rateText) tiles/s")
        let pixelTiles = max(4, steadyTiles / 4)
        let pixelBudget = try MemoryBudget(bytes: pixelTiles * (capacityClass(payloadCodec.pixelByteCount) + payloadCapacity + 2 * (64 + TileStore.entryOverhead)))
        let steadyPixels = try steadyState(reader, ids, budget: pixelBudget, passes: passes, runs: runs) { store, id in
            if let lease = try store.pixels(id) { sink &+= lease.count }
        }
        report("steady_pixels_tiles_per_s", steadyPixels.rate.median,
               "steady state with decoding, budget \(pixelBudget) (\(pixelTiles) tiles + payloads), evicting: \(steadyPixels.rate.rateText) tiles/s; \(steadyPixels.allocations) buffers allocated in \(steadyPixels.loads) loads")

        let floorB = Stat((0..<runs).map { _ in rate(ids.count) { floor.readAll(ids, inflater: nil, raw: raw) } })
        report("floor_c_again_tiles_per_s", floorB.median, "floor again (drift check): \(floorB.rateText) tiles/s")
        let floorBoth = (floorA.median + floorB.median) / 2
        report("ratio_floor_over_cold", floorBoth / cold.median,
               "ratio C floor / store cold load (time per tile, store ÷ floor): \(fmt(floorBoth / cold.median, 2))×  (target ≤ 1.25×)")
        report("ratio_floor_inflate_over_cold", floorZ.median / cold.median,
               "ratio (C floor + inflate) / store cold load: \(fmt(floorZ.median / cold.median, 2))×")
        report("ratio_floor_over_steady", floorBoth / steady.rate.median,
               "ratio C floor / store steady state: \(fmt(floorBoth / steady.rate.median, 2))×")

        // (e) Mutex vs actor vs pthread mutex on a minimal cache's hit path.
        let keys = ids.map { MiniKey(archive: 0, layer: 0, tile: $0) }
        let mutexCache = MutexCache(keys), pthreadCache = PthreadCache(keys), actorCache = ActorCache(keys)
        let n = hits, mask = keys.count
        let mutex1 = Stat((0..<runs).map { _ in
            nanosPerOp(n) { var s = 0; for i in 0..<n { s &+= mutexCache.get(keys[i % mask]) ?? 0 }; sink &+= s }
        })
        report("sync_mutex_ns", mutex1.median, "minimal cache, Synchronization.Mutex, 1 thread: \(mutex1.nsText) ns/op")
        let pthread1 = Stat((0..<runs).map { _ in
            nanosPerOp(n) { var s = 0; for i in 0..<n { s &+= pthreadCache.get(keys[i % mask]) ?? 0 }; sink &+= s }
        })
        report("sync_pthread_ns", pthread1.median, "minimal cache, pthread mutex (ConditionLock's code), 1 thread: \(pthread1.nsText) ns/op")
        let actor1 = Stat((0..<runs).map { _ in
            nanosPerOp(n) { sink &+= blockOn { await actorCache.run(keys, count: n) } }
        })
        report("sync_actor_ns", actor1.median, "minimal cache, actor awaited from a detached task, 1 task: \(actor1.nsText) ns/op")
        let mutex2 = Stat((0..<runs).map { _ in
            nanosPerOp(n) { try? concurrent(2) { for i in 0..<n / 2 { _ = mutexCache.get(keys[i % mask]) } } }
        })
        report("sync_mutex_2_threads_ns", mutex2.median, "minimal cache, Mutex, 2 threads: \(mutex2.nsText) ns/op")
        let pthread2 = Stat((0..<runs).map { _ in
            nanosPerOp(n) { try? concurrent(2) { for i in 0..<n / 2 { _ = pthreadCache.get(keys[i % mask]) } } }
        })
        report("sync_pthread_2_threads_ns", pthread2.median, "minimal cache, pthread mutex, 2 threads: \(pthread2.nsText) ns/op")
        let actor2 = Stat((0..<runs).map { _ in
            nanosPerOp(n) {
                sink &+= blockOn {
                    await withTaskGroup(of: Int.self) { group in
                        for _ in 0..<2 { group.addTask { await actorCache.run(keys, count: n / 2) } }
                        return await group.reduce(0, &+)
                    }
                }
            }
        })
        report("sync_actor_2_tasks_ns", actor2.median, "minimal cache, actor, 2 tasks: \(actor2.nsText) ns/op")

        json.append(("check", String(sink & 0xFFFF)))
        print("{" + json.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}")
    } catch {
        fail("\(error)")
    }
}

// MARK: - Timing

struct Stat {
    let values: [Double]
    init(_ values: [Double]) { self.values = values.sorted() }
    var median: Double { values.count % 2 == 1 ? values[values.count / 2] : (values[values.count / 2 - 1] + values[values.count / 2]) / 2 }
    var rateText: String { "\(fmt(median, 0)) [\(fmt(values.first!, 0))–\(fmt(values.last!, 0))]" }
    var nsText: String { "\(fmt(median, 1)) [\(fmt(values.first!, 1))–\(fmt(values.last!, 1))]" }
}

func fmt(_ v: Double, _ digits: Int = 1) -> String {
    var p = 1.0
    for _ in 0..<digits { p *= 10 }
    let r = (v * p).rounded() / p
    return digits == 0 ? String(Int(r)) : String(r)
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let clock = ContinuousClock()
    let start = clock.now
    try body()
    let d = clock.now - start
    return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
}

func rate(_ count: Int, _ body: () throws -> Void) rethrows -> Double { Double(count) / (try seconds(body)) }
func nanosPerOp(_ count: Int, _ body: () throws -> Void) rethrows -> Double { try seconds(body) * 1e9 / Double(count) }

@inline(__always) func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

/// Median of `count` individually timed calls, minus the median of an empty timed pair.
func perCallMedian(_ count: Int, _ body: () throws -> Void) rethrows -> Double {
    var times = [UInt64](repeating: 0, count: count), empty = [UInt64](repeating: 0, count: count)
    for i in 0..<count { let a = monotonicNanos(); let b = monotonicNanos(); empty[i] = b &- a }
    for i in 0..<count { let a = monotonicNanos(); try body(); let b = monotonicNanos(); times[i] = b &- a }
    times.sort(); empty.sort()
    return Double(times[count / 2]) - Double(empty[count / 2])
}

/// Runs `body` on `threads` threads at once and waits for all.
func concurrent(_ threads: Int, _ body: @Sendable () throws -> Void) throws {
    let failure = Mutex<(any Error)?>(nil)
    DispatchQueue.concurrentPerform(iterations: threads) { _ in
        do { try body() } catch { failure.withLock { $0 = error } }
    }
    if let error = failure.withLock({ $0 }) { throw error }
}

/// Runs `body` in a detached task and blocks this (non-pool) thread until it is done.
func blockOn(_ body: @escaping @Sendable () async -> Int) -> Int {
    let result = Mutex(0)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let r = await body()
        result.withLock { $0 = r }
        done.signal()
    }
    done.wait()
    return result.withLock { $0 }
}

/// Allocation size of a store buffer for `bytes` (TileBuffer.capacityClass, internal to the store).
func capacityClass(_ bytes: Int) -> Int {
    let n = max(bytes, 1)
    if n <= 65_536 { return (n + 4095) & ~4095 }
    let top = Int.bitWidth - (n - 1).leadingZeroBitCount
    let step = 1 << (top - 3)
    return (n + step - 1) / step * step
}

struct SteadyResult {
    let rate: Stat
    let loads: Int
    let evictions: Int
    let allocations: Int
}

/// A store with `budget`, one untimed warm-up pass over `ids` (fills the cache and the pool),
/// then `passes` timed passes per run; the counters are those of the last run's timed passes.
func steadyState(_ reader: MBTilesReader, _ ids: [TileID], budget: MemoryBudget, passes: Int, runs: Int,
                 _ request: (TileStore, TileID) throws -> Void) throws -> SteadyResult {
    let store = try TileStore(archives: [reader], budget: budget)
    for id in ids { try request(store, id) }
    var rates: [Double] = []
    var last = store.statistics
    for _ in 0..<runs {
        store.resetStatistics()
        rates.append(try rate(ids.count * passes) { for _ in 0..<passes { for id in ids { try request(store, id) } } })
        last = store.statistics
    }
    guard last.evictions > 0 else { fail("steady state did not evict: budget \(budget) holds every tile; lower --steady-tiles") }
    return SteadyResult(rate: Stat(rates), loads: last.loads, evictions: last.evictions, allocations: last.bufferAllocations)
}

// MARK: - The floor: the bare SQLite C API

final class CFloor {
    private var db: OpaquePointer?
    private var stmt: OpaquePointer?
    private let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1 << 22, alignment: 16)

    init(path: String) throws {
        // The flags and the statement the reader uses.
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
              sqlite3_prepare_v2(db, "SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?",
                                 -1, &stmt, nil) == SQLITE_OK else {
            fail("floor: cannot open \(path): \(String(cString: sqlite3_errmsg(db)))")
        }
    }

    func close() {
        sqlite3_finalize(stmt)
        sqlite3_close_v2(db)
        buffer.deallocate()
    }

    /// The zlib stream of a stored GPU tile, nil when it is stored plain: a KTX2 tile's level
    /// when its supercompressionScheme is 3 (offsets read unchecked: a floor, not a reader),
    /// an older archive's whole blob when it is not exactly the raw size (the caller's test).
    static func zlibLevel(_ blob: UnsafeRawBufferPointer, raw: Int) -> UnsafeRawBufferPointer? {
        guard KTX2Header.starts(blob), blob.count >= 104 else { return blob.count != raw ? blob : nil }
        guard blob.loadUnaligned(fromByteOffset: 44, as: UInt32.self) == 3 else { return nil }
        let offset = Int(blob.loadUnaligned(fromByteOffset: 80, as: UInt64.self))
        let length = Int(blob.loadUnaligned(fromByteOffset: 88, as: UInt64.self))
        return UnsafeRawBufferPointer(rebasing: blob[offset..<(offset + length)])
    }

    /// Reads every key's blob into the one buffer (and inflates the zlib-wrapped ones, KTX2
    /// levels or older whole blobs, into it when `inflater` is given); returns a checksum so
    /// nothing is optimised away.
    @discardableResult
    func readAll(_ ids: [TileID], inflater: Zlib.Inflater?, raw: Int?) -> Int {
        var sum = 0
        for id in ids {
            sqlite3_bind_int64(stmt, 1, Int64(id.z))
            sqlite3_bind_int64(stmt, 2, Int64(id.x))
            sqlite3_bind_int64(stmt, 3, Int64(id.tmsY))
            if sqlite3_step(stmt) == SQLITE_ROW, let blob = sqlite3_column_blob(stmt, 0) {
                let n = Int(sqlite3_column_bytes(stmt, 0))
                if let inflater, let raw,
                    let stream = Self.zlibLevel(UnsafeRawBufferPointer(start: blob, count: n), raw: raw)
                {
                    let out = UnsafeMutableRawBufferPointer(start: buffer, count: raw)
                    sum &+= (try? inflater.inflate(stream, into: out)) ?? 0
                } else {
                    memcpy(buffer, blob, n)
                    sum &+= n
                }
            }
            sqlite3_reset(stmt)
        }
        return sum
    }
}

// MARK: - Mutex vs actor vs pthread mutex

struct MiniKey: Hashable, Sendable {
    var archive: Int
    var layer: UInt8
    var tile: TileID
}

struct MiniCache {
    var index: [MiniKey: Int] = [:]
    var hits = 0
    init(_ keys: [MiniKey]) { for (i, k) in keys.enumerated() { index[k] = i } }
    mutating func get(_ key: MiniKey) -> Int? {
        hits += 1
        return index[key]
    }
}

final class MutexCache: Sendable {
    private let cache: Mutex<MiniCache>
    init(_ keys: [MiniKey]) { cache = Mutex(MiniCache(keys)) }
    func get(_ key: MiniKey) -> Int? { cache.withLock { $0.get(key) } }
}

actor ActorCache {
    private var cache: MiniCache
    init(_ keys: [MiniKey]) { cache = MiniCache(keys) }
    func get(_ key: MiniKey) -> Int? { cache.get(key) }

    /// `count` lookups, each awaited from the calling (non-isolated) task.
    nonisolated func run(_ keys: [MiniKey], count: Int) async -> Int {
        var s = 0
        for i in 0..<count { s &+= await get(keys[i % keys.count]) ?? 0 }
        return s
    }
}

/// tilepack's ConditionLock (a pthread mutex, here without its condition) guarding the cache.
final class PthreadCache: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var cache: MiniCache

    init(_ keys: [MiniKey]) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        cache = MiniCache(keys)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func get(_ key: MiniKey) -> Int? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return cache.get(key)
    }
}
