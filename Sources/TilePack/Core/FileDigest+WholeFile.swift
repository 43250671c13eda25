import Crypto
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension FileDigest {
    /// Reads a regular file whole, hands its bytes to `body` on this thread, and returns what
    /// `body` returned with the file's lowercase hex SHA-256, taken on a second thread from the
    /// same bytes as they arrive.
    ///
    /// Why: a document that is both parsed and recorded by digest (a VRT: its SHA-256 is the
    /// build's source identity) would otherwise be read twice and hashed after the parse. Here
    /// the hash of each 4 MiB slice starts as soon as the slice is in, so reading, parsing and
    /// hashing overlap: a 61 MB VRT costs about the longer of read + parse and the hash, not
    /// their sum. The digest is of exactly the bytes `body` saw, even if the file changes later.
    ///
    /// - Parameters:
    ///   - maxBytes: files larger than this are refused before anything is allocated.
    ///   - what: the file's role in the error message ("VRT").
    ///   - body: reads the bytes; they are valid only during the call.
    /// - Throws: ``InputFileError`` naming `path`: not a regular file (a FIFO is refused at once),
    ///   too large, unreadable, or shrinking while read; or what `body` throws.
    /// - Cost: one allocation of the file's size; one background job for the hash.
    package static func readWhole<R>(
        path: String, maxBytes: Int, what: String,
        _ body: (UnsafeRawBufferPointer) throws(InputFileError) -> R
    )
        throws(InputFileError) -> (result: R, sha256: String)
    {
        let opened: RegularFile.Opened
        switch RegularFile.openForReading(path) {
        case .success(let o): opened = o
        case .failure(let failure): throw InputFileError(path: path, detail: failure.problem)
        }
        defer { close(opened.fd) }
        guard opened.size <= UInt64(maxBytes) else {
            throw InputFileError(path: path, detail: "\(what) is larger than \(maxBytes) bytes")
        }
        let count = Int(opened.size)
        let handoff = SliceHandoff(byteCount: count)
        // The background pass hashes slices as they land. This thread finishes whatever that
        // pass has not (all of it, should no worker thread be free to start it), so the call
        // never waits on a job that may not run; the pass holds the buffer alive while it reads.
        DispatchQueue.global().async { _ = handoff.hash() }
        try handoff.read(fd: opened.fd, path: path, what: what)
        let result = try body(UnsafeRawBufferPointer(handoff.buffer))
        return (result, handoff.hash())
    }
}

/// The buffer one thread reads into and whoever holds the hash (the background pass or the
/// caller) hashes behind it. `@unchecked Sendable`: the reader writes only bytes past `filled`;
/// bytes are hashed only below it, by one holder at a time (`hashing`); every counter changes
/// under `lock`, and the `SHA256` state is touched only by the holder or under `lock`.
private final class SliceHandoff: @unchecked Sendable {
    /// 4 MiB: hashing starts ~1 ms after the read does, and a slice is one `pread`.
    static let sliceBytes = 4 << 20
    let buffer: UnsafeMutableRawBufferPointer
    private let lock = ConditionLock()
    private var filled = 0
    private var closed = false
    private var hashed = 0
    private var hashing = false
    private var hasher = SHA256()
    private var digest: String?

    init(byteCount: Int) {
        buffer = .allocate(byteCount: byteCount, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Fills the buffer slice by slice, publishing each; closes the handoff when done, read or not.
    func read(fd: Int32, path: String, what: String) throws(InputFileError) {
        defer {
            lock.withLock { closed = true }
            lock.broadcast()
        }
        var done = 0
        while done < buffer.count {
            guard let base = buffer.baseAddress else { break }
            let want = min(Self.sliceBytes, buffer.count - done)
            let n = pread(fd, base + done, want, off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw InputFileError(path: path, detail: "read error: \(String(cString: strerror(errno)))")
            }
            if n == 0 { throw InputFileError(path: path, detail: "\(what) ends early: the file shrank while read") }
            done += n
            lock.withLock { filled = done }
            lock.broadcast()
        }
    }

    /// Hashes published slices until the handoff is closed and every byte read is hashed, then
    /// returns the digest. Waits only for slices still to be read or for another holder at work,
    /// both of which make progress.
    func hash() -> String {
        lock.lock()
        defer { lock.unlock() }
        while true {
            if let digest { return digest }
            if hashing {
                lock.wait()
            } else if hashed < filled {
                hashing = true
                let slice = hashed..<filled
                lock.unlock()
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[slice]))
                lock.lock()
                hashed = slice.upperBound
                hashing = false
                lock.broadcast()
            } else if closed {
                digest = hasher.finalize().hexString
            } else {
                lock.wait()
            }
        }
    }
}
