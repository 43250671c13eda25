import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// `tilepack build` as one library call: GeoTIFF (or a mosaic of them) in, MBTiles archive out.
///
/// Stages, left to right: the TIFF reader (windowed reads) → Geo (CRS, lon/lat ↔ pixel) →
/// the build (plan, resample, pyramid, colour, encode in parallel) → the MBTiles writer. The
/// archive is built in a temporary file beside the target and renamed into place only when
/// complete, so an interrupted or failed build leaves any previous archive untouched.
public struct RegionBuild: Sendable {
    /// What to build.
    public struct Request: Sendable {
        /// What to read: one GeoTIFF, several (a mosaic, later files win), a folder of
        /// GeoTIFFs, or a GDAL VRT (see ``RegionInput``).
        public var sourcePaths: [String]
        /// The first (usually only) source path.
        public var sourcePath: String {
            get { sourcePaths.first ?? "" }
            set { sourcePaths = [newValue] }
        }
        /// Most mosaic files open at once (each with its own block cache).
        public var maxOpenFiles = MosaicSource.defaultMaxOpenFiles
        /// Where EPSG codes outside the built-in table are resolved (proj.db; `--proj-db`).
        public var crsRegistry: CRSRegistry = .builtin
        /// Target archive; nil = the source's base name with `.mbtiles`, in the current directory.
        public var outputPath: String?
        public var options = BuildOptions()
        /// ASTC 6×6 by default: the best seam-free quality at ≤ 4 GPU bits per pixel on real
        /// tiles (docs/CODECS.md, "Seams").
        public var codec: TileCodecChoice = .astc6x6
        public var codecLevel: PVRTCEncoder.Level = .quality
        /// ASTC's rate-distortion λ (`--rdo`); nil = the codec's default at `codecLevel`
        /// (``TileCodecChoice/rateDistortion(_:level:argument:)``), none for PNG and PVRTC
        /// (given with those, the build throws ``ASTCRateDistortionError``).
        public var rdo: ASTCRateDistortion?

        /// The λ this build encodes with and records: `rdo`, else the codec's default at
        /// `codecLevel`; nil for PNG and PVRTC. One place, so the tiles and the recorded build
        /// options cannot disagree.
        /// - Throws: ``ASTCRateDistortionError`` when `rdo` is given for PNG or PVRTC.
        func rateDistortion() throws(ASTCRateDistortionError) -> ASTCRateDistortion? {
            try codec.rateDistortion(rdo, level: codecLevel)
        }
        /// MBTiles `name`; nil = the source's base name.
        public var name: String?
        public var description = ""
        public var attribution = ""
        /// Continue the newest interrupted temporary archive of the output (a build killed at
        /// any moment) from its last committed batch; refused when it was built from another
        /// source or with other options. Without it, such files are deleted.
        public var resume = false
        /// Build only this part of the work (see ``ShardPartition``); join with ``ShardMerge``.
        public var shard: BuildShard?
        /// Stops the build when set (a signal, a Cancel button): ``BuildInterrupted`` is thrown
        /// and the temporary archive kept for ``resume``.
        public var interruption: BuildInterruption?

        public init(sourcePath: String) {
            self.sourcePaths = [sourcePath]
        }

        public init(sourcePaths: [String]) {
            self.sourcePaths = sourcePaths
        }

        /// The archive path the build writes.
        public var resolvedOutputPath: String {
            if let outputPath { return outputPath }
            return Self.baseName(sourcePath) + ".mbtiles"
        }

        static func fileName(_ path: String) -> String {
            path.split(separator: "/").last.map(String.init) ?? path
        }

        static func baseName(_ path: String) -> String {
            let file = fileName(path)
            if let dot = file.lastIndex(of: "."), dot != file.startIndex { return String(file[..<dot]) }
            return file
        }
    }

