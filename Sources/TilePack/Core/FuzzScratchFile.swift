#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one file a fuzz entry that reads paths (TIFF, MBTiles) writes its input to: a fixed
/// per-process name in the temporary directory, rewritten for every input, so a fuzz run of
/// millions of inputs leaves one file (plus SQLite's companions, which ``remove(_:)`` clears).
package enum FuzzScratchFile {
    /// `$TMPDIR` (else /tmp) + `tilepack-fuzz-PID.EXTENSION`.
    /// - Cost: one environment lookup.
    public static func path(extension ext: String) -> String {
        "\(ProcessScratchDirectory.temporaryBase)/tilepack-fuzz-\(getpid()).\(ext)"
    }

    /// Replaces `path` with `bytes` (unlink, then create: a new inode, so nothing of the
    /// previous input survives in a page cache a reader could map).
    /// Returns false when the file could not be written (a full disk is not the input's fault).
    /// - Cost: one create and write of `bytes.count` bytes.
    public static func write(_ bytes: [UInt8], to path: String) -> Bool {
        remove(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return -1 }
                return posixWrite(fd, base + done, raw.count - done)
            }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    /// Removes `path` and SQLite's `-journal`, `-wal` and `-shm` companions.
    /// - Cost: four `unlink(2)`s.
    public static func remove(_ path: String) {
        for suffix in ["", "-journal", "-wal", "-shm"] { unlink(path + suffix) }
    }
}

/// `write(2)`, under a name the static `write(_:to:)` does not shadow.
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, buffer, count)
}
