import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A scratch directory that lives as long as the process: made once (by a lazily built
/// fixture, a fuzz entry's library) and removed with everything in it when the process exits
/// normally (`exit(3)`, the end of `main`, a test run's end).
///
/// Why: such directories outlive every scope a `deinit` could clean in; left behind, each
/// `swift test` run kept several MiB in /tmp (hundreds of runs later, gigabytes). A process
/// killed by a signal or a crash still leaves its directory: that is what `/tmp` cleaning is
/// for, and a crash's files are evidence.
package enum ProcessScratchDirectory {
    private static let registered = Locked<[String]>([])

    /// The temporary directory: `$TMPDIR` when set and not empty, else /tmp.
    /// - Cost: one environment lookup.
    package static var temporaryBase: String {
        getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }

    /// Makes `$TMPDIR` (else /tmp) + `tilepack-PREFIX-XXXXXX` with `mkdtemp(3)` (mode 0700) and
    /// registers it for removal at exit; nil when it cannot be made.
    /// - Cost: one `mkdtemp`, one lock; the first call registers an `atexit` handler.
    package static func make(prefix: String) -> String? {
        var template = Array("\(temporaryBase)/tilepack-\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let start = buffer.baseAddress, mkdtemp(start) != nil else { return nil }
            return String(cString: start)
        }
        guard let made else { return nil }
        registered.withLock { (paths: inout [String]) in
            if paths.isEmpty { atexit { ProcessScratchDirectory.removeRegistered() } }
            paths.append(made)
        }
        return made
    }

    /// Removes `path` with everything in it now, and forgets it: a fixture done early, and
    /// the test of what the exit handler does for each directory.
    /// - Cost: one lock and a recursive removal.
    package static func remove(_ path: String) {
        registered.withLock { (paths: inout [String]) in paths.removeAll { $0 == path } }
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Removes every registered directory: the `atexit` handler.
    private static func removeRegistered() {
        let paths = registered.withLock { (paths: inout [String]) -> [String] in
            defer { paths = [] }
            return paths
        }
        for path in paths { try? FileManager.default.removeItem(atPath: path) }
    }
}
