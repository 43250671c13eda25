// The region store's access check under the malloc interposer (issue 10, Must-show 3): the
// hit path the tile store takes on every tile once an answer is cached. One iteration is one
// access() call cycling over ~1000 warmed z12–z15 tiles over the sample Chamonix region
// (allowed and denied), so `mallocCountTotal` reads as mallocs per check. The timing with
// the miss path and the cost inside a store hit is `tilepack-bench access`.
import Benchmark
import TilePack

/// The sample catalog's policy with the Chamonix region entitled, and its warmed tiles.
let regionAccessFixture: (policy: RegionAccessPolicy, tiles: [TileID]) = {
    do {
        let catalog = try Catalog(contentsOf: sampleRegions + "/catalog.json")
        let id = "com.tilepack.samples.montblanc.chamonix"
        guard let b = catalog.bounds(of: id) else { fatalError("the sample catalog has no \(id)") }
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements([id]))
        var tiles: [TileID] = []
        for z in 12...15 {
            let nw = WebMercator.tile(lon: b.west, lat: b.north, zoom: z)!.tile, se = WebMercator.tile(lon: b.east, lat: b.south, zoom: z)!.tile
            for y in nw.y...se.y { for x in nw.x...se.x { tiles.append(TileID(z: z, x: x, y: y)!) } }
        }
        for t in tiles { _ = policy.access(t) }
        return (policy, tiles)
    } catch {
        fatalError("region access benchmark: \(error)")
    }
}()

let regionAccessBenchmarks: @Sendable () -> Void = {
    Benchmark("RegionAccessPolicy hit",
              configuration: .init(metrics: [.wallClock, .mallocCountTotal, .throughput], scalingFactor: .kilo,
                                   maxDuration: .seconds(3), maxIterations: 10_000)) { benchmark in
        let (policy, tiles) = regionAccessFixture
        var i = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            blackHole(policy.access(tiles[i]).isAllowed)
            i = i + 1 == tiles.count ? 0 : i + 1
        }
    }
}
