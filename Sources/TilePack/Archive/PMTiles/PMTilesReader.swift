import TilePackCore
import TilePackCodec

/// Reads a PMTiles v3 archive (tilepack's or another writer's) as a ``TileArchive``.
///
/// Opening reads the header and root directory (the file's first 16 KiB) and the metadata,
/// and checks everything a read later relies on: the magic and version 3; every section
/// inside the file; the header and root within 16,384 bytes; directory and metadata
/// compression none or gzip (brotli and zstd are refused, `unsupportedCompression`); tile
/// compression none or gzip; the metadata a JSON object. Directories are parsed strictly
/// (``PMTilesDirectory``), inflated with a limit (``maxDirectoryBytes``), followed at most
/// ``maxLeafDepth`` levels deep, and every tile's bytes must lie inside the tile data
/// section. Every problem is an ``ArchiveError`` naming the file; nothing in the file can
/// make the reader trap, loop or allocate more than those limits.
///
/// Elevation: PMTiles has no elevation table. A sibling `NAME.terrain.pmtiles` of Terrarium
/// PNG tiles (metadata `encoding: terrarium`), when present, answers ``elevation(_:)``; an
/// archive that is itself Terrarium answers from its own tiles.
///
/// Threads: `Sendable`; tiles are read by position (`pread`) and leaf directories are kept in
/// a cache bounded in bytes (``ByteBudgetCache``), so any number of threads read at once.
public final class PMTilesReader: TileArchive {
    /// Largest directory (root or leaf), compressed or inflated: 16 MiB holds ~2 M entries.
    public static let maxDirectoryBytes = 16 << 20
    /// Leaf directories nested deeper than this are refused (the spec's writers use one level).
    public static let maxLeafDepth = 4
    /// Default bytes of parsed leaf directories kept between reads.
    public static let defaultLeafCacheBytes = 4 << 20

    public let path: String
    /// The 127-byte header as read.
    public let header: PMTilesHeader
    /// The metadata JSON as MBTiles-style rows (strings as they are, other values as JSON),
    /// with `name` (the file's stem) and `format` (from the tile type) filled in when absent:
    /// what a conversion to MBTiles writes.
    public let metadata: [String: String]
    /// The sibling archive of Terrarium tiles that holds this archive's elevation, if any.
    public let terrain: PMTilesReader?

    let file: PMTilesFile
    let root: PMTilesDirectory
    private let leaves: ByteBudgetCache<UInt64, PMTilesDirectory>
    /// The archive's own tiles are Terrarium elevation (metadata `encoding: terrarium`).
    private let isTerrarium: Bool

