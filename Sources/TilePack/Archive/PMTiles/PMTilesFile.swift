import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A regular file open for reading by position (`pread`), closed when the last reference goes:
/// what a PMTiles reader reads every section through, from many threads at once.
final class PMTilesFile: Sendable {
    let path: String
    let fd: Int32
    /// Bytes in the file when it was opened; every section is checked against it.
    let size: UInt64

    /// Opens `path`, refusing a missing, unreadable or non-regular file (a FIFO is refused,
    /// not waited on: `O_NONBLOCK`).
    init(path: String) throws(ArchiveError) {
        self.path = path
        switch RegularFile.openForReading(path) {
        case .success(let opened):
            fd = opened.fd
            size = opened.size
        case .failure(let failure):
            throw ArchiveError(
                path: path,
                code: failure.errno == ENOENT ? .notFound : failure.errno == 0 ? .notRegularFile : .cannotOpen,
                detail: failure.errno == 0 ? failure.problem : "cannot open archive: \(failure.problem)")
        }
    }

    deinit { close(fd) }

    /// `length` bytes from `offset`, refused (`damaged`) unless they lie inside the file.
    /// - Cost: one `pread` (more if interrupted) and one allocation of `length` bytes.
    func read(offset: UInt64, length: Int, what: @autoclosure () -> String) throws(ArchiveError) -> [UInt8] {
        let (end, overflow) = offset.addingReportingOverflow(UInt64(max(0, length)))
        guard length >= 0, !overflow, end <= size, let start = off_t(exactly: offset) else {
            throw ArchiveError(
                path: path, code: .damaged,
                detail: "\(what()) (\(length) bytes at \(offset)) lies beyond the file's \(size) bytes")
        }
        var out = [UInt8](repeating: 0, count: length)
        var done = 0
        var failure: Int32 = 0
        out.withUnsafeMutableBytes { buf in
            while done < length {
                let n = pread(fd, buf.baseAddress! + done, length - done, start + off_t(done))
                if n > 0 {
                    done += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    failure = n < 0 ? errno : 0
                    return
                }
            }
        }
        guard done == length else {
            throw ArchiveError(
                path: path, code: failure == 0 ? .damaged : .cannotOpen,
                detail:
                    "reading \(what()) failed: \(failure == 0 ? "the file ended early" : String(cString: strerror(failure)))"
            )
        }
        return out
    }
}
