import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
import Dispatch

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

    public init(
        source: any RasterSource, georeference: any SourceGeoreference, options: BuildOptions, codec: any TileCodec
    ) {
        self.source = source
        self.georeference = georeference
        self.options = options
        self.codec = codec
    }

    /// The plan this builder would run (validates bounds and zoom options).
    public func plan() throws -> TilePlan {
        try options.validate()
        return try TilePlan(
            bounds: georeference.lonLatBounds, nativeResolutionMetres: georeference.groundResolutionMetres,
            minZoom: options.minZoom, maxZoom: options.maxZoom, maxTiles: options.maxTiles)
    }

    /// Runs the build. `progress` is called on this thread after each planned tile is written
    /// or skipped. The first error (source, codec or sink) stops the build
    /// and is rethrown; tiles already handed to the sink stay there.
    ///
    /// With a `journal`, every tile at or above the block zoom is recorded finished (with its
    /// exact pixels) once it and everything below it went to the sink, and the subtrees of
    /// the journal's ``BuildJournal/finishedRoots`` are not built again: their recorded
    /// pixels stand in for them, so a resumed build makes the same parents, tile for tile.
    /// With a `shard`, only that part of the ``ShardPartition`` is built: the shard-zoom
    /// tiles it owns and everything below them (their pixels recorded in the journal, which
    /// a shard build needs), nothing above the shard zoom.
    @discardableResult
    public func run(
        sink: some TileSink, journal: (any BuildJournal)? = nil, shard: BuildShard? = nil,
        progress: ((Progress) -> Void)? = nil
    ) throws -> BuildReport {
        precondition(shard == nil || journal != nil, "a shard build records its shard-zoom pixels in a journal")
        let clock = ContinuousClock()
        let start = clock.now
        let plan = try plan()
        // Before the colorizer's statistics read any window of all the bands.
        try checkSourceFits(plan)
        let colorizer = try Colorizer(source: source, mode: options.colorMode, terrain: options.terrain)
        let counter = LiveTileCounter()
        let levels = LevelWorker(
            codec: codec, counter: counter, keepEmpty: options.keepEmpty,
            elevation: colorizer.storesValues, categorical: colorizer.categorical,
            categoricalColour: colorizer.mode == .classes)
        let resampler = Resampler.forSource(
            source, georeference: georeference, maxError: options.approximationError,
            method: colorizer.forcesNearest ? .nearest : options.resampling)
        let worker = TileWorker(resampler: resampler, colorizer: colorizer, levels: levels)
        let scope: BuildScope = shard.map { .shard(shardPartition(plan, count: $0.count), index: $0.index) } ?? .whole
        let memory = try memoryPlan(plan, elevation: colorizer.storesValues)
        let run = BuildRun(
            plan: plan, levels: levels, worker: worker, blockLevels: memory.blockLevels,
            workers: memory.workers, scope: scope, sink: sink, journal: journal,
            color: colorizer.decision, progress: progress)
        run.elevationLevels = options.elevationLevels
        for root in plan.ranges[0].tiles { _ = try run.produce(root) }
        let elapsed = clock.now - start
        run.report.seconds = elapsed.inSeconds
        run.report.peakLiveTileBuffers = run.counter.peak
        run.report.memory = memory
        if colorizer.mode.isTerrain {
            run.report.hillshade = colorizer.hillshade
            run.report.tint = colorizer.tintDescription
        }
        run.report.legend = colorizer.legend
        return run.report
    }

    /// How `plan` splits into `count` shards for this source and codec: weighed by the
    /// source's detail (``ShardWorkEstimate``) when the codec's encode time follows it, by
    /// tile counts otherwise.
    /// - Cost: see ``ShardPartition``.
    public func shardPartition(_ plan: TilePlan, count: Int) -> ShardPartition {
        let estimate =
            codec.encodeTimeFollowsDetail ? ShardWorkEstimate(source: source, georeference: georeference) : nil
        return ShardPartition(plan: plan, count: count, work: estimate)
    }

    /// How ``BuildOptions/memoryBudget`` is shared for `plan`: the workers and block levels
    /// the run uses (at most the options').
    /// - Throws: ``BuildError/invalidOption(_:)`` for a budget below the smallest build.
    public func memoryPlan(_ plan: TilePlan, elevation: Bool) throws -> BuildMemoryPlan {
        try BuildMemoryPlan(
            budget: options.memoryBudget, workers: options.workers, blockLevels: options.blockLevels,
            elevation: elevation, levelsAboveBlock: plan.maxZoom - plan.minZoom,
            sourceCacheBytes: options.sourceCacheBytes, source: SourceFootprint(source: source))
    }

    /// Refuses a source whose bands cannot fit ``BuildOptions/memoryBudget`` even with one
    /// worker (``BuildError/sourceExceedsBudget(needed:budget:source:)``), before any pixel is
    /// read. A budget too small for any source is left to ``memoryPlan(_:elevation:)``, which
    /// reports it as the option's fault.
    /// - Cost: arithmetic only.
    public func checkSourceFits(_ plan: TilePlan) throws {
        do {
            try BuildMemoryPlan.checkFits(
                budget: options.memoryBudget, elevation: false,
                levelsAboveBlock: plan.maxZoom - plan.minZoom, source: SourceFootprint(source: source))
        } catch let error as BuildError where error.code == .invalidOption {
            return
        }
    }

    /// Builds the tiles at and above `partition.zoom` that no shard built (the ones that span
    /// shards) from the exact pixels of those the shards built, as
    /// ``run(sink:journal:shard:progress:)`` would have: what ``ShardMerge`` does after
    /// copying the shards' tiles. `given` are the tiles the shards built (every planned
    /// shard-zoom tile and the ``ShardPartition/upperOwner`` ones); `pixels` gives one's
    /// pixels (nil: empty) and is called from several threads at once. No source is read.
    ///
    /// Blocks as in a build: a tile `blockLevels` zooms above the shard zoom; each zoom of it
    /// up from the shard zoom loads the given children it needs, then makes its missing tiles,
    /// both in parallel on `workers` threads.
    /// - Cost: one parent (2×2 average + encode) per tile that spans shards (a few per
    ///   boundary between shards and zoom), over `workers` threads; one `pixels` call per
    ///   given child of one. Memory: at most one block's 4^blockLevels buffers plus 4 per zoom above it.
    public static func buildLevels(
        above partition: ShardPartition, plan: TilePlan, codec: any TileCodec, elevation: Bool,
        categorical: Bool = false, categoricalColour: Bool = false, keepEmpty: Bool,
        workers: Int = ProcessorInfo.activeCount, blockLevels: Int = 3,
        given: Set<TileID>, pixels: @escaping @Sendable (TileID) throws -> TilePixels?,
        sink: some TileSink, elevationLevels: ElevationLevels = .all,
        progress: ((Progress) -> Void)? = nil
    ) throws -> BuildReport {
        precondition(workers >= 1 && blockLevels >= 1, "levels need a worker and a block of at least one level")
        let clock = ContinuousClock()
        let start = clock.now
        let levels = LevelWorker(
            codec: codec, counter: LiveTileCounter(), keepEmpty: keepEmpty, elevation: elevation,
            categorical: categorical, categoricalColour: categoricalColour)
        let color = ColorDecision(mode: elevation ? .elevation : .rgb, reason: "as the shards were built")
        let run = BuildRun(
            plan: plan, levels: levels, worker: nil, blockLevels: blockLevels, workers: workers,
            scope: .levels(leafZoom: partition.zoom, given: given, pixels: pixels), sink: sink, journal: nil,
            color: color, progress: progress)
        run.elevationLevels = elevationLevels
        for root in plan.ranges[0].tiles { _ = try run.produce(root) }
        run.report.seconds = (clock.now - start).inSeconds
        run.report.peakLiveTileBuffers = run.counter.peak
        return run.report
    }
}