    /// Opens and validates `path`; see the type's documentation. With `sibling` true (the
    /// default) a `.terrain.pmtiles` beside it is opened too and must be valid.
    /// - Throws: ``ArchiveError`` naming the file.
    /// - Cost: three reads (header and root, metadata); O(root entries).
    public init(path: String, leafCacheBytes: Int = defaultLeafCacheBytes, sibling: Bool = true) throws(ArchiveError) {
        self.path = path
        let file = try PMTilesFile(path: path)
        self.file = file
        guard file.size > 0 else {
            throw ArchiveError(path: path, code: .notPMTiles, detail: "not a PMTiles archive (the file is empty)")
        }
        let start = try file.read(
            offset: 0, length: Int(min(file.size, UInt64(PMTilesHeader.rootLimit))), what: "the header")
        let header = try PMTilesHeader(start, path: path)
        self.header = header
        func section(_ offset: UInt64, _ length: UInt64, _ name: String) throws(ArchiveError) {
            let (end, overflow) = offset.addingReportingOverflow(length)
            guard !overflow, end <= file.size else {
                throw ArchiveError(
                    path: path, code: .damaged,
                    detail: "the \(name) (\(length) bytes at \(offset)) lies beyond the file's \(file.size) bytes")
            }
        }
        try section(header.rootOffset, header.rootLength, "root directory")
        try section(header.metadataOffset, header.metadataLength, "metadata")
        try section(header.leafDirectoryOffset, header.leafDirectoryLength, "leaf directories")
        try section(header.tileDataOffset, header.tileDataLength, "tile data")
        guard header.rootOffset >= UInt64(PMTilesHeader.length),
            header.rootOffset + header.rootLength <= UInt64(PMTilesHeader.rootLimit)
        else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail:
                    "the root directory (\(header.rootLength) bytes at \(header.rootOffset)) is not within the file's first \(PMTilesHeader.rootLimit) bytes, after the header"
            )
        }
        for (byte, what) in [(header.internalCompression, "directory"), (header.tileCompression, "tile")] {
            guard byte == PMTilesCompression.none.rawValue || byte == PMTilesCompression.gzip.rawValue else {
                throw ArchiveError(
                    path: path, code: .unsupportedCompression,
                    detail:
                        "\(what) compression \(PMTilesCompression.name(of: byte)) is not supported (tilepack reads none and gzip)"
                )
            }
        }
        guard header.metadataLength <= UInt64(PMTilesMetadata.maxBytes) else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail: "metadata of \(header.metadataLength) bytes is above the \(PMTilesMetadata.maxBytes) accepted")
        }
        let rootBytes = Array(start[Int(header.rootOffset)..<Int(header.rootOffset + header.rootLength)])
        root = try PMTilesDirectory(
            parsing: try Self.inflate(
                rootBytes, compression: header.internalCompression, limit: Self.maxDirectoryBytes, path: path,
                what: "the root directory"),
            path: path, what: "root directory")
        let metaBytes = try file.read(
            offset: header.metadataOffset, length: Int(header.metadataLength), what: "the metadata")
        var rows = try PMTilesMetadata.rows(
            try Self.inflate(
                metaBytes, compression: header.internalCompression, limit: PMTilesMetadata.maxBytes, path: path,
                what: "the metadata"),
            path: path)
        let stem = String(path.split(separator: "/").last ?? Substring(path))
        if rows[MBTilesMetadata.Key.name, default: ""].isEmpty {
            rows[MBTilesMetadata.Key.name] = stem.hasSuffix(".pmtiles") ? String(stem.dropLast(8)) : stem
        }
        if rows[MBTilesMetadata.Key.format] == nil {
            rows[MBTilesMetadata.Key.format] =
                PMTilesTileType(rawValue: header.tileType)?.mbtilesFormat ?? "application/octet-stream"
        }
        metadata = rows
        isTerrarium = rows["encoding"] == Terrarium.encodingName
        leaves = ByteBudgetCache(limit: max(0, leafCacheBytes))
        let siblingPath = Self.terrainPath(for: path)
        if sibling, !isTerrarium, let siblingPath, RegularFile.exists(siblingPath) {
            let terrain = try PMTilesReader(path: siblingPath, leafCacheBytes: leafCacheBytes, sibling: false)
            guard terrain.isTerrarium else {
                throw ArchiveError(
                    path: siblingPath, code: .badElevation,
                    detail: "the terrain archive beside \(stem) does not say encoding \"terrarium\"")
            }
            self.terrain = terrain
        } else {
            terrain = nil
        }
    }

    /// `NAME.terrain.pmtiles` for `NAME.pmtiles` (nil for a path not ending `.pmtiles`, or one
    /// that is a terrain archive already).
    public static func terrainPath(for path: String) -> String? {
        guard path.hasSuffix(".pmtiles"), !path.hasSuffix(".terrain.pmtiles") else { return nil }
        return String(path.dropLast(8)) + ".terrain.pmtiles"
    }

    /// Inflates a directory or the metadata as the header's `internal_compression` says.
    static func inflate(
        _ bytes: [UInt8], compression: UInt8, limit: Int, path: String, what: String
    ) throws(ArchiveError) -> [UInt8] {
        guard bytes.count <= limit else {
            throw ArchiveError(
                path: path, code: .damaged, detail: "\(what) of \(bytes.count) bytes is above the \(limit) accepted")
        }
        guard compression == PMTilesCompression.gzip.rawValue else { return bytes }
        do {
            return try Zlib.inflate(bytes, limit: limit, windowBits: 16 + 15)
        } catch {
            throw ArchiveError(
                path: path, code: .damaged, detail: "\(what) does not inflate: \(error.detailText)", cause: error)
        }
    }

    /// The entry holding tile `id`, descending through leaf directories; nil when absent.
    /// - Cost: O(log entries) per level; a leaf not in the cache costs one read and inflate.
    func entry(_ id: UInt64) throws(ArchiveError) -> PMTilesEntry? {
        var directory = root
        for _ in 0...Self.maxLeafDepth {
            guard let found = directory.find(id) else { return nil }
            if !found.isLeaf { return found }
            directory = try leaf(found)
        }
        throw ArchiveError(
            path: path, code: .damaged,
            detail: "leaf directories nest deeper than \(Self.maxLeafDepth) levels (looking up tile id \(id))")
    }

    /// The leaf directory an entry points at, from the cache or the file.
    func leaf(_ entry: PMTilesEntry) throws(ArchiveError) -> PMTilesDirectory {
        if let cached = leaves.get(entry.offset) { return cached }
        let (end, overflow) = entry.offset.addingReportingOverflow(UInt64(entry.length))
        guard !overflow, end <= header.leafDirectoryLength else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail:
                    "a leaf directory (\(entry.length) bytes at \(entry.offset)) lies outside the \(header.leafDirectoryLength)-byte leaf section"
            )
        }
        guard Int(entry.length) <= Self.maxDirectoryBytes else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail: "a leaf directory of \(entry.length) bytes is above the \(Self.maxDirectoryBytes) accepted")
        }
        let what = "the leaf directory at \(entry.offset)"
        let raw = try file.read(
            offset: header.leafDirectoryOffset + entry.offset, length: Int(entry.length), what: what)
        let directory = try PMTilesDirectory(
            parsing: try Self.inflate(
                raw, compression: header.internalCompression, limit: Self.maxDirectoryBytes, path: path, what: what),
            path: path, what: "leaf directory at \(entry.offset)")
        return leaves.put(entry.offset, directory, bytes: directory.entries.count * PMTilesDirectory.entryBytes + 64)
    }

    /// Largest tile read: 32 MiB, as for MBTiles (``StoredBlobLimit``).
    public static let maxBlobBytes = StoredBlobLimit.maxBytes
    /// Most tiles ``forEachTile(_:)`` hands out one by one: 2^26 (67,108,864), more than every
    /// tile of zooms 0–12 of the whole world (22,369,621). An archive addressing more is
    /// refused there (lookups of single tiles are unaffected).
    public static let maxExpandedTiles: UInt64 = 1 << 26

    public func withTile<R>(_ id: TileID, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        try withTile(id, maxBytes: Self.maxBlobBytes, body)
    }

    /// ``withTile(_:_:)`` refusing a tile longer than `maxBytes` (capped at ``maxBlobBytes``)
    /// from its directory entry, before any byte of it is read.
    /// - Throws: ``ArchiveError`` (`damaged`) for a tile too long or outside the tile section.
    /// - Cost: the directory lookup and one read of the tile.
    public func withTile<R>(_ id: TileID, maxBytes: Int, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        guard let bytes = try tileBytes(id, maxBytes: maxBytes) else { return nil }
        return try bytes.withUnsafeBytes(body)
    }

    /// The stored bytes of tile `id` (nil when absent), checked as ``withTile(_:maxBytes:_:)`` says.
    func tileBytes(_ id: TileID, maxBytes: Int) throws(ArchiveError) -> [UInt8]? {
        guard let e = try entry(id.pmtilesID) else { return nil }
        return try read(e, maxBytes: maxBytes, what: "tile \(id)")
    }

    /// The bytes a tile entry points at, inside the tile data section and within the limit.
    func read(_ e: PMTilesEntry, maxBytes: Int, what: @autoclosure () -> String) throws(ArchiveError) -> [UInt8] {
        let limit = min(max(0, maxBytes), Self.maxBlobBytes)
        guard Int(e.length) <= limit else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail: "\(what()) stores \(e.length) bytes, more than the \(limit) it may hold")
        }
        let (end, overflow) = e.offset.addingReportingOverflow(UInt64(e.length))
        guard !overflow, end <= header.tileDataLength else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail:
                    "\(what()) (\(e.length) bytes at \(e.offset)) lies outside the \(header.tileDataLength)-byte tile data section"
            )
        }
        return try file.read(offset: header.tileDataOffset + e.offset, length: Int(e.length), what: what())
    }

    /// Name, bounds, zooms, codec and tile size from the metadata and header.
    public var summary: TileArchiveSummary {
        let zooms: ClosedRange<Int>? =
            header.addressedTiles == 0 && root.entries.isEmpty
            ? nil
            : Int(header.minZoom) <= min(Int(header.maxZoom), TileID.maxZoom)
                ? Int(header.minZoom)...min(Int(header.maxZoom), TileID.maxZoom) : nil
        // Compressed tiles are not what a codec decodes.
        let decodable = header.tileCompression == PMTilesCompression.none.rawValue
        return TileArchiveSummary(
            name: metadata[MBTilesMetadata.Key.name] ?? "",
            bounds: metadata[MBTilesMetadata.Key.bounds].flatMap(GeoBounds.init(metadataValue:)) ?? header.bounds,
            zoomRange: zooms, codec: decodable ? TileCodecChoice(metadata: metadata) : nil,
            codecName: metadata[MBTilesMetadata.Key.codec] ?? metadata[MBTilesMetadata.Key.format] ?? "",
            tileSize: MBTilesMetadata.tileSize(in: metadata), hasElevation: terrain != nil || isTerrarium,
            valueKind: .some(ValueKind(metadata: metadata, hasElevationTable: terrain != nil || isTerrarium)))
    }

    public func elevation(_ id: TileID) throws -> ElevationTile? {
        try elevation(id) { _, _ throws(ArchiveError) in }
    }

    /// The Terrarium tile of `id` (the sibling's, or this archive's own when it is Terrarium)
    /// decoded to metres. `admit` sees the PNG's declared size (its IHDR) before anything is
    /// decoded; sides above ``ElevationTile/maxSide`` are refused.
    /// - Throws: ``ArchiveError`` (`badElevation`) for a tile that is not a Terrarium PNG.
    public func elevation(
        _ id: TileID, admitting admit: (_ width: Int, _ height: Int) throws(ArchiveError) -> Void
    ) throws -> ElevationTile? {
        if let terrain { return try terrain.elevation(id, admitting: admit) }
        guard isTerrarium else { return nil }
        guard let png = try tileBytes(id, maxBytes: StoredBlobLimit.elevation(width: 4096, height: 4096)) else {
            return nil
        }
        guard png.count >= 24, png[12..<16].elementsEqual(Array("IHDR".utf8)) else {
            throw ArchiveError(path: path, code: .badElevation, detail: "elevation tile \(id) is not a PNG")
        }
        let width = png[16..<20].reduce(0) { $0 << 8 | Int($1) }, height = png[20..<24].reduce(0) { $0 << 8 | Int($1) }
        guard (1...ElevationTile.maxSide).contains(width), (1...ElevationTile.maxSide).contains(height) else {
            throw ArchiveError(
                path: path, code: .badElevation, detail: "elevation tile \(id) is \(width)×\(height) pixels")
        }
        try admit(width, height)
        do {
            let image = try PNGDecoder(maxPixels: width * height).decode(png, source: "elevation tile \(id)")
            guard image.width == width, image.height == height else {
                throw ArchiveError(path: path, code: .badElevation, detail: "elevation tile \(id) changes size")
            }
            return Terrarium.grid(image)
        } catch let error as ArchiveError {
            throw error
        } catch {
            throw ArchiveError(
                path: path, code: .badElevation, detail: "elevation tile \(id): \(error.detailText)", cause: error)
        }
    }

    /// Calls `body` with every tile entry (runs not expanded) in tile-id order, leaf
    /// directories followed. Refuses (`damaged`) ids that do not increase across
    /// directories, so a leaf referenced twice cannot multiply the walk, and runs that address
    /// more tiles than the header's `addressed_tiles`, so work per tile (a conversion) stays
    /// within what the header declares.
    /// - Cost: every directory read once (the cache aside); O(entries).
    public func forEachEntry(_ body: (PMTilesEntry) throws -> Void) throws {
        var last: UInt64?
        var addressed: UInt64 = 0
        func walk(_ directory: PMTilesDirectory, depth: Int) throws {
            guard depth <= Self.maxLeafDepth else {
                throw ArchiveError(
                    path: path, code: .damaged, detail: "leaf directories nest deeper than \(Self.maxLeafDepth) levels")
            }
            for e in directory.entries {
                if e.isLeaf {
                    try walk(try leaf(e), depth: depth + 1)
                    continue
                }
                if let last, e.tileID <= last {
                    throw ArchiveError(
                        path: path, code: .damaged, detail: "tile ids do not increase across directories at \(e.tileID)"
                    )
                }
                last = e.tileID + UInt64(e.runLength) - 1
                let (sum, overflow) = addressed.addingReportingOverflow(UInt64(e.runLength))
                addressed = sum
                guard !overflow, addressed <= header.addressedTiles else {
                    throw ArchiveError(
                        path: path, code: .damaged,
                        detail: "the directories address more tiles than the header's \(header.addressedTiles)")
                }
                try body(e)
            }
        }
        try walk(root, depth: 0)
    }

    /// Calls `body` with each stored tile's id and bytes, runs expanded (the bytes of a run
    /// are read once), in tile-id order: what a conversion copies.
    /// - Throws: ``ArchiveError`` (`damaged`) for an id beyond ``TileID/maxZoom``, or what
    ///   `body` throws.
    /// - Cost: one read per entry; O(addressed tiles) calls.
    public func forEachTile(_ body: (TileID, [UInt8]) throws -> Void) throws {
        // Runs make a few bytes address billions of tiles, and the header's count is the
        // file's word: without this bound a tiny file would keep a conversion writing rows
        // for hours. Directories are held to the header's count (``forEachEntry(_:)``).
        guard header.addressedTiles <= Self.maxExpandedTiles else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail:
                    """
                    addresses \(header.addressedTiles) tiles, more than the \(Self.maxExpandedTiles) tilepack \
                    converts or verifies one by one
                    """)
        }
        try forEachEntry { e in
            let bytes = try read(e, maxBytes: Self.maxBlobBytes, what: "tile id \(e.tileID)")
            for i in 0..<UInt64(e.runLength) {
                guard let id = TileID(pmtilesID: e.tileID + i) else {
                    throw ArchiveError(
                        path: path, code: .damaged,
                        detail: "tile id \(e.tileID + i) lies beyond zoom \(TileID.maxZoom)")
                }
                try body(id, bytes)
            }
        }
    }

    /// Addressed tiles and their bytes (a run's bytes counted for each tile) per zoom,
    /// zooms ascending: the `per_zoom` of `tilepack info`.
    /// - Cost: one walk of the directories (``forEachEntry(_:)``); no tile is read.
    package func zoomStatistics() throws -> [PackZoomCount] {
        var counts: [Int: (tiles: Int, bytes: Int)] = [:]
        try forEachEntry { e in
            var id = e.tileID
            let end = e.tileID + UInt64(e.runLength)
            while id < end {
                guard let tile = TileID(pmtilesID: id) else {
                    throw ArchiveError(
                        path: path, code: .damaged, detail: "tile id \(id) lies beyond zoom \(TileID.maxZoom)")
                }
                // The rest of the run at this zoom, counted at once.
                let zoomEnd = min(end, TileID.pmtilesZoomBase(tile.z + 1))
                let n = Int(zoomEnd - id)
                let (bytes, overflow) = n.multipliedReportingOverflow(by: Int(e.length))
                let (sum, overflow2) = counts[tile.z, default: (0, 0)].bytes.addingReportingOverflow(bytes)
                guard !overflow, !overflow2 else {
                    throw ArchiveError(path: path, code: .damaged, detail: "tile counts overflow at zoom \(tile.z)")
                }
                counts[tile.z, default: (0, 0)].tiles += n
                counts[tile.z, default: (0, 0)].bytes = sum
                id = zoomEnd
            }
        }
        return counts.sorted { $0.key < $1.key }.map {
            PackZoomCount(z: $0.key, tiles: $0.value.tiles, bytes: $0.value.bytes)
        }
    }
}
