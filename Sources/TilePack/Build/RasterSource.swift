import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// The pixels the build resamples from: a width × height grid of `bands` samples per pixel.
///
/// The build never parses file bytes; an adapter over the TIFF reader (or a mosaic of several
/// files) implements this. The build reads only small windows, so an implementation should
/// make `readFloats` cost proportional to the window, not to the whole raster.
public protocol RasterSource: Sendable {
    var width: Int { get }
    var height: Int { get }
    /// Samples per pixel, including an alpha band if there is one.
    var bands: Int { get }
    var sampleType: SampleType { get }
    /// The GDAL_NODATA value, if any: a pixel whose data bands all equal it is transparent.
    var nodata: Double? { get }
    /// TIFF palette (3·2^bits entries, all reds then all greens then all blues, 16-bit),
    /// nil when the source is not a palette image.
    var colorMap: [UInt16]? { get }
    /// Index of an extra-sample alpha band, if any.
    var alphaBand: Int? { get }
    /// Reads a window (inside the raster) as Float, pixel-interleaved: index
    /// `((row · width) + col) · bands + band`. Called from several threads at once.
    func readFloats(x: Int, y: Int, width: Int, height: Int) throws -> [Float]
    /// What the file says about its samples being heights, for `ColorMode.auto`. Defaults to
    /// no hints (then only the sample type and range decide).
    var terrainHints: TerrainHints { get }
    /// Where the file's stored (compressed) bytes lie, block by block: a map of the detail
    /// that costs encode time, free to read. Shard builds weigh their split with it. Defaults
    /// to nil (unknown: the split then weighs tile counts alone).
    var storedBytes: StoredByteMap? { get }
    /// Bands one ``readFloats(x:y:width:height:)`` decodes before handing `bands` back (a
    /// band selection over a file still decodes all of the file's bands): what
    /// ``BuildMemoryPlan`` counts for the window. Defaults to `bands`.
    var decodedBands: Int { get }
    /// Bytes of the largest block one read decodes at once (a TIFF tile or strip with all its
    /// samples), held beside the window while it is copied out; 0 when there are no blocks.
    var decodedBlockBytes: Int { get }
}

extension RasterSource {
    public var terrainHints: TerrainHints { TerrainHints() }
    public var storedBytes: StoredByteMap? { nil }
    public var decodedBands: Int { bands }
    public var decodedBlockBytes: Int { 0 }
}

/// A source's stored bytes per block of `blockWidth` × `blockHeight` pixels (the last column
/// and row of blocks may reach past the raster), row-major: what a compressed file's byte
/// counts say about where its detail is (a flat area compresses small).
public struct StoredByteMap: Sendable, Equatable {
    public let blockWidth: Int, blockHeight: Int
    public let blocksAcross: Int, blocksDown: Int
    /// `blocksAcross · blocksDown` byte counts.
    public let bytes: [UInt64]

    /// Nil when the sizes are not positive or `bytes` does not hold one count per block.
    public init?(blockWidth: Int, blockHeight: Int, blocksAcross: Int, blocksDown: Int, bytes: [UInt64]) {
        guard blockWidth > 0, blockHeight > 0, blocksAcross > 0, blocksDown > 0,
            case let (n, overflow) = blocksAcross.multipliedReportingOverflow(by: blocksDown), !overflow,
            n == bytes.count
        else { return nil }
        self.blockWidth = blockWidth
        self.blockHeight = blockHeight
        self.blocksAcross = blocksAcross
        self.blocksDown = blocksDown
        self.bytes = bytes
    }
}

