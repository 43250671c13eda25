import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// `tilepack build` as one library call: GeoTIFF in, MBTiles archive out.
///
/// Stages, left to right: the TIFF reader (windowed reads) → Geo (CRS, lon/lat ↔ pixel) →
/// Tiling (plan, resample, pyramid, colour, encode in parallel) → the MBTiles writer. The
/// archive is built in a temporary file beside the target and renamed into place only when
/// complete, so an interrupted or failed build leaves any previous archive untouched.
public struct RegionBuild: Sendable {
    /// What to build.
    public struct Request: Sendable {
        public var sourcePath: String
        /// Target archive; nil = the source's base name with `.mbtiles`, in the current directory.
        public var outputPath: String?
        public var options = BuildOptions()
        public var codec: TileCodecChoice = .pvrtc4
        public var codecLevel: PVRTCEncoder.Level = .quality
        /// MBTiles `name`; nil = the source's base name.
        public var name: String?
        public var description = ""
        public var attribution = ""

        public init(sourcePath: String) {
            self.sourcePath = sourcePath
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
    }

    public let request: Request
    public init(_ request: Request) { self.request = request }

    /// The source opened and placed on the earth, and the tile plan, without building:
    /// cheap (no pixel is read), so callers can show the plan first.
    public func prepare() throws -> (source: TIFFFile, georeference: GeoReference, builder: TileBuilder, plan: TilePlan) {
        let tiff = try TIFFFile(path: request.sourcePath)
        let georeference = try GeoReference(image: tiff.image, path: tiff.path)
        let builder = TileBuilder(source: tiff, georeference: georeference, options: request.options,
                                  codec: request.codec.codec(level: request.codecLevel))
        let plan: TilePlan
        do { plan = try builder.plan() } catch let error as BuildError {
            throw InputFileError(path: tiff.path, problem: error.description)
        }
        return (tiff, georeference, builder, plan)
    }

    /// Builds the archive. `progress` gets the tiles done, planned and the zoom being worked
    /// on, on the calling thread.
    public func run(progress: ((TileBuilder.Progress) -> Void)? = nil) throws -> Result {
        let (tiff, _, builder, plan) = try prepare()
        let output = request.resolvedOutputPath
        let meta = plan.metadata
        let isPVRTC = request.codec != .png
        var metadata = MBTilesMetadata(
            name: request.name ?? Request.baseName(request.sourcePath),
            format: request.codec.rawValue,
            codec: request.codec.rawValue,
            bounds: meta.bounds,
            center: .init(lon: meta.bounds.centerLon, lat: meta.bounds.centerLat, zoom: meta.minZoom),
            minZoom: meta.minZoom, maxZoom: meta.maxZoom,
            description: request.description,
            attribution: request.attribution,
            codecLevel: isPVRTC ? request.codecLevel.rawValue : nil,
            payloadCompression: request.codec.payloadCompression,
            tileSize: WebMercator.tileSize,
            sourceFile: Request.fileName(request.sourcePath),
            sourceSHA256: try FileDigest.sha256(path: request.sourcePath)
        )
        metadata.buildOptions = try buildOptionsJSON(plan: plan)
        let writer = try MBTilesWriter(path: output, metadata: metadata)
        let report: BuildReport
        do { report = try builder.run(sink: writer, progress: progress) } catch let error as BuildError {
            throw InputFileError(path: tiff.path, problem: error.description)
        }
        _ = tiff  // the reader stays open for the whole build (windowed reads)
        try writer.finish()
        return Result(outputPath: output, report: report, archive: writer.statistics, codec: request.codec.rawValue)
    }

    /// The options as JSON (`tilepack:build_options`), so an archive says how it was made.
    func buildOptionsJSON(plan: TilePlan) throws -> String {
        let o = request.options
        return try JSONOutput.string(RecordedOptions(
            minZoom: plan.minZoom, maxZoom: plan.maxZoom, resampling: o.resampling.rawValue,
            colorMode: o.colorMode.rawValue, keepEmpty: o.keepEmpty, codec: request.codec.rawValue,
            codecLevel: request.codec == .png ? nil : request.codecLevel.rawValue))
    }

    /// `tilepack:build_options`: `codec_level` is null for PNG (it has no levels).
    struct RecordedOptions: Encodable {
        let minZoom: Int, maxZoom: Int
        let resampling: String, colorMode: String
        let keepEmpty: Bool
        let codec: String
        let codecLevel: String?

        enum CodingKeys: String, CodingKey {
            case resampling, codec
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
        }
    }
}
