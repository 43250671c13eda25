import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive

/// Builds every tile of a source's ``TilePlan``: resamples max-zoom tiles, colours them,
/// averages parents from children, encodes in worker threads and hands tiles to a
/// ``TileSink`` on the calling thread.
///
/// Streaming: the pyramid is walked depth-first from the min-zoom tiles. Below the *block
/// zoom* (`maxZoom − blockLevels`, at least `minZoom`) a block is one tile there and its
/// descendants: its max-zoom tiles are made in parallel, written, then turned into the next
/// level up and freed, so at most 4^k + 4^(k−1) tiles of a block, the previous block's upper
/// levels and four waiting siblings per zoom above it are alive — independent of the source
/// size. `k` and the worker count come from ``BuildMemoryPlan`` (the options' values, lowered
/// to fit ``BuildOptions/memoryBudget``); any `k` gives the same tiles.
/// Parallel: every tile is a job on a ``TileJobScheduler``'s `workers` threads (one
/// ``ResampleWorkspace`` each), a parent ready once its children are made, so a block's upper
/// levels and the tiles above the block zoom are made beside the next block's max-zoom tiles.
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
            minZoom: options.minZoom, maxZoom: options.maxZoom ?? georeference.nativeZoom, maxTiles: options.maxTiles)
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
        var levels = LevelWorker(
            codec: codec, counter: counter, keepEmpty: options.keepEmpty,
            elevation: colorizer.storesValues, categorical: colorizer.categorical,
            categoricalColour: colorizer.mode == .classes)
        (levels.elevationPacker, levels.elevationLevels, levels.maxZoom) = (
            sink.elevationPacker, options.elevationLevels, plan.maxZoom
        )
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
        try run.runAll()
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
        var levels = LevelWorker(
            codec: codec, counter: LiveTileCounter(), keepEmpty: keepEmpty, elevation: elevation,
            categorical: categorical, categoricalColour: categoricalColour)
        (levels.elevationPacker, levels.elevationLevels, levels.maxZoom) = (
            sink.elevationPacker, elevationLevels, plan.maxZoom
        )
        let color = ColorDecision(mode: elevation ? .elevation : .rgb, reason: "as the shards were built")
        let run = BuildRun(
            plan: plan, levels: levels, worker: nil, blockLevels: blockLevels, workers: workers,
            scope: .levels(leafZoom: partition.zoom, given: given, pixels: pixels), sink: sink, journal: nil,
            color: color, progress: progress)
        try run.runAll()
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
struct TileResult: Sendable {
    var buffer: TileBuffer?
    var encoded: [UInt8]?
    /// The elevation to store, as metres (for a sink that packs it itself) or packed by the
    /// worker (``LevelWorker/elevationPacker``); neither for a zoom that stores none.
    var metres: [Float]?
    var packedElevation: PackedElevation?
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
    /// The sink's elevation packer (``TileSink/elevationPacker``), run here on the worker's
    /// thread so that tiles pack in parallel; nil: the sink takes metres. Set by the run.
    var elevationPacker: ElevationPacker? = nil
    /// The zooms whose elevation goes to the sink (of a pyramid up to `maxZoom`). Set by the run.
    var elevationLevels = ElevationLevels.all
    var maxZoom = Int.max
    let size = WebMercator.tileSize

    /// Average a parent from its children (nil = missing/empty) and encode it.
    func parent(_ tile: TileID, _ kids: [TileBuffer?]) throws -> TileResult {
        if kids.allSatisfy({ $0 == nil }) { return try finish(nil, nil, tile: tile) }
        if elevation && categorical {
            let picked = Pyramid.downsampleClasses(kids.map { $0?.metres }, colours: kids.map { $0?.rgba }, size: size)
            let rgba = categoricalColour ? picked.rgba : Pyramid.downsampleRGBA(kids.map { $0?.rgba }, size: size)
            return try finish(rgba, picked.values, tile: tile)
        }
        let rgba = Pyramid.downsampleRGBA(kids.map { $0?.rgba }, size: size)
        let metres = elevation ? Pyramid.downsampleElevation(kids.map { $0?.metres }, size: size) : nil
        return try finish(rgba, metres, tile: tile)
    }

