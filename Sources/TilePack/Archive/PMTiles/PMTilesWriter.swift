import TilePackCore
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes a PMTiles v3 archive atomically (`TARGET.tmp-PID`, renamed at ``finish()``):
/// clustered (tiles given in tile-id order, each content stored at its first use),
/// deduplicated (identical bytes stored once, found by SHA-256), consecutive ids with the same
/// bytes run-length encoded, directories and metadata gzip'd, the root directory within the
/// first 16,384 bytes with the header and leaf directories when the tiles need them.
///
/// Tile bytes go to a spool file beside the temporary archive as they come; ``finish()`` writes
/// the header, root directory, metadata and leaves, then copies the spool after them. Memory
/// holds one directory entry per run and one digest per distinct content.
///
/// ```swift
/// let writer = try PMTilesWriter(path: "region.pmtiles", metadata: ["name": "Alps"], tileType: .png)
/// for (id, png) in tilesInPMTilesOrder { try writer.write(png, for: id) }
/// try writer.finish()
/// ```
///
/// Not thread-safe: one thread writes.
public final class PMTilesWriter {
    /// Layout settings (tests force leaf directories with a small root).
    public struct Options: Sendable {
        /// Header plus root directory must fit in this many bytes (the spec's 16,384).
        public var rootLimit = PMTilesHeader.rootLimit
        /// Entries per leaf directory at first; doubled until the root fits.
        public var leafEntries = 4_096
        /// The header's bounds (else those of the deepest zoom's tiles).
        public var bounds: GeoBounds?
        /// The header's centre as lon, lat, zoom (else the bounds' middle at the lowest zoom).
        public var center: (lon: Double, lat: Double, zoom: Int)?

        public init() {}
    }

    /// Counts of what went in: the header's three counts.
    public struct Statistics: Sendable, Equatable {
        public var addressedTiles = 0
        public var tileEntries = 0
        public var tileContents = 0
        /// Bytes of distinct tile contents stored.
        public var tileBytes = 0
        /// Leaf directories written (0 when the root holds every entry).
        public var leafDirectories = 0
    }

    public let targetPath: String
    public let options: Options
    public private(set) var statistics = Statistics()
    /// The metadata JSON's members; may change until ``finish()``.
    public var metadata: [String: String]
    public let tileType: PMTilesTileType

    private let replacement: AtomicReplacement
    private var spoolPath: String { replacement.temporaryPath + Self.spoolSuffix }
    private var spool: Int32 = -1
    private var spoolBytes: UInt64 = 0
    private var entries: [PMTilesEntry] = []
    private var contents: [SHA256Digest: (offset: UInt64, length: UInt32)] = [:]
    private var lastID: UInt64?
    private var zooms: ClosedRange<Int>?
    /// Columns and rows of the deepest zoom's tiles (default bounds).
    private var deepest: (z: Int, x0: Int, x1: Int, y0: Int, y1: Int)?
    private var done = false

    static let spoolSuffix = ".tiles"

