import TilePackCore
import TilePackSQLite

/// Why proj.db could not be used. proj.db is the user's file (or a path they named): each
/// description is one line naming the file and the problem, and none of them falls back to
/// the built-in table silently.
public enum CRSRegistryError: TilePackError, Equatable {
    /// The path does not exist (`--proj-db`, or a PROJ_DATA/PROJ_LIB directory without proj.db).
    case missing(path: String, origin: String)
    /// Not a regular file (a directory, FIFO, device): never handed to SQLite, which could block on it.
    case notRegularFile(path: String, origin: String, kind: String)
    /// open/fstat/read failed (permissions, I/O).
    case unreadable(path: String, origin: String, reason: String)
    /// The first 16 bytes are not "SQLite format 3\0", or the file is shorter than a header.
    case notSQLite(path: String, origin: String)
    /// A SQLite file that is not a usable proj.db: missing tables or metadata, another layout
    /// version, truncated pages.
    case badSchema(path: String, origin: String, problem: String)
    /// A query failed while reading a CRS (a damaged page found late, I/O).
    case query(SQLiteError)
    /// PROJ_DATA / PROJ_LIB is set but names no directory holding proj.db.
    case notFoundInEnvironment(variable: String, value: String)

    public var category: TilePackErrorCategory {
        switch self {
        case .missing, .notFoundInEnvironment: .notFound
        case .unreadable: .environment
        case .query(let e): e.category
        case .notRegularFile, .notSQLite, .badSchema: .invalidInput
        }
    }

    public var description: String {
        switch self {
        case .missing(let path, let origin):
            "proj.db \(path) (\(origin)): no such file"
        case .notRegularFile(let path, let origin, let kind):
            "proj.db \(path) (\(origin)): is \(kind), not a regular file"
        case .unreadable(let path, let origin, let reason):
            "proj.db \(path) (\(origin)): cannot read (\(reason))"
        case .notSQLite(let path, let origin):
            "proj.db \(path) (\(origin)): not a SQLite database (no \"SQLite format 3\" header)"
        case .badSchema(let path, let origin, let problem):
            "proj.db \(path) (\(origin)): \(ErrorText.oneLine(problem))"
        case .query(let e):
            "proj.db \(e.description)"
        case .notFoundInEnvironment(let variable, let value):
            "\(variable)=\(ErrorText.quoted(value)): no directory in it holds proj.db"
        }
    }
}