    /// What a finished build did.
    public struct Result: Sendable {
        public let outputPath: String
        public let report: BuildReport
        public let archive: MBTilesWriter.Statistics
        public let codec: String
        /// For a mosaic: its files and how many were open at once; nil for one file.
        public let mosaic: MosaicSummary?
        /// The interrupted temporary archive the build continued, if any.
        public let resumedFrom: String?
        /// The bands drawn when not the source's own (``BandSelection``), or a hint at
        /// `--bands` for a stack drawn as its first three bands; nil otherwise.
        public var bands: String? = nil
        /// The step elevation was quantised to (`q-planar-deflate`); nil when stored as Float32
        /// or not at all.
        public var elevationStep: Double? = nil
        /// How the source's lon/lat reach WGS 84 (``CRS/datumTransformSummary``), as written
        /// to `tilepack:datum_transform`.
        public var datumTransform: String? = nil
    }

    /// What a mosaic build read.
    public struct MosaicSummary: Sendable {
        public let files: Int
        public let opens: Int
        public let peakOpenFiles: Int
        public let maxOpenFiles: Int
    }

    /// The source opened: one TIFF, or a mosaic over its files.
    struct OpenedSource {
        let source: any RasterSource
        let georeference: GeoReference
        let mosaic: MosaicSource?
        let input: RegionInput
        /// What the summary says of the bands drawn (see ``Result/bands``).
        var bands: String? = nil
        /// A VRT's digest, taken from the bytes its reader parsed (nil: hash the file).
        var sourceSHA256: String? = nil
    }

    /// Resolves and opens the request's sources (headers only; no pixel is read), seen
    /// through the VRT's band choice and ``BuildOptions/bands`` (``BandSelection``).
    /// - Throws: ``BuildError/invalidOption(_:)`` for `--bands` naming a band the source lacks.
    func open() throws -> OpenedSource {
        var opened = try openFiles()
        if let m = opened.mosaic, let picks = m.vrtBands {
            opened = OpenedSource(
                source: SelectedBandsSource(base: m, picks: picks, extra: m.vrtBandHints),
                georeference: opened.georeference, mosaic: m, input: opened.input,
                sourceSHA256: opened.sourceSHA256)
        }
        let selection = try BandSelection.resolve(requested: request.options.bands, source: opened.source)
        if let selection {
            opened = OpenedSource(
                source: SelectedBandsSource(base: opened.source, picks: selection.bands),
                georeference: opened.georeference, mosaic: opened.mosaic, input: opened.input,
                bands: selection.description, sourceSHA256: opened.sourceSHA256)
        } else {
            opened.bands = BandSelection.hint(for: opened.source, selection: nil)
        }
        return opened
    }

    private func openFiles() throws -> OpenedSource {
        let input = try RegionInput.resolve(request.sourcePaths)
        switch input {
        case .file(let path):
            let tiff = try TIFFFile(
                path: path, cacheBytes: BuildMemoryPlan.sourceCacheBytes(budget: request.options.memoryBudget))
            return OpenedSource(
                source: tiff,
                georeference: try GeoReference(image: tiff.image, path: tiff.path, registry: request.crsRegistry),
                mosaic: nil, input: input)
        case .files(let paths, _):
            let m = try MosaicSource(files: paths, maxOpenFiles: request.maxOpenFiles, registry: request.crsRegistry)
            return OpenedSource(source: m, georeference: m.grid, mosaic: m, input: input)
        case .vrt(let path):
            let vrt = try VRTDocument(path: path)
            let m = try MosaicSource(vrt: vrt, maxOpenFiles: request.maxOpenFiles, registry: request.crsRegistry)
            return OpenedSource(source: m, georeference: m.grid, mosaic: m, input: input, sourceSHA256: vrt.sha256)
        }
    }

    public let request: Request
    public init(_ request: Request) { self.request = request }

    /// The source opened and placed on the earth, and the tile plan, without building:
    /// cheap (no pixel is read), so callers can show the plan first.
    public func prepare() throws -> (
        source: any RasterSource, georeference: GeoReference, builder: TileBuilder, plan: TilePlan
    ) {
        let opened = try open()
        let (builder, plan) = try plan(opened)
        return (opened.source, opened.georeference, builder, plan)
    }

