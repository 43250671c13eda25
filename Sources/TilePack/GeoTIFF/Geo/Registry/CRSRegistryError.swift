import TilePackCore
import TilePackSQLite

/// Why proj.db could not be used. proj.db is the user's file (or a path they named): `subject`
/// names the file and where its path came from (`proj.db /x/proj.db (--proj-db)`), `detail` the
/// problem, and none of them falls back to the built-in table silently. Built with the
/// factories named after the codes (`CRSRegistryError.missing(path:origin:)`).
public struct CRSRegistryError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The path does not exist (`--proj-db`, or a PROJ_DATA/PROJ_LIB directory without proj.db).
        public static let missing = Code("missing")
        /// Not a regular file (a directory, FIFO, device): never handed to SQLite, which could block on it.
        public static let notRegularFile = Code("notRegularFile")
        /// open/fstat/read failed (permissions, I/O).
        public static let unreadable = Code("unreadable")
        /// The first 16 bytes are not "SQLite format 3\0", or the file is shorter than a header.
        public static let notSQLite = Code("notSQLite")
        /// A SQLite file that is not a usable proj.db: missing tables or metadata, another layout
        /// version, truncated pages.
        public static let badSchema = Code("badSchema")
        /// A query failed while reading a CRS (a damaged page found late, I/O): `cause` is the SQLiteError.
        public static let query = Code("query")
        /// PROJ_DATA / PROJ_LIB is set but names no directory holding proj.db.
        public static let notFoundInEnvironment = Code("notFoundInEnvironment")
    }

    public let code: Code
    /// `proj.db PATH (ORIGIN)`, or `VARIABLE="value"` for the environment.
    public let subject: String
    public let detail: String
    /// The ``SQLiteError`` of a failed query; not compared by `==`.
    public let cause: (any Error)?

    public init(_ code: Code, subject: String, detail: String, cause: (any Error)? = nil) {
        self.code = code
        self.subject = subject
        self.detail = detail
        self.cause = cause
    }

    public var category: TilePackErrorCategory {
        switch code {
        case .missing, .notFoundInEnvironment: .notFound
        case .unreadable: .environment
        case .query: (cause as? any TilePackError)?.category ?? .invalidInput
        default: .invalidInput
        }
    }

    private static func file(_ path: String, _ origin: String) -> String { "proj.db \(path) (\(origin))" }

    public static func missing(path: String, origin: String) -> CRSRegistryError {
        CRSRegistryError(.missing, subject: file(path, origin), detail: "no such file")
    }

    public static func notRegularFile(path: String, origin: String, kind: String) -> CRSRegistryError {
        CRSRegistryError(.notRegularFile, subject: file(path, origin), detail: "is \(kind), not a regular file")
    }

    public static func unreadable(path: String, origin: String, reason: String) -> CRSRegistryError {
        CRSRegistryError(.unreadable, subject: file(path, origin), detail: "cannot read (\(reason))")
    }

    public static func notSQLite(path: String, origin: String) -> CRSRegistryError {
        CRSRegistryError(
            .notSQLite, subject: file(path, origin), detail: "not a SQLite database (no \"SQLite format 3\" header)")
    }

    public static func badSchema(path: String, origin: String, problem: String) -> CRSRegistryError {
        CRSRegistryError(.badSchema, subject: file(path, origin), detail: ErrorText.oneLine(problem))
    }

    /// A failed query: "proj.db " and the SQLite error's own line.
    public static func query(_ error: SQLiteError) -> CRSRegistryError {
        CRSRegistryError(.query, subject: "proj.db \(error.subject)", detail: error.detail, cause: error)
    }

    public static func notFoundInEnvironment(variable: String, value: String) -> CRSRegistryError {
        CRSRegistryError(
            .notFoundInEnvironment, subject: "\(variable)=\(ErrorText.quoted(value))",
            detail: "no directory in it holds proj.db")
    }
}
