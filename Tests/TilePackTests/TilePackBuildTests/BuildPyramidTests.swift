import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
import TilePackTestSupport

@Suite struct BuildPyramidTests {
    @Test func parentIsAlphaWeightedAverageOfChildren() {
        var rng = SystemRandomNumberGenerator()
        let size = 256
        var kids: [[UInt8]?] = (0..<4).map { _ in
            (0..<(size * size * 4)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
        kids[2] = nil  // missing child → transparent quadrant
        // Opaque pixels (the plain-mean path): all of the first child, the top half of the second.
        for p in 0..<(size * size) { kids[0]?[4 * p + 3] = 255 }
        for p in 0..<(size * size / 2) { kids[1]?[4 * p + 3] = 255 }
        let parent = Pyramid.downsampleRGBA(kids, size: size)
        for py in 0..<size {
            for px in 0..<size {
                let q = (py / 128) * 2 + px / 128
                let o = (py * size + px) * 4
                guard let child = kids[q] else {
                    #expect(parent[o + 3] == 0 && parent[o] == 0); continue
                }
                let cx = (px % 128) * 2, cy = (py % 128) * 2
                var sa = 0, sc = [0, 0, 0]
                for (dx, dy) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                    let p = ((cy + dy) * size + cx + dx) * 4
                    let a = Int(child[p + 3]); sa += a
                    for ch in 0..<3 { sc[ch] += Int(child[p + ch]) * a }
                }
                #expect(Int(parent[o + 3]) == (sa + 2) / 4)
                if sa > 0 { for ch in 0..<3 { #expect(Int(parent[o + ch]) == (sc[ch] + sa / 2) / sa) } }
            }
        }
    }

    @Test func elevationParentAveragesValidSamples() {
        let size = 256
        var child = [Float](repeating: 10, count: size * size)
        child[0] = .nan; child[1] = 20; child[size] = .nan; child[size + 1] = .nan
        child[2] = .nan; child[3] = .nan; child[size + 2] = .nan; child[size + 3] = .nan
        let parent = Pyramid.downsampleElevation([child, nil, nil, child], size: size)
        #expect(parent[0] == 20)
        #expect(parent[1].isNaN)
        #expect(parent[2] == 10)
        #expect(parent[size / 2].isNaN)  // missing top-right child
        #expect(parent[(size / 2) * size + size / 2] == 20)
    }

    /// A source covering part of one zoom-12 tile, built over zooms 10–12.
    func partialBuild(keepEmpty: Bool) throws -> (MemorySink, BuildReport, TilePlan) {
        // Nodata (all bands 0) west of column 250: tiles there are planned but empty.
        let source = FunctionSource(width: 300, height: 200, bands: 3, sampleType: .uint8, nodata: 0) { c, r, b in
            c < 250 ? 0 : Float((c + r + b * 50) % 256)
        }
        // West edge at a tile's middle so neighbouring planned tiles are partly empty.
        let georef = PlateCarree(west: 9.2, north: 46.31, dx: 0.0002, dy: 0.0002, width: 300, height: 200)
        var options = BuildOptions()
        options.minZoom = 10; options.maxZoom = 13; options.keepEmpty = keepEmpty
        let builder = TileBuilder(source: source, georeference: georef, options: options, codec: RawCodec())
        let sink = MemorySink()
        let report = try builder.run(sink: sink)
        return (sink, report, try builder.plan())
    }

    @Test func emptyTilesSkippedOrKept() throws {
        let (sink, report, plan) = try partialBuild(keepEmpty: false)
        #expect(report.tilesWritten + report.emptySkipped == plan.tileCount)
        #expect(report.tilesWritten > 0 && report.emptySkipped > 0)
        #expect(Set(sink.writes.map(\.0)).count == sink.writes.count)
        for (_, rgba) in sink.writes { #expect(!Pyramid.isTransparent(rgba)) }
        let (kept, keptReport, _) = try partialBuild(keepEmpty: true)
        #expect(keptReport.tilesWritten == plan.tileCount && keptReport.emptySkipped == 0)
        #expect(Set(kept.writes.map(\.0)) == Set(plan.ranges.flatMap(\.tiles)))
        // Parents written by the pipeline equal the pyramid of their written children.
        let tiles = sink.tiles
        for (tile, rgba) in sink.writes where tile.z < plan.maxZoom {
            #expect(rgba == Pyramid.downsampleRGBA(tile.children.map { tiles[$0] }, size: 256), "\(tile)")
        }
    }
}
