#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opening a path that must name a regular file, without ever blocking on it.
///
/// `open(2)` of a FIFO for reading blocks until a writer appears, and a device can block or
/// return endless bytes; a path the user gives (an archive, a TIFF, a VRT source, a catalog,
/// a ledger, a trust file) may name either. So every read opens with `O_NONBLOCK` (which a
/// regular file ignores) and checks `fstat` before reading a byte; anything but a regular
/// file is refused with a message saying what it is ("is a FIFO, not a regular file").
package enum RegularFile {
    /// An open descriptor on a regular file and its size at open. The caller closes `fd`.
    public struct Opened: Sendable {
        public let fd: Int32
        public let size: UInt64
    }

    /// Why a path could not be opened as a regular file, as the tail of a one-line message
    /// ("is a FIFO, not a regular file", "cannot open: No such file or directory").
    public struct Failure: Error, Sendable, Equatable {
        public let problem: String
        /// `errno` when `open`/`fstat` failed; 0 when the path is not a regular file.
        public let errno: Int32
    }

    /// Opens `path` read-only (`O_NONBLOCK | O_CLOEXEC`) and checks it is a regular file.
    /// - Cost: one `open` and one `fstat`; never blocks, whatever the path names.
    public static func openForReading(_ path: String) -> Result<Opened, Failure> {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let e = errno
            return .failure(Failure(problem: "cannot open: \(String(cString: strerror(e)))", errno: e))
        }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            let e = errno
            close(fd)
            return .failure(Failure(problem: "cannot stat: \(String(cString: strerror(e)))", errno: e))
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            return .failure(Failure(problem: notRegular(mode: st.st_mode), errno: 0))
        }
        return .success(Opened(fd: fd, size: UInt64(clamping: st.st_size)))
    }

    /// Whether anything (a file, a directory, a FIFO: what a later open will judge) is at `path`.
    /// - Cost: one `stat`.
    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    /// "is a FIFO, not a regular file" (a directory, a character device …) for a `st_mode`.
    public static func notRegular(mode: mode_t) -> String {
        "is \(kind(mode: mode)), not a regular file"
    }

    /// What a file type is, in words: "a FIFO", "a directory", "a socket" …
    public static func kind(mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFDIR: "a directory"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        case S_IFLNK: "a symbolic link"
        case S_IFREG: "a regular file"
        default: "an unknown kind of file"
        }
    }
}
