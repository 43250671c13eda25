import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The temporary output file: sequential writes with an explicit position, removed unless
/// ``finish()`` renames it onto the target.
final class TIFFOutputFile {
    let path: String
    private let replacement: AtomicReplacement
    private var fd: Int32
    private(set) var position: UInt64 = 0

    init(path: String) throws(TIFFWriteError) {
        self.path = path
        replacement = AtomicReplacement(targetPath: path)
        fd = open(replacement.temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TIFFWriteError.cannotCreate(path: path, errno: errno) }
    }

    func write(_ bytes: [UInt8]) throws(TIFFWriteError) {
        try write(bytes, at: position)
        position += UInt64(bytes.count)
    }

    /// pwrite until done, retrying interrupted and partial writes.
    func write(_ bytes: [UInt8], at offset: UInt64) throws(TIFFWriteError) {
        let failure: Int32? = bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += n
            }
            return nil
        }
        if let failure { throw TIFFWriteError.writeFailed(path: path, errno: failure) }
    }

    /// Closes and renames onto the target.
    func finish() throws(TIFFWriteError) {
        let closed = close(fd)
        fd = -1
        guard closed == 0 else {
            let e = errno
            replacement.removeTemporary()
            throw TIFFWriteError.writeFailed(path: path, errno: e)
        }
        if let code = replacement.commit() {
            throw TIFFWriteError.cannotRename(path: path, errno: code)
        }
    }

    /// Closes and removes the temporary file after a failure.
    func abandon() {
        if fd >= 0 { close(fd); fd = -1 }
        replacement.removeTemporary()
    }

    deinit { if fd >= 0 { close(fd) } }
}
