import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SHA256.Digest {
    /// Lowercase hex, the spelling of the manifest, the archive's `tile_id` and metadata.
    package var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for b in self {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

package enum FileDigest {
    /// Lowercase hex SHA-256 of a file's bytes, read in 1 MiB chunks (bounded memory).
    package static func sha256(path: String) throws(InputFileError) -> String {
        // The one way tilepack opens a file it reads (non-blocking, regular files only), as
        // readWhole does: a FIFO is refused at once, never waited on.
        let fd: Int32
        switch RegularFile.openForReading(path) {
        case .success(let opened): fd = opened.fd
        case .failure(let failure): throw InputFileError(path: path, detail: failure.problem)
        }
        defer { close(fd) }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw InputFileError(path: path, detail: "read failed (errno \(errno))")
            }
            if n == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        return hasher.finalize().hexString
    }
}

extension FileDigest {
    /// Lowercase hex SHA-256 of a string's UTF-8 bytes (identities of builds, not files).
    package static func sha256(text: String) -> String {
        SHA256.hash(data: Array(text.utf8)).hexString
    }
}
