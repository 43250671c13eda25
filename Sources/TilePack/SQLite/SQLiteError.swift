import TilePackCore
import CSQLite

/// An SQLite result code, primary (low 8 bits) or extended.
///
/// A `RawRepresentable` struct rather than an enum so that every code SQLite may return
/// (including extended codes we do not name) is representable, while `catch` and `switch`
/// can still match the named ones: `case .busy` matches `SQLITE_BUSY` and its extended codes.
public struct SQLiteResultCode: RawRepresentable, TilePackErrorCode {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The primary code (low 8 bits) of an extended code.
    public var primary: SQLiteResultCode { SQLiteResultCode(rawValue: rawValue & 0xFF) }

    public static let ok = SQLiteResultCode(rawValue: SQLITE_OK)
    public static let error = SQLiteResultCode(rawValue: SQLITE_ERROR)
    public static let busy = SQLiteResultCode(rawValue: SQLITE_BUSY)
    public static let locked = SQLiteResultCode(rawValue: SQLITE_LOCKED)
    public static let readOnly = SQLiteResultCode(rawValue: SQLITE_READONLY)
    public static let ioError = SQLiteResultCode(rawValue: SQLITE_IOERR)
    public static let corrupt = SQLiteResultCode(rawValue: SQLITE_CORRUPT)
    public static let full = SQLiteResultCode(rawValue: SQLITE_FULL)
    public static let cantOpen = SQLiteResultCode(rawValue: SQLITE_CANTOPEN)
    public static let constraint = SQLiteResultCode(rawValue: SQLITE_CONSTRAINT)
    public static let mismatch = SQLiteResultCode(rawValue: SQLITE_MISMATCH)
    public static let misuse = SQLiteResultCode(rawValue: SQLITE_MISUSE)
    public static let range = SQLiteResultCode(rawValue: SQLITE_RANGE)
    public static let notADatabase = SQLiteResultCode(rawValue: SQLITE_NOTADB)
    public static let row = SQLiteResultCode(rawValue: SQLITE_ROW)
    public static let done = SQLiteResultCode(rawValue: SQLITE_DONE)

    /// Primary codes match themselves and their extended codes; extended codes match only
    /// themselves (so `case .corrupt` also catches `SQLITE_CORRUPT_INDEX`).
    public static func ~= (pattern: SQLiteResultCode, code: SQLiteResultCode) -> Bool {
        pattern == pattern.primary ? pattern == code.primary : pattern == code
    }

    /// SQLite's English name for the code, e.g. "database disk image is malformed".
    public var description: String { String(cString: sqlite3_errstr(rawValue)) }
}

/// A failed SQLite call: the result code, SQLite's message, the SQL that was running (if
/// any) and the database file, everything a person needs to see what went wrong.
///
/// `subject` is the database file; `detail` is "SQLite error N (message) in `SQL`", one line.
/// `Code` is ``SQLiteResultCode``, extensible like every error code. Besides the common shape it
/// keeps SQLite's `message` and the `sql`, which callers quote on their own lines.
public struct SQLiteError: TilePackError, Equatable {
    public typealias Code = SQLiteResultCode
    /// The (extended) result code.
    public let code: SQLiteResultCode
    /// The database file.
    public let subject: String
    /// SQLite's message from `sqlite3_errmsg`, or its name for the code.
    public let message: String
    /// The statement that failed, or nil for open/close.
    public let sql: String?
    public var cause: (any Error)? { nil }

    public init(code: SQLiteResultCode, message: String, sql: String? = nil, path: String) {
        self.code = code
        self.message = message
        self.sql = sql
        self.subject = path
    }

    /// "SQLite error N (message) in `SQL`", on one line.
    public var detail: String {
        let sqlPart = sql.map { " in `\(ErrorText.oneLine($0))`" } ?? ""
        return "SQLite error \(code.rawValue) (\(ErrorText.oneLine(message)))\(sqlPart)"
    }

    /// Environment failures (disk full, I/O, busy), or a damaged or wrong file.
    public var category: TilePackErrorCategory {
        switch code {
        case .full, .ioError, .busy, .locked, .cantOpen, .readOnly: .environment
        default: .invalidInput
        }
    }
}
