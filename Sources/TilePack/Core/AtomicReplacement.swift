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

    /// Temporary files of this target whose writer is gone: `TARGET.tmp-PID` where PID is
    /// this process (a writer of ours that was abandoned) or no running process (a build that
    /// was killed, or a machine that lost power). A PID that runs again as an unrelated
    /// process hides its file (left alone, never deleted by mistake). Newest first.
    /// - Cost: one directory listing plus one `kill(pid, 0)` and `stat` per candidate.
    package func abandonedTemporaries() -> [String] {
        let slash = targetPath.lastIndex(of: "/")
        let directory = slash.map { String(targetPath[..<$0]) } ?? "."
        let prefix = (slash.map { String(targetPath[targetPath.index(after: $0)...]) } ?? targetPath) + ".tmp-"
        guard let dir = opendir(directory.isEmpty ? "/" : directory) else { return [] }
        defer { closedir(dir) }
        var found: [(path: String, modified: Int)] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            guard name.hasPrefix(prefix) else { continue }
            let digits = name.dropFirst(prefix.count)
            guard !digits.isEmpty, digits.count <= 9, digits.allSatisfy({ $0 >= "0" && $0 <= "9" }),
                let pid = Int32(digits)
            else { continue }
            guard pid == getpid() || !Self.processRuns(pid) else { continue }
            let path = (slash == nil ? "" : directory + "/") + name
            var info = stat()
            guard stat(path, &info) == 0 else { continue }
            #if canImport(Darwin)
            let time = info.st_mtimespec
            #else
            let time = info.st_mtim
            #endif
            found.append((path, Int(time.tv_sec) * 1_000_000_000 + Int(time.tv_nsec)))
        }
        return found.sorted { $0.modified > $1.modified }.map(\.path)
    }

    /// Removes an abandoned temporary file (see ``abandonedTemporaries()``) and its companions.
    package func remove(abandoned path: String) {
        unlink(path)
        for suffix in companionSuffixes { unlink(path + suffix) }
    }

    /// Whether a process with this id exists (EPERM: it does, owned by someone else).
    private static func processRuns(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// `strerror` text for an errno value.
    package static func message(_ code: Int32) -> String {
        guard let c = strerror(code) else { return "errno \(code)" }
        return String(cString: c)
    }
}
