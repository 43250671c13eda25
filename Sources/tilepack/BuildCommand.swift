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
            are kept for `tilepack query`. --color auto decides what a single band \
            holds (its values kept for `tilepack query` to the source's precision, \
            --elevation-precision): depth (a DESCRIPTION naming depth/bathymetry, or all values ≤ 0; positive \
            depths are negated), a percentage (UNITTYPE %, or values within 0…100 named \
            percent/concentration/fraction/cover), elevation (vertical GeoKeys, UNITTYPE a \
            length, a DESCRIPTION naming elevation/height/DEM, or float/signed/16-bit values \
            within Earth's elevations -500…9000 m), classes (an integer band, not 8-bit, with at \
            most 32 distinct values) or another value (stretched); the single band's values are \
            stored for `tilepack query`, and the summary's `colour:` line says which mode was \
            chosen and why. --bands 3,2,1 picks the bands drawn as R,G,B (by default those the \
            file's COLORINTERP or descriptions name Red, Green, Blue, else the first three).

            Terrain is drawn absolutely: the tint is a fixed ramp in metres (-11000…8849 m, \
            bathymetry blues through lowland greens, tans, browns and greys to white; docs/BUILDING.md \
            "Terrain colours") and the shading is gdaldem's hillshade from the metres with the \
            real pixel size, so regions built apart match where they meet. --tint picks \
            another ramp or a gdaldem color-relief file, --tint-range stretches it over your \
            metres (a local stretch: pieces built apart then differ).

            Several GeoTIFFs, a folder (every .tif/.tiff in it, by name) or a GDAL VRT \
            (gdalbuildvrt's SimpleSource/ComplexSource mosaics, or gdal_translate -of VRT -b … \
            band choices) build one seamless region: \
            later files win where they overlap, each file's nodata lets the ones before it \
            show, and at most --max-open-files files are open at once.

            The archive is built in OUTPUT.tmp-PID with a journal of finished work, committed \
            with the tiles. After a kill at any moment (SIGKILL, power loss) the same command \
            with --resume continues from the last committed batch and ends with the archive an \
            uninterrupted build makes, tile for tile; it refuses, naming the file, a temporary \
            archive of another source or other options. Without --resume, temporary archives of \
            builds that are no longer running are deleted.

            Ctrl-C (SIGINT) or SIGTERM stops the workers at the next tile, keeps the temporary \
            archive and prints `interrupted: run the same command with --resume to continue (N \
            tiles done)`, exit status 130 (143 for SIGTERM); a second Ctrl-C exits at once. The \
            summary of a resumed build counts the whole archive and says how many tiles this run \
            added.

            --each builds one archive per input instead of one mosaic: each file given, or each \
            .tif/.tiff of a folder, as INPUT-NAME.mbtiles in -o DIR (default: the current \
            directory). An input that fails is named on stderr and the others are still built; \
            the exit status is then the first failure's, after a last line saying which failed.

            --shard K/N builds part K (0…N−1) of the work: the tiles under its share of a shard \
            zoom, with their exact pixels kept for `tilepack merge`, which joins the N shard \
            archives into the single-machine build's archive (checks/tools/cluster_build.py runs the \
            shards and the merge on a Dask cluster).
            """
    )

    @Argument(help: "The source GeoTIFF; or several, a folder of them, or a .vrt (one mosaic).")
    var sources: [String]

    @Option(
        name: [.short, .long],
        help: """
            Output archive (default: the source's name with .mbtiles, in the current directory); with --each, \
            the directory the archives go in.
            """)
    var output: String?

    @Flag(help: "One archive per input file (a folder: per GeoTIFF in it) instead of one mosaic.")
    var each = false
    @Option(
        help: """
            Archive kind: mbtiles or pmtiles (default: pmtiles when -o ends .pmtiles, else mbtiles). \
            pmtiles builds OUT.pmtiles.mbtiles, converts it (see `tilepack convert`) and removes it.
            """)
    var format: TileArchiveKind?

    @Option(help: "Lowest zoom (default: the highest zoom at which the region fits in one or two tiles).")
    var minZoom: Int?

    @Option(help: "Highest zoom (default: the first zoom whose pixels are at least as fine as the source's).")
    var maxZoom: Int?

    @Option(
        help: "Resampling at the max zoom: nearest, bilinear or average (palette and class sources always use nearest)."
    )
    var resampling: Resampling = .bilinear

    @Option(
        help:
            """
            Tile codec: astc6x6 (GPU texture, 3.56 bpp, seam-free; the default), astc4x4, astc8x8, pvrtc4 or \
            pvrtc2 (PVRTC GPU textures for pre-A8 iOS and PowerVR), or png (for GDAL, QGIS, web viewers).
            """
    )
    var codec: TileCodecChoice = .astc6x6

    @Option(
        help:
            """
            PVRTC/ASTC encoder level: quality (least-squares refinement; ASTC also tries several block layouts \
            and two partitions) or fast (one pass).
            """
    )
    var level: PVRTCEncoder.Level = .quality

    @Option(
        help:
            """
            ASTC rate-distortion λ: squared error traded per bit of deflated tile size, so tiles compress \
            smaller at a small loss; each tile scales it by its own error, so flat tiles trade less (0 is off; \
            default \(ASTCRateDistortion.standard) at --level quality, chosen on real tiles, 0 at fast: \
            docs/CODECS.md). Refused with png and pvrtc.
            """
    )
    var rdo: Double?

    @Option(
        help:
            """
            How samples become colours: auto (decides from the file; see above), rgb, elevation (tint × \
            hillshade), bathymetry (the seabed ramp × hillshade), hillshade (grey, gdaldem's bytes), percent (a \
            fixed 0…100 ramp), classes (a categorical palette), stretch or palette.
            """
    )
    var color: ColorMode = .auto

    @Option(
        help: ArgumentHelp(
            """
            Terrain tint: absolute (the default; bathymetry and land, -11000…8849 m), land, bathymetry, or a \
            gdaldem color-relief colour file.
            """,
            discussion:
                """
                A colour file has lines \"elevation R G B [A]\" (or \"elevation colourname\"); the elevation may \
                be metres, a percentage of the source's range (50%) or nv (nodata; tiles keep nodata \
                transparent); fields split by spaces, tabs, commas or colons; # starts a comment. A line that \
                does not read is an error naming the line.
                """,
            valueName: "preset|file"))
    var tint: String?

    // .unconditional: `--tint-range -2340..0` must take "-2340..0" as the value, not as an option.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            """
            Stretch the tint over MIN..MAX metres (e.g. 1200..2900, -2340..0), or over this build's 1st–99th \
            percentiles (percentile).
            """,
            discussion:
                """
                The ramp's land stops go over the part of MIN..MAX above 0 m and its sea stops over the part \
                below, so the coast stays at 0 m. A local stretch: two regions built with different ranges no \
                longer match.
                """,
            valueName: "MIN..MAX|percentile"))
    var tintRange: String?

    @Option(help: "Hillshade light direction, degrees clockwise from north (gdaldem -az).")
    var hillshadeAzimuth: Double = 315

    @Option(help: "Hillshade light altitude above the horizon, degrees (gdaldem -alt).")
    var hillshadeAltitude: Double = 45

    @Option(
        help:
            "Hillshade vertical exaggeration (gdaldem -z); the pixel size is the real ground size, so 1 is true relief."
    )
    var zFactor: Double = 1

    @Flag(help: "Hillshade lit from 225°, 270°, 315° and 360° weighted by aspect (gdaldem -multidirectional).")
    var multidirectional = false

    @Flag(help: "No shading: the tint alone (to compare tints, or to shade elsewhere).")
    var noHillshade = false

    @Option(
        help: ArgumentHelp(
            """
            Source bands to draw, numbered from 1 as in GDAL: 1 (grey), 3 (R,G,B), or one more as alpha, e.g. \
            3,2,1 for a Landsat-order stack.
            """,
            valueName: "B[,G,B[,A]]"))
    var bands: String?

    @Option(
        help: ArgumentHelp(
            """
            Which zooms keep elevation (metres, or the band's values) for query and hillshade: all (the default), \
            max-zoom or none.
            """,
            valueName: "none|max-zoom|all"))
    var elevation: ElevationLevels = .all

    @Option(
        help: ArgumentHelp(
            """
            Elevation is stored to this precision in metres (default: 0.01, or the source's own step when \
            coarser; integer sources exactly).
            """,
            discussion:
                """
                Samples are quantised to max(precision, source step) and stored as integers with a 2-D predictor \
                and deflate (q-planar-deflate, docs/FORMAT.md): a query answers within half the step. The source \
                step is 1 for integer samples and, for float samples, the coarsest of 1, 0.5, 0.25, 0.2, 0.1, \
                0.05, 0.02, 0.01 that every sampled value is a multiple of.
                """,
            valueName: "METRES"))
    var elevationPrecision: Double?

    @Option(
        help: ArgumentHelp(
            """
            How elevation is stored: quantized (the default; format version 2) or float32 (lossless Float32 as \
            before version 2, 4–5× larger).
            """,
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

    @Option(
        help: ArgumentHelp(
            "Memory the whole build may use, e.g. 512MiB (the default), 256MiB, 2GiB.",
            discussion:
                """
                Bounds the source block cache, the tiles waiting for their parents, the workers' buffers and \
                SQLite's page cache whatever the source size; a smaller budget makes smaller batches (and, below \
                ~100 MiB, fewer workers), never a failure. docs/BUILDING.md \"Building tiles\" has the model.
                """
        ))
    var memory: String = "512MiB"

    @Option(
        help: ArgumentHelp(
            "Progress on stderr: auto, bar, lines, json or none.",
            discussion:
                """
                auto is a bar redrawn in place when stderr is a terminal, else lines (one plain line every 5 s \
                and one at the end, no carriage returns); json prints one object per line (done, total, zoom, \
                tiles_per_second, eta_seconds, elapsed_seconds) at most once a second and at the end.
                """
        ))
    var progress: ProgressStyle = .auto

    @Flag(help: "Print no progress, only the summary (same as --progress none).")
    var quiet = false

    @Flag(
        help: "Continue the interrupted build of this output (same source and options) from its last committed batch.")
    var resume = false

    @Option(
        help: ArgumentHelp(
            "Build only part K of N (K from 0, e.g. 2/8); join the parts with `tilepack merge`.",
            valueName: "K/N"))
    var shard: String?

    func validate() throws {
        for (label, z) in [("--min-zoom", minZoom), ("--max-zoom", maxZoom)] {
            if let z, !(0...TileID.maxZoom).contains(z) {
                throw ValidationError("\(label) \(z) must be 0…\(TileID.maxZoom)")
            }
        }
        if let a = minZoom, let b = maxZoom, a > b { throw ValidationError("--min-zoom \(a) is above --max-zoom \(b)") }
        if sources.isEmpty { throw ValidationError("give a GeoTIFF, several, a folder or a .vrt") }
        if let p = elevationPrecision, !(p.isFinite && p > 0) {
            throw ValidationError("--elevation-precision \(p) must be a positive finite number of metres, e.g. 0.01")
        }
        if !(1...65536).contains(maxOpenFiles) {
            throw ValidationError("--max-open-files \(maxOpenFiles) must be 1…65536")
        }
        if let workers, !(1...256).contains(workers) { throw ValidationError("--workers \(workers) must be 1…256") }
        if let shard, BuildShard(argument: shard) == nil {
            throw ValidationError("--shard \(shard) must be K/N with 0 ≤ K < N ≤ \(BuildShard.maxCount), e.g. 0/4")
        }
        do { _ = try MemoryBudget(parsing: memory) } catch { throw ValidationError("--memory \(error)") }
        if let bands { do { _ = try BandSelection.parse(bands) } catch { throw ValidationError(error.description) } }
        if each, name != nil { throw ValidationError("--name names one archive; --each makes one per input") }
        if each, shard != nil { throw ValidationError("--shard splits one build; --each makes one per input") }
        if shard != nil, format == .pmtiles || output.map(TileArchiveKind.init(outputPath:)) == .pmtiles {
            throw ValidationError("--shard builds MBTiles shards for `tilepack merge`; convert the merged archive")
        }
        if let format, let output, !each, TileArchiveKind(outputPath: output) != format {
            throw ValidationError("--format \(format.rawValue) contradicts -o \(output): name it .\(format.rawValue)")
        }
        if quiet, progress != .auto, progress != .none {
            throw ValidationError("--quiet (no progress) contradicts --progress \(progress.rawValue)")
        }
    }

    @OptionGroup var projDB: ProjDBOptions

    func run() throws {
        let interruption = BuildInterruption()
        let signals = InterruptSignals(interruption)
        defer { signals.cancel() }
        if each {
            try buildEach(interruption)
        } else {
            try build(sources, output: output, interruption)
        }
    }

    /// `--each`: every input (a folder: each of its GeoTIFFs) built on its own into the output
    /// directory. A failure is reported and the others go on; an interruption stops them all.
    func buildEach(_ interruption: BuildInterruption) throws {
        let inputs: [String]
        do {
            if let output { try OutputPath.checkDirectory(output, for: output) }
            inputs = try RegionInput.each(sources)
        } catch let error as any TilePackError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        let directory = output.map { $0.hasSuffix("/") ? $0 : $0 + "/" } ?? ""
        let archives = inputs.map {
            let mbtiles = RegionBuild.Request(sourcePath: $0).resolvedOutputPath
            return directory + (format == .pmtiles ? String(mbtiles.dropLast(8)) + ".pmtiles" : mbtiles)
        }
        var claimed: [String: String] = [:]
        for (input, archive) in zip(inputs, archives) {
            if let other = claimed.updateValue(input, forKey: archive) {
                printError("\(other) and \(input) would both be built into \(archive): rename one")
                throw ExitCode(TilePackErrorCategory.invalidInput.exitStatus)
            }
        }
        var failed: [(input: String, status: Int32)] = []
        for (input, archive) in zip(inputs, archives) {
            do {
                try build([input], output: archive, interruption)
            } catch let exit as ExitCode {
                if interruption.signal != nil { throw exit }
                failed.append((input, exit.rawValue))
            }
        }
        if let first = failed.first {
            printError(
                """
                built \(inputs.count - failed.count) of \(inputs.count) archives; failed: \
                \(failed.map(\.input).joined(separator: ", "))
                """)
            throw ExitCode(first.status)
        }
    }

    /// One build of `paths` (one file, several, a folder or a VRT: one mosaic) into `output`.
    /// - Throws: `ExitCode` after printing the error (130/143 after an interruption).
    func build(_ paths: [String], output: String?, _ interruption: BuildInterruption) throws {
        var request = RegionBuild.Request(sourcePaths: paths)
        request.maxOpenFiles = maxOpenFiles
        request.crsRegistry = try projDB.registry()
        let kind = format ?? output.map(TileArchiveKind.init(outputPath:)) ?? .mbtiles
        // PMTiles: the MBTiles build goes to an intermediate file, converted at the end.
        let pmtilesOutput: String? =
            kind == .pmtiles ? (output ?? String(request.resolvedOutputPath.dropLast(8)) + ".pmtiles") : nil
        request.outputPath = pmtilesOutput.map(ArchiveConversion.intermediateMBTiles(for:)) ?? output
        request.options.minZoom = minZoom
        request.options.maxZoom = maxZoom
        request.options.resampling = resampling
        request.options.colorMode = color
        do {
            try OutputPath.checkDirectory(of: request.resolvedOutputPath)
            request.options.terrain = try terrainStyle()
            try request.options.terrain.hillshade.validate()
        } catch let error as any TilePackError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        request.options.bands = try bands.map { text in try BandSelection.parse(text) }
        request.options.keepEmpty = keepEmpty
        request.options.elevationLevels = elevation
        request.options.elevationPrecision = elevationPrecision
        request.options.elevationStorage = elevationEncoding
        if let workers { request.options.workers = workers }
        do { request.options.memoryBudget = try MemoryBudget(parsing: memory).bytes } catch let error
            as MemoryBudgetError
        {
            printError("--memory \(error.description)")
            throw ExitCode(error.category.exitStatus)
        }
        request.codec = codec
        request.codecLevel = level
        do {
            request.rdo = try rdo.map { try ASTCRateDistortion(lambda: $0) }
            _ = try codec.rateDistortion(request.rdo)
        } catch let error as ASTCRateDistortionError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        request.name = name
        request.description = description
        request.attribution = attribution
        request.resume = resume
        request.shard = shard.flatMap(BuildShard.init(argument:))
        request.interruption = interruption
        let display = BuildProgressDisplay(style: quiet ? .none : progress.resolved(stderrIsTerminal: stderrIsTerminal))
        do {
            let result = try RegionBuild(request).run { display.update($0) }
            display.finish()
            let converted = try pmtilesOutput.map {
                try ArchiveConversion.finishPMTilesBuild(intermediate: result.outputPath, output: $0)
            }
            printSummary(result, request, converted: converted)
        } catch let stop as BuildInterrupted {
            display.interrupt()
            printNotice("interrupted: run the same command with --resume to continue (\(stop.tilesDone) tiles done)")
            throw ExitCode(128 + stop.signal)
        } catch let error as any TilePackError {
            display.interrupt()  // end the progress bar's line first
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }

    /// The summary on stdout. A resumed build counts the whole archive (the file's rows) and
    /// says what this run added; per zoom likewise.
    func printSummary(
        _ result: RegionBuild.Result, _ request: RegionBuild.Request,
        converted: ArchiveConversion.Report? = nil
    ) {
        let r = result.report
        let perZoom = result.archive.tilesPerZoom ?? r.perZoom
        let zooms = perZoom.keys.sorted().map { "z\($0): \(perZoom[$0, default: 0])" }.joined(separator: ", ")
        print(
            """
            wrote \(converted?.output ?? result.outputPath): \(result.archive.tiles) tiles \
            (\(result.archive.distinctImages) distinct, \(result.archive.storedBytes) bytes), \(result.codec), zooms \
            \(r.metadata.minZoom)–\(r.metadata.maxZoom)
            """
        )
        if let converted {
            print(
                """
                  pmtiles: converted from \(result.outputPath) (removed); \(converted.distinctTiles) distinct \
                tiles\(converted.terrainOutput.map { "; elevation in \($0)" } ?? "")
                """
            )
        }
        // The terrain modes say which tint and light they drew with.
        let terrain = r.hillshade.map { "; tint: \(r.tint ?? "none (grey)"); hillshade \($0)" } ?? ""
        print("  colour: \(r.color)" + (r.color.valueKind.map { "; values: \($0.rawValue)" } ?? "") + terrain)
        if let bands = result.bands { print("  bands: \(bands)") }
        if let datum = result.datumTransform { print("  datum transform: \(datum)") }
        if r.hillshade == nil, tint != nil || tintRange != nil {
            // auto chose a mode without a tint: say so rather than drop the options unseen.
            print(
                """
                  tint: --tint/--tint-range not used: \(r.color.mode.rawValue) draws no tint (only elevation \
                and bathymetry do)
                """
            )
        }
        if let from = result.resumedFrom {
            print(
                """
                  resumed \(from): this run added \(r.tilesWritten) tiles; \(r.resumedTiles) planned tiles \
                were already done
                """)
        } else if resume {
            print("  --resume: no interrupted build of \(result.outputPath) to continue; built from the start")
        }
        if let shard = request.shard {
            print("  shard \(shard): join the \(shard.count) shards with `tilepack merge`")
        }
        print("  per zoom: \(zooms)")
        if let m = result.mosaic {
            print(
                """
                  mosaic: \(m.files) files, at most \(m.peakOpenFiles) open at once (limit \(m.maxOpenFiles), \
                \(m.opens) opens)
                """
            )
        }
        if let m = r.memory { print("  memory: \(m)") }
        print(
            """
              empty tiles skipped: \(r.emptySkipped); elevation tiles: \
            \(result.archive.elevationTiles)\(elevationStepNote(result.elevationStep)); \
            \(String(format2: r.seconds)) s
            """
        )
    }
}

extension BuildCommand {
    /// `--tint`, `--tint-range` and the light as a ``TerrainStyle``. A `--tint` that is no
    /// preset is a colour file, read whole (at most ``ColorReliefFile/maxBytes``, regular
    /// files only, so a FIFO cannot hang the build).
    /// " (quantised to steps of 1)" (in the band's unit), and why when that is coarser than
    /// `--elevation-precision`.
    func elevationStepNote(_ step: Double?) -> String {
        guard let step else { return "" }
        let text = MBTilesMetadata.precisionText(step)
        if let asked = elevationPrecision, asked < step {
            return
                """
                 (quantised to steps of \(text), the source's own step: --elevation-precision \
                \(MBTilesMetadata.precisionText(asked)) is finer than the source holds)
                """
        }
        return " (quantised to steps of \(text))"
    }

    func terrainStyle() throws -> TerrainStyle {
        var style = TerrainStyle(
            hillshade: Hillshade(
                azimuth: hillshadeAzimuth, altitude: hillshadeAltitude,
                zFactor: zFactor, multidirectional: multidirectional,
                enabled: !noHillshade))
        if noHillshade, color == .hillshade {
            throw BuildError.invalidOption("--no-hillshade contradicts --color hillshade")
        }
        if tint != nil || tintRange != nil, ![.auto, .elevation, .bathymetry].contains(color) {
            throw BuildError.invalidOption(
                "--tint and --tint-range colour terrain; --color \(color.rawValue) draws no tint")
        }
        if let tintRange { style.range = try TintRange(argument: tintRange) }
        if let tint {
            if let preset = TintChoice(preset: tint) {
                style.tint = preset
            } else {
                let bytes: [UInt8]
                do throws(RegionFiles.ReadFailure) {
                    bytes = try RegionFiles.regularFileBytes(path: tint, limit: ColorReliefFile.maxBytes)
                } catch {
                    let hint =
                        tint.contains("/") || tint.contains(".")
                        ? "" : " (presets: \(TintChoice.presetNames.joined(separator: ", ")))"
                    throw ColorReliefFileError(path: tint, line: nil, problem: error.problem + hint)
                }
                style.tint = .file(try ColorReliefFile(bytes: bytes, path: tint))
            }
        }
        return style
    }
}

extension Resampling: ExpressibleByArgument {}
extension ColorMode: ExpressibleByArgument {}
extension ElevationLevels: ExpressibleByArgument {}
extension ElevationStorage: ExpressibleByArgument {}
extension TileCodecChoice: ExpressibleByArgument {}
extension TileArchiveKind: ExpressibleByArgument {}

extension String {
    /// A number with two decimals, without Foundation's String(format:).
    init(format2 value: Double) {
        let scaled = (value * 100).rounded()
        let whole = Int(scaled) / 100, frac = abs(Int(scaled)) % 100
        self = "\(whole).\(frac < 10 ? "0" : "")\(frac)"
    }
}
