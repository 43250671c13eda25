import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The archive kinds tilepack reads and writes, told apart by content (``open(path:)``) or,
/// for an output not yet written, by its extension (``init(outputPath:)``).
public enum TileArchiveKind: String, Sendable, CaseIterable {
    case mbtiles, pmtiles

    /// The kind a path names: `.pmtiles` is PMTiles, anything else MBTiles.
    public init(outputPath: String) {
        self = outputPath.lowercased().hasSuffix(".pmtiles") ? .pmtiles : .mbtiles
    }

    /// The kind of the file at `path` from its first bytes: `PMTiles` is PMTiles, an SQLite
    /// header MBTiles; anything else (empty, damaged, missing) the kind its extension names, so
    /// that reader says what is wrong with it.
    /// - Cost: one open and one 16-byte read.
    public init(contentsOf path: String) {
        self = TileArchiveKind(sniffing: path) ?? TileArchiveKind(outputPath: path)
    }

    /// The kind of the file at `path` from its first bytes alone: nil when it is neither (a
    /// TIFF, an empty or missing file). A FIFO is opened without blocking and reads nothing.
    /// - Cost: one open and one 16-byte read.
    public init?(sniffing path: String) {
        var head = [UInt8](repeating: 0, count: 16)
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        let got = fd < 0 ? 0 : head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 16, 0) }
        if fd >= 0 { close(fd) }
        if got >= 7 && head.prefix(7).elementsEqual(PMTilesHeader.magic) {
            self = .pmtiles
        } else if got == 16 && head.elementsEqual("SQLite format 3\u{0}".utf8) {
            self = .mbtiles
        } else {
            return nil
        }
    }
}

/// Opens the archive at `path` for reading tiles, whichever kind its content is (PMTiles by
/// its magic bytes, else MBTiles): the one opener the CLI's `query`, `render`, `serve` and
/// `stress` use.
/// - Throws: ``ArchiveError`` naming the file.
/// - Cost: the reader's open (see ``MBTilesReader`` and ``PMTilesReader``).
public func openTileArchive(path: String) throws -> any TileArchive {
    switch TileArchiveKind(contentsOf: path) {
    case .pmtiles: try PMTilesReader(path: path)
    case .mbtiles: try MBTilesReader(path: path)
    }
}
