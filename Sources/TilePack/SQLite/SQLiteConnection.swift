import TilePackCore
import CSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One open SQLite database handle (`sqlite3*`), in the manner of GRDB's `Database`.
///
/// Owns the handle and closes it in `deinit`; statements prepared from it keep it alive.
/// Not thread-safe: use one connection per thread (``MBTilesReader`` keeps a small pool).
///
/// ```swift
/// let db = try SQLiteConnection(path: "a.mbtiles", mode: .readOnly)
/// let stmt = try db.prepare("SELECT value FROM metadata WHERE name = ?")
/// ```
package final class SQLiteConnection {
    /// How a connection opens its file.
    package enum Mode: Sendable {
        /// Read-write, creating the file if missing; WAL journal with `synchronous=NORMAL`
        /// (durable at each checkpoint, crash-safe always, ~2× fewer fsyncs than FULL).
        case readWriteCreate
        /// Read-write on a file that must exist; its journal mode is left as it is.
        case readWriteExisting
        /// Read-only. Both modes open with `SQLITE_OPEN_NOMUTEX`: a connection is used by one
        /// thread at a time (the reader lends each call its own pooled connection).
        case readOnly
        /// Read-only, promising SQLite that nothing changes the file while it is open
        /// (`immutable=1`): no locks, no `-wal`/`-shm` files needed or created. For a WAL
        /// database on a read-only file system, which ``readOnly`` cannot open when its
        /// `-shm` file is missing. Never use it on a file another process may write.
        case readOnlyImmutable
    }

    /// The raw handle, valid until `deinit`.
    let handle: OpaquePointer
    /// The database file, named in every error.
    package let path: String
    package let mode: Mode

    /// Opens `path`. On failure the half-open handle is closed before throwing (SQLite
    /// allocates one even when `sqlite3_open_v2` fails).
    package init(path: String, mode: Mode) throws(SQLiteError) {
        self.path = path
        self.mode = mode
        var flags: Int32 = SQLITE_OPEN_NOMUTEX
        switch mode {
        case .readWriteCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        case .readWriteExisting: flags |= SQLITE_OPEN_READWRITE
        case .readOnly: flags |= SQLITE_OPEN_READONLY
        case .readOnlyImmutable: flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI
        }
        // SQLite's open(2) of a FIFO blocks until a writer comes: refuse anything but a regular
        // file first (a path that does not exist yet is SQLite's to create or refuse). By stat,
        // never by opening it: closing a descriptor of a database file drops every POSIX lock
        // this process holds on it, under the feet of its other SQLite connections.
        if !path.isEmpty, path != ":memory:" {
            var info = stat()
            if stat(path, &info) == 0, info.st_mode & S_IFMT != S_IFREG {
                throw SQLiteError(code: .notADatabase, message: RegularFile.notRegular(mode: info.st_mode), path: path)
            }
        }
        var db: OpaquePointer?
        let code = sqlite3_open_v2(mode == .readOnlyImmutable ? Self.immutableURI(path) : path, &db, flags, nil)
        guard code == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close_v2(db)
            throw SQLiteError(code: SQLiteResultCode(rawValue: code), message: message, path: path)
        }
        sqlite3_extended_result_codes(db, 1)
        // Waiting briefly beats failing at once when a checkpoint holds a lock.
        sqlite3_busy_timeout(db, 5_000)
        self.handle = db
        if mode == .readWriteCreate {
            do {
                try execute("PRAGMA journal_mode = WAL")
                try execute("PRAGMA synchronous = NORMAL")
            } catch {
                // deinit closes the handle (every stored property is set by now); closing
                // here too would close it twice.
                throw error
            }
        }
    }

    /// `file:PATH?immutable=1` with the path percent-encoded where a URI needs it.
    static func immutableURI(_ path: String) -> String {
        var out = "file:"
        for b in path.utf8 {
            let plain =
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "/") || b == UInt8(ascii: ".") || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
            if plain {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                let digits = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(digits[Int(b >> 4)])
                out.unicodeScalars.append(digits[Int(b & 0xF)])
            }
        }
        return out + "?immutable=1"
    }

    deinit {
        // close_v2 defers the close until any statements still alive are finalized.
        sqlite3_close_v2(handle)
    }

    /// Runs one or more SQL statements that return no rows we need (schema, pragmas).
    /// - Cost: parses `sql` on each call; prefer ``prepare(_:)`` for repeated statements.
    package func execute(_ sql: String) throws(SQLiteError) {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw error(code: code, sql: sql) }
    }

    /// Compiles one statement for repeated use.
    package func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        try SQLiteStatement(connection: self, sql: sql)
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back if it throws.
    ///
    /// IMMEDIATE takes the write lock at once, so a busy database fails here, not halfway
    /// through the body. A failed COMMIT is rolled back too and its error thrown.
    package func inTransaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        let result: T
        do {
            result = try body()
        } catch {
            rollbackQuietly()
            throw error
        }
        do {
            try execute("COMMIT")
        } catch {
            rollbackQuietly()
            throw error
        }
        return result
    }

    /// True while a transaction is open (autocommit off).
    package var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Rows changed by the last INSERT/UPDATE/DELETE.
    package var changes: Int { Int(sqlite3_changes(handle)) }

    /// Rolls back if a transaction is open; used on error paths where the original error matters more.
    package func rollbackQuietly() {
        if isInTransaction { sqlite3_exec(handle, "ROLLBACK", nil, nil, nil) }
    }

    /// Builds an error from `code` and the handle's current message.
    func error(code: Int32, sql: String?) -> SQLiteError {
        let extended = sqlite3_extended_errcode(handle)
        // Prefer the extended code when it refines the primary one we were handed.
        let resolved = (extended & 0xFF) == (code & 0xFF) ? extended : code
        return SQLiteError(
            code: SQLiteResultCode(rawValue: resolved),
            message: String(cString: sqlite3_errmsg(handle)), sql: sql, path: path)
    }
}

@available(*, unavailable)
extension SQLiteConnection: Sendable {}