    private func plan(_ opened: OpenedSource) throws -> (TileBuilder, TilePlan) {
        var options = request.options
        // A mosaic's file pool keeps its own fixed cache; the budget plan counts it.
        if opened.mosaic != nil { options.sourceCacheBytes = TIFFFilePool.totalCacheBytes }
        let builder = TileBuilder(
            source: opened.source, georeference: opened.georeference, options: options,
            codec: request.codec.codec(
                level: request.codecLevel,
                rdo: try request.rateDistortion() ?? .off))
        do {
            let plan = try builder.plan()
            // Refused here, before `build` prints its plan or reads statistics of every band.
            try builder.checkSourceFits(plan)
            return (builder, plan)
        } catch let error as BuildError {
            throw InputFileError(path: opened.input.label, detail: error.description)
        }
    }

    /// Builds the archive. `progress` gets the tiles done, planned and the zoom being worked
    /// on, on the calling thread.
    public func run(progress: ((TileBuilder.Progress) -> Void)? = nil) throws -> Result {
        let opened = try open()
        let (builder, plan) = try plan(opened)
        let output = request.resolvedOutputPath
        let meta = plan.metadata
        let isPVRTC = request.codec != .png
        var metadata = MBTilesMetadata(
            name: request.name ?? Request.baseName(opened.input.label),
            format: request.codec.mbtilesFormat,
            codec: request.codec.rawValue,
            bounds: meta.bounds,
            center: .init(lon: meta.bounds.centerLon, lat: meta.bounds.centerLat, zoom: meta.minZoom),
            minZoom: meta.minZoom, maxZoom: meta.maxZoom,
            description: request.description,
            attribution: request.attribution,
            codecLevel: isPVRTC ? request.codecLevel.rawValue : nil,
            payloadCompression: request.codec.payloadCompression,
            tileSize: WebMercator.tileSize,
            sourceFile: nil, sourceSHA256: nil
        )
        switch opened.input {
        case .file(let path), .vrt(let path):
            metadata.sourceFile = Request.fileName(path)
            metadata.sourceSHA256 = try opened.sourceSHA256 ?? FileDigest.sha256(path: path)
        case .files: break  // no single source file: `tilepack:sources` lists them
        }
        if let mosaic = opened.mosaic {
            metadata.sources = try JSONOutput.string(
                try mosaic.files.map {
                    RecordedSource(file: Request.fileName($0.path), sha256: try FileDigest.sha256(path: $0.path))
                })
        }
        metadata.buildOptions = try buildOptionsJSON(plan: plan)
        let identity = try buildIdentity(
            metadata: metadata, datumTransformation: opened.georeference.crs.datumTransformation)
        var resuming: MBTilesWriter.Interrupted? = nil
        if request.resume,
            let interrupted = MBTilesWriter.interrupted(target: output).first(where: { $0.identity != nil })
        {
            try Self.check(
                interrupted.identity ?? [:], path: interrupted.path, against: identity, reference: "this build")
            resuming = interrupted
        }
        let partition = request.shard.map { ShardPartition(plan: plan, count: $0.count) }
        var writerOptions = self.writerOptions
        writerOptions.cacheBytes = BuildMemoryPlan.sqliteCacheBytes(budget: request.options.memoryBudget)
        if request.options.elevationStorage == .quantized, request.options.elevationLevels != .none {
            do {
                writerOptions.elevationStep = try ElevationPrecision.step(
                    for: opened.source, precision: request.options.elevationPrecision)
            } catch let error as BuildError {
                throw InputFileError(path: opened.input.label, detail: error.description)
            }
        }
        let writer = try MBTilesWriter(
            path: output, metadata: metadata, options: writerOptions,
            journal: MBTilesWriter.Journal(identity: identity, keptRootZoom: partition?.zoom),
            resuming: resuming)
        let report: BuildReport
        do {
            if interruptAfterTiles != nil || request.interruption != nil {
                let sink = InterruptingSink(
                    writer: writer, limit: interruptAfterTiles ?? .max, interruption: request.interruption)
                report = try builder.run(sink: sink, journal: writer, shard: request.shard, progress: progress)
            } else {
                report = try builder.run(sink: writer, journal: writer, shard: request.shard, progress: progress)
            }
        } catch let error as BuildError {
            // An option no source could satisfy (a budget below the smallest build) is the
            // caller's argument, not the file's fault: it keeps its usage category.
            if error.code == .invalidOption { throw error }
            throw InputFileError(path: opened.input.label, detail: error.description, cause: error)
        } catch is InterruptingSink.Interrupted {
            writer.abandon()
            throw InterruptingSink.Interrupted()
        } catch let stop as InterruptingSink.Requested {
            // As a kill would leave it: the open batch rolled back, the committed ones and the
            // journal kept under the temporary name that `--resume` looks for.
            writer.abandon()
            throw BuildInterrupted(
                temporaryPath: writer.temporaryPath, signal: stop.signal,
                tilesDone: Self.tilesDone(plan, roots: MBTilesWriter.committedRoots(path: writer.temporaryPath)))
        }
        if let shard = request.shard, let partition {
            writer.metadata.extra[ShardRecord.key] = try JSONOutput.string(
                ShardRecord(
                    index: shard.index, count: shard.count, zoom: partition.zoom,
                    elevation: report.color.valueKind != nil,
                    optionsSHA256: FileDigest.sha256(text: identity[IdentityKey.options] ?? "")))
        }
        if let kind = report.color.valueKind { writer.metadata.extra[MBTilesMetadata.Key.valueKind] = kind.rawValue }
        writer.metadata.extra[MBTilesMetadata.Key.colorMode] = report.color.mode.rawValue
        if !report.legend.isEmpty {
            writer.metadata.extra[MBTilesMetadata.Key.legend] = try LegendEntry.json(report.legend)
        }
        // Metadata, not identity (which carries the operations itself when proj.db gave them).
        let datumTransform = opened.georeference.crs.datumTransformSummary
        writer.metadata.extra[MBTilesMetadata.Key.datumTransform] = datumTransform
        try writer.finish()
        let summary = opened.mosaic.map { m in
            let s = m.openFileStatistics
            return MosaicSummary(
                files: m.files.count, opens: s.opens, peakOpenFiles: s.peakOpen, maxOpenFiles: m.maxOpenFiles)
        }
        return Result(
            outputPath: output, report: report, archive: writer.statistics, codec: request.codec.rawValue,
            mosaic: summary, resumedFrom: resuming?.path, bands: opened.bands,
            elevationStep: writer.statistics.elevationTiles > 0 ? writerOptions.elevationStep : nil,
            datumTransform: datumTransform)
    }

