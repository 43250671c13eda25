import Testing
import Dispatch
import Foundation
import Synchronization
import TilePack
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    private let readCounts = Mutex<[TileID: Int]>([:])
    /// Called inside `withTile`, after counting the read and before serving the bytes.
    private let duringRead: (@Sendable (TileID) -> Void)?

    init(path: String, tiles: [TileID], tileSize: Int = 256, deflate: Bool = false,
         damaged: [TileID: [UInt8]] = [:], delayMicros: UInt32 = 0, salt: UInt64 = 0,
         duringRead: (@Sendable (TileID) -> Void)? = nil) {
        self.path = path
        let zooms = tiles.map(\.z) + damaged.keys.map(\.z)
        summary = TileArchiveSummary(name: path, bounds: nil, zoomRange: zooms.min().map { $0...zooms.max()! },
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
        self.duringRead = duringRead
    }

    func withTile<R>(_ id: TileID, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        readCounts.withLock { $0[id, default: 0] += 1 }
        duringRead?(id)
        if delayMicros > 0 { usleep(delayMicros) }
        guard let bytes = stored[id] else { return nil }
        return try bytes.withUnsafeBytes { try body($0) }
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
    private let list = Mutex<[String]>([])
    func add(_ text: String) { list.withLock { if $0.count < 20 { $0.append(text) } } }
    var all: [String] { list.withLock { $0 } }
}

private final class StoreHolder: Sendable {
    let store = Mutex<TileStore?>(nil)
}

/// `count` distinct tiles at zoom `z`, row by row from (x0, y0), `columns` wide.
private func tiles(_ count: Int, z: Int = 10, x0: Int = 100, y0: Int = 200, columns: Int = 20) -> [TileID] {
    (0..<count).map { TileID(z: z, x: x0 + $0 % columns, y: y0 + $0 / columns)! }
}

@Suite struct StoreTileStoreTests {
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
        #expect(error.problem == .budgetExhausted)
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
        for (l, id) in [(0, ids[0]), (1, ids[1]), (2, ids[2])] {
            let same = switch l {
            case 0: l0.withUnsafeBytes { fake.matches(id, $0) }
            case 1: l1.withUnsafeBytes { fake.matches(id, $0) }
            default: l2.withUnsafeBytes { fake.matches(id, $0) }
            }
            #expect(same, "lease \(l) changed under load")
        }
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
        let results = Mutex<[[UInt8]?]>(Array(repeating: nil, count: 8))
        let failures = Failures()
        #expect(onThreads(8) { i in
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

    @Test func noLostOrDuplicatedLoadsAcrossManyKeys() throws {
        let ids = tiles(64)
        let fake = StoreFakeArchive(path: "keys.mbtiles", tiles: ids, delayMicros: 200)
        let store = try TileStore(archives: [fake], budget: MemoryBudget(parsing: "4MiB"))
        let failures = Failures()
        #expect(onThreads(8) { t in
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
}
