import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How source pixels are sampled for a max-zoom tile pixel.
public enum Resampling: String, Sendable, CaseIterable {
    /// The source pixel under the output pixel centre. Always used for palette sources.
    case nearest
    /// Bilinear interpolation of the four nearest source pixel centres; weights of invalid
    /// neighbours are dropped and the rest renormalised; transparent where the nearest
    /// source pixel is invalid. The default.
    case bilinear
    /// Area-weighted mean of the source pixels under the output pixel's footprint (useful
    /// when the max zoom is coarser than the source); invalid pixels ignored.
    case average
}

/// How source samples become RGBA. `auto` picks from the colour map, band count, sample type,
/// the file's terrain signals (vertical GeoKeys, GDAL band units and descriptions) and the
/// sample range; ``ColorDecision`` has the rules and says which one applied. `elevation`
/// and `bathymetry` are metres tinted (``HypsometricTint``) and shaded (``Hillshade``);
/// `hillshade` is the grey shading alone (gdaldem's bytes); ``TerrainStyle`` sets all three.
/// `percent`: the fixed ramp ``PercentRamp`` over 0…100; `classes`: the categorical
/// ``ClassPalette`` (sampled nearest, never blended).
public enum ColorMode: String, Sendable, CaseIterable {
    case auto, rgb, elevation, bathymetry, hillshade, percent, classes, stretch, palette
}

/// Options of one build. Every field has a sensible default; see docs/BUILDING.md "Building tiles".
public struct BuildOptions: Sendable {
    /// Lowest zoom written; nil = the highest zoom at which the region fits in ≤ 2 tiles.
    public var minZoom: Int?
    /// Highest zoom resampled from the source; nil = the source's native zoom
    /// (``SourceGeoreference/nativeZoom``: the first zoom whose pixel is at or below the source's).
    public var maxZoom: Int?
    public var resampling: Resampling = .bilinear
    public var colorMode: ColorMode = .auto
    /// Write fully transparent tiles too (rio-mbtiles and we skip them by default).
    public var keepEmpty = false
    /// Worker threads (defaults to the active processor count).
    public var workers: Int = ProcessorInfo.activeCount
    /// A build block is one tile at zoom `maxZoom − blockLevels` and its 4^blockLevels
    /// max-zoom descendants; the memory bound of the build scales with 4^blockLevels. The
    /// most the build uses: ``memoryBudget`` may lower it (see ``BuildMemoryPlan``).
    public var blockLevels = 3
    /// Bytes the whole build may hold (`--memory`); the build shrinks its blocks, workers and
    /// caches to fit (``BuildMemoryPlan``), whatever the source size.
    public var memoryBudget = BuildMemoryPlan.defaultBudget
    /// The decoded-block cache the source was opened with, when not the budget's share
    /// (``BuildMemoryPlan/sourceCacheBytes(budget:)``), e.g. a mosaic's file pool.
    public var sourceCacheBytes: Int?
    /// Plans with more tiles than this are refused.
    public var maxTiles = 5_000_000
    /// Largest error (in source pixels) the interpolated lon/lat → pixel mapping may have
    /// before a grid cell is computed exactly; 0 computes every pixel exactly.
    public var approximationError = 0.125
    /// Tint, tint range and light of the terrain modes (absolute by default).
    public var terrain = TerrainStyle()
    /// `--tint-range MIN..MAX` (``TerrainStyle/range`` as metres); nil = the ramp's own metres.
    public var elevationRange: ClosedRange<Double>? {
        get { if case let .metres(r) = terrain.range { r } else { nil } }
        set { terrain.range = newValue.map { .metres($0) } }
    }
    /// `--bands`: the source bands (1-based, GDAL's numbering) drawn as grey or R,G,B, with an
    /// optional last one as alpha (1–4 bands); nil = the file's own (see ``BandSelection``).
    public var bands: [Int]?
    /// Which zooms keep their elevation grid (`--elevation`).
    public var elevationLevels: ElevationLevels = .all
    /// How the grids are stored (`--elevation-encoding`).
    public var elevationStorage: ElevationStorage = .quantized
    /// Quantisation precision (`--elevation-precision`, positive and finite); nil = 0.01 or
    /// the source's own step, whichever is coarser (``ElevationPrecision``).
    public var elevationPrecision: Double?

    public init() {}

    func validate() throws {
        guard workers >= 1, workers <= 256 else { throw BuildError.invalidOption("workers \(workers) must be 1–256") }
        guard blockLevels >= 0, blockLevels <= 6 else {
            throw BuildError.invalidOption("blockLevels \(blockLevels) must be 0–6")
        }
        guard memoryBudget > 0 else { throw BuildError.invalidOption("memory budget \(memoryBudget) must be positive") }
        guard maxTiles >= 1 else { throw BuildError.invalidOption("maxTiles \(maxTiles) must be positive") }
        guard approximationError >= 0, approximationError.isFinite else {
            throw BuildError.invalidOption("approximationError \(approximationError) must be a finite number ≥ 0")
        }
        if let r = elevationRange,
            !(abs(r.lowerBound) <= TintRange.limit && abs(r.upperBound) <= TintRange.limit
                && r.lowerBound < r.upperBound)
        {
            throw BuildError.invalidOption(
                "--tint-range \(r.lowerBound)..\(r.upperBound): MIN must be below MAX, both within ±1000000 m")
        }
        try terrain.hillshade.validate()
        if let p = elevationPrecision, !(p.isFinite && p > 0) {
            throw BuildError.invalidOption("elevation precision \(p) must be a positive finite number of metres")
        }
    }
}

/// What a build did.
public struct BuildReport: Sendable {
    public var tilesWritten = 0
    /// Planned tiles skipped because every pixel was transparent.
    public var emptySkipped = 0
    /// Planned tiles an interrupted build had finished (resumed from its journal, not rebuilt).
    public var resumedTiles = 0
    /// Tiles written per zoom.
    public var perZoom: [Int: Int] = [:]
    public var seconds = 0.0
    /// Most tile buffers (RGBA + elevation) alive at once: the build's memory bound, in tiles.
    public var peakLiveTileBuffers = 0
    /// How the memory budget was shared (workers and block levels actually used).
    public var memory: BuildMemoryPlan?
    /// The colour mode used and why.
    public var color: ColorDecision
    /// The terrain modes' tint in words ("absolute ramp (-11000…8849 m, absolute)"); nil otherwise.
    public var tint: String?
    /// The terrain modes' light; nil otherwise.
    public var hillshade: Hillshade?
    /// `tilepack:legend`: the classes seen (with their colours) or the ramp's stops; may be empty.
    public var legend: [LegendEntry] = []
    /// Metadata for the archive (bounds, center, zoom range).
    public var metadata: TilesetMetadata
}

/// The statistics MBTiles metadata wants for a build.
/// Default view: the bounds' centre at the min zoom (the whole region in view).
public struct TilesetMetadata: Sendable, Equatable {
    public var bounds: GeoBounds
    public var minZoom: Int, maxZoom: Int
}