    /// Planned tiles under the outermost of `roots`: what a resume skips (a root's subtree is
    /// skipped whole, so a root under another counts once, with it), empty tiles included.
    static func tilesDone(_ plan: TilePlan, roots: Set<TileID>) -> Int {
        roots.reduce(0) { sum, root in
            var above = root.parent
            while let a = above {
                if roots.contains(a) { return sum }
                above = a.parent
            }
            return sum + plan.plannedSubtree(root)
        }
    }

    /// Batching of the archive writer (tests use small batches to commit often).
    var writerOptions = MBTilesWriter.Options()

    /// Tests only: the build stops as if killed after this many tiles went to the writer
    /// (the open batch lost, the temporary archive left for a resume).
    var interruptAfterTiles: Int?

    /// Names in a build's journal identity.
    enum IdentityKey {
        static let source = "source_sha256", options = "options", shard = "shard"
    }

    /// What a resume (and a merge of shards) must match: the source's digest, every option
    /// that changes a tile's bytes, the datum operations proj.db gave (another proj.db, or a
    /// grid installed in between, moves the map by metres), and the shard.
    func buildIdentity(
        metadata: MBTilesMetadata, datumTransformation: DatumTransformation? = nil
    ) throws -> [String: String] {
        let o = request.options
        let options = try JSONOutput.string(
            Fingerprint(
                recorded: metadata.buildOptions ?? "", approximationError: o.approximationError,
                elevationRange: o.elevationRange.map { [$0.lowerBound, $0.upperBound] }, tileSize: metadata.tileSize,
                terrain: o.terrain.fingerprint, datumTransform: datumTransformation?.summary))
        return [
            IdentityKey.source: Self.sourceDigest(sha256: metadata.sourceSHA256, sources: metadata.sources),
            IdentityKey.options: options, IdentityKey.shard: request.shard?.description ?? "none",
        ]
    }

