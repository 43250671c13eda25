import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where proj.db is looked for, in PROJ's own order: an explicit path, then `PROJ_DATA`,
/// then `PROJ_LIB` (each a ':'-separated list of directories; the first holding proj.db
/// wins), then the Debian/Homebrew-style system path; with none, the built-in table.
///
/// A place the user named (the path, a variable that is set and not empty) must hold a
/// usable proj.db: a wrong one is an error, never a silent fall back to the built-in table.
/// The system path is used when it exists, and is then held to the same checks.
public struct ProjDBLocation: Sendable, Equatable {
    /// The proj.db file chosen, nil for the built-in table.
    public let path: String?
    /// How it was found, for error messages: "--proj-db", "PROJ_DATA", "PROJ_LIB" or "default path".
    public let origin: String

    /// Debian's proj-data location.
    public static let systemPath = "/usr/share/proj/proj.db"

    /// Resolves the location. Cost: at most one `access` per directory listed, no file read.
    /// - Throws: ``CRSRegistryError/notFoundInEnvironment(variable:value:)`` for a variable
    ///   none of whose directories holds proj.db.
    public static func resolve(
        explicitPath: String?, environment: [String: String],
        systemPath: String = ProjDBLocation.systemPath
    ) throws(CRSRegistryError) -> ProjDBLocation {
        if let explicitPath { return ProjDBLocation(path: explicitPath, origin: "--proj-db") }
        for variable in ["PROJ_DATA", "PROJ_LIB"] {
            guard let value = environment[variable], !value.isEmpty else { continue }
            for dir in value.split(separator: ":", omittingEmptySubsequences: true) {
                let candidate = dir.hasSuffix("/") ? "\(dir)proj.db" : "\(dir)/proj.db"
                if access(candidate, F_OK) == 0 { return ProjDBLocation(path: candidate, origin: variable) }
            }
            throw .notFoundInEnvironment(variable: variable, value: value)
        }
        if access(systemPath, F_OK) == 0 { return ProjDBLocation(path: systemPath, origin: "default path") }
        return ProjDBLocation(path: nil, origin: "built-in table")
    }
}
