// `tilepack-bench policy-table`: the table in BENCHMARKS.md "Tile store: eviction policy vs
// Belady": every eviction policy and Belady's optimum replaying the three viewer traces (pan,
// zoom, random walk; 2,000 frames, seed 7) over the Chamonix region at z10–15, with budgets of
// 16, 64 and 256 tiles. Deterministic: the same table on every machine. (Before, a test that
// ran only with TILEPACK_POLICY_TABLE set; StorePolicyTests still checks the Must-show row.)
import TilePack

func runPolicyTable(_ args: [String]) {
    guard args.isEmpty else { fail("usage: tilepack-bench policy-table") }
    let chamonix = GeoBounds(west: 6.7264, south: 45.7448, east: 7.0336, north: 45.9752)
    guard let extent = TileExtent(bounds: chamonix, zooms: 10...15) else { fail("the Chamonix extent is not in the pyramid") }
    let traces = AccessTrace.Kind.allCases.map { AccessTrace.make($0, over: extent, frames: 2000, seed: 7) }
    let contenders: [CacheSimulation.Contender] = EvictionPolicyKind.allCases.map { .policy($0) } + [.belady]
    let rows = CacheSimulation.compare(traces: traces, budgets: [16, 64, 256], contenders: contenders)
    print(CacheSimulation.table(rows))
    if let beaten = rows.first(where: { $0.ofBelady > 1 }) {
        fail("\(beaten.policy) beats Belady on \(beaten.trace) at \(beaten.budgetTiles) tiles: the simulation is wrong")
    }
}