/// What part of the pyramid a run makes.
private enum BuildScope {
    /// Every planned tile.
    case whole
    /// The subtrees of the shard-zoom tiles shard `index` owns.
    case shard(ShardPartition, index: Int)
    /// The tiles at and above `leafZoom` not `given`, from the given ones' pixels (merging
    /// shards; `pixels` is called from the block's threads).
    case levels(leafZoom: Int, given: Set<TileID>, pixels: @Sendable (TileID) throws -> TilePixels?)
}

/// One tile's outcome from a worker: the buffer its parent needs (nil when empty) and what
/// to write (nil when skipped).
private struct TileResult: Sendable {
    var buffer: TileBuffer?
    var encoded: [UInt8]?
    var metres: [Float]?
}

/// Parents and encoding: what every zoom but the max zoom needs, and all the merge of
/// shards needs (it has no source). Immutable and Sendable. One per run.
private struct LevelWorker: Sendable {
    let codec: any TileCodec
    let counter: LiveTileCounter
    let keepEmpty: Bool
    /// Whether tiles carry the single data band's values (stored in the elevation table).
    let elevation: Bool
    /// Class codes: parents pick one child sample per 2×2 block (``Pyramid/downsampleClasses``).
    var categorical = false
    /// With `categorical`, the parent's colour is the picked sample's too (`classes` mode).
    var categoricalColour = false
    let size = WebMercator.tileSize

