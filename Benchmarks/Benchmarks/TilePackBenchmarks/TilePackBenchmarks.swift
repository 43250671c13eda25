// ordo-one benchmarks of tilepack's hot paths: `swift package benchmark` in Benchmarks/.
// Wall time, allocations (malloc interposer) and peak memory per stage; the comparisons with
// peers (tifffile, rio-mbtiles, quicktex, etcpak) are in ../Scripts, figures in BENCHMARKS.md.
import Benchmark
import TilePack
#if canImport(Glibc)
import Glibc
#endif

let sampleRegions: String = {
    var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    parts.removeLast(4)  // Benchmarks/Benchmarks/TilePackBenchmarks/TilePackBenchmarks.swift
    return parts.joined(separator: "/") + "/SampleRegions"
}()

/// A 256 × 256 RGBA tile cut from the sample colour image.
func sampleTile() throws -> [UInt8] {
    let tiff = try TIFFFile(path: sampleRegions + "/montblanc-color.tif")
    let window = try tiff.read(window: PixelWindow(x: 384, y: 256, width: 256, height: 256))
    var rgba = [UInt8](repeating: 255, count: 256 * 256 * 4)
    for i in 0..<(256 * 256) { for c in 0..<3 { rgba[i * 4 + c] = window.bytes[i * 3 + c] } }
    return rgba
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .mallocCountTotal, .peakMemoryResident],
                                           maxDuration: .seconds(5), maxIterations: 50)

    Benchmark("TIFF decode: sample DEM 768² int16 Deflate+pred2") { benchmark in
        for _ in benchmark.scaledIterations {
            let tiff = try TIFFFile(path: sampleRegions + "/montblanc-dem.tif")
            blackHole(try tiff.read(window: PixelWindow(x: 0, y: 0, width: 768, height: 768)).bytes.count)
        }
    }

    Benchmark("PVRTC4 encode 256² tile, fast") { benchmark in
        let tile = try sampleTile()
        let encoder = PVRTCEncoder()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(rgba: tile, width: 256, height: 256, format: .pvrtc4, level: .fast))
        }
    }

    Benchmark("PVRTC4 encode 256² tile, quality") { benchmark in
        let tile = try sampleTile()
        let encoder = PVRTCEncoder()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try encoder.encode(rgba: tile, width: 256, height: 256, format: .pvrtc4, level: .quality))
        }
    }

    Benchmark("PVRTC4 decode 256² tile") { benchmark in
        let words = try PVRTCEncoder().encode(rgba: try sampleTile(), width: 256, height: 256, format: .pvrtc4, level: .fast)
        let decoder = PVRTCDecoder()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try decoder.decode(words, format: .pvrtc4, width: 256, height: 256))
        }
    }

    Benchmark("PNG encode 256² tile") { benchmark in
        let tile = try sampleTile()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(try PNGEncoder().encode(rgba: tile, width: 256, height: 256))
        }
    }

    for tileBytes in [2_048, 32_768] {
        // 10,000 distinct payloads (no dedup shortcut), then each read back once.
        Benchmark("MBTiles write+finish 10,000 distinct \(tileBytes / 1024) KiB tiles",
                  configuration: .init(maxIterations: 5)) { benchmark in
            var payload = [UInt8](repeating: 0, count: tileBytes)
            for i in payload.indices { payload[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) }
            for _ in benchmark.scaledIterations {
                let path = "/tmp/tilepack-benchmark-writer-\(getpid()).mbtiles"
                let writer = try MBTilesWriter(path: path, metadata: MBTilesMetadata(name: "bench", format: "png"))
                for i in 0..<10_000 {
                    payload[0] = UInt8(truncatingIfNeeded: i); payload[1] = UInt8(truncatingIfNeeded: i >> 8)
                    try writer.write(payload, for: TileID(z: 14, x: 8000 + i % 100, y: 5000 + i / 100)!)
                }
                try writer.finish()
                let reader = try MBTilesReader(path: path)
                for i in 0..<10_000 { blackHole(try reader.tile(TileID(z: 14, x: 8000 + i % 100, y: 5000 + i / 100)!)) }
                unlink(path)
            }
        }
    }

    Benchmark("build sample DEM to PVRTC4 fast, zooms 9–12", configuration: .init(maxIterations: 5)) { benchmark in
        for _ in benchmark.scaledIterations {
            var request = RegionBuild.Request(sourcePath: sampleRegions + "/montblanc-dem.tif")
            request.outputPath = "/tmp/tilepack-benchmark-\(getpid()).mbtiles"
            request.codecLevel = .fast
            blackHole(try RegionBuild(request).run().report.tilesWritten)
        }
    }

    storeBenchmarks()  // TileStoreBenchmarks.swift
    sqliteFloorBenchmarks()
    regionAccessBenchmarks()  // RegionAccessBenchmarks.swift
}
