// A timing harness for the comparison scripts: one operation, timed, printed as one JSON line.
//
//   tilepack-bench decode FILE [--repeat N]   full decode of a TIFF's first image, block row by
//                                            block row, single thread; MB/s of decoded samples
//   tilepack-bench store ARCHIVE [options]    the tile store's hit path, cold and steady-state
//                                            loads, next to a bare SQLite C-API loop over the same
//                                            blobs, and Mutex vs actor vs pthread mutex (StoreBench.swift)
//   tilepack-bench access [options]          the region store's access check: hit and miss paths,
//                                            and its cost inside a tile-store hit (AccessBench.swift)
//   tilepack-bench elevation NEW OLD [--runs R]  elevation decode and store load per tile of two
//                                            archives, and their ratio (ElevationBench.swift)
//   tilepack-bench policy-table              every eviction policy and Belady's optimum over the
//                                            viewer traces: BENCHMARKS.md's table (PolicyTableBench.swift)
//   tilepack-bench png-interop DIR           the Swift half of Scripts/png-check (PNGInteropBench.swift)
import TilePack
#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String) -> Never {
    var line = Array(("tilepack-bench: " + message + "\n").utf8)
    line.withUnsafeMutableBytes { _ = write(2, $0.baseAddress, $0.count) }
    exit(2)
}

let args = Array(CommandLine.arguments.dropFirst())
if args.first == "store" {
    runStoreBench(Array(args.dropFirst()))
    exit(0)
}
if args.first == "elevation" {
    runElevationBench(Array(args.dropFirst()))
    exit(0)
}
if args.first == "access" {
    runAccessBench(Array(args.dropFirst()))
    exit(0)
}
if args.first == "policy-table" {
    runPolicyTable(Array(args.dropFirst()))
    exit(0)
}
if args.first == "png-interop" {
    runPNGInterop(Array(args.dropFirst()))
}
guard args.count >= 2, args[0] == "decode" else { fail("usage: tilepack-bench decode FILE [--repeat N] | store ARCHIVE [options] | access [options] | elevation NEW OLD | policy-table | png-interop DIR") }
let path = args[1]
var repeats = 3
if let i = args.firstIndex(of: "--repeat"), i + 1 < args.count, let n = Int(args[i + 1]), n > 0 { repeats = n }

do {
    var best = Double.infinity
    var bytes = 0
    var checksum: UInt64 = 0
    for _ in 0..<repeats {
        let clock = ContinuousClock()
        let start = clock.now
        // A fresh file (and block cache) each round, so no round is served from the cache.
        let tiff = try TIFFFile(path: path, cacheBytes: 8 << 20)
        let img = tiff.image
        bytes = 0
        var y = 0
        while y < img.height {
            let rows = min(img.blockHeight, img.height - y)
            let window = try tiff.read(window: PixelWindow(x: 0, y: y, width: img.width, height: rows))
            bytes += window.bytes.count
            checksum &+= UInt64(window.bytes[window.bytes.count / 2])
            y += rows
        }
        best = min(best, (clock.now - start).inSeconds)
    }
    print("{\"tool\": \"tilepack\", \"file\": \"\(path)\", \"decoded_bytes\": \(bytes), \"best_seconds\": \(best), \"mb_per_s\": \(Double(bytes) / 1e6 / best), \"check\": \(checksum)}")
} catch {
    fail("\(error)")
}