    /// Creates the spool; nothing appears under `path` before ``finish()``.
    /// - Throws: ``ArchiveError`` (`writeFailed`) when the spool cannot be created.
    public init(
        path: String, metadata: [String: String], tileType: PMTilesTileType, options: Options = Options()
    ) throws(ArchiveError) {
        precondition(options.leafEntries > 0, "leaf directories hold at least one entry")
        targetPath = path
        self.metadata = metadata
        self.tileType = tileType
        self.options = options
        replacement = AtomicReplacement(targetPath: path, companionSuffixes: [Self.spoolSuffix])
        replacement.removeTemporary()
        spool = open(replacement.temporaryPath + Self.spoolSuffix, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard spool >= 0 else {
            throw ArchiveError(
                path: path, code: .writeFailed,
                detail:
                    "cannot create \(replacement.temporaryPath + Self.spoolSuffix): \(AtomicReplacement.message(errno))"
            )
        }
    }

    deinit {
        if spool >= 0 { close(spool) }
        if !done { replacement.removeTemporary() }
    }

    /// Adds tile `id`. Ids must come in increasing PMTiles order (``TileID/pmtilesID``), which
    /// is what makes the archive clustered.
    /// - Throws: ``ArchiveError`` (`invalidArgument`) for an id out of order or a tile above
    ///   4 GiB; (`writeFailed`) when the spool cannot be written.
    /// - Cost: one SHA-256 of `data`; one write when the content is new.
    public func write(_ data: [UInt8], for id: TileID) throws(ArchiveError) {
        precondition(!done, "write after finish")
        let tileID = id.pmtilesID
        if let lastID, tileID <= lastID {
            throw ArchiveError(
                path: targetPath, code: .invalidArgument,
                detail: "tile \(id) comes after a later tile: PMTiles tiles are written in tile-id order")
        }
        guard let length = UInt32(exactly: data.count), length > 0 else {
            throw ArchiveError(
                path: targetPath, code: .invalidArgument, detail: "tile \(id) has \(data.count) bytes (1 byte…4 GiB)")
        }
        lastID = tileID
        let digest = SHA256.hash(data: data)
        let stored: (offset: UInt64, length: UInt32)
        if let known = contents[digest] {
            stored = known
        } else {
            try append(data)
            stored = (spoolBytes, length)
            spoolBytes += UInt64(length)
            contents[digest] = stored
            statistics.tileContents += 1
            statistics.tileBytes += data.count
        }
        statistics.addressedTiles += 1
        if var last = entries.last, last.offset == stored.offset, last.length == stored.length,
            last.tileID + UInt64(last.runLength) == tileID, last.runLength < UInt32.max
        {
            last.runLength += 1
            entries[entries.count - 1] = last
        } else {
            entries.append(PMTilesEntry(tileID: tileID, offset: stored.offset, length: stored.length, runLength: 1))
            statistics.tileEntries += 1
        }
        zooms = zooms.map { min($0.lowerBound, id.z)...max($0.upperBound, id.z) } ?? id.z...id.z
        if let d = deepest, d.z == id.z {
            deepest = (d.z, min(d.x0, id.x), max(d.x1, id.x), min(d.y0, id.y), max(d.y1, id.y))
        } else if deepest.map({ id.z > $0.z }) ?? true {
            deepest = (id.z, id.x, id.x, id.y, id.y)
        }
    }

    private func append(_ data: [UInt8]) throws(ArchiveError) {
        guard Self.writeAll(spool, data) else {
            throw ArchiveError(
                path: targetPath, code: .writeFailed,
                detail: "writing tile data failed: \(AtomicReplacement.message(errno))")
        }
    }

    static func writeAll(_ fd: Int32, _ data: [UInt8]) -> Bool {
        data.withUnsafeBytes { buf in
            var done = 0
            while done < buf.count {
                let n = posixWrite(fd, buf.baseAddress! + done, buf.count - done)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return false }
                done += n
            }
            return true
        }
    }

