#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Checks made on an output path (`-o`) before a command does its work, so a typo in a
/// directory name fails at once and names the directory.
enum OutputPath {
    /// The directory a file at `path` would be written in ("." for a bare name).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let dir = String(path[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    /// Throws when the directory `path` would be written in does not exist or is not a
    /// directory. - Cost: one `stat(2)`.
    static func checkDirectory(of path: String) throws(OutputPathError) {
        try checkDirectory(directory(of: path), for: path)
    }

    /// Throws when `dir`, where `path` goes (`path` is `dir` itself for `build --each -o DIR`),
    /// does not exist or is not a directory. - Cost: one `stat(2)`.
    static func checkDirectory(_ dir: String, for path: String) throws(OutputPathError) {
        var info = stat()
        guard stat(dir, &info) == 0 else {
            throw OutputPathError(.missingDirectory, path: path, detail: "directory \(dir) does not exist")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw OutputPathError(.notADirectory, path: path, detail: "\(dir) is not a directory")
        }
    }
}
