import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The checks every archive reader (MBTiles, pack) runs before SQLite sees a file.
package enum ArchiveFile {
    /// Cheap checks before SQLite sees the file: readable regular file, SQLite header,
    /// and not shorter than the page count its header records.
    static func check(_ path: String) throws(ArchiveError) {
        // O_NONBLOCK: a FIFO (or device) under an archive's name must not hang the open.
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            throw ArchiveError(
                path: path, code: e == ENOENT || e == ENOTDIR ? .notFound : .cannotOpen,
                detail: "cannot open archive: \(String(cString: strerror(e)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ArchiveError(path: path, code: .notRegularFile, detail: RegularFile.notRegular(mode: info.st_mode))
        }
        var header = [UInt8](repeating: 0, count: 100)
        let got = header.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 100, 0) }
        let magic = Array("SQLite format 3\u{0}".utf8)
        guard got == 100, header.prefix(16).elementsEqual(magic) else {
            throw ArchiveError(
                path: path, code: .notSQLite,
                detail: "not an SQLite database (\(info.st_size) bytes, no SQLite header)")
        }
        // Page size: bytes 16–17 big-endian, 1 meaning 65536. Page count: bytes 28–31, valid
        // when the "version-valid-for" number (92–95) equals the change counter (24–27).
        let rawPageSize = Int(header[16]) << 8 | Int(header[17])
        let pageSize = rawPageSize == 1 ? 65_536 : rawPageSize
        func be32(_ at: Int) -> UInt32 {
            UInt32(header[at]) << 24 | UInt32(header[at + 1]) << 16 | UInt32(header[at + 2]) << 8
                | UInt32(header[at + 3])
        }
        // Both factors come from the file: multiply in Int64 with an overflow check rather than
        // trust that 32 × 17 bits fit (they do in Int64, but not in a 32-bit Int).
        if be32(92) == be32(24), pageSize >= 512 {
            let (expected, overflow) = Int64(be32(28)).multipliedReportingOverflow(by: Int64(pageSize))
            if overflow || Int64(info.st_size) < expected {
                throw ArchiveError(
                    path: path, code: .damaged,
                    detail:
                        """
                        archive is truncated: \(info.st_size) bytes, its header says \(be32(28)) pages of \
                        \(pageSize) bytes
                        """
                )
            }
        }
    }

    /// Copies the regular file `from` to `to` (created or truncated, mode 0644) in 1 MiB chunks
    /// and syncs it: what a delta is applied to, and what a publisher carries over. `from` is
    /// opened without blocking, so a FIFO is refused, not waited on.
    /// - Cost: one read and one write of the file, 1 MiB of memory.
    package static func copy(_ from: String, to: String) throws(ArchiveError) {
        let input = open(from, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard input >= 0 else {
            throw ArchiveError(
                path: from, code: errno == ENOENT ? .notFound : .cannotOpen,
                detail: "cannot open for copying: \(AtomicReplacement.message(errno))")
        }
        defer { close(input) }
        var info = stat()
        guard fstat(input, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ArchiveError(path: from, code: .notRegularFile, detail: RegularFile.notRegular(mode: info.st_mode))
        }
        let output = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard output >= 0 else {
            throw ArchiveError(
                path: to, code: .writeFailed, detail: "cannot create the copy: \(AtomicReplacement.message(errno))")
        }
        defer { close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ArchiveError(
                    path: from, code: .cannotOpen, detail: "reading failed: \(AtomicReplacement.message(errno))")
            }
            if n == 0 { break }
            var done = 0
            while done < n {
                let w = buffer.withUnsafeBytes { b in b.baseAddress.map { write(output, $0 + done, n - done) } ?? -1 }
                if w < 0 {
                    if errno == EINTR { continue }
                    throw ArchiveError(
                        path: to, code: .writeFailed,
                        detail: "writing the copy failed: \(AtomicReplacement.message(errno))")
                }
                done += w
            }
        }
        guard fsync(output) == 0 else {
            throw ArchiveError(
                path: to, code: .writeFailed, detail: "cannot sync the copy: \(AtomicReplacement.message(errno))")
        }
    }
}