    /// Average a parent from its children (nil = missing/empty) and encode it.
    func parent(_ tile: TileID, _ kids: [TileBuffer?]) throws -> TileResult {
        if kids.allSatisfy({ $0 == nil }) { return try finish(nil, nil) }
        if elevation && categorical {
            let picked = Pyramid.downsampleClasses(kids.map { $0?.metres }, colours: kids.map { $0?.rgba }, size: size)
            let rgba = categoricalColour ? picked.rgba : Pyramid.downsampleRGBA(kids.map { $0?.rgba }, size: size)
            return try finish(rgba, picked.values)
        }
        let rgba = Pyramid.downsampleRGBA(kids.map { $0?.rgba }, size: size)
        let metres = elevation ? Pyramid.downsampleElevation(kids.map { $0?.metres }, size: size) : nil
        return try finish(rgba, metres)
    }

    /// Keep non-empty tiles for the parent and encode what will be written.
    func finish(_ rgba: [UInt8]?, _ metres: [Float]?) throws -> TileResult {
        let empty = rgba.map(Pyramid.isTransparent) ?? true
        if !empty, let rgba {
            let encoded = try codec.encode(rgba: rgba, width: size, height: size)
            return TileResult(
                buffer: TileBuffer(rgba: rgba, metres: metres, counter: counter), encoded: encoded,
                metres: elevation ? metres : nil)
        }
        guard keepEmpty else { return TileResult() }
        let blank = [UInt8](repeating: 0, count: size * size * 4)
        return TileResult(
            buffer: nil, encoded: try codec.encode(rgba: blank, width: size, height: size),
            metres: elevation ? [Float](repeating: .nan, count: size * size) : nil)
    }
}

/// What the max-zoom workers share: immutable and Sendable. One per run.
private struct TileWorker: Sendable {
    let resampler: any GridResampling
    let colorizer: Colorizer
    let levels: LevelWorker
    let size = WebMercator.tileSize

    /// Resample, colour and encode one max-zoom tile.
    func maxZoomTile(_ tile: TileID, _ ws: ResampleWorkspace) throws -> TileResult {
        let grid = MapFrame(tile: tile, border: colorizer.border)
        let any = try resampler.resample(grid, tile: tile, into: ws)
        var rgba = [UInt8](repeating: 0, count: size * size * 4)
        var metres: [Float]? = nil
        if any {
            metres = colorizer.colorize(values: ws.values, valid: ws.valid, grid: grid, into: &rgba)
        }
        return try levels.finish(rgba, metres)
    }
}

/// Mutable state of one run; lives on the calling thread. Workers touch only its immutable
/// parts and their own workspace.
private final class BuildRun<Sink: TileSink> {
    let plan: TilePlan
    let levels: LevelWorker
    /// Nil when the run makes no max-zoom tile (merging shards).
    let worker: TileWorker?
    let blockZoom: Int
    let workspaces: [ResampleWorkspace]
    let counter: LiveTileCounter
    let scope: BuildScope
    let sink: Sink
    let journal: (any BuildJournal)?
    let progress: ((TileBuilder.Progress) -> Void)?
    let total: Int
    var done = 0
    var report: BuildReport
    let size = WebMercator.tileSize
    /// Which zooms' grids go to the sink (parents are still made from every child's metres).
    var elevationLevels = ElevationLevels.all

    init(
        plan: TilePlan, levels: LevelWorker, worker: TileWorker?, blockLevels: Int, workers: Int, scope: BuildScope,
        sink: Sink, journal: (any BuildJournal)?, color: ColorDecision, progress: ((TileBuilder.Progress) -> Void)?
    ) {
        self.plan = plan
        self.levels = levels
        self.counter = levels.counter
        self.worker = worker
        var blockZoom = max(plan.minZoom, plan.maxZoom - blockLevels)
        switch scope {
        case .whole:
            total = plan.tileCount
        case .shard(let partition, let index):
            // A block never spans shards: at most the shard zoom's tiles.
            blockZoom = max(blockZoom, partition.zoom)
            total =
                partition.tiles(of: index).reduce(0) { $0 + plan.plannedSubtree($1) }
                + partition.upperOwner.values.reduce(0) { $0 + ($1 == index ? 1 : 0) }
        case .levels(let leafZoom, let given, _):
            // Blocks end one zoom above the shard zoom (none when that is the min zoom).
            blockZoom = max(plan.minZoom, leafZoom - max(1, blockLevels))
            total =
                plan.ranges.prefix(while: { $0.z < leafZoom }).reduce(0) { $0 + $1.count }
                - given.reduce(0) { $0 + ($1.z < leafZoom && plan.contains($1) ? 1 : 0) }
        }
        self.blockZoom = blockZoom
        self.scope = scope
        workspaces = (0..<max(1, workers)).map { _ in ResampleWorkspace() }  // empty until used
        self.sink = sink
        self.journal = journal
        self.progress = progress
        report = BuildReport(color: color, metadata: plan.metadata)
    }