    /// One digest for what was read: the source file's SHA-256, or for mosaics the SHA-256
    /// of the recorded file list (names and digests).
    static func sourceDigest(sha256: String?, sources: String?) -> String {
        guard let sources else { return sha256 ?? "" }
        return FileDigest.sha256(text: (sha256 ?? "") + "\n" + sources)
    }

    /// Throws the first difference of `identity` (from `path`) from `expected`.
    static func check(
        _ identity: [String: String], path: String, against expected: [String: String], reference: String
    ) throws {
        let (source, wanted) = (identity[IdentityKey.source] ?? "", expected[IdentityKey.source] ?? "")
        if source != wanted {
            throw ShardError.differentSource(path: path, sha256: source, expected: wanted, reference: reference)
        }
        let (options, wantedOptions) = (identity[IdentityKey.options] ?? "", expected[IdentityKey.options] ?? "")
        if options != wantedOptions {
            throw ShardError.differentOptions(
                path: path, options: options, expected: wantedOptions, reference: reference)
        }
        let (shard, wantedShard) = (identity[IdentityKey.shard] ?? "none", expected[IdentityKey.shard] ?? "none")
        if shard != wantedShard {
            throw ShardError.differentSplit(
                path: path, split: "shard \(shard)", expected: "shard \(wantedShard)", reference: reference)
        }
    }

    /// The tile-affecting options beyond `tilepack:build_options`.
    struct Fingerprint: Encodable {
        let recorded: String
        let approximationError: Double
        let elevationRange: [Double]?
        let tileSize: Int
        /// The tint's stops (a colour file's contents), range and light.
        let terrain: String
        /// The proj.db operations to WGS 84 (``DatumTransformation/summary``); absent when the
        /// CRS needs none or states its own TOWGS84, so those identities stay as they were.
        let datumTransform: String?

        enum CodingKeys: String, CodingKey {
            case recorded = "build_options", approximationError = "approximation_error"
            case elevationRange = "elevation_range", tileSize = "tile_size", terrain
            case datumTransform = "datum_transform"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(recorded, forKey: .recorded)
            try c.encode(approximationError, forKey: .approximationError)
            try c.encodeOrNull(elevationRange, forKey: .elevationRange)
            try c.encode(tileSize, forKey: .tileSize)
            try c.encode(terrain, forKey: .terrain)
            try c.encodeIfPresent(datumTransform, forKey: .datumTransform)
        }
    }

    /// The options as JSON (`tilepack:build_options`), so an archive says how it was made.
    func buildOptionsJSON(plan: TilePlan) throws -> String {
        let o = request.options
        return try JSONOutput.string(
            RecordedOptions(
                minZoom: plan.minZoom, maxZoom: plan.maxZoom, resampling: o.resampling.rawValue,
                colorMode: o.colorMode.rawValue, keepEmpty: o.keepEmpty, codec: request.codec.rawValue,
                codecLevel: request.codec == .png ? nil : request.codecLevel.rawValue,
                rdo: try request.rateDistortion()?.description,
                tint: o.terrain.tint?.name, tintRange: o.terrain.range?.description,
                hillshade: o.terrain.hillshade == Hillshade() ? nil : o.terrain.hillshade.description, bands: o.bands,
                elevation: o.elevationLevels == .all ? nil : o.elevationLevels.rawValue,
                elevationEncoding: o.elevationStorage == .quantized ? nil : o.elevationStorage.rawValue,
                elevationPrecision: o.elevationPrecision))
    }

    /// One entry of `tilepack:sources`.
    struct RecordedSource: Encodable {
        let file: String
        let sha256: String
    }

