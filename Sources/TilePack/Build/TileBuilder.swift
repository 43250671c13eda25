import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
import Dispatch
import Synchronization

/// Builds every tile of a source's ``TilePlan``: resamples max-zoom tiles, colours them,
/// averages parents from children, encodes in worker threads and hands tiles to a
/// ``TileSink`` on the calling thread.
///
/// Streaming: the pyramid is walked depth-first from the min-zoom tiles. Below the *block
/// zoom* (`maxZoom − blockLevels`, at least `minZoom`) a block is one tile there and its
/// descendants: its max-zoom tiles are made in parallel, written, then turned into the next
/// level up and freed, level by level, so at most 4^k + 4^(k−1) tiles of a block plus three
/// waiting siblings per zoom above it are alive — independent of the source size. `k` and
/// the worker count come from ``BuildMemoryPlan`` (the options' values, lowered to fit
/// ``BuildOptions/memoryBudget``); any `k` gives the same tiles.
/// Parallel: each phase splits its tiles over `workers` threads that pull the next tile
/// from a shared counter and reuse one ``ResampleWorkspace`` each.
/// Deterministic: tiles are written in a fixed order (block by block, zoom by zoom, row by
/// row), whatever the thread timing.
///
/// ```swift
/// let report = try TileBuilder(source: src, georeference: geo, options: BuildOptions(), codec: codec)
///     .run(sink: writer) { p in print(p.done, p.total, p.zoom) }
/// ```
public struct TileBuilder: Sendable {
    /// Where a build is: planned tiles written or skipped so far, of all planned tiles, and
    /// the zoom of the tile just finished (the block's max zoom while a block's tiles are
    /// being made, then each zoom up).
    public struct Progress: Sendable, Equatable {
        public var done: Int
        public var total: Int
        public var zoom: Int

        public init(done: Int, total: Int, zoom: Int) {
            self.done = done
            self.total = total
            self.zoom = zoom
        }
    }

    public let source: any RasterSource
    public let georeference: any SourceGeoreference
    public let options: BuildOptions
    public let codec: any TileCodec

    public init(source: any RasterSource, georeference: any SourceGeoreference, options: BuildOptions, codec: any TileCodec) {
        self.source = source
        self.georeference = georeference
        self.options = options
        self.codec = codec
    }

    /// The plan this builder would run (validates bounds and zoom options).
    public func plan() throws -> TilePlan {
        try options.validate()
        return try TilePlan(bounds: georeference.lonLatBounds, nativeResolutionMetres: georeference.groundResolutionMetres,
                            minZoom: options.minZoom, maxZoom: options.maxZoom, maxTiles: options.maxTiles)
    }

    /// Runs the build. `progress` is called on this thread after each planned tile is written
    /// or skipped. The first error (source, codec or sink) stops the build
    /// and is rethrown; tiles already handed to the sink stay there.
    @discardableResult
    public func run(sink: some TileSink, progress: ((Progress) -> Void)? = nil) throws -> BuildReport {
        let clock = ContinuousClock()
        let start = clock.now
        let plan = try plan()
        let colorizer = try Colorizer(source: source, mode: options.colorMode, elevationRange: options.elevationRange)
        let memory = try memoryPlan(plan, elevation: colorizer.mode == .elevation)
        let run = BuildRun(builder: self, plan: plan, memory: memory, colorizer: colorizer, sink: sink, progress: progress)
        for root in plan.ranges[0].tiles { _ = try run.produce(root) }
        let elapsed = clock.now - start
        run.report.seconds = elapsed.inSeconds
        run.report.peakLiveTileBuffers = run.counter.peak
        run.report.memory = memory
        return run.report
    }

