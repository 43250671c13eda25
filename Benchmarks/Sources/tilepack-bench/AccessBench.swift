// `tilepack-bench access [options]`: the region store's access check for issue 10's
// Must-show 3 ("an access check under 2 µs per tile on the hit path, so the tile store can
// ask on every tile").
//
//   --catalog FILE   the catalog (default: the repository's SampleRegions/catalog.json)
//   --product ID     the one entitled product (default: the catalog's first region)
//   --calls N        calls per timed run (default 1,000,000)
//   --runs R         runs per figure; the median is reported (default 7)
//
// The policy is RegionAccessPolicy over the catalog with FixedEntitlements granting the one
// product. The working set is every z12–z15 tile over the product's bounds (~1000 for the
// sample Chamonix region), allowed and denied alike.
//
// Figures (one line each, then one JSON line):
// - hit: access(tile) cycling over the warmed working set (every answer cached); ns/call =
//   run time / N; also split into allowed-only and denied-only sets, a per-call median, and
//   2 threads on the same policy, and the same hit path with LedgerEntitlements (a real
//   ledger holding one App Store transaction from the test App Store) as the source.
// - miss: a fresh policy per run (its entitled areas derived by one untimed call), then one
//   access() per never-seen tile: every z16 and z17 tile over the bounds; ns/call.
// - free tier: access() below free_max_zoom (no lock, no cache).
// - store: TileStore.tile(id) on cached tiles cycling over the working set (tiny payloads in a
//   scratch MBTiles), with OpenAccess and with the policy: the difference is the policy's cost
//   inside a store hit (denied tiles are left out: the store throws for them).
import TilePack
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

