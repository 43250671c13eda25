import Testing
import Synchronization
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
import TilePackTestSupport

@Suite(.tags(.concurrent)) struct BuildPipelineTests {
    func gridSource() -> (FunctionSource, PlateCarree) {
        zoom10BlockSource { c, r, b in Float((c * 3 + r * 5 + b * 70) % 256) }
    }

    func build(
        workers: Int, blockLevels: Int = 3, sink: MemorySink = MemorySink(),
        source: FunctionSource? = nil
    ) throws -> (MemorySink, BuildReport) {
        let (src, geo) = gridSource()
        var options = BuildOptions()
        options.maxZoom = 10; options.workers = workers; options.blockLevels = blockLevels
        var done = [Int]()
        var zooms = Set<Int>()
        let report = try TileBuilder(source: source ?? src, georeference: geo, options: options, codec: RawCodec())
            .run(sink: sink) { p in
                done.append(p.done); zooms.insert(p.zoom)
            }
        #expect(done == Array(1...done.count))
        #expect(zooms == Set(report.metadata.minZoom...report.metadata.maxZoom), "progress names every zoom built")
        return (sink, report)
    }

    @Test func deterministicAndEveryTileWrittenOnce() throws {
        let (a, ra) = try build(workers: 2)
        let (b, _) = try build(workers: 2)
        let (c, _) = try build(workers: 1)
        #expect(a.writes.map(\.0) == b.writes.map(\.0) && a.writes.map(\.1) == b.writes.map(\.1))
        #expect(a.writes.map(\.0) == c.writes.map(\.0) && a.writes.map(\.1) == c.writes.map(\.1))
        let plan = try TilePlan(bounds: gridSource().1.lonLatBounds, nativeResolutionMetres: 1, maxZoom: 10)
        #expect(ra.metadata.minZoom == plan.minZoom && plan.range(atZoom: 10)!.count == 64)
        // The source covers every planned tile, so every planned tile is written exactly once.
        #expect(a.writes.map(\.0).sorted() == plan.ranges.flatMap(\.tiles).sorted())
        #expect(ra.tilesWritten == plan.tileCount && ra.emptySkipped == 0 && ra.perZoom[10] == 64)
    }

    @Test func memoryIsBoundedByTheBlockNotTheSource() throws {
        let (src, geo) = gridSource()
        let (_, report) = try build(workers: 2, blockLevels: 1, source: src)
        // Block of 4 max-zoom tiles + 1 parent, the previous block's root still being made
        // beside it, plus ≤ 4 waiting siblings per zoom above it and the parent being made
        // (BuildMemoryPlan's blockBytes and pendingBytes).
        let levelsAbove = 9 - report.metadata.minZoom
        let bound = 4 + 1 + 1 + 4 * levelsAbove + 4
        #expect(report.peakLiveTileBuffers <= bound)
        #expect(bound < 64)
        #expect(report.peakLiveTileBuffers >= 4)
        // Every source read is one tile's window: its footprint plus at most 2 pixels a side.
        let tallest = (360...367).map { y -> Double in
            let b = WebMercator.bounds(of: TileID(z: 10, x: 512, y: y)!)
            return (b.north - b.south) / geo.dy
        }.max()!
        #expect(src.log.all.allSatisfy { Double($0.w) <= 80 + 4 && Double($0.h) <= tallest.rounded(.up) + 4 })
        #expect(src.log.all.count == 64)
    }

    @Test func errorsStopTheBuild() throws {
        let sink = MemorySink()
        sink.failAfter = 10
        #expect(throws: MemorySink.Failure()) { try build(workers: 2, sink: sink) }
        #expect(sink.writes.count == 10)
        var failing = gridSource().0
        failing.failReads = true
        #expect(throws: TestSourceError()) { try build(workers: 2, source: failing) }
    }

    /// A job failing anywhere (a max-zoom tile, a block's upper level, a parent above the block
    /// zoom made beside the next block) stops the workers and its error is rethrown, no hang;
    /// no more tiles are written than encodes succeeded.
    @Test(arguments: [1, 30, 70, 80, 85])
    func aFailingEncodeStopsTheBuild(failAt: Int) throws {
        let (src, geo) = gridSource()
        var options = BuildOptions()
        options.maxZoom = 10; options.workers = 2; options.blockLevels = 1  // 16 blocks, 85 tiles or more
        let sink = MemorySink()
        let codec = FailingCodec(failAt: failAt)
        #expect(throws: FailingCodec.Failure()) {
            try TileBuilder(source: src, georeference: geo, options: options, codec: codec).run(sink: sink)
        }
        #expect(sink.writes.count <= failAt)
    }
}

/// Raw RGBA, except that its `failAt`-th encode (counted over all threads) throws.
private struct FailingCodec: TileCodec {
    struct Failure: Error, Equatable {}
    final class Count: Sendable { let value = Atomic<Int>(0) }
    let failAt: Int
    let count = Count()
    var name: String { "failing" }
    func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        if count.value.add(1, ordering: .relaxed).newValue == failAt { throw Failure() }
        return rgba
    }
    func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] { data }
}
