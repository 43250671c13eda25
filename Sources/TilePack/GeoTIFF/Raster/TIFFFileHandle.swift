import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open, read-only file descriptor read with `pread`, so several threads can read
/// different ranges at once without sharing a file position.
///
/// Closed when the last reference goes away. Reads are bounded by the file size measured
/// at open: a range past the end is an error, never a short buffer.
final class TIFFFileHandle: Sendable {
    let path: String
    let size: UInt64
    private let fd: Int32

    /// - Throws: `.notRegularFile` saying what the path is when it is not a regular file (a
    ///   FIFO is refused at once, never waited on); `.notFound` when nothing is there; `.io`
    ///   when it cannot be opened.
    init(path: String) throws(TIFFError) {
        switch RegularFile.openForReading(path) {
        case .success(let opened):
            self.path = path
            self.fd = opened.fd
            self.size = opened.size
        case .failure(let failure):
            let code: TIFFError.Code =
                switch failure.errno {
                case 0: .notRegularFile
                case ENOENT, ENOTDIR: .notFound
                default: .io
                }
            throw TIFFError(path: path, code: code, detail: failure.problem)
        }
    }

    deinit { close(fd) }

    /// True when `count` bytes at `offset` lie inside the file.
    func contains(offset: UInt64, count: UInt64) -> Bool {
        offset <= size && count <= size - offset
    }

    /// Reads exactly `count` bytes at `offset`.
    /// - Throws: `.offsetPastEnd` when the range starts past the end, `.truncated` when it
    ///   runs over the end, `.io` when the OS fails.
    /// - Cost: one allocation of `count` bytes and one `pread` (more if the OS returns short).
    func read(offset: UInt64, count: Int, what: @autoclosure () -> String) throws(TIFFError) -> [UInt8] {
        precondition(count >= 0)
        guard offset <= size else {
            throw TIFFError(
                path: path, code: .offsetPastEnd,
                detail: "\(what()) at offset \(offset) is past the end of the file (\(size) bytes)")
        }
        guard UInt64(count) <= size - offset else {
            throw TIFFError(
                path: path, code: .truncated,
                detail: "\(what()) (\(count) bytes at offset \(offset)) runs past the end of the file (\(size) bytes)")
        }
        // Uninitialised, then filled by pread: zeroing first cost a pass over every byte read
        // (a 61 MB VRT spent a sixth of its open in memset).
        var failure: Int32 = 0
        let buffer = [UInt8](unsafeUninitializedCapacity: count) { raw, initialized in
            var done = 0
            while done < count, let base = raw.baseAddress {
                let n = pread(fd, base + done, count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = errno
                    break
                }
                if n == 0 { break }
                done += n
            }
            initialized = done
        }
        let got = buffer.count
        if failure != 0 {
            throw TIFFError(path: path, code: .io, detail: "read error: \(String(cString: strerror(failure)))")
        }
        guard got == count else {
            throw TIFFError(
                path: path, code: .truncated,
                detail: "\(what()) ends early: file shrank while reading")
        }
        return buffer
    }
}
