#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Write-then-rename, the one way tilepack writes a file a person will open: everything goes
/// to `TARGET.tmp-PID` and appears under TARGET only when complete, so an interrupted or failed
/// write leaves no half file and an existing file stays valid until the new one replaces it.
/// The pid keeps two writers of the same target (two processes) off each other's file.
///
/// Cost: one `rename(2)` to commit; `unlink(2)` per companion suffix to abandon.
package struct AtomicReplacement: Sendable {
    package let targetPath: String
    package let temporaryPath: String
    /// Files that live beside the temporary one and go with it (SQLite's `-wal`, `-shm`, `-journal`).
    package let companionSuffixes: [String]

    package init(targetPath: String, companionSuffixes: [String] = []) {
        self.targetPath = targetPath
        self.temporaryPath = "\(targetPath).tmp-\(getpid())"
        self.companionSuffixes = companionSuffixes
    }

    /// Moves the finished temporary file onto the target (the caller has closed it).
    /// On failure the temporary file is removed and `rename`'s errno returned.
    package func commit() -> Int32? {
        guard rename(temporaryPath, targetPath) == 0 else {
            let code = errno
            removeTemporary()
            return code
        }
        removeCompanions()
        return nil
    }

    /// Removes the temporary file and its companions, ignoring the ones that are absent.
    package func removeTemporary() {
        unlink(temporaryPath)
        removeCompanions()
    }

    private func removeCompanions() {
        for suffix in companionSuffixes { unlink(temporaryPath + suffix) }
    }

    /// `strerror` text for an errno value.
    package static func message(_ code: Int32) -> String {
        guard let c = strerror(code) else { return "errno \(code)" }
        return String(cString: c)
    }
}
