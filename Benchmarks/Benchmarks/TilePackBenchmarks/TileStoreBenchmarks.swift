// The tile store's hot paths under the malloc interposer (issue 9, Must-show 3): a hit, and a
// load in steady state (every request a miss that evicts, buffers from the pool). One
// iteration is one request, so `mallocCountTotal` reads directly as mallocs per hit or per
// load. The archive is $TILEPACK_STORE_ARCHIVE, else the sample DEM built here (PVRTC4 fast).
// The timing comparison with the SQLite floor and Python is Scripts/bench-store.
import Benchmark
import TilePack
import CSQLiteFloor
#if canImport(Glibc)
import Glibc
#endif

/// The archive and its tile ids (all zooms), made once per process.
let storeArchive: (reader: MBTilesReader, ids: [TileID]) = {
    do {
        var path = ProcessInfoLite.environment("TILEPACK_STORE_ARCHIVE") ?? ""
        if path.isEmpty {
            path = "/tmp/tilepack-benchmark-store-\(getpid()).mbtiles"
            var request = RegionBuild.Request(sourcePath: sampleRegions + "/montblanc-dem.tif")
            request.outputPath = path
            request.codecLevel = .fast
            _ = try RegionBuild(request).run()
        }
        let reader = try MBTilesReader(path: path)
        var ids: [TileID] = []
        for z in reader.zoomRange ?? 0...(-1) { ids += try reader.tileIDs(zoom: z) }
        precondition(ids.count >= 64, "\(path): \(ids.count) tiles, the steady-state benchmark needs at least 64")
        return (reader, ids)
    } catch {
        fatalError("tile store benchmark archive: \(error)")
    }
}()

enum ProcessInfoLite {
    static func environment(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
}

/// A budget holding `tiles` payloads of a 256² PVRTC4 archive (32 KiB buffers), store
/// overheads included; the sample archive has several times more tiles.
func payloadBudget(tiles: Int) throws -> MemoryBudget {
    try MemoryBudget(bytes: tiles * (32_768 + 64 + TileStore.entryOverhead))
}

let storeBenchmarks: @Sendable () -> Void = {
    let metrics: [BenchmarkMetric] = [.wallClock, .mallocCountTotal, .throughput]

    Benchmark("TileStore hit",
              configuration: .init(metrics: metrics, scalingFactor: .kilo, maxDuration: .seconds(3), maxIterations: 10_000)) { benchmark in
        let (reader, ids) = storeArchive
        let store = try TileStore(archives: [reader], budget: payloadBudget(tiles: 64))
        let hot = ids[ids.count / 2]
        _ = try store.tile(hot)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            if let lease = try store.tile(hot) { blackHole(lease.count) }
        }
    }

    // One iteration = one load: the store holds 16 tiles and the requests cycle through
    // every tile of the archive, so each is a miss that evicts the least recently used.
    // The store (and its cursor) lives across iterations: ordo-one calls the closure once
    // per sample, and only the steady state is wanted, not each sample's warm-up.
    for (name, decode) in [("TileStore cold load (steady state, evicting)", false),
                           ("TileStore cold load with decoding (steady state, evicting)", true)] {
        let fixture = SteadyFixture(decode: decode)
        Benchmark(name, configuration: .init(metrics: metrics, maxDuration: .seconds(3), maxIterations: 20_000),
                  closure: { benchmark in
                      try fixture.prepare()
                      benchmark.startMeasurement()
                      for _ in benchmark.scaledIterations { try fixture.next() }
                  },
                  teardown: { fixture.report(name) })
    }

    // The reader alone (no store): which mallocs are the archive layer's.
    Benchmark("MBTilesReader withTile (read, copy into a reused buffer)",
              configuration: .init(metrics: metrics, maxDuration: .seconds(3), maxIterations: 20_000)) { benchmark in
        let (reader, ids) = storeArchive
        let buffer = readBuffer
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try reader.withTile(ids[cursors.next(ids.count)]) { stored in buffer.copyMemory(from: stored) })
        }
    }
}

/// Requests cycling through the archive's tiles against one store whose budget holds 16 tiles.
final class SteadyFixture: @unchecked Sendable {  // used by one benchmark thread at a time
    let decode: Bool
    private var store: TileStore?
    private var cursor = 0

    init(decode: Bool) { self.decode = decode }

    /// Makes the store and runs one warm-up pass over every tile (fills the cache and the pool).
    func prepare() throws {
        guard store == nil else { return }
        let (reader, ids) = storeArchive
        // A decoded tile (256 KiB) is eight payloads: 16 tiles with their payloads.
        let made = try TileStore(archives: [reader], budget: payloadBudget(tiles: decode ? 16 * 9 : 16))
        store = made
        for _ in ids { try next() }
        made.resetStatistics()
    }

    func next() throws {
        let ids = storeArchive.ids
        let id = ids[cursor]
        cursor = cursor + 1 == ids.count ? 0 : cursor + 1
        if decode {
            if let lease = try store!.pixels(id) { blackHole(lease.count) }
        } else {
            if let lease = try store!.tile(id) { blackHole(lease.count) }
        }
    }

    func report(_ name: String) {
        guard let s = store?.statistics else { return }
        print("\(name): \(s.loads) loads, \(s.hits) hits, \(s.evictions) evictions, \(s.bufferAllocations) buffers allocated")
    }
}

/// A cursor over the tile list shared by the reader and floor benchmarks' samples.
final class Cursor: @unchecked Sendable {
    private var i = 0
    func next(_ count: Int) -> Int {
        defer { i = i + 1 == count ? 0 : i + 1 }
        return i
    }
}
let cursors = Cursor()
nonisolated(unsafe) let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)

/// The floor under the malloc interposer: the bare SQLite C API on one connection kept open
/// across samples, the reader's SELECT, the blob copied into a reused buffer. Mallocs here are
/// SQLite's own.
final class FloorConnection: @unchecked Sendable {  // used by one benchmark thread at a time
    var db: OpaquePointer?
    var stmt: OpaquePointer?
    init(path: String) {
        guard sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK,
              sqlite3_prepare_v2(db, "SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?",
                                 -1, &stmt, nil) == SQLITE_OK else { fatalError("floor: cannot open \(path)") }
    }
    func read(_ id: TileID, into buffer: UnsafeMutableRawBufferPointer) {
        sqlite3_bind_int64(stmt, 1, Int64(id.z))
        sqlite3_bind_int64(stmt, 2, Int64(id.x))
        sqlite3_bind_int64(stmt, 3, Int64(id.tmsY))
        if sqlite3_step(stmt) == SQLITE_ROW, let blob = sqlite3_column_blob(stmt, 0) {
            memcpy(buffer.baseAddress!, blob, Int(sqlite3_column_bytes(stmt, 0)))
        }
        sqlite3_reset(stmt)
    }
}
let floorConnection = FloorConnection(path: storeArchive.reader.path)

let sqliteFloorBenchmarks: @Sendable () -> Void = {
    Benchmark("SQLite C API read by key (floor)",
              configuration: .init(metrics: [.wallClock, .mallocCountTotal, .throughput], maxDuration: .seconds(3), maxIterations: 20_000)) { benchmark in
        let (_, ids) = storeArchive
        let floor = floorConnection
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { floor.read(ids[cursors.next(ids.count)], into: readBuffer) }
    }
}