/// Signals a source carries that its samples are heights, as the file states them: the
/// vertical GeoKeys and GDAL's per-band metadata. The adapter fills in what it finds;
/// ``ColorDecision`` weighs them.
public struct TerrainHints: Sendable, Equatable {
    /// VerticalCSTypeGeoKey (4096): an EPSG vertical CRS code, or 32767 user-defined.
    public var verticalCSType: UInt16?
    /// VerticalDatumGeoKey (4098).
    public var verticalDatum: UInt16?
    /// VerticalUnitsGeoKey (4099): an EPSG unit code (9001 metre, 9002 foot, 9003 US survey foot).
    public var verticalUnits: UInt16?
    /// GDAL band UNITTYPE per band index (e.g. "m", "metre", "ft").
    public var unitTypes: [Int: String] = [:]
    /// GDAL band DESCRIPTION per band index (e.g. "Elevation", "SRTM DEM").
    public var descriptions: [Int: String] = [:]
    /// GDAL band COLORINTERP per band index ("Red", "Green", "Blue", "Gray", "Undefined"…):
    /// which bands ``BandSelection`` draws as R, G, B by default.
    public var colorInterps: [Int: String] = [:]

    public init(
        verticalCSType: UInt16? = nil, verticalDatum: UInt16? = nil, verticalUnits: UInt16? = nil,
        unitTypes: [Int: String] = [:], descriptions: [Int: String] = [:]
    ) {
        self.verticalCSType = verticalCSType
        self.verticalDatum = verticalDatum
        self.verticalUnits = verticalUnits
        self.unitTypes = unitTypes
        self.descriptions = descriptions
    }
}

/// Where the source lies on the earth, as the build needs it: bounds, resolution, and the
/// inverse mapping from a lon/lat to a source pixel. The projection math lives in Geo; an
/// adapter over its georeference implements this.
public protocol SourceGeoreference: Sendable {
    /// The source's footprint in WGS 84 degrees. `west < east`; a source crossing the
    /// antimeridian is refused by ``TilePlan``.
    var lonLatBounds: GeoBounds { get }
    /// Ground size of one source pixel in metres.
    var groundResolutionMetres: Double { get }
    /// The zoom whose tile pixels match the source's: the default max zoom. A GeoTIFF's is
    /// ``GeoReference/nativeZoom`` (both pixels measured on the ellipsoid at its centre); the
    /// default, for other sources, ``TilePlan/defaultMaxZoom(nativeResolutionMetres:bounds:)``.
    var nativeZoom: Int { get }
    /// Source pixel (fractional col,row; pixel corner convention, centre of pixel (0,0) is
    /// (0.5,0.5)) for lon/lat, nil if not projectable. Called from several threads at once.
    func sourcePixel(lon: Double, lat: Double) -> (col: Double, row: Double)?
}

extension SourceGeoreference {
    public var nativeZoom: Int {
        TilePlan.defaultMaxZoom(nativeResolutionMetres: groundResolutionMetres, bounds: lonLatBounds)
    }
}

/// Where finished tiles go (an adapter over the MBTiles writer). Always called from one
/// thread, the one that called ``TileBuilder/run(sink:progress:)``, in a deterministic order.
public protocol TileSink {
    /// Stores one encoded display tile.
    func write(tile: TileID, encoded: [UInt8]) throws
    /// Stores the elevation in metres (Float32, NaN for nodata, rows top first) of one tile.
    func writeElevation(tile: TileID, metres: [Float], width: Int, height: Int) throws
    /// How the sink packs elevation when the build's workers may pack it for it (in parallel,
    /// each tile as it is made), or nil: the build then hands it metres. Read once per run.
    var elevationPacker: ElevationPacker? { get }
    /// Stores one tile's elevation packed by ``elevationPacker``.
    func writeElevation(tile: TileID, packed: PackedElevation) throws
}

extension TileSink {
    /// None: the sink takes metres (``TileSink/writeElevation(tile:metres:width:height:)``).
    public var elevationPacker: ElevationPacker? { nil }
    /// Unpacks and stores the metres (for a sink that packs nothing itself, never called by
    /// the build: it packs only for a sink whose ``elevationPacker`` is set).
    public func writeElevation(tile: TileID, packed: PackedElevation) throws {
        let grid = try packed.encoding.decode(packed.blob, width: packed.width, height: packed.height, path: "\(tile)")
        try writeElevation(tile: tile, metres: grid.values, width: grid.width, height: grid.height)
    }
}