    /// How ``BuildOptions/memoryBudget`` is shared for `plan`: the workers and block levels
    /// the run uses (at most the options').
    /// - Throws: ``BuildError/invalidOption(_:)`` for a budget below the smallest build.
    public func memoryPlan(_ plan: TilePlan, elevation: Bool) throws -> BuildMemoryPlan {
        try BuildMemoryPlan(budget: options.memoryBudget, workers: options.workers, blockLevels: options.blockLevels,
                            elevation: elevation, levelsAboveBlock: plan.maxZoom - plan.minZoom,
                            sourceCacheBytes: options.sourceCacheBytes)
    }
}

/// One tile's outcome from a worker: the buffer its parent needs (nil when empty) and what
/// to write (nil when skipped).
private struct TileResult: Sendable {
    var buffer: TileBuffer?
    var encoded: [UInt8]?
    var metres: [Float]?
}

/// What the workers share: immutable and Sendable. One per run.
private struct TileWorker: Sendable {
    let resampler: Resampler
    let colorizer: Colorizer
    let codec: any TileCodec
    let counter: LiveTileCounter
    let keepEmpty: Bool
    let size = WebMercator.tileSize

    /// Resample, colour and encode one max-zoom tile.
    func maxZoomTile(_ tile: TileID, _ ws: ResampleWorkspace) throws -> TileResult {
        let grid = PixelGrid.tile(tile, border: colorizer.border)
        let any = try resampler.resample(grid, tile: tile, into: ws)
        var rgba = [UInt8](repeating: 0, count: size * size * 4)
        var metres: [Float]? = nil
        if any {
            metres = colorizer.colorize(values: ws.values, valid: ws.valid, grid: grid, into: &rgba)
        }
        return try finish(rgba, metres)
    }

    /// Average a parent from its children (nil = missing/empty) and encode it.
    func parent(_ tile: TileID, _ kids: [TileBuffer?]) throws -> TileResult {
        if kids.allSatisfy({ $0 == nil }) { return try finish(nil, nil) }
        let rgba = Pyramid.downsampleRGBA(kids.map { $0?.rgba }, size: size)
        let metres = colorizer.mode == .elevation ? Pyramid.downsampleElevation(kids.map { $0?.metres }, size: size) : nil
        return try finish(rgba, metres)
    }

    /// Keep non-empty tiles for the parent and encode what will be written.
    func finish(_ rgba: [UInt8]?, _ metres: [Float]?) throws -> TileResult {
        let empty = rgba.map(Pyramid.isTransparent) ?? true
        let elevation = colorizer.mode == .elevation
        if !empty, let rgba {
            let encoded = try codec.encode(rgba: rgba, width: size, height: size)
            return TileResult(buffer: TileBuffer(rgba: rgba, metres: metres, counter: counter), encoded: encoded,
                              metres: elevation ? metres : nil)
        }
        guard keepEmpty else { return TileResult() }
        let blank = [UInt8](repeating: 0, count: size * size * 4)
        return TileResult(buffer: nil, encoded: try codec.encode(rgba: blank, width: size, height: size),
                          metres: elevation ? [Float](repeating: .nan, count: size * size) : nil)
    }

}

/// Mutable state of one run; lives on the calling thread. Workers touch only its immutable
/// parts and their own workspace.
private final class BuildRun<Sink: TileSink> {
    let plan: TilePlan
    let worker: TileWorker
    let blockZoom: Int
    let workspaces: [ResampleWorkspace]
    let counter: LiveTileCounter
    let sink: Sink
    let progress: ((TileBuilder.Progress) -> Void)?
    let total: Int
    var done = 0
    var report: BuildReport
    let size = WebMercator.tileSize

