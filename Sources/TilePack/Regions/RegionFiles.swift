import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The small files of the region store (keys, default directories), read and written with
/// POSIX calls so errors carry errno and a key file's mode can be checked.
package enum RegionFiles {
    /// `$XDG_DATA_HOME/tilepack`, else `$HOME/.local/share/tilepack`, else `./.tilepack`
    /// (no home: a container); the XDG base-directory rule, ignoring a relative XDG_DATA_HOME.
    package static func dataDirectory() -> String {
        if let xdg = getenv("XDG_DATA_HOME").map({ String(cString: $0) }), xdg.hasPrefix("/") {
            return xdg + "/tilepack"
        }
        if let home = getenv("HOME").map({ String(cString: $0) }), !home.isEmpty {
            return home + "/.local/share/tilepack"
        }
        return ".tilepack"
    }

    /// `mkdir -p path` with mode 0700 for the directories it creates.
    package static func makeDirectories(_ path: String) throws(InputFileError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0, errno != EEXIST {
                throw InputFileError(
                    path: prefix, detail: "cannot create directory (\(AtomicReplacement.message(errno)))")
            }
        }
    }

    /// Why ``regularFileBytes(path:limit:privateFile:)`` failed: the problem without the path, and a
    /// category (`notFound` for a missing file, `environment` for the system refusing,
    /// `invalidInput` for a file that is not what it must be).
    package struct ReadFailure: Error {
        package var problem: String
        package var category: TilePackErrorCategory
    }

    /// The whole file, at most `limit` bytes; it must be a regular file. Opened with O_NONBLOCK
    /// and checked with fstat before any read, so a FIFO or a device fails at once instead of
    /// hanging. With `privateFile`, a file readable or writable by group or others is refused,
    /// as ssh refuses such a private key.
    /// - Cost: one allocation of at most `limit` + 1 bytes (the file's size when smaller).
    package static func regularFileBytes(
        path: String, limit: Int, privateFile: Bool = false
    ) throws(ReadFailure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw ReadFailure(
                problem: "cannot open (\(AtomicReplacement.message(code)))",
                category: code == ENOENT ? .notFound : .environment)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw ReadFailure(problem: "cannot stat (\(AtomicReplacement.message(errno)))", category: .environment)
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw ReadFailure(problem: RegularFile.notRegular(mode: info.st_mode), category: .invalidInput)
        }
        if privateFile, info.st_mode & 0o077 != 0 {
            throw ReadFailure(
                problem:
                    "private key file has mode 0\(String(info.st_mode & 0o777, radix: 8)); it must be 0600 (chmod 600)",
                category: .invalidInput)
        }
        guard info.st_size >= 0, Int(info.st_size) <= limit else {
            throw ReadFailure(
                problem: "file is \(info.st_size) bytes, over the \(limit)-byte limit", category: .invalidInput)
        }
        // One byte past the size fstat gave, to notice a file that grows while read.
        var out = [UInt8](repeating: 0, count: min(limit, Int(info.st_size)) + 1)
        var filled = 0
        while true {
            if filled == out.count {
                guard out.count <= limit else { break }
                out.append(contentsOf: repeatElement(0, count: min(limit + 1, out.count * 2) - out.count))
            }
            let n = out.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                throw ReadFailure(problem: "read failed (\(AtomicReplacement.message(errno)))", category: .environment)
            }
            if n == 0 { break }
            filled += n
        }
        guard filled <= limit else {
            throw ReadFailure(problem: "file is over the \(limit)-byte limit", category: .invalidInput)
        }
        return Array(out[0..<filled])
    }

    /// ``regularFileBytes(path:limit:privateFile:)`` with its failure as an ``InputFileError`` naming `path`.
    package static func contents(path: String, limit: Int, privateFile: Bool = false) throws(InputFileError) -> [UInt8]
    {
        do {
            return try regularFileBytes(path: path, limit: limit, privateFile: privateFile)
        } catch {
            throw InputFileError(path: path, detail: error.problem)
        }
    }

    /// Writes `bytes` to `path` via a temporary file and rename (readers see old or new).
    package static func writeAtomically(path: String, bytes: [UInt8], mode: mode_t) throws(InputFileError) {
        let temporary = temporaryPath(for: path)
        try writeNew(path: temporary, bytes: bytes, mode: mode)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw InputFileError(path: path, detail: "cannot rename into place (\(AtomicReplacement.message(code)))")
        }
    }

    /// `PATH.tmp-PID-RANDOM`: unique per process AND per thread (two threads of one process
    /// opening the same simulator must not share a temporary file, as `AtomicReplacement`'s would).
    private static func temporaryPath(for path: String) -> String {
        "\(path).tmp-\(getpid())-\(String(UInt64.random(in: .min ... .max), radix: 36))"
    }

    /// Creates `path` with `bytes` only if it does not exist, atomically: the bytes go to a
    /// temporary file that is `link(2)`ed to `path`, which fails with EEXIST when another
    /// process got there first. Returns false in that case (the caller reads the winner's file).
    package static func createExclusively(path: String, bytes: [UInt8], mode: mode_t) throws(InputFileError) -> Bool {
        let temporary = temporaryPath(for: path)
        try writeNew(path: temporary, bytes: bytes, mode: mode)
        defer { unlink(temporary) }
        if link(temporary, path) == 0 { return true }
        let code = errno
        if code == EEXIST { return false }
        throw InputFileError(path: path, detail: "cannot create (\(AtomicReplacement.message(code)))")
    }

    private static func writeNew(path: String, bytes: [UInt8], mode: mode_t) throws(InputFileError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else {
            throw InputFileError(path: path, detail: "cannot create (\(AtomicReplacement.message(errno)))")
        }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                let code = errno
                close(fd)
                unlink(path)
                throw InputFileError(path: path, detail: "write failed (\(AtomicReplacement.message(code)))")
            }
            written += n
        }
        // The key must survive a crash once the store has signed with it.
        fchmod(fd, mode)
        fsync(fd)
        close(fd)
    }
}