    /// Keep non-empty tiles for the parent and encode what will be written: the display tile
    /// and, at a zoom that stores it, the elevation (packed here when the sink lets the worker).
    func finish(_ rgba: [UInt8]?, _ metres: [Float]?, tile: TileID) throws -> TileResult {
        let empty = rgba.map(Pyramid.isTransparent) ?? true
        if !empty, let rgba {
            let encoded = try codec.encode(rgba: rgba, width: size, height: size)
            var result = TileResult(buffer: TileBuffer(rgba: rgba, metres: metres, counter: counter), encoded: encoded)
            try store(metres, of: tile, in: &result)
            return result
        }
        guard keepEmpty else { return TileResult() }
        let blank = [UInt8](repeating: 0, count: size * size * 4)
        var result = TileResult(buffer: nil, encoded: try codec.encode(rgba: blank, width: size, height: size))
        try store([Float](repeating: .nan, count: size * size), of: tile, in: &result)
        return result
    }

    /// Puts `tile`'s elevation in `result` when its zoom stores one: packed by
    /// ``elevationPacker`` when set, else as metres.
    /// - Cost: with a packer, one ``ElevationPacker/pack(_:)`` (a level-9 deflate of the tile).
    private func store(_ metres: [Float]?, of tile: TileID, in result: inout TileResult) throws {
        guard elevation, let metres, elevationLevels.stores(zoom: tile.z, maxZoom: maxZoom) else { return }
        if let elevationPacker {
            result.packedElevation = try elevationPacker.pack(ElevationTile(width: size, height: size, values: metres))
        } else {
            result.metres = metres
        }
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
        return try levels.finish(rgba, metres, tile: tile)
    }
}

