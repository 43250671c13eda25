import Testing
import Dispatch
import Foundation
import Synchronization
import TilePackArchive
import TilePackCodec
import TilePackCore
import TilePackStore
import TilePackTools
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TilePackTestSupport

// MARK: - Fixtures

/// An in-memory `TileArchive`: deterministic PVRTC words per tile (distinct for every tile, so
/// a buffer reused for the wrong tile shows), stored raw or zlib-wrapped, optional damaged
/// blobs, an artificial delay in `withTile`, and a count of reads per tile.
final class StoreFakeArchive: TileArchive {
    let path: String
    let summary: TileArchiveSummary
    /// What the store must hand out for each tile: the raw words.
    let payloads: [TileID: [UInt8]]
    /// What `withTile` serves (raw, deflated or damaged).
    private let stored: [TileID: [UInt8]]
    private let delayMicros: UInt32
    /// Tiles whose read fails after `body` has run (a checksum checked after the copy, say).
    private let failAfterBody: Set<TileID>
    private let readCounts = Locked<[TileID: Int]>([:])
    /// Called inside `withTile`, after counting the read and before serving the bytes.
    private let duringRead: (@Sendable (TileID) -> Void)?

    init(
        path: String, tiles: [TileID], tileSize: Int = 256, deflate: Bool = false,
        damaged: [TileID: [UInt8]] = [:], delayMicros: UInt32 = 0, salt: UInt64 = 0,
        failAfterBody: Set<TileID> = [], duringRead: (@Sendable (TileID) -> Void)? = nil
    ) {
        self.path = path
        let zooms = tiles.map(\.z) + damaged.keys.map(\.z)
        summary = TileArchiveSummary(
            name: path, bounds: nil, zoomRange: zooms.min().map { $0...zooms.max()! },
            codec: .pvrtc4, codecName: "pvrtc4", tileSize: tileSize, hasElevation: false)
        var payloads: [TileID: [UInt8]] = [:], stored: [TileID: [UInt8]] = [:]
        for id in tiles {
            let words = Self.words(for: id, count: tileSize * tileSize / 2, salt: salt)
            payloads[id] = words
            stored[id] = deflate ? try! Zlib.deflate(words) : words
        }
        for (id, blob) in damaged { stored[id] = blob }
        self.payloads = payloads
        self.stored = stored
        self.delayMicros = delayMicros
        self.failAfterBody = failAfterBody
        self.duringRead = duringRead
    }

    func withTile<R>(_ id: TileID, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        readCounts.withLock { $0[id, default: 0] += 1 }
        duringRead?(id)
        if delayMicros > 0 { usleep(delayMicros) }
        guard let bytes = stored[id] else { return nil }
        let result = try bytes.withUnsafeBytes { try body($0) }
        if failAfterBody.contains(id) { throw ArchiveFailure(path: path, tile: id) }
        return result
    }

    func elevation(_ id: TileID) throws(ArchiveError) -> ElevationTile? { nil }

    /// `withTile` calls for `id` so far.
    func reads(_ id: TileID) -> Int { readCounts.withLock { $0[id, default: 0] } }
    var totalReads: Int { readCounts.withLock { $0.values.reduce(0, +) } }
    func storedCount(_ id: TileID) -> Int? { stored[id]?.count }

    /// Whether `bytes` are exactly tile `id`'s words.
    func matches(_ id: TileID, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let expected = payloads[id], expected.count == bytes.count else { return false }
        return expected.withUnsafeBytes { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
    }

    /// xorshift64 words seeded by the tile and `salt`, written 8 bytes at a time (debug builds
    /// make many of these).
    static func words(for id: TileID, count: Int, salt: UInt64) -> [UInt8] {
        precondition(count % 8 == 0)
        var s = (UInt64(id.z) << 56 ^ UInt64(id.x) << 28 ^ UInt64(id.y) ^ salt &* 0x9E37_79B9_7F4A_7C15) | 1
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, n in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            for offset in stride(from: 0, to: count, by: 8) {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17
                raw.storeBytes(of: s, toByteOffset: offset, as: UInt64.self)
            }
            n = count
        }
    }
}

/// The bytes of a lease (a copy), nil for no lease; consumes (releases) it.
private func contents(_ lease: consuming TileLease?) -> [UInt8]? {
    switch consume lease {
    case .some(let l): l.array
    case .none: nil
    }
}

private struct NoTile: Error { let id: TileID }

private struct ArchiveFailure: Error, CustomStringConvertible {
    let path: String, tile: TileID
    var description: String { "\(path): checksum mismatch after reading tile \(tile)" }
}

/// The lease for `id`, or an error when the store says the tile is absent.
private func lease(_ store: TileStore, _ id: TileID) throws -> TileLease {
    switch try store.tile(id) {
    case .some(let l): return l
    case .none: throw NoTile(id: id)
    }
}