func runAccessBench(_ args: [String]) {
    func option(_ name: String, _ fallback: Int) -> Int {
        guard let i = args.firstIndex(of: name), i + 1 < args.count, let n = Int(args[i + 1]), n > 0 else { return fallback }
        return n
    }
    func text(_ name: String) -> String? {
        args.firstIndex(of: name).flatMap { $0 + 1 < args.count ? args[$0 + 1] : nil }
    }
    let calls = option("--calls", 1_000_000)
    let runs = option("--runs", 7)
    let catalogPath = text("--catalog") ?? {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        parts.removeLast(4)  // Benchmarks/Sources/tilepack-bench/AccessBench.swift
        return parts.joined(separator: "/") + "/SampleRegions/catalog.json"
    }()

    do {
        // Decoded without a library directory: every product counts as available. Loaded from
        // its file, the sample catalog sits beside no built archives, its products would be
        // unavailable, and an unavailable product opens nothing (not even when entitled).
        guard let bytes = readWholeFile(catalogPath) else { fail("\(catalogPath): cannot read") }
        let catalog = try Catalog(json: bytes, path: catalogPath, libraryDirectory: nil)
        guard let productID = text("--product") ?? catalog.products.first(where: { $0.kind == .region })?.id else {
            fail("\(catalogPath): no region to entitle")
        }
        guard let bounds = catalog.bounds(of: productID) else { fail("\(catalogPath): no product \(productID) with an area") }
        let entitlements = FixedEntitlements([productID])
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: entitlements)

        func tiles(_ zooms: ClosedRange<Int>) -> [TileID] {
            var out: [TileID] = []
            for z in zooms {
                guard let nw = WebMercator.tile(lon: bounds.west, lat: bounds.north, zoom: z)?.tile,
                      let se = WebMercator.tile(lon: bounds.east, lat: bounds.south, zoom: z)?.tile else { continue }
                for y in nw.y...se.y { for x in nw.x...se.x { out.append(TileID(z: z, x: x, y: y)!) } }
            }
            return out
        }
        let working = tiles(12...15)
        for t in working { _ = policy.access(t) }  // warm: every answer cached
        let allowed = working.filter { policy.access($0).isAllowed }
        let denied = working.filter { !policy.access($0).isAllowed }
        guard !allowed.isEmpty, !denied.isEmpty else { fail("the working set needs allowed and denied tiles") }
        let fresh = tiles(16...17)

        var json: [(String, String)] = []
        func report(_ key: String, _ value: Double, _ line: String) {
            print(line)
            json.append((key, value.isFinite ? String(value) : "null"))
        }
        print("catalog: \(catalogPath), free_max_zoom \(catalog.freeMaxZoom), entitled: \(productID)")
        print("working set: \(working.count) tiles z12–15 over \(bounds) (\(allowed.count) allowed, \(denied.count) denied, \(policy.cachedTileCount) cached); miss set: \(fresh.count) tiles z16–17")
        print("runs: \(runs) per figure of \(calls) calls (median; min–max in brackets)")
        json.append(("working_tiles", String(working.count)))
        json.append(("allowed_tiles", String(allowed.count)))
        json.append(("miss_tiles", String(fresh.count)))

        var sink = 0
        @Sendable func cycle(_ set: [TileID], _ n: Int, _ p: RegionAccessPolicy) -> Int {
            var s = 0, i = 0
            for _ in 0..<n {
                if p.access(set[i]).isAllowed { s &+= 1 }
                i = i + 1 == set.count ? 0 : i + 1
            }
            return s
        }

        // Hit path.
        let hit = Stat((0..<runs).map { _ in nanosPerOp(calls) { sink &+= cycle(working, calls, policy) } })
        report("hit_ns", hit.median, "hit path, access() cycling over the \(working.count) cached tiles, 1 thread: \(hit.nsText) ns/call  (target < 2000 ns)")
        let hitAllowed = Stat((0..<runs).map { _ in nanosPerOp(calls) { sink &+= cycle(allowed, calls, policy) } })
        report("hit_allowed_ns", hitAllowed.median, "hit path, allowed tiles only: \(hitAllowed.nsText) ns/call")
        let hitDenied = Stat((0..<runs).map { _ in nanosPerOp(calls) { sink &+= cycle(denied, calls, policy) } })
        report("hit_denied_ns", hitDenied.median, "hit path, denied tiles only (answer carries the offers): \(hitDenied.nsText) ns/call")
        var k = 0
        let perCall = perCallMedian(100_000) {
            if policy.access(working[k]).isAllowed { sink &+= 1 }
            k = k + 1 == working.count ? 0 : k + 1
        }
        report("hit_per_call_median_ns", perCall,
               "hit path, per-call median of 100,000 individually timed calls (clock pair subtracted): \(fmt(perCall)) ns")
        let hit2 = Stat((0..<runs).map { _ in
            nanosPerOp(calls) { try? concurrent(2) { _ = cycle(working, calls / 2, policy) } }
        })
        report("hit_2_threads_ns", hit2.median, "hit path, 2 threads on one policy: \(hit2.nsText) ns/call (wall time / all calls)")

        // The same hit path with the source an app uses: the ledger's verified entitlements
        // (LedgerEntitlements: a clock read and a lock per generation check), in a scratch
        // test App Store and ledger holding one App Store transaction of the product, verified
        // against trust anchors that pin the store's root (as an app pins Apple's).
        let scratchDir = "/tmp/tilepack-bench-access-\(getpid())"
        defer { _ = system("rm -rf '\(scratchDir)'") }
        let appStore = try TestAppStore(directory: scratchDir + "/store")
        let anchors = TrustAnchors(appStoreRoots: [appStore.ca.rootCertificateDER], bundleID: "com.tilepack.bench",
                                   environments: [.sandbox])
        let ledger = try EntitlementLedger(path: scratchDir + "/ledger.sqlite", verifier: AppStoreVerifier(anchors: anchors))
        let purchase = try appStore.purchase(PurchaseRequest(productID: productID, type: .nonConsumable,
                                                             bundleID: anchors.bundleID, account: ledger.account))
        try ledger.import(signed: [purchase.jws])
        let ledgerPolicy = RegionAccessPolicy(catalog: catalog, entitlements: try LedgerEntitlements(ledger: ledger))
        for t in working { guard ledgerPolicy.access(t) == policy.access(t) else { fail("ledger and fixed policies disagree on \(t)") } }
        let hitLedger = Stat((0..<runs).map { _ in nanosPerOp(calls) { sink &+= cycle(working, calls, ledgerPolicy) } })
        report("hit_ledger_ns", hitLedger.median, "hit path, entitlements from the ledger (LedgerEntitlements): \(hitLedger.nsText) ns/call")

        // Free tier.
        let free = (0...catalog.freeMaxZoom).map { WebMercator.tile(lon: bounds.west, lat: bounds.north, zoom: $0)!.tile }
        let freeStat = Stat((0..<runs).map { _ in nanosPerOp(calls) { sink &+= cycle(free, calls, policy) } })
        report("free_ns", freeStat.median, "free tier (z ≤ \(catalog.freeMaxZoom)): \(freeStat.nsText) ns/call")

        // Miss path: fresh tiles on a fresh policy each run.
        let missRuns = (0..<runs).map { _ -> Double in
            let p = RegionAccessPolicy(catalog: catalog, entitlements: entitlements)
            _ = p.access(working[0])  // derives the entitled areas
            return nanosPerOp(fresh.count) { for t in fresh { if p.access(t).isAllowed { sink &+= 1 } } }
        }
        let miss = Stat(missRuns)
        report("miss_ns", miss.median, "miss path, access() on \(fresh.count) never-seen z16–17 tiles (polygon test, offers, cache insert): \(miss.nsText) ns/call")

        // Inside the tile store: a hit with OpenAccess vs with the policy.
        let scratch = "/tmp/tilepack-bench-access-\(getpid()).mbtiles"
        defer { unlink(scratch) }
        let writer = try MBTilesWriter(path: scratch, metadata: MBTilesMetadata(name: "access bench", format: "png"))
        for (i, t) in allowed.enumerated() { try writer.write([UInt8(truncatingIfNeeded: i), UInt8(truncatingIfNeeded: i >> 8), 7], for: t) }
        try writer.finish()
        let budget = try MemoryBudget(bytes: 256 << 20)
        func store(_ p: any AccessPolicy) throws -> TileStore {
            var options = TileStoreOptions()
            options.accessPolicy = p
            let s = try TileStore(archives: [MBTilesReader(path: scratch)], budget: budget, options: options)
            for t in allowed { guard try s.tile(t) != nil else { fail("tile \(t) missing from the scratch archive") } }
            return s
        }
        let openStore = try store(OpenAccess()), policyStore = try store(policy)
        func storeCycle(_ s: TileStore, _ n: Int) throws -> Int {
            var total = 0, i = 0
            for _ in 0..<n {
                if let lease = try s.tile(allowed[i]) { total &+= lease.count }
                i = i + 1 == allowed.count ? 0 : i + 1
            }
            return total
        }
        // Interleaved runs, so a drift of the shared machine hits both alike.
        var openTimes: [Double] = [], policyTimes: [Double] = []
        for _ in 0..<runs {
            openTimes.append(try nanosPerOp(calls) { sink &+= try storeCycle(openStore, calls) })
            policyTimes.append(try nanosPerOp(calls) { sink &+= try storeCycle(policyStore, calls) })
        }
        let openHit = Stat(openTimes), policyHit = Stat(policyTimes)
        report("store_hit_open_ns", openHit.median, "TileStore.tile() hit over \(allowed.count) allowed tiles, OpenAccess: \(openHit.nsText) ns/op")
        report("store_hit_policy_ns", policyHit.median, "TileStore.tile() hit, RegionAccessPolicy: \(policyHit.nsText) ns/op")
        report("store_policy_cost_ns", policyHit.median - openHit.median,
               "the policy's cost inside a store hit (median difference): \(fmt(policyHit.median - openHit.median)) ns")

        json.append(("check", String(sink & 0xFFFF)))
        print("{" + json.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ") + "}")
    } catch {
        fail("\(error)")
    }
}

/// The bytes of the file at `path`, or nil when it cannot be read.
private func readWholeFile(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 << 10)
    while true {
        let n = fread(&chunk, 1, chunk.count, file)
        if n == 0 { return ferror(file) == 0 ? bytes : nil }
        bytes.append(contentsOf: chunk[..<n])
    }
}
