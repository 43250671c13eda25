// The region store's access check under the malloc interposer (issue 10, Must-show 3): the
// hit path the tile store takes on every tile once an answer is cached. One iteration is one
// access() call cycling over ~1000 warmed z12–z15 tiles over the sample Chamonix region
// (allowed and denied), so `mallocCountTotal` reads as mallocs per check. The timing with
// the miss path and the cost inside a store hit is `tilepack-bench access`.
import Benchmark
import TilePack
#if canImport(Glibc)
import Glibc
import Foundation
#endif

/// The sample catalog's policy with the Chamonix region entitled, and its warmed tiles.
let regionAccessFixture: (policy: RegionAccessPolicy, tiles: [TileID]) = {
    do {
        let catalog = try sampleCatalog()
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

/// Issue 23: the questions the tile store asks, per (tile, archive) with the archive's tile
/// size, warmed — z11–15 over the Chamonix region's box in both sample archives, so the
/// cycle holds allowed, partial (an owned edge crosses the tile: the answer carries its
/// mask) and denied answers — with the Chamonix region entitled by `source`.
func perArchiveFixture(_ source: any EntitlementSource) -> (policy: RegionAccessPolicy, questions: [(TileID, String)], partial: Int) {
    do {
        let catalog = try sampleCatalog()
        let id = "com.tilepack.samples.montblanc.chamonix"
        guard let b = catalog.bounds(of: id) else { fatalError("the sample catalog has no \(id)") }
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: source)
        var questions: [(TileID, String)] = []
        for z in 11...15 {
            let nw = WebMercator.tile(lon: b.west, lat: b.north, zoom: z)!.tile, se = WebMercator.tile(lon: b.east, lat: b.south, zoom: z)!.tile
            for y in nw.y...se.y {
                for x in nw.x...se.x {
                    for archive in ["montblanc-dem.mbtiles", "montblanc-color.mbtiles"] { questions.append((TileID(z: z, x: x, y: y)!, archive)) }
                }
            }
        }
        var partial = 0
        for (t, a) in questions where policy.access(t, archive: a, tileSize: 256).mask != nil { partial += 1 }
        return (policy, questions, partial)
    } catch {
        fatalError("region access benchmark: \(error)")
    }
}

let perArchiveFixed = perArchiveFixture(FixedEntitlements(["com.tilepack.samples.montblanc.chamonix"]))

/// The same with the source an app uses: the ledger's verified entitlements
/// (`LedgerEntitlements`: a coarse monotonic clock read and a lock per generation check, and
/// `PRAGMA data_version` every 5 ms), over a scratch test App Store and a ledger holding one App
/// Store transaction of the Chamonix region, verified against trust anchors pinning the
/// store's root (as an app pins Apple's). The scratch files stay for the process: the
/// generation check keeps reading the ledger.
let perArchiveLedger: (policy: RegionAccessPolicy, questions: [(TileID, String)], partial: Int) = {
    do {
        let dir = "/tmp/tilepack-benchmark-access-\(getpid())"
        let store = try TestAppStore(directory: dir + "/store")
        let anchors = TrustAnchors(appStoreRoots: [store.ca.rootCertificateDER], bundleID: "com.tilepack.bench",
                                   environments: [.sandbox])
        let ledger = try EntitlementLedger(path: dir + "/ledger.sqlite", verifier: AppStoreVerifier(anchors: anchors))
        let purchase = try store.purchase(PurchaseRequest(productID: "com.tilepack.samples.montblanc.chamonix", type: .nonConsumable,
                                                          bundleID: anchors.bundleID, account: ledger.account))
        try ledger.import(signed: [purchase.jws])
        return perArchiveFixture(try LedgerEntitlements(ledger: ledger))
    } catch {
        fatalError("region access benchmark (ledger): \(error)")
    }
}()

let regionAccessBenchmarks: @Sendable () -> Void = {
    // Issue 23's hit path: one access(tile, archive:, tileSize:) per iteration, cycling over
    // the warmed questions (generation read, one lock, one hash of tile, archive name and size).
    for (name, fixture) in [("FixedEntitlements", { perArchiveFixed }), ("LedgerEntitlements", { perArchiveLedger })] {
        Benchmark("RegionAccessPolicy hit per archive and pixel, \(name)",
                  configuration: .init(metrics: [.wallClock, .mallocCountTotal, .throughput], scalingFactor: .kilo,
                                       maxDuration: .seconds(3), maxIterations: 10_000)) { benchmark in
            let (policy, questions, partial) = fixture()
            precondition(partial > 0, "the cycle holds no partial tile")
            var i = 0
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                let (t, a) = questions[i]
                blackHole(policy.access(t, archive: a, tileSize: 256).isAllowed)
                i = i + 1 == questions.count ? 0 : i + 1
            }
        }
    }

    // The miss path's extra work for a tile an owned edge crosses: the scanline fill of the
    // Chamonix polygon's pixel centres into a 256² mask (z13, on the crest).
    Benchmark("RegionPolygon pixel mask of an edge tile",
              configuration: .init(metrics: [.wallClock, .mallocCountTotal, .throughput],
                                   maxDuration: .seconds(3), maxIterations: 10_000)) { benchmark in
        guard let catalog = try? sampleCatalog(),
              let area = catalog.product(id: "com.tilepack.samples.montblanc.chamonix")?.area,
              let tile = WebMercator.tile(lon: 6.93, lat: 45.87, zoom: 13)?.tile, area.cover(tile) == .edge else {
            fatalError("the crest tile is not on Chamonix's edge")
        }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var mask = TileMask.Builder(side: 256)
            area.ownPixels(of: tile, in: &mask)
            blackHole(mask.build().ownedCount)
        }
    }

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

/// The sample catalog decoded without a library directory: its archives are not built here,
/// and in a library a product whose archive is missing is unavailable and opens nothing.
func sampleCatalog() throws -> Catalog {
    let path = sampleRegions + "/catalog.json"
    guard let data = FileManager.default.contents(atPath: path) else { fatalError("cannot read \(path)") }
    return try Catalog(json: [UInt8](data), path: path, libraryDirectory: nil)
}