    /// `tilepack:build_options`: `codec_level` is null for PNG (it has no levels).
    struct RecordedOptions: Encodable {
        let minZoom: Int, maxZoom: Int
        let resampling: String, colorMode: String
        let keepEmpty: Bool
        let codec: String
        let codecLevel: String?
        /// ASTC's rate-distortion λ (`--rdo`, the default's when not given); absent for PNG and PVRTC.
        var rdo: String? = nil
        /// `--tint`, `--tint-range` and the light, each only when not the default (absent then).
        var tint: String? = nil, tintRange: String? = nil, hillshade: String? = nil
        /// `--bands` as given (1-based); omitted when not given, so older identities still match.
        var bands: [Int]? = nil
        /// The elevation options, each written only when not the default (so the
        /// options of a default build read as before format version 2).
        var elevation: String? = nil
        var elevationEncoding: String? = nil
        var elevationPrecision: Double? = nil

        enum CodingKeys: String, CodingKey {
            case resampling, codec, tint, hillshade, bands, elevation, rdo
            case tintRange = "tint_range"
            case elevationEncoding = "elevation_encoding"
            case elevationPrecision = "elevation_precision"
            case minZoom = "min_zoom"
            case maxZoom = "max_zoom"
            case colorMode = "color_mode"
            case keepEmpty = "keep_empty"
            case codecLevel = "codec_level"
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(minZoom, forKey: .minZoom)
            try c.encode(maxZoom, forKey: .maxZoom)
            try c.encode(resampling, forKey: .resampling)
            try c.encode(colorMode, forKey: .colorMode)
            try c.encode(keepEmpty, forKey: .keepEmpty)
            try c.encode(codec, forKey: .codec)
            try c.encodeOrNull(codecLevel, forKey: .codecLevel)
            try c.encodeIfPresent(rdo, forKey: .rdo)
            try c.encodeIfPresent(tint, forKey: .tint)
            try c.encodeIfPresent(tintRange, forKey: .tintRange)
            try c.encodeIfPresent(hillshade, forKey: .hillshade)
            if let bands { try c.encode(bands, forKey: .bands) }
            try c.encodeIfPresent(elevation, forKey: .elevation)
            try c.encodeIfPresent(elevationEncoding, forKey: .elevationEncoding)
            try c.encodeIfPresent(elevationPrecision, forKey: .elevationPrecision)
        }
    }
}

/// Passes tiles to the writer until a ``BuildInterruption`` is set (``Requested``) or, in
/// tests, until `limit` (``Interrupted``); the build then abandons the writer as a killed
/// process would. Polled once per tile: the workers stop when their level is written.
final class InterruptingSink: TileSink {
    /// The tests' limit was reached.
    struct Interrupted: Error, Equatable {}
    /// The ``BuildInterruption`` was set.
    struct Requested: Error { let signal: Int32 }
    let writer: MBTilesWriter
    let limit: Int
    let interruption: BuildInterruption?
    private var tiles = 0

    init(writer: MBTilesWriter, limit: Int, interruption: BuildInterruption? = nil) {
        self.writer = writer
        self.limit = limit
        self.interruption = interruption
    }

    func write(tile: TileID, encoded: [UInt8]) throws {
        if let signal = interruption?.signal { throw Requested(signal: signal) }
        guard tiles < limit else { throw Interrupted() }
        tiles += 1
        try writer.write(tile: tile, encoded: encoded)
    }

    func writeElevation(tile: TileID, metres: [Float], width: Int, height: Int) throws {
        try writer.writeElevation(tile: tile, metres: metres, width: width, height: height)
    }

    var elevationPacker: ElevationPacker? { writer.options.elevationPacker }

    func writeElevation(tile: TileID, packed: PackedElevation) throws {
        try writer.writeElevation(packed: packed, for: tile)
    }
}

/// `tilepack:shard` of a shard archive: which part of which split it is, whether the build
/// stored the single band's values (the merge's parents carry them then), and the digest of the options
/// identity (``RegionBuild/buildIdentity(metadata:)``).
struct ShardRecord: Codable, Equatable {
    static let key = "tilepack:shard"
    let index: Int
    let count: Int
    let zoom: Int
    let elevation: Bool
    let optionsSHA256: String

    enum CodingKeys: String, CodingKey {
        case index, count, zoom, elevation
        case optionsSHA256 = "options_sha256"
    }
}
