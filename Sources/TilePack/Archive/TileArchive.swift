import TilePackCore
import TilePackCodec

/// A tile archive as a reader of tiles sees it: what it says about itself, a tile's stored
/// bytes, and (for terrain) a tile's elevation. The shape of PMTiles' reader (`header`,
/// `metadata`, `get(z, x, y)`) and planetiler's `ReadableTileArchive`, so the tile store and
/// the query never learn whether tiles sit in SQLite, a PMTiles file or memory (tests use a
/// fake archive).
///
/// Conformers are `Sendable` and answer from many threads at once.
public protocol TileArchive: Sendable {
    /// Where the archive lives (a path), named in every error.
    var path: String { get }
    /// Name, bounds, zooms, codec, tile size and whether elevation is stored.
    var summary: TileArchiveSummary { get }

    /// Calls `body` with the bytes stored for tile `id` (valid only during the call), or
    /// returns nil without calling it when the archive has no such tile. Lets the caller copy
    /// the payload into a buffer of its own choosing: no intermediate allocation.
    /// - Throws: ``ArchiveError`` for a damaged archive, or what `body` throws.
    func withTile<R>(_ id: TileID, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R?

    /// ``withTile(_:_:)`` refusing (``ArchiveError``, damaged) stored bytes longer than
    /// `maxBytes` without calling `body`. Readers of files check the size before loading the
    /// bytes (``MBTilesReader`` asks SQLite for the length first); the default, for archives
    /// that hold tiles in memory already, checks what it was given.
    func withTile<R>(_ id: TileID, maxBytes: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R?

    /// The elevation grid of tile `id`, nil when there is none.
    /// - Throws: ``ArchiveError`` for a damaged archive or elevation blob.
    func elevation(_ id: TileID) throws -> ElevationTile?

    /// ``elevation(_:)`` that first calls `admit` with the stored row's declared width and
    /// height, before a grid of that size is allocated or anything is decoded: the caller
    /// refuses (throws) a size it will not hold, or reserves the grid's bytes in its budget.
    /// A row is file data; its declared size must never drive an allocation unchecked. The
    /// default, for archives that hold grids in memory already, admits the grid it found;
    /// readers of files implement it.
    /// - Throws: what `admit` throws, or ``ArchiveError`` as ``elevation(_:)``.
    func elevation(
        _ id: TileID, admitting admit: (_ width: Int, _ height: Int) throws(ArchiveError) -> Void
    )
        throws -> ElevationTile?

    /// The name an access policy knows the archive by. Defaults to the path's last component
    /// (`montblanc-color.mbtiles`, as a catalog's `archives` name it).
    var accessName: String { get }
}

extension TileArchive {
    public var accessName: String { path.split(separator: "/").last.map(String.init) ?? path }

    public func withTile<R>(_ id: TileID, maxBytes: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try withTile(id) { stored in
            guard stored.count <= maxBytes else {
                throw ArchiveError(
                    path: path, code: .damaged,
                    detail: "tile \(id) stores \(stored.count) bytes, more than the \(maxBytes) it may hold")
            }
            return try body(stored)
        }
    }

    public func elevation(
        _ id: TileID, admitting admit: (_ width: Int, _ height: Int) throws(ArchiveError) -> Void
    )
        throws -> ElevationTile?
    {
        guard let grid = try elevation(id) else { return nil }
        try admit(grid.width, grid.height)
        return grid
    }

    /// The codec that decodes this archive's tiles, for readers that decode every tile
    /// (`verify`, conversions).
    /// - Throws: ``ArchiveError`` (damaged) naming the archive when tilepack cannot decode them.
    /// - Cost: O(1).
    public func decodableCodec() throws(ArchiveError) -> TileCodecChoice {
        let summary = self.summary
        guard let codec = summary.codec else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail: "tiles are \(ErrorText.quoted(summary.codecName)), which tilepack cannot decode")
        }
        return codec
    }

    /// The stored bytes of tile `id` as a new array, nil when absent.
    /// - Cost: one read and one allocation of the payload's size.
    public func tileBytes(_ id: TileID) throws -> [UInt8]? {
        try withTile(id) { Array($0) }
    }
}

/// What an archive says about itself, in the form a tile reader needs.
public struct TileArchiveSummary: Sendable, Equatable {
    /// The region's name (MBTiles `name`).
    public var name: String
    /// Lon/lat bounds (nil when the archive does not say).
    public var bounds: GeoBounds?
    /// Zooms that hold tiles (nil for an archive without tiles).
    public var zoomRange: ClosedRange<Int>?
    /// How the tiles decode; nil when tilepack cannot decode them (JPEG, vector tiles).
    public var codec: TileCodecChoice?
    /// The codec name as recorded, for messages about undecodable archives.
    public var codecName: String
    /// Tile side in pixels.
    public var tileSize: Int
    /// Whether elevation grids are stored beside the display tiles.
    public var hasElevation: Bool
    /// What the stored grid holds (`tilepack:value_kind`); nil when the archive has none.
    public var valueKind: ValueKind?

    /// Whether the archive stores grids of metres (elevation or depth), so terrain can be made
    /// from it: a DEM built with `--elevation none` says `elevation` but stores no grid.
    public var hasElevationMetres: Bool { hasElevation && valueKind?.isMetres == true }

    public init(
        name: String, bounds: GeoBounds?, zoomRange: ClosedRange<Int>?, codec: TileCodecChoice?,
        codecName: String, tileSize: Int, hasElevation: Bool, valueKind: ValueKind?? = nil
    ) {
        self.name = name; self.bounds = bounds; self.zoomRange = zoomRange; self.codec = codec
        self.codecName = codecName; self.tileSize = tileSize; self.hasElevation = hasElevation
        // Not given (archives that know nothing of kinds): elevation grids are metres.
        self.valueKind = valueKind ?? (hasElevation ? .elevation : nil)
    }

    /// Whether the archive may hold tile `id`: its zoom is in range and the tile's bounds
    /// meet the archive's (an archive without bounds may hold anything).
    /// - Cost: O(1), no I/O.
    public func mayContain(_ id: TileID) -> Bool {
        guard let zooms = zoomRange, zooms.contains(id.z) else { return false }
        return meets(id)
    }

    /// Whether tile `id`'s square meets the archive's bounds, at any zoom (an archive without
    /// bounds: always).
    /// - Cost: O(1), no I/O.
    public func meets(_ id: TileID) -> Bool {
        guard let b = bounds else { return true }
        let t = WebMercator.bounds(of: id)
        return t.west < b.east && b.west < t.east && t.south < b.north && b.south < t.north
    }

    /// Whether the point lies within the archive's bounds (an archive without bounds: no).
    public func contains(lon: Double, lat: Double) -> Bool {
        guard let b = bounds else { return false }
        return b.west <= lon && lon <= b.east && b.south <= lat && lat <= b.north
    }
}