    /// Writes the directories, metadata and header, copies the tile data after them and
    /// renames the archive into place.
    /// - Throws: ``ArchiveError`` (`writeFailed`), or (`invalidArgument`) when the root cannot
    ///   fit ``Options/rootLimit`` however large the leaves.
    /// - Cost: O(entries) to lay out the directories; one copy of the tile data.
    public func finish() throws(ArchiveError) {
        precondition(!done, "finish twice")
        let (root, leaves) = try layout()
        let meta = try Self.gzip(PMTilesMetadata.json(metadata), path: targetPath)
        var header = PMTilesHeader()
        header.rootOffset = UInt64(PMTilesHeader.length)
        header.rootLength = UInt64(root.count)
        header.metadataOffset = header.rootOffset + header.rootLength
        header.metadataLength = UInt64(meta.count)
        header.leafDirectoryOffset = header.metadataOffset + header.metadataLength
        header.leafDirectoryLength = UInt64(leaves.count)
        header.tileDataOffset = header.leafDirectoryOffset + header.leafDirectoryLength
        header.tileDataLength = spoolBytes
        header.addressedTiles = UInt64(statistics.addressedTiles)
        header.tileEntries = UInt64(statistics.tileEntries)
        header.tileContents = UInt64(statistics.tileContents)
        header.clustered = true
        header.internalCompression = PMTilesCompression.gzip.rawValue
        header.tileCompression = PMTilesCompression.none.rawValue
        header.tileType = tileType.rawValue
        header.minZoom = UInt8(zooms?.lowerBound ?? 0)
        header.maxZoom = UInt8(zooms?.upperBound ?? 0)
        let bounds =
            options.bounds
            ?? deepest.map { d in
                let nw = WebMercator.bounds(of: TileID(unchecked: d.z, d.x0, d.y0))
                let se = WebMercator.bounds(of: TileID(unchecked: d.z, d.x1, d.y1))
                return GeoBounds(west: nw.west, south: se.south, east: se.east, north: nw.north)
            }
        if let bounds {
            header.minLonE7 = PMTilesHeader.e7(bounds.west); header.minLatE7 = PMTilesHeader.e7(bounds.south)
            header.maxLonE7 = PMTilesHeader.e7(bounds.east); header.maxLatE7 = PMTilesHeader.e7(bounds.north)
        }
        let center =
            options.center
            ?? bounds.map { ((($0.west + $0.east) / 2), (($0.south + $0.north) / 2), zooms?.lowerBound ?? 0) }
        if let center {
            header.centerLonE7 = PMTilesHeader.e7(center.lon); header.centerLatE7 = PMTilesHeader.e7(center.lat)
            header.centerZoom = UInt8(clamping: center.zoom)
        }
        close(spool)
        spool = -1
        let out = open(replacement.temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard out >= 0 else { throw failure("creating \(replacement.temporaryPath)") }
        var ok = Self.writeAll(out, header.bytes + root + meta + leaves)
        if ok { ok = Self.copy(from: spoolPath, to: out) }
        if ok { ok = fsync(out) == 0 }
        let closed = close(out) == 0
        guard ok, closed else { throw failure("writing \(replacement.temporaryPath)") }
        unlink(spoolPath)
        if let code = replacement.commit() {
            throw ArchiveError(
                path: targetPath, code: .writeFailed,
                detail: "moving the archive into place failed: \(AtomicReplacement.message(code))")
        }
        done = true
    }

    private func failure(_ doing: String) -> ArchiveError {
        let message = AtomicReplacement.message(errno)
        replacement.removeTemporary()
        done = true
        return ArchiveError(path: targetPath, code: .writeFailed, detail: "\(doing) failed: \(message)")
    }

    /// Appends the spool file's bytes to `out` in 1 MiB chunks.
    private static func copy(from path: String, to out: Int32) -> Bool {
        let input = open(path, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { return false }
        defer { close(input) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return false }
            if n == 0 { return true }
            guard writeAll(out, Array(buffer[0..<n])) else { return false }
        }
    }

    /// The gzip'd root directory and leaf directories: every entry in the root when it fits,
    /// else leaves of ``Options/leafEntries`` entries (doubled until the root fits).
    func layout() throws(ArchiveError) -> (root: [UInt8], leaves: [UInt8]) {
        let limit = options.rootLimit - PMTilesHeader.length
        let all = try Self.gzip(PMTilesDirectory(entries: entries).bytes, path: targetPath)
        if all.count <= limit { return (all, []) }
        var size = options.leafEntries
        while true {
            var leaves: [UInt8] = []
            var rootEntries: [PMTilesEntry] = []
            var start = 0
            while start < entries.count {
                let chunk = Array(entries[start..<min(entries.count, start + size)])
                let bytes = try Self.gzip(PMTilesDirectory(entries: chunk).bytes, path: targetPath)
                rootEntries.append(
                    PMTilesEntry(
                        tileID: chunk[0].tileID, offset: UInt64(leaves.count), length: UInt32(bytes.count), runLength: 0
                    ))
                leaves += bytes
                start += size
            }
            let root = try Self.gzip(PMTilesDirectory(entries: rootEntries).bytes, path: targetPath)
            if root.count <= limit {
                statistics.leafDirectories = rootEntries.count
                return (root, leaves)
            }
            guard size < entries.count else {
                throw ArchiveError(
                    path: targetPath, code: .invalidArgument,
                    detail: "the root directory cannot fit in \(options.rootLimit) bytes with the header")
            }
            size *= 2
        }
    }

    static func gzip(_ bytes: [UInt8], path: String) throws(ArchiveError) -> [UInt8] {
        do {
            return try Zlib.deflate(bytes, level: 9, windowBits: 16 + 15)
        } catch {
            throw ArchiveError(path: path, code: .writeFailed, detail: "gzip failed: \(error.detailText)", cause: error)
        }
    }
}

/// `write(2)`, under a name the writer's own `write(_:for:)` does not hide.
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
