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
    /// - Cost: one allocation of the file's size; one extra thread for the hash.
    package static func readWhole<R>(
        path: String, maxBytes: Int, what: String,
        _ body: (UnsafeRawBufferPointer) throws(InputFileError) -> R
    )
        throws(InputFileError) -> (result: R, sha256: String)
    {
        let opened: RegularFile.Opened
        switch RegularFile.openForReading(path) {
        case .success(let o): opened = o
        case .failure(let failure): throw InputFileError(path: path, problem: failure.problem)
        }
        defer { close(opened.fd) }
        guard opened.size <= UInt64(maxBytes) else {
            throw InputFileError(path: path, problem: "\(what) is larger than \(maxBytes) bytes")
        }
        let count = Int(opened.size)
        let handoff = SliceHandoff(byteCount: count)
        let hashed = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            handoff.hashSlices()
            hashed.signal()
        }
        let outcome: Result<R, InputFileError>
        do throws(InputFileError) {
            try handoff.read(fd: opened.fd, path: path, what: what)
            outcome = .success(try body(UnsafeRawBufferPointer(handoff.buffer)))
        } catch {
            handoff.closeReading()
            outcome = .failure(error)
        }
        // The hasher reads the buffer until it is done; only then may the buffer go.
        hashed.wait()
        return (try outcome.get(), handoff.digest)
    }
}

/// The buffer one thread reads into and another hashes behind it. `@unchecked Sendable`: the
/// reader writes only bytes past `filled` and the hasher reads only bytes before it, `filled`
/// and `closed` change under `lock`, and `digest` is written before the hasher signals the
/// semaphore the reader waits on.
private final class SliceHandoff: @unchecked Sendable {
    /// 4 MiB: the hasher starts ~1 ms after the read does, and a slice is one `pread`.
    static let sliceBytes = 4 << 20
    let buffer: UnsafeMutableRawBufferPointer
    private let lock = ConditionLock()
    private var filled = 0
    private var closed = false
    private(set) var digest = ""

    init(byteCount: Int) {
        buffer = .allocate(byteCount: byteCount, alignment: 16)
    }

    deinit { buffer.deallocate() }

    /// Fills the buffer slice by slice, publishing each; closes the handoff when done.
    func read(fd: Int32, path: String, what: String) throws(InputFileError) {
        defer { closeReading() }
        var done = 0
        while done < buffer.count {
            guard let base = buffer.baseAddress else { break }
            let want = min(Self.sliceBytes, buffer.count - done)
            let n = pread(fd, base + done, want, off_t(done))
            if n < 0 {
                if errno == EINTR { continue }
                throw InputFileError(path: path, problem: "read error: \(String(cString: strerror(errno)))")
            }
            if n == 0 { throw InputFileError(path: path, problem: "\(what) ends early: the file shrank while read") }
            done += n
            lock.withLock { filled = done }
            lock.broadcast()
        }
    }

    func closeReading() {
        lock.withLock { closed = true }
        lock.broadcast()
    }

    /// Hashes bytes as they are published, until the reader closes the handoff.
    func hashSlices() {
        var hasher = SHA256()
        var hashed = 0
        while true {
            lock.lock()
            while filled == hashed && !closed { lock.wait() }
            let upto = filled
            lock.unlock()
            guard upto > hashed else { break }  // closed, and everything read is hashed
            hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[hashed..<upto]))
            hashed = upto
        }
        digest = hasher.finalize().hexString
    }
}