/// The TileStoreError a throwing call threw, nil when it did not throw one.
private func storeError(_ body: () throws -> Void) -> TileStoreError? {
    do { try body() } catch let error as TileStoreError { return error } catch { return nil }
    return nil
}

/// Runs `body(i)` for i in 0..<count on `count` threads of their own, all at once (not
/// `concurrentPerform`, which runs at most one iteration per core: 2 here, and a blocked
/// iteration does not make room for another). False when they did not all finish within
/// `timeout` seconds: a deadlock fails the test instead of hanging it.
private func onThreads(_ count: Int, timeout: Double = 30, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            body(i)
            group.leave()
        }
        thread.start()
    }
    return group.wait(timeout: .now() + timeout) == .success
}

/// Polls `condition` until it holds or `seconds` pass.
private func eventually(_ seconds: Double = 5, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

/// Failure messages collected from worker threads (`#expect` belongs on the test's own task).
private final class Failures: Sendable {
    private let list = Locked<[String]>([])
    func add(_ text: String) { list.withLock { if $0.count < 20 { $0.append(text) } } }
    var all: [String] { list.withLock { $0 } }
}

private final class StoreHolder: Sendable {
    let store = Locked<TileStore?>(nil)
}

/// `count` distinct tiles at zoom `z`, row by row from (x0, y0), `columns` wide.
private func tiles(_ count: Int, z: Int = 10, x0: Int = 100, y0: Int = 200, columns: Int = 20) -> [TileID] {
    (0..<count).map { TileID(z: z, x: x0 + $0 % columns, y: y0 + $0 / columns)! }
}

@Suite(.tags(.concurrent)) struct StoreTileStoreTests {
    static let words256 = 32 * 1024

    /// What one cached 256-px PVRTC4 tile costs the budget (entry overhead + buffer + object),
    /// measured rather than assumed.
    static func tileCost(tileSize: Int = 256) throws -> Int {
        let id = TileID(z: 3, x: 1, y: 1)!
        let fake = StoreFakeArchive(path: "probe", tiles: [id], tileSize: tileSize)
        let store = try TileStore(archives: [fake], budget: MemoryBudget(parsing: "16MiB"))
        _ = try contents(store.tile(id))
        return store.statistics.residentBytes
    }

    // MARK: 1. Basics

    @Test(arguments: [false, true])
    func servesStoredWordsCountsHitsAndCachesAbsence(deflate: Bool) throws {
        let ids = tiles(4, z: 5, x0: 3, y0: 4, columns: 2)
        let fake = StoreFakeArchive(path: "basics-\(deflate).mbtiles", tiles: ids, deflate: deflate)
        if deflate { #expect(fake.storedCount(ids[0])! != Self.words256, "not actually zlib-wrapped") }
        let store = try TileStore(archives: [fake], budget: MemoryBudget(parsing: "4MiB"))
        let id = ids[0]

        let first = try #require(try contents(store.tile(id)))
        #expect(first.count == Self.words256)
        #expect(first == fake.payloads[id])
        var s = store.statistics
        #expect(s.misses == 1 && s.loads == 1 && s.hits == 0)

        let second = try #require(try contents(store.tile(id)))
        #expect(second == fake.payloads[id])
        s = store.statistics
        #expect(s.hits == 1 && s.misses == 1 && s.loads == 1)
        #expect(fake.reads(id) == 1)

        // Another tile is another load, and comes back as its own bytes.
        #expect(try contents(store.tile(ids[3])) == fake.payloads[ids[3]])
        #expect(first != fake.payloads[ids[3]])

        // Absent (zoom in range, so the archive is asked): nil, cached, the second ask is a hit.
        let missing = TileID(z: 5, x: 0, y: 0)!
        #expect(try contents(store.tile(missing)) == nil)
        #expect(try contents(store.tile(missing)) == nil)
        #expect(fake.reads(missing) == 1)
        s = store.statistics
        #expect(s.loads == 2, "a miss that found nothing is not a load")
        #expect(s.hits == 2)
        // A zoom the archive does not hold is not even asked.
        #expect(try contents(store.tile(TileID(z: 9, x: 0, y: 0)!)) == nil)
        #expect(fake.totalReads == 3)
        #expect(store.accountingProblem() == nil)
        #expect(s.budgetViolations == 0 && s.leasedEntries == 0)
    }

    @Test func pixelsAreTheDecodedWords() throws {
        let id = TileID(z: 6, x: 10, y: 20)!
        let fake = StoreFakeArchive(path: "pixels.mbtiles", tiles: [id], deflate: true)
        let store = try TileStore(archives: [fake], budget: MemoryBudget(parsing: "2MiB"))
        let pixels = try #require(try contents(store.pixels(id)))
        let expected = try PVRTCDecoder().decode(fake.payloads[id]!, format: .pvrtc4, width: 256, height: 256)
        #expect(pixels.count == 256 * 256 * 4)
        #expect(pixels == expected)
        // The payload the decode went through is cached too: words and pixels again, no read.
        #expect(try contents(store.tile(id)) == fake.payloads[id])
        #expect(try contents(store.pixels(id)) == expected)
        #expect(fake.reads(id) == 1)
        #expect(store.statistics.loads == 2)  // payload + pixels
        #expect(store.accountingProblem() == nil)
    }

    @Test func elevationThroughAnMBTilesArchive() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("dem.mbtiles")
        let id = TileID(z: 9, x: 270, y: 180)!, bare = TileID(z: 9, x: 271, y: 180)!
        var values = [Float](repeating: 0, count: 256 * 256)
        for i in values.indices { values[i] = 800 + Float(i % 256) * 0.5 - Float(i / 256) * 0.25 }
        values[3] = .nan
        let grid = ElevationTile(width: 256, height: 256, values: values)
        do {
            let writer = try MBTilesWriter(path: path, metadata: MBTilesMetadata(name: "DEM", format: "png"))
            try writer.write([1, 2, 3], for: id)
            try writer.write([4, 5, 6], for: bare)
            try writer.writeElevation(grid, for: id)
            try writer.finish()
        }
        let store = try TileStore(archives: [MBTilesReader(path: path)], budget: MemoryBudget(parsing: "2MiB"))
        #expect(try store.elevation(id) == grid)
        #expect(try store.elevation(id) == grid)
        let s = store.statistics
        #expect(s.loads == 1 && s.hits == 1)
        #expect(s.residentBytes >= 256 * 256 * 4, "the grid is counted in the budget")
        #expect(try store.elevation(bare) == nil)
        #expect(try contents(store.tile(id)) == [1, 2, 3])  // png payload: the bytes as stored
        #expect(store.accountingProblem() == nil)
    }

    // MARK: 2. Budget

    @Test func manyTilesThroughASmallBudgetEvictAndStayUnderIt() throws {
        let cost = try Self.tileCost()
        let ids = tiles(40)
        let fake = StoreFakeArchive(path: "budget.mbtiles", tiles: ids)
        let budget = try MemoryBudget(bytes: 5 * cost)
        let store = try TileStore(archives: [fake], budget: budget)
        for round in 0..<2 {
            for id in ids {
                let ok = try lease(store, id).withUnsafeBytes { fake.matches(id, $0) }
                #expect(ok, "round \(round), tile \(id): wrong bytes")
                if let problem = store.accountingProblem() { Issue.record("after \(id): \(problem)") }
            }
        }
        let s = store.statistics
        #expect(s.loads == 80, "every request was a miss: 40 tiles cycle through 5 slots (LRU)")
        #expect(s.evictions >= 75)
        #expect(s.peakResidentBytes <= budget.bytes)
        #expect(s.peakResidentBytes > 4 * cost, "the budget was used")
        #expect(s.budgetViolations == 0)
        #expect(s.cachedEntries <= 5)
        #expect(s.bufferAllocations <= 5, "evicted buffers are reused, not reallocated")
        #expect(store.accountingProblem() == nil)
    }

    // MARK: 3. Leases

    @Test func leasedTilesStayAndLeasesAloneExhaustTheBudget() throws {
        let cost = try Self.tileCost()
        let ids = tiles(12)
        let fake = StoreFakeArchive(path: "leases.mbtiles", tiles: ids)
        let store = try TileStore(archives: [fake], budget: MemoryBudget(bytes: 4 * cost))

        let l0 = try lease(store, ids[0]), l1 = try lease(store, ids[1])
        for id in ids[2..<10] { _ = try contents(store.tile(id)) }
        #expect(store.statistics.evictions >= 6)
        // Pinned: not evicted, bytes untouched by the loads that reused other buffers.
        #expect(l0.withUnsafeBytes { fake.matches(ids[0], $0) })
        #expect(l1.withUnsafeBytes { fake.matches(ids[1], $0) })
        #expect(try contents(store.tile(ids[0])) == fake.payloads[ids[0]])
        #expect(fake.reads(ids[0]) == 1 && fake.reads(ids[1]) == 1)

        // Four leases fill the budget exactly: the next load fails, typed, one line.
        let l2 = try lease(store, ids[2]), l3 = try lease(store, ids[3])
        #expect(store.statistics.leasedEntries == 4)
        let error = try #require(storeError { _ = try contents(store.tile(ids[10])) })
        #expect(error.code == .budgetExhausted)
        #expect(error.category == .budgetExhausted)
        #expect(!error.description.contains("\n") && error.description.contains("budget"))
        // A hit on a leased tile still works; the failed load left nothing behind.
        #expect(try contents(store.tile(ids[2])) == fake.payloads[ids[2]])
        #expect(store.accountingProblem() == nil)
        #expect(store.statistics.budgetViolations == 0)

        // Releasing one lease lets loads proceed.
        _ = consume l3
        #expect(try contents(store.tile(ids[10])) == fake.payloads[ids[10]])
        #expect(try contents(store.tile(ids[11])) == fake.payloads[ids[11]])
        #expect(l0.withUnsafeBytes { fake.matches(ids[0], $0) })
        #expect(l1.withUnsafeBytes { fake.matches(ids[1], $0) })
        #expect(l2.withUnsafeBytes { fake.matches(ids[2], $0) })
        let s = store.statistics
        #expect(s.budgetViolations == 0 && s.peakResidentBytes <= 4 * cost)
        #expect(store.accountingProblem() == nil)
        _ = consume l0; _ = consume l1; _ = consume l2
        #expect(store.statistics.leasedEntries == 0)
    }

    // MARK: 4. Single flight

    @Test func eightThreadsAskingForOneMissingTileCauseOneRead() throws {
        let id = TileID(z: 8, x: 40, y: 50)!
        let holder = StoreHolder()
        // The read holds until the other seven requests are waiting on it (or 5 s pass), so
        // all eight overlap whatever the scheduler does.
        let fake = StoreFakeArchive(path: "flight.mbtiles", tiles: [id], delayMicros: 20_000) { _ in
            _ = eventually(5) { (holder.store.withLock { $0 }?.statistics.singleFlightWaits ?? 0) >= 7 }
        }
        let store = try TileStore(archives: [fake], budget: MemoryBudget(parsing: "1MiB"))
        holder.store.withLock { $0 = store }
        let results = Locked<[[UInt8]?]>(Array(repeating: nil, count: 8))
        let failures = Failures()
        #expect(
            onThreads(8) { i in
                do { let bytes = try contents(store.tile(id)); results.withLock { $0[i] = bytes } } catch {
                    failures.add("thread \(i): \(error)")
                }
            })
        #expect(failures.all.isEmpty, "\(failures.all)")
        #expect(fake.reads(id) == 1)
        let s = store.statistics
        #expect(s.loads == 1 && s.misses == 1 && s.hits == 7)
        #expect(s.singleFlightWaits >= 7)
        let got = results.withLock { $0 }
        #expect(got.allSatisfy { $0 == fake.payloads[id] })
        #expect(store.accountingProblem() == nil)
        holder.store.withLock { $0 = nil }
    }

    @Test func aWaitIsCountedOncePerRequest() throws {
        // Seven requests wait for a slow tile while its loader loads five others; each of
        // those loads wakes every waiter, and the waiters go back to waiting. Still seven
        // requests joined one load.
        let slow = TileID(z: 8, x: 1, y: 1)!, others = tiles(5, z: 8, x0: 10, y0: 10)
        let holder = StoreHolder()
        let fake = StoreFakeArchive(path: "waits.mbtiles", tiles: [slow] + others) { id in
            guard id == slow, let store = holder.store.withLock({ $0 }) else { return }
            _ = eventually(5) { store.statistics.singleFlightWaits >= 7 }
            for other in others {
                _ = try? contents(store.tile(other))
                usleep(2_000)  // time for the woken waiters to look and wait again
            }
        }
        let store = try TileStore(archives: [fake], budget: MemoryBudget(parsing: "1MiB"))
        holder.store.withLock { $0 = store }
        let failures = Failures()
        #expect(
            onThreads(8) { i in
                do {
                    if try contents(store.tile(slow)) != fake.payloads[slow] {
                        failures.add("thread \(i): wrong bytes")
                    }
                } catch { failures.add("thread \(i): \(error)") }
            })
        #expect(failures.all.isEmpty, "\(failures.all)")
        let s = store.statistics
        #expect(s.loads == 6 && s.misses == 6 && s.hits == 7 && fake.reads(slow) == 1)
        #expect(s.singleFlightWaits == 7, "waits counted per wake-up, not per request")
        holder.store.withLock { $0 = nil }
    }

    @Test func noLostOrDuplicatedLoadsAcrossManyKeys() throws {
        let ids = tiles(64)
        let fake = StoreFakeArchive(path: "keys.mbtiles", tiles: ids, delayMicros: 200)
        let store = try TileStore(archives: [fake], budget: MemoryBudget(parsing: "4MiB"))
        let failures = Failures()
        #expect(
            onThreads(8) { t in
                // Each thread walks all tiles from its own starting point and stride.
                let step = [1, 3, 5, 7, 9, 11, 13, 15][t]
                for k in 0..<ids.count {
                    let id = ids[(t * 8 + k * step) % ids.count]
                    do {
                        let ok = try lease(store, id).withUnsafeBytes { fake.matches(id, $0) }
                        if !ok { failures.add("thread \(t): wrong bytes for \(id)") }
                    } catch { failures.add("thread \(t): \(error)") }
                }
            })
        #expect(failures.all.isEmpty, "\(failures.all)")
        let duplicated = ids.filter { fake.reads($0) != 1 }
        #expect(duplicated.isEmpty, "read more or less than once: \(duplicated)")
        let s = store.statistics
        #expect(s.loads == 64 && s.misses == 64 && s.hits == 8 * 64 - 64 && s.evictions == 0)
        // Every wait ends in a hit on the tile it waited for: waits can't outnumber hits.
        #expect(s.singleFlightWaits <= s.hits, "single-flight waits \(s.singleFlightWaits) > hits \(s.hits)")
        #expect(s.cachedEntries == 64 && s.leasedEntries == 0)
        #expect(store.accountingProblem() == nil)
    }

    // MARK: 5. Stress

    /// The region the stress traces move over: zooms 10–12, 9 + 36 + 144 tiles.
    static let stressExtent = TileExtent(
        zooms: 10...12,
        ranges: [
            TileRange(z: 10, minX: 540, maxX: 542, minY: 360, maxY: 362),
            TileRange(z: 11, minX: 1080, maxX: 1085, minY: 720, maxY: 725),
            TileRange(z: 12, minX: 2160, maxX: 2171, minY: 1440, maxY: 1451),
        ])!

    /// A lease a stress thread keeps for a while, and when to let it go.
    final class Held {
        let lease: TileLease
        let id: TileID
        let until: Int
        init(_ lease: consuming TileLease, id: TileID, until: Int) {
            self.lease = lease; self.id = id; self.until = until
        }
    }

    @Test(arguments: EvictionPolicyKind.allCases)
    func eightThreadsOfTracesUnderWarningsAndLeases(policy: EvictionPolicyKind) throws {
        let extent = Self.stressExtent
        var all: [TileID] = []
        for z in extent.zooms {
            let r = extent.range(atZoom: z)!
            for y in r.minY...r.maxY { for x in r.minX...r.maxX { all.append(TileID(z: z, x: x, y: y)!) } }
        }
        let fake = StoreFakeArchive(path: "stress.mbtiles", tiles: all)
        let budget = try MemoryBudget(bytes: 8 * Self.tileCost())
        var options = TileStoreOptions()
        options.policy = policy
        options.simulatedWarnings = .random(seed: 7)
        let store = try TileStore(archives: [fake], budget: budget, options: options)
        let kinds: [AccessTrace.Kind] = [.random, .pan, .zoom]
        let traces = (0..<8).map {
            AccessTrace.make(kinds[$0 % 3], over: extent, frames: 30, seed: UInt64($0 + 1)).requests
        }
        #expect(traces.allSatisfy { $0.count > 100 && $0.allSatisfy { fake.payloads[$0] != nil } })
        let failures = Failures()
        let served = Locked(0), exhausted = Locked(0), keptLeases = Locked(0)

        let finished = onThreads(8) { t in
            // Threads 0 and 4 keep up to two leases at a time, 1 and 5 one, the rest none.
            let maxHeld = [2, 1, 0, 0][t % 4]
            var held: [Held] = []
            func letGo(_ h: Held) {
                if !h.lease.withUnsafeBytes({ fake.matches(h.id, $0) }) {
                    failures.add("thread \(t): leased tile \(h.id) changed while held")
                }
            }
            for (k, id) in traces[t].enumerated() {
                for h in held where h.until <= k { letGo(h) }
                held.removeAll { $0.until <= k }
                do {
                    switch try store.tile(id) {
                    case .none:
                        failures.add("thread \(t): tile \(id) absent")
                    case .some(let lease):
                        served.withLock { $0 += 1 }
                        if !lease.withUnsafeBytes({ fake.matches(id, $0) }) {
                            failures.add("thread \(t): wrong bytes for \(id)")
                        }
                        if held.count < maxHeld, k % 13 == 0 {
                            held.append(Held(lease, id: id, until: k + 20 + t))
                            keptLeases.withLock { $0 += 1 }
                        }
                    }
                } catch let error as TileStoreError where error.code == .budgetExhausted {
                    exhausted.withLock { $0 += 1 }  // leases and loads in flight filled the budget: allowed
                } catch {
                    failures.add("thread \(t): \(error)")
                }
                if t == 7, k % 97 == 0 { store.handleMemoryPressure(k % 2 == 0 ? .critical : .warning) }
                if let problem = store.accountingProblem() { failures.add("thread \(t) op \(k): \(problem)") }
            }
            for h in held { letGo(h) }
        }
        #expect(finished, "threads did not finish in time (deadlock?)")
        #expect(failures.all.isEmpty, "\(failures.all)")
        let requests = traces.reduce(0) { $0 + $1.count }
        let ok = served.withLock { $0 }, refused = exhausted.withLock { $0 }
        #expect(ok + refused == requests)
        #expect(ok > requests / 2, "most requests are served (\(refused) of \(requests) refused)")
        #expect(keptLeases.withLock { $0 } >= 8)
        let s = store.statistics
        #expect(s.budgetViolations == 0)
        #expect(s.peakResidentBytes <= budget.bytes)
        #expect(s.evictions > 0 && s.memoryWarnings > 0 && s.bytesFreedByPressure > 0)
        #expect(s.leasedEntries == 0)
        #expect(store.accountingProblem() == nil)

        store.handleMemoryPressure(.critical)
        let after = store.statistics
        #expect(after.residentBytes == 0 && after.cachedEntries == 0)
        #expect(store.accountingProblem() == nil)
    }

    // MARK: 6. A warning in the middle of 1,000 concurrent loads

    @Test func warningsDuringAThousandConcurrentLoads() throws {
        let ids = tiles(1000, z: 11, x0: 0, y0: 0, columns: 40)
        let fake = StoreFakeArchive(path: "thousand.mbtiles", tiles: ids, tileSize: 128, delayMicros: 100)
        let budget = try MemoryBudget(bytes: 16 * Self.tileCost(tileSize: 128))
        let store = try TileStore(archives: [fake], budget: budget)
        let failures = Failures()
        let loadersDone = Atomic(0)
        let warningsMidLoad = Atomic(0), warnings = Atomic(0)
        let finished = onThreads(9) { t in
            if t == 8 {
                // The pressure thread: warnings and critical warnings for as long as loads run.
                var n = 0
                while loadersDone.load(ordering: .acquiring) < 8 {
                    let before = store.statistics.loads
                    store.handleMemoryPressure(n % 3 == 2 ? .critical : .warning)
                    n += 1
                    warnings.add(1, ordering: .relaxed)
                    if before > 0 && before < ids.count { warningsMidLoad.add(1, ordering: .relaxed) }
                    if let problem = store.accountingProblem() { failures.add("after warning \(n): \(problem)") }
                    usleep(300)
                }
                return
            }
            for i in stride(from: t, to: ids.count, by: 8) {
                let id = ids[i]
                do {
                    let ok = try lease(store, id).withUnsafeBytes { fake.matches(id, $0) }
                    if !ok { failures.add("wrong bytes for \(id)") }
                } catch { failures.add("\(id): \(error)") }
            }
            loadersDone.add(1, ordering: .releasing)
        }
        #expect(finished, "loads under warnings did not finish in time (deadlock?)")
        #expect(failures.all.isEmpty, "\(failures.all)")
        #expect(warningsMidLoad.load(ordering: .relaxed) >= 3, "warnings arrived while loads ran")
        let s = store.statistics
        #expect(s.loads == 1000, "every tile loaded exactly once")
        #expect(ids.allSatisfy { fake.reads($0) == 1 })
        #expect(s.memoryWarnings == warnings.load(ordering: .relaxed))
        #expect(s.budgetViolations == 0 && s.peakResidentBytes <= budget.bytes)
        #expect(s.leasedEntries == 0)
        #expect(store.accountingProblem() == nil)
        store.handleMemoryPressure(.critical)
        #expect(store.statistics.residentBytes == 0 && store.statistics.cachedEntries == 0)
    }

    // MARK: 7. Bad input

    @Test func budgetsAndScheduleTextsThatCannotWork() throws {
        #expect(throws: MemoryBudgetError.self) { try MemoryBudget(bytes: 0) }
        #expect(throws: MemoryBudgetError.self) { try MemoryBudget(bytes: -4096) }
        for text in ["0", "abc", "", "MiB", "-1MiB", "1.2.3KiB", "8 XiB"] {
            let error = #expect(throws: MemoryBudgetError.self, "'\(text)'") { try MemoryBudget(parsing: text) }
            #expect(error?.description.contains("'\(text)'") == true, "\(String(describing: error))")
            #expect(error?.category == .invalidArgument)
        }
        // Rounds to zero bytes: refused (the message names the rounded size, '0', not the text).
        #expect(throws: MemoryBudgetError.self) { try MemoryBudget(parsing: "0.0000001") }
        #expect(try MemoryBudget(parsing: "8MiB").bytes == 8 << 20)
        #expect(try MemoryBudget(parsing: "1.5GiB").bytes == 3 << 29)
        #expect(try MemoryBudget(parsing: "512 KiB").bytes == 512 << 10)
        #expect(try MemoryBudget(parsing: "4096").bytes == 4096)

        for text in ["every:0", "soon", "every:", "every:-3", "random:x", "random", ""] {
            let error = #expect(throws: TileStoreError.self, "'\(text)'") { try SimulatedMemoryWarnings(parsing: text) }
            #expect(error?.code == .invalidOptions)
        }
        #expect(try SimulatedMemoryWarnings(parsing: "every:5") == .every(5))
        #expect(try SimulatedMemoryWarnings(parsing: "random:42") == .random(seed: 42))
    }

    @Test func aBudgetSmallerThanOneTileNamesTheArchive() throws {
        let small = StoreFakeArchive(path: "small-tiles.mbtiles", tiles: tiles(2), tileSize: 32)
        let big = StoreFakeArchive(path: "big-tiles.mbtiles", tiles: tiles(2), tileSize: 256)
        let error = try #require(
            storeError { _ = try TileStore(archives: [small, big], budget: MemoryBudget(bytes: 20_000)) })
        #expect(error.code == .invalidOptions && error.category == .invalidArgument)
        #expect(error.subject == big.path)
        #expect(error.description.hasPrefix(big.path) && !error.description.contains("\n"))
        // The small archive alone fits that budget.
        #expect(throws: Never.self) { _ = try TileStore(archives: [small], budget: MemoryBudget(bytes: 20_000)) }
        var options = TileStoreOptions()
        options.simulatedWarnings = .every(0)
        #expect(
            storeError {
                _ = try TileStore(archives: [small], budget: MemoryBudget(parsing: "1MiB"), options: options)
            }?
            .code == .invalidOptions)
    }

    @Test func aDamagedTileIsTypedAndTheStoreKeepsServing() throws {
        let good = tiles(3, z: 7, x0: 10, y0: 10)
        let garbage = TileID(z: 7, x: 1, y: 1)!, wrongSize = TileID(z: 7, x: 1, y: 2)!,
            short = TileID(z: 7, x: 1, y: 3)!
        var random = TestRandom(seed: 99)
        let a = StoreFakeArchive(
            path: "damaged.mbtiles", tiles: good,
            damaged: [
                garbage: random.bytes(500),  // not zlib at all
                wrongSize: try Zlib.deflate([UInt8](repeating: 7, count: 1000)),  // zlib, wrong length
                short: Array(StoreFakeArchive.words(for: short, count: Self.words256, salt: 0).dropLast(8)),
            ])
        let otherTiles = tiles(3, z: 8, x0: 10, y0: 10)
        let b = StoreFakeArchive(path: "other.mbtiles", tiles: otherTiles + good, salt: 5)
        let store = try TileStore(archives: [a, b], budget: MemoryBudget(parsing: "2MiB"))
        for id in [garbage, wrongSize, short] {
            for attempt in 0..<2 {
                let error = try #require(
                    storeError { _ = try contents(store.tile(id)) }, "tile \(id) attempt \(attempt)")
                #expect(error.code == .damagedTile && error.category == .invalidInput)
                #expect(error.subject == a.path)
                #expect(error.description.contains(a.path) && error.description.contains("\(id)"))
                #expect(!error.description.contains("\n"))
            }
            #expect(storeError { _ = try contents(store.pixels(id)) }?.code == .damagedTile)
            #expect(store.accountingProblem() == nil)
        }
        // Both archives keep serving: a's good tiles, b's own, and b's copy of a tile a also has.
        for id in good { #expect(try contents(store.tile(id)) == a.payloads[id]) }
        for id in otherTiles { #expect(try contents(store.tile(id)) == b.payloads[id]) }
        #expect(try contents(store.tile(good[0], archive: 1)) == b.payloads[good[0]])
        #expect(b.payloads[good[0]] != a.payloads[good[0]])
        let s = store.statistics
        #expect(s.loads == good.count + otherTiles.count + 1)
        #expect(s.budgetViolations == 0 && s.leasedEntries == 0)
        #expect(store.accountingProblem() == nil)
    }

    @Test func anArchiveFailingAfterTheCopyGivesItsBufferBack() throws {
        let ids = tiles(4)
        let fake = StoreFakeArchive(path: "flaky.mbtiles", tiles: ids, failAfterBody: [ids[0]])
        let budget = try MemoryBudget(bytes: 3 * Self.tileCost())
        let store = try TileStore(archives: [fake], budget: budget)
        for attempt in 0..<5 {
            let error = try #require(storeError { _ = try contents(store.tile(ids[0])) }, "attempt \(attempt)")
            #expect(error.code == .archive && error.subject == fake.path)
            #expect(store.accountingProblem() == nil)
        }
        // The failed loads hold nothing: the whole budget is there for other tiles.
        for id in ids[1...] { #expect(try contents(store.tile(id)) == fake.payloads[id]) }
        #expect(store.statistics.budgetViolations == 0)
        store.handleMemoryPressure(.critical)
        #expect(store.statistics.residentBytes == 0, "bytes of failed loads still counted")
        #expect(store.accountingProblem() == nil)
    }

    // MARK: 8. Prefetch

    @Test func neighboursAheadAreTheNextColumnOrRow() {
        func ids(_ pairs: [(Int, Int)], z: Int = 10) -> Set<TileID> {
            Set(pairs.map { TileID(z: z, x: $0.0, y: $0.1)! })
        }
        let id = TileID(z: 10, x: 5, y: 5)!
        #expect(Set(TileStore.neighbours(ahead: id, dx: 1, dy: 0)) == ids([(6, 4), (6, 5), (6, 6)]))
        #expect(Set(TileStore.neighbours(ahead: id, dx: -1, dy: 0)) == ids([(4, 4), (4, 5), (4, 6)]))
        #expect(Set(TileStore.neighbours(ahead: id, dx: 0, dy: 1)) == ids([(4, 6), (5, 6), (6, 6)]))
        #expect(Set(TileStore.neighbours(ahead: id, dx: 0, dy: -3)) == ids([(4, 4), (5, 4), (6, 4)]))
        let diagonal = TileStore.neighbours(ahead: id, dx: 1, dy: 1)
        #expect(diagonal.count == 5 && Set(diagonal) == ids([(6, 4), (6, 5), (6, 6), (4, 6), (5, 6)]))
        #expect(TileStore.neighbours(ahead: id, dx: 0, dy: 0).isEmpty)
        // At the world's edge there is nothing ahead; along it, only what exists.
        #expect(TileStore.neighbours(ahead: TileID(z: 1, x: 1, y: 0)!, dx: 1, dy: 0).isEmpty)
        #expect(
            Set(TileStore.neighbours(ahead: TileID(z: 1, x: 0, y: 0)!, dx: 1, dy: 0)) == ids([(1, 0), (1, 1)], z: 1))
    }

    @Test func prefetchLoadsOnlyIntoFreeBudgetAndNeverEvicts() async throws {
        let cost = try Self.tileCost()
        let ids = tiles(12)
        let fake = StoreFakeArchive(path: "prefetch.mbtiles", tiles: ids)

        // Free budget: the neighbours load in the background and are hits afterwards.
        let roomy = try TileStore(archives: [fake], budget: MemoryBudget(bytes: 16 * cost))
        roomy.prefetch(Array(ids[0..<3]))
        #expect(await eventually { roomy.statistics.loads == 3 })
        for id in ids[0..<3] { #expect(try await contents(roomy.tile(id)) == fake.payloads[id]) }
        #expect(roomy.statistics.hits == 3 && ids[0..<3].allSatisfy { fake.reads($0) == 1 })

        // Four tiles' budget, two leased: a prefetch of three loads two, then stops.
        let store = try TileStore(archives: [fake], budget: MemoryBudget(bytes: 4 * cost))
        do {
            let l0 = try lease(store, ids[3]), l1 = try lease(store, ids[4])
            store.prefetch(Array(ids[5..<8]))
            // Both loads finished (under load they lag their misses), then time for a wrong
            // third load to show.
            #expect(await eventually { store.statistics.misses == 2 + 3 && store.statistics.loads == 4 })
            try await Task.sleep(for: .milliseconds(20))
            var s = store.statistics
            #expect(s.misses == 5 && s.loads == 4 && s.evictions == 0)
            #expect(fake.reads(ids[7]) == 0, "no room even for its entry: not read")
            #expect(l0.withUnsafeBytes { fake.matches(ids[3], $0) } && l1.withUnsafeBytes { fake.matches(ids[4], $0) })

            // All four leased now (the prefetched two by a hit): a prefetch loads nothing.
            let l2 = try lease(store, ids[5]), l3 = try lease(store, ids[6])
            store.prefetch([ids[8]])
            #expect(await eventually { store.statistics.misses == 6 })
            s = store.statistics
            #expect(s.loads == 4 && s.evictions == 0)
            _ = consume l2
            _ = consume l3
            _ = consume l0
            _ = consume l1
        }

        // The budget full of unleased tiles: a prefetch still evicts none of them.
        #expect(store.statistics.leasedEntries == 0)
        let before = store.statistics
        store.prefetch([ids[9], ids[10]])
        #expect(await eventually { store.statistics.misses == before.misses + 1 })
        try await Task.sleep(for: .milliseconds(20))
        let s = store.statistics
        #expect(s.evictions == 0 && s.loads == before.loads && s.misses == before.misses + 1)
        #expect(fake.reads(ids[10]) == 0)
        for id in ids[3..<7] { #expect(try await contents(store.tile(id)) == fake.payloads[id]) }
        #expect(ids[3..<7].allSatisfy { fake.reads($0) == 1 }, "the cached tiles were still there")
        #expect(store.statistics.budgetViolations == 0 && store.accountingProblem() == nil)
    }
}

/// Polls `condition` every millisecond (without blocking a thread) until it holds or
/// `seconds` pass.
private func eventually(_ seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return condition()
}
