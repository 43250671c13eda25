import ArgumentParser
import TilePack

/// `tilepack build`: a GeoTIFF in, an MBTiles archive of web-mercator tiles out.
struct BuildCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Build an MBTiles archive of web-mercator tiles from a GeoTIFF or a mosaic of them.",
        discussion: """
            Plans the XYZ tiles that cover the source at every zoom from --min-zoom to --max-zoom, \
            resamples the max zoom from the source through windowed reads, builds lower zooms \
            from their children, encodes each tile (ASTC 6x6 by default; --codec pvrtc4 for older GPUs, png for GDAL and \
            QGIS) and writes the archive atomically: it appears under its name only when complete. \
            Elevation sources are drawn as hillshade with a hypsometric tint, and their metres \
            are kept for `tilepack query` to the source's precision (--elevation-precision). --color auto takes a single band as \
            elevation when the file says so (vertical GeoKeys, GDAL band UNITTYPE or a \
            DESCRIPTION naming elevation/height/DEM), when it is float or signed, or when its \
            unsigned samples lie within Earth's elevations (-500…9000 m) and are not a 0–255 \
            image; the summary's `colour:` line says which mode was chosen and why.

            Several GeoTIFFs, a folder (every .tif/.tiff in it, by name) or a GDAL VRT \
            (gdalbuildvrt's SimpleSource/ComplexSource mosaics) build one seamless region: \
            later files win where they overlap, each file's nodata lets the ones before it \
            show, and at most --max-open-files files are open at once.

            The archive is built in OUTPUT.tmp-PID with a journal of finished work, committed \
            with the tiles. After a kill at any moment (SIGKILL, power loss) the same command \
            with --resume continues from the last committed batch and ends with the archive an \
            uninterrupted build makes, tile for tile; it refuses, naming the file, a temporary \
            archive of another source or other options. Without --resume, temporary archives of \
            builds that are no longer running are deleted.

            --shard K/N builds part K (0…N−1) of the work: the tiles under its share of a shard \
            zoom, with their exact pixels kept for `tilepack merge`, which joins the N shard \
            archives into the single-machine build's archive (Scripts/cluster-build runs the \
            shards and the merge on a Dask cluster).
            """
    )

    @Argument(help: "The source GeoTIFF; or several, a folder of them, or a .vrt (one mosaic).")
    var sources: [String]

    @Option(name: [.short, .long], help: "Output archive (default: the source's name with .mbtiles, in the current directory).")
    var output: String?

    @Option(help: "Lowest zoom (default: the highest zoom at which the region fits in one or two tiles).")
    var minZoom: Int?

    @Option(help: "Highest zoom (default: the first zoom whose pixels are at least as fine as the source's).")
    var maxZoom: Int?

    @Option(help: "Resampling at the max zoom: nearest, bilinear or average (palette sources always use nearest).")
    var resampling: Resampling = .bilinear

    @Option(help: "Tile codec: astc6x6 (GPU texture, 3.56 bpp, seam-free; the default), astc4x4, astc8x8, pvrtc4 or pvrtc2 (PVRTC GPU textures for pre-A8 iOS and PowerVR), or png (for GDAL, QGIS, web viewers).")
    var codec: TileCodecChoice = .astc6x6

    @Option(help: "PVRTC/ASTC encoder level: quality (least-squares refinement; ASTC also tries several block layouts and two partitions) or fast (one pass).")
    var level: PVRTCEncoder.Level = .quality

    @Option(help: "How samples become colours: auto (decides from the file; see above), rgb, elevation, stretch or palette.")
    var color: ColorMode = .auto

    @Option(help: ArgumentHelp(
        "Which zooms keep elevation (metres, or the band's values) for query and hillshade: all (the default), max-zoom or none.",
        valueName: "none|max-zoom|all"))
    var elevation: ElevationLevels = .all

    @Option(help: ArgumentHelp(
        "Elevation is stored to this precision in metres (default: 0.01, or the source's own step when coarser; integer sources exactly).",
        discussion: "Samples are quantised to max(precision, source step) and stored as integers with a 2-D predictor and deflate (q-planar-deflate, docs/FORMAT.md): a query answers within half the step. The source step is 1 for integer samples and, for float samples, the coarsest of 1, 0.5, 0.25, 0.2, 0.1, 0.05, 0.02, 0.01 that every sampled value is a multiple of.",
        valueName: "METRES"))
    var elevationPrecision: Double?

    @Option(help: ArgumentHelp(
        "How elevation is stored: quantized (the default; format version 2) or float32 (lossless Float32 as before version 2, 4–5× larger).",
        valueName: "quantized|float32"))
    var elevationEncoding: ElevationStorage = .quantized

    @Flag(help: "Also store tiles that are entirely transparent.")
    var keepEmpty = false

    @Option(help: "Region name stored in the archive (default: the source's base name).")
    var name: String?

    @Option(help: "Description stored in the archive metadata.")
    var description: String = ""

    @Option(help: "Attribution stored in the archive metadata (credit the source data).")
    var attribution: String = ""

    @Option(help: "Mosaics: most source files open at once (default 64).")
    var maxOpenFiles: Int = MosaicSource.defaultMaxOpenFiles

    @Option(help: "Worker threads (default: all cores).")
    var workers: Int?

    @Option(help: ArgumentHelp(
        "Memory the whole build may use, e.g. 512MiB (the default), 256MiB, 2GiB.",
        discussion: "Bounds the source block cache, the tiles waiting for their parents, the workers' buffers and SQLite's page cache whatever the source size; a smaller budget makes smaller batches (and, below ~100 MiB, fewer workers), never a failure. README \"Building tiles\" has the model."))
    var memory: String = "512MiB"

    @Option(help: ArgumentHelp(
        "Progress on stderr: auto, bar, lines, json or none.",
        discussion: "auto is a bar redrawn in place when stderr is a terminal, else lines (one plain line every 5 s and one at the end, no carriage returns); json prints one object per line (done, total, zoom, tiles_per_second, eta_seconds, elapsed_seconds) at most once a second and at the end."))
    var progress: ProgressStyle = .auto

    @Flag(help: "Print no progress, only the summary (same as --progress none).")
    var quiet = false

    @Flag(help: "Continue the interrupted build of this output (same source and options) from its last committed batch.")
    var resume = false

    @Option(help: ArgumentHelp("Build only part K of N (K from 0, e.g. 2/8); join the parts with `tilepack merge`.",
                               valueName: "K/N"))
    var shard: String?

    func validate() throws {
        for (label, z) in [("--min-zoom", minZoom), ("--max-zoom", maxZoom)] {
            if let z, !(0...TileID.maxZoom).contains(z) { throw ValidationError("\(label) \(z) must be 0…\(TileID.maxZoom)") }
        }
        if let a = minZoom, let b = maxZoom, a > b { throw ValidationError("--min-zoom \(a) is above --max-zoom \(b)") }
        if sources.isEmpty { throw ValidationError("give a GeoTIFF, several, a folder or a .vrt") }
        if let p = elevationPrecision, !(p.isFinite && p > 0) {
            throw ValidationError("--elevation-precision \(p) must be a positive finite number of metres, e.g. 0.01")
        }
        if !(1...65536).contains(maxOpenFiles) { throw ValidationError("--max-open-files \(maxOpenFiles) must be 1…65536") }
        if let workers, !(1...256).contains(workers) { throw ValidationError("--workers \(workers) must be 1…256") }
        if let shard, BuildShard(argument: shard) == nil {
            throw ValidationError("--shard \(shard) must be K/N with 0 ≤ K < N ≤ \(BuildShard.maxCount), e.g. 0/4")
        }
        do { _ = try MemoryBudget(parsing: memory) } catch { throw ValidationError("--memory \(error.description)") }
        if quiet, progress != .auto, progress != .none {
            throw ValidationError("--quiet (no progress) contradicts --progress \(progress.rawValue)")
        }
    }

    func run() throws {
        var request = RegionBuild.Request(sourcePaths: sources)
        request.maxOpenFiles = maxOpenFiles
        request.outputPath = output
        request.options.minZoom = minZoom
        request.options.maxZoom = maxZoom
        request.options.resampling = resampling
        request.options.colorMode = color
        request.options.keepEmpty = keepEmpty
        request.options.elevationLevels = elevation
        request.options.elevationPrecision = elevationPrecision
        request.options.elevationStorage = elevationEncoding
        if let workers { request.options.workers = workers }
        do { request.options.memoryBudget = try MemoryBudget(parsing: memory).bytes } catch {
            printError("--memory \(error.description)")
            throw ExitCode(error.category.exitStatus)
        }
        request.codec = codec
        request.codecLevel = level
        request.name = name
        request.description = description
        request.attribution = attribution
        request.resume = resume
        request.shard = shard.flatMap(BuildShard.init(argument:))
        let display = BuildProgressDisplay(style: quiet ? .none : progress.resolved(stderrIsTerminal: stderrIsTerminal))
        do {
            let result = try RegionBuild(request).run { display.update($0) }
            display.finish()
            let r = result.report
            let zooms = r.perZoom.keys.sorted().map { "z\($0): \(r.perZoom[$0, default: 0])" }.joined(separator: ", ")
            print("wrote \(result.outputPath): \(r.tilesWritten) tiles (\(result.archive.distinctImages) distinct, \(result.archive.storedBytes) bytes), \(result.codec), zooms \(r.metadata.minZoom)–\(r.metadata.maxZoom)")
            print("  colour: \(r.color)")
            if let from = result.resumedFrom {
                print("  resumed \(from): \(r.resumedTiles) tiles were already done")
            } else if resume {
                print("  --resume: no interrupted build of \(result.outputPath) to continue; built from the start")
            }
            if let shard = request.shard { print("  shard \(shard): join the \(shard.count) shards with `tilepack merge`") }
            print("  per zoom: \(zooms)")
            if let m = result.mosaic {
                print("  mosaic: \(m.files) files, at most \(m.peakOpenFiles) open at once (limit \(m.maxOpenFiles), \(m.opens) opens)")
            }
            if let m = r.memory { print("  memory: \(m)") }
            print("  empty tiles skipped: \(r.emptySkipped); elevation tiles: \(result.archive.elevationTiles); \(String(format2: r.seconds)) s")
        } catch let error as any TilePackError {
            display.interrupt()  // end the progress bar's line first
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }
}

extension Resampling: ExpressibleByArgument {}
extension ColorMode: ExpressibleByArgument {}
extension ElevationLevels: ExpressibleByArgument {}
extension ElevationStorage: ExpressibleByArgument {}
extension TileCodecChoice: ExpressibleByArgument {}

extension String {
    /// A number with two decimals, without Foundation's String(format:).
    init(format2 value: Double) {
        let scaled = (value * 100).rounded()
        let whole = Int(scaled) / 100, frac = abs(Int(scaled)) % 100
        self = "\(whole).\(frac < 10 ? "0" : "")\(frac)"
    }
}