    /// The finished buffer of `tile` (nil when empty), producing and writing it and all its
    /// planned descendants first (those the scope asks for), then recording it finished.
    func produce(_ tile: TileID) throws -> TileBuffer? {
        if let journal, journal.finishedRoots.contains(tile) { return try resumed(tile, journal) }
        switch scope {
        case .whole:
            break
        case .shard(let partition, let index):
            if tile.z <= partition.zoom {
                let builder = partition.builder(of: tile)
                if let builder, builder != index { return nil }  // another shard's
                if builder == nil {  // spans shards: the merge builds it
                    for child in tile.children where plan.contains(child) { _ = try produce(child) }
                    return nil
                }
            }
        case .levels(let leafZoom, let given, let pixels):
            if tile.z == leafZoom || given.contains(tile) {
                return try pixels(tile).map { TileBuffer(rgba: $0.rgba, metres: $0.metres, counter: counter) }
            }
        }
        let buffer: TileBuffer?
        if tile.z == blockZoom {
            buffer = try block(tile)
        } else {
            var kids: [TileBuffer?] = []
            for child in tile.children {
                kids.append(plan.contains(child) ? try produce(child) : nil)
            }
            let result = try levels.parent(tile, kids)
            try write([tile], [result])
            buffer = result.buffer
        }
        try journal?.recordFinished(tile, pixels: buffer.map { TilePixels(rgba: $0.rgba, metres: $0.metres) })
        return buffer
    }

    /// A subtree an interrupted run finished: its recorded pixels, its tiles counted done.
    private func resumed(_ tile: TileID, _ journal: any BuildJournal) throws -> TileBuffer? {
        let pixels = try journal.finishedPixels(tile)
        let skipped = plan.plannedSubtree(tile)
        report.resumedTiles += skipped
        done += skipped
        progress?(TileBuilder.Progress(done: done, total: total, zoom: tile.z))
        return pixels.map { TileBuffer(rgba: $0.rgba, metres: $0.metres, counter: counter) }
    }

    /// A block: the max-zoom tiles under `root`, then each zoom up to `root`, each level
    /// written and the one below freed as soon as it is done. Merging shards, a block starts
    /// one zoom above the shard zoom and makes only the tiles not given, from the given
    /// children (loaded, not written) and the ones it made.
    private func block(_ root: TileID) throws -> TileBuffer? {
        var below: [TileID: TileBuffer] = [:]
        var top = plan.maxZoom
        var given: Set<TileID> = []
        var pixels: (@Sendable (TileID) throws -> TilePixels?)? = nil
        if case .levels(let leafZoom, let g, let p) = scope {
            top = leafZoom - 1
            (given, pixels) = (g, p)
        }
        for z in stride(from: top, through: root.z, by: -1) {
            var tiles = descendants(of: root, atZoom: z)
            if let pixels {
                tiles.removeAll(where: given.contains)
                let needed = tiles.flatMap { $0.children.filter { given.contains($0) } }
                let counter = self.counter
                let loaded = try parallelMap(needed) { tile, _ in
                    TileResult(
                        buffer: try pixels(tile).map { TileBuffer(rgba: $0.rgba, metres: $0.metres, counter: counter) })
                }
                for (t, r) in zip(needed, loaded) { if let b = r.buffer { below[t] = b } }
            }
            let results: [TileResult]
            if z == plan.maxZoom {
                guard let worker = self.worker else {
                    preconditionFailure("a run without a source reached the max zoom")
                }
                results = try parallelMap(tiles) { tile, ws in try worker.maxZoomTile(tile, ws) }
            } else {
                let kids = below
                let levels = self.levels
                results = try parallelMap(tiles) { tile, _ in try levels.parent(tile, tile.children.map { kids[$0] }) }
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
                if let m = r.metres, elevationLevels.stores(zoom: tile.z, maxZoom: plan.maxZoom) {
                    try sink.writeElevation(tile: tile, metres: m, width: size, height: size)
                }
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
    private func parallelMap(
        _ tiles: [TileID],
        _ body: @escaping @Sendable (TileID, ResampleWorkspace) throws -> TileResult
    ) throws -> [TileResult] {
        let workspaces = self.workspaces
        return try TilePackCore.parallelMap(count: tiles.count, workers: workspaces.count) { i, w in
            try body(tiles[i], workspaces[w])
        }
    }
}