/// Mutable state of one run; lives on the calling thread. Workers touch only its immutable
/// parts and their own workspace.
///
/// The calling thread walks the pyramid and submits every tile as a job to a
/// ``TileJobScheduler`` (a parent after its children), then takes the finished jobs in the
/// order submitted — block by block, zoom by zoom, row by row, each parent after its subtree —
/// and writes them, so the archive is the same whatever the thread timing. A block's jobs
/// are submitted only once the previous block's second level is taken: its upper levels (and
/// the parents above the block zoom) overlap the next block's max-zoom tiles, and at most
/// one block's max-zoom tiles are alive at a time.
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
    /// The previous block's job to take before the next block's are submitted: the last of
    /// its second level (its max-zoom tiles are then freed), nil when taken.
    private var blockMark: TileJob?

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

    /// Makes and writes every tile of the scope: starts the workers, submits the pyramid
    /// from the min-zoom tiles, takes what is left, stops the workers (also on an error).
    func runAll() throws {
        let jobs = TileJobScheduler(workspaces: workspaces)
        defer { jobs.shutDown() }
        for root in plan.ranges[0].tiles { _ = try produce(root, jobs) }
        try take(jobs, through: nil)
    }

    /// The job that makes `tile` (nil when nothing does: empty, another shard's), after
    /// submitting those of all its planned descendants (those the scope asks for). Tiles at
    /// and above the block zoom are recorded finished when taken.
    private func produce(_ tile: TileID, _ jobs: TileJobScheduler) throws -> TileJob? {
        if let journal, journal.finishedRoots.contains(tile) {
            let pixels = try journal.finishedPixels(tile)
            let buffer = pixels.map { TileBuffer(rgba: $0.rgba, metres: $0.metres, counter: counter) }
            let skipped = plan.plannedSubtree(tile)
            return jobs.done(tile, role: .resumed(skipped: skipped), result: TileResult(buffer: buffer))
        }
        switch scope {
        case .whole:
            break
        case .shard(let partition, let index):
            if tile.z <= partition.zoom {
                let builder = partition.builder(of: tile)
                if let builder, builder != index { return nil }  // another shard's
                if builder == nil {  // spans shards: the merge builds it
                    for child in tile.children where plan.contains(child) { _ = try produce(child, jobs) }
                    return nil
                }
            }
        case .levels(let leafZoom, let given, let pixels):
            if tile.z == leafZoom || given.contains(tile) { return load(tile, pixels, jobs) }
        }
        if tile.z == blockZoom { return try block(tile, jobs) }
        var kids: [TileJob?] = []
        for child in tile.children {
            kids.append(plan.contains(child) ? try produce(child, jobs) : nil)
        }
        let levels = self.levels
        return jobs.submit(tile, role: .write(record: true), kids: kids) { kids, _ in try levels.parent(tile, kids) }
    }

    /// A given tile's pixels (merging shards), loaded by a worker for its parent, not written.
    private func load(
        _ tile: TileID, _ pixels: @escaping @Sendable (TileID) throws -> TilePixels?, _ jobs: TileJobScheduler
    ) -> TileJob {
        let counter = self.counter
        return jobs.submit(tile, role: .load) { _, _ in
            TileResult(buffer: try pixels(tile).map { TileBuffer(rgba: $0.rgba, metres: $0.metres, counter: counter) })
        }
    }

    /// A block: the max-zoom tiles under `root`, then each zoom up to `root`, each tile's job
    /// ready once its children's are done. Merging shards, a block starts one zoom above the
    /// shard zoom and makes only the tiles not given, from the given children (loaded, not
    /// written) and the ones it made. Before submitting, takes the previous block's jobs up
    /// to its mark, so at most two blocks are in flight.
    private func block(_ root: TileID, _ jobs: TileJobScheduler) throws -> TileJob? {
        if let mark = blockMark {
            try take(jobs, through: mark)
            blockMark = nil
        }
        var top = plan.maxZoom
        var given: Set<TileID> = []
        var pixels: (@Sendable (TileID) throws -> TilePixels?)? = nil
        if case .levels(let leafZoom, let g, let p) = scope {
            top = leafZoom - 1
            (given, pixels) = (g, p)
        }
        var below: [TileID: TileJob] = [:]
        for z in stride(from: top, through: root.z, by: -1) {
            var tiles = descendants(of: root, atZoom: z)
            if let pixels {
                tiles.removeAll(where: given.contains)
                for tile in tiles {
                    for child in tile.children where given.contains(child) && below[child] == nil {
                        below[child] = load(child, pixels, jobs)
                    }
                }
            }
            var level: [TileID: TileJob] = [:]
            for tile in tiles {
                let role = TileJob.Role.write(record: tile == root)
                if z == plan.maxZoom {
                    guard let worker = self.worker else {
                        preconditionFailure("a run without a source reached the max zoom")
                    }
                    level[tile] = jobs.submit(tile, role: role) { _, ws in try worker.maxZoomTile(tile, ws) }
                } else {
                    let levels = self.levels
                    level[tile] = jobs.submit(tile, role: role, kids: tile.children.map { below[$0] }) { kids, _ in
                        try levels.parent(tile, kids)
                    }
                }
                if z >= top - 1 { blockMark = level[tile] }
            }
            below = level
        }
        return below[root]
    }

    /// Takes finished jobs in order, writing them (and recording block roots and the tiles
    /// above them finished), up to and including `mark` (all with nil).
    private func take(_ jobs: TileJobScheduler, through mark: TileJob?) throws {
        while let taken = try jobs.next() {
            let (job, result) = taken
            switch job.role {
            case .write(let record):
                try write(job.tile, result)
                if record {
                    try journal?.recordFinished(
                        job.tile, pixels: result.buffer.map { TilePixels(rgba: $0.rgba, metres: $0.metres) })
                }
            case .load:
                break
            case .resumed(let skipped):
                report.resumedTiles += skipped
                done += skipped
                progress?(TileBuilder.Progress(done: done, total: total, zoom: job.tile.z))
            }
            if job === mark { return }
        }
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

    /// Hands one result to the sink, counting and reporting progress.
    private func write(_ tile: TileID, _ r: TileResult) throws {
        if let encoded = r.encoded {
            try sink.write(tile: tile, encoded: encoded)
            if let packed = r.packedElevation {
                try sink.writeElevation(tile: tile, packed: packed)
            } else if let m = r.metres {
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
