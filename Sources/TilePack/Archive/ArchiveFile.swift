import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The checks every archive reader (MBTiles, pack) runs before SQLite sees a file.
enum ArchiveFile {
    /// Cheap checks before SQLite sees the file: readable regular file, SQLite header,
    /// and not shorter than the page count its header records.
    static func check(_ path: String) throws(ArchiveError) {
        // O_NONBLOCK: a FIFO (or device) under an archive's name must not hang the open.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            throw ArchiveError(path: path, problem: errno == ENOENT ? .notFound : .cannotOpen,
                               detail: "cannot open archive: \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ArchiveError(path: path, problem: .cannotOpen, detail: "cannot open archive: not a regular file")
        }
        var header = [UInt8](repeating: 0, count: 100)
        let got = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 100, 0) }
        let magic = Array("SQLite format 3\u{0}".utf8)
        guard got == 100, header.prefix(16).elementsEqual(magic) else {
            throw ArchiveError(path: path, problem: .notSQLite,
                               detail: "not an SQLite database (\(info.st_size) bytes, no SQLite header)")
        }
        // Page size: bytes 16–17 big-endian, 1 meaning 65536. Page count: bytes 28–31, valid
        // when the "version-valid-for" number (92–95) equals the change counter (24–27).
        let rawPageSize = Int(header[16]) << 8 | Int(header[17])
        let pageSize = rawPageSize == 1 ? 65_536 : rawPageSize
        func be32(_ at: Int) -> UInt32 {
            UInt32(header[at]) << 24 | UInt32(header[at + 1]) << 16 | UInt32(header[at + 2]) << 8 | UInt32(header[at + 3])
        }
        // Both factors come from the file: multiply in Int64 with an overflow check rather than
        // trust that 32 × 17 bits fit (they do in Int64, but not in a 32-bit Int).
        if be32(92) == be32(24), pageSize >= 512 {
            let (expected, overflow) = Int64(be32(28)).multipliedReportingOverflow(by: Int64(pageSize))
            if overflow || Int64(info.st_size) < expected {
                throw ArchiveError(path: path, problem: .damaged,
                                   detail: "archive is truncated: \(info.st_size) bytes, its header says \(be32(28)) pages of \(pageSize) bytes")
            }
        }
    }
}