    init(builder: TileBuilder, plan: TilePlan, memory: BuildMemoryPlan, colorizer: Colorizer, sink: Sink,
         progress: ((TileBuilder.Progress) -> Void)?) {
        self.plan = plan
        let counter = LiveTileCounter()
        self.counter = counter
        let resampler = Resampler(source: builder.source,
                                  mapper: CoordinateMapper(georeference: builder.georeference, maxError: builder.options.approximationError),
                                  method: colorizer.forcesNearest ? .nearest : builder.options.resampling)
        worker = TileWorker(resampler: resampler, colorizer: colorizer, codec: builder.codec, counter: counter,
                            keepEmpty: builder.options.keepEmpty)
        blockZoom = max(plan.minZoom, plan.maxZoom - memory.blockLevels)
        workspaces = (0..<memory.workers).map { _ in ResampleWorkspace() }
        self.sink = sink
        self.progress = progress
        total = plan.tileCount
        report = BuildReport(color: colorizer.decision, metadata: plan.metadata)
    }

    /// The finished buffer of `tile` (nil when empty), producing and writing it and all its
    /// planned descendants first.
    func produce(_ tile: TileID) throws -> TileBuffer? {
        if tile.z == blockZoom { return try block(tile) }
        var kids: [TileBuffer?] = []
        for child in tile.children {
            kids.append(plan.contains(child) ? try produce(child) : nil)
        }
        let result = try worker.parent(tile, kids)
        try write([tile], [result])
        return result.buffer
    }

    /// A block: the max-zoom tiles under `root`, then each zoom up to `root`, each level
    /// written and the one below freed as soon as it is done.
    private func block(_ root: TileID) throws -> TileBuffer? {
        var below: [TileID: TileBuffer] = [:]
        for z in stride(from: plan.maxZoom, through: root.z, by: -1) {
            let tiles = descendants(of: root, atZoom: z)
            let results: [TileResult]
            let worker = self.worker
            if z == plan.maxZoom {
                results = try parallelMap(tiles) { tile, ws in try worker.maxZoomTile(tile, ws) }
            } else {
                let kids = below
                results = try parallelMap(tiles) { tile, _ in try worker.parent(tile, tile.children.map { kids[$0] }) }
            }
            below = [:]  // free the level below before writing this one
            try write(tiles, results)
            for (t, r) in zip(tiles, results) { if let b = r.buffer { below[t] = b } }
        }
        return below[root]
    }

    /// Planned tiles at zoom z under `root`, row by row.
    private func descendants(of root: TileID, atZoom z: Int) -> [TileID] {
        guard let r = plan.range(atZoom: z) else { return [] }
        let s = z - root.z
        let x0 = max(r.minX, root.x << s), x1 = min(r.maxX, ((root.x + 1) << s) - 1)
        let y0 = max(r.minY, root.y << s), y1 = min(r.maxY, ((root.y + 1) << s) - 1)
        guard x0 <= x1, y0 <= y1 else { return [] }
        var out: [TileID] = []
        out.reserveCapacity((x1 - x0 + 1) * (y1 - y0 + 1))
        for y in y0...y1 { for x in x0...x1 { out.append(TileID(unchecked: z, x, y)) } }
        return out
    }

    /// Hands results to the sink in order, counting and reporting progress.
    private func write(_ tiles: [TileID], _ results: [TileResult]) throws {
        for (tile, r) in zip(tiles, results) {
            if let encoded = r.encoded {
                try sink.write(tile: tile, encoded: encoded)
                if let m = r.metres { try sink.writeElevation(tile: tile, metres: m, width: size, height: size) }
                report.tilesWritten += 1
                report.perZoom[tile.z, default: 0] += 1
            } else {
                report.emptySkipped += 1
            }
            done += 1
            progress?(TileBuilder.Progress(done: done, total: total, zoom: tile.z))
        }
    }

    /// `body` over `tiles` on up to `workers` threads, results in tile order, each thread
    /// with its own workspace (see Core's `parallelMap`).
    private func parallelMap(_ tiles: [TileID],
                             _ body: @escaping @Sendable (TileID, ResampleWorkspace) throws -> TileResult) throws -> [TileResult] {
        let workspaces = self.workspaces
        return try TilePackCore.parallelMap(count: tiles.count, workers: workspaces.count) { i, w in
            try body(tiles[i], workspaces[w])
        }
    }
}
