import Testing
@testable import TilePack
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writer throughput, printed for BENCHMARKS.md. Runs only with TILEPACK_BENCH=1 (a timing,
/// not a check), e.g. `TILEPACK_BENCH=1 swift test -c release --filter ArchiveBenchmarkTests`.
@Suite(.serialized) struct ArchiveBenchmarkTests {
    static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    @Test(.enabled(if: getenv("TILEPACK_BENCH") != nil, "set TILEPACK_BENCH=1 to time the writer"),
          arguments: [2_048, 32_768])
    func writerThroughput(tileBytes: Int) throws {
        let dir = TemporaryDirectory()
        let path = dir.file("bench.mbtiles")
        var random = TestRandom(seed: 5)
        let base = random.bytes(tileBytes)
        let count = 10_000
        let start = Self.now()
        let writer = try MBTilesWriter(path: path, metadata: MBTilesMetadata(name: "bench", format: "png"))
        var tile = base
        for i in 0..<count {
            // Distinct contents (no dedup shortcut): stamp the index into the first bytes.
            tile[0] = UInt8(truncatingIfNeeded: i); tile[1] = UInt8(truncatingIfNeeded: i >> 8)
            try writer.write(tile, for: TileID(z: 14, x: 8000 + i % 100, y: 5000 + i / 100)!)
        }
        try writer.finish()
        let seconds = Self.now() - start
        let reader = try MBTilesReader(path: path)
        #expect(try reader.tileCount == count)
        let readStart = Self.now()
        for i in 0..<count { _ = try reader.tile(TileID(z: 14, x: 8000 + i % 100, y: 5000 + i / 100)!) }
        let readSeconds = Self.now() - readStart
        print("""
            writer: \(count) distinct tiles of \(tileBytes) B in \(String(format: seconds)) s = \
            \(Int(Double(count) / seconds)) tiles/s (\(Int(Double(count * tileBytes) / seconds / 1e6)) MB/s), \
            reader: \(Int(Double(count) / readSeconds)) tiles/s
            """)
    }
}

private extension String {
    init(format seconds: Double) { self = String(Double(Int(seconds * 1000)) / 1000) }
}
