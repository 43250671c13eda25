import TilePackCore
import CSQLite

/// One compiled SQL statement (`sqlite3_stmt*`), finalized in `deinit`.
///
/// Prepare once, then for each use: `reset()` (or a fresh prepare), `bind`, `step` until it
/// returns false, reading columns while it returns true. Keeps its connection alive.
/// Not thread-safe, like its connection.
package final class SQLiteStatement {
    let handle: OpaquePointer
    /// The connection this statement runs on.
    package let connection: SQLiteConnection
    /// The SQL text, named in errors.
    package let sql: String

    init(connection: SQLiteConnection, sql: String) throws(SQLiteError) {
        var stmt: OpaquePointer?
        let code = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard code == SQLITE_OK, let stmt else {
            sqlite3_finalize(stmt)
            throw code == SQLITE_OK
                ? SQLiteError(code: .misuse, message: "no statement in SQL text", sql: sql, path: connection.path)
                : connection.error(code: code, sql: sql)
        }
        self.handle = stmt
        self.connection = connection
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement for another run and clears its bindings.
    /// Errors of the previous run were already thrown by `step`, so reset's code is ignored.
    package func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    // MARK: Binding (1-based parameter indexes, as in SQL)

    package func bind(_ value: Int, at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_int64(handle, index, Int64(value)))
    }

    package func bind(_ value: Double, at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_double(handle, index, value))
    }

    /// Binds text; SQLite copies it (`SQLITE_TRANSIENT`), so the Swift string may go.
    package func bind(_ value: String, at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_text(handle, index, value, -1, tp_sqlite_transient()))
    }

    /// Binds a blob; SQLite copies the bytes (`SQLITE_TRANSIENT`). An empty array binds a
    /// zero-length blob, not NULL.
    package func bind(_ value: [UInt8], at index: Int32) throws(SQLiteError) {
        let code = value.withUnsafeBytes { raw -> Int32 in
            if raw.isEmpty { return sqlite3_bind_zeroblob(handle, index, 0) }
            return sqlite3_bind_blob64(handle, index, raw.baseAddress, sqlite3_uint64(raw.count), tp_sqlite_transient())
        }
        try check(code)
    }

    package func bindNull(at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_null(handle, index))
    }

    /// Binds an optional value, NULL when nil.
    package func bind(_ value: String?, at index: Int32) throws(SQLiteError) {
        if let value { try bind(value, at: index) } else { try bindNull(at: index) }
    }

    // MARK: Running

    /// Advances one row. Returns true when a row is ready, false when done.
    /// On error the statement is reset (so it can be reused) and the error thrown.
    @discardableResult
    package func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = connection.error(code: code, sql: sql)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// Resets, binds nothing further, and steps to completion (for INSERT/UPDATE/DELETE
    /// whose parameters the caller already bound).
    package func run() throws(SQLiteError) {
        while try step() {}
        sqlite3_reset(handle)
    }

    // MARK: Columns (0-based, as in sqlite3_column_*)

    package var columnCount: Int32 { sqlite3_column_count(handle) }

    package func isNull(at column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    package func int(at column: Int32) -> Int { Int(sqlite3_column_int64(handle, column)) }

    package func double(at column: Int32) -> Double { sqlite3_column_double(handle, column) }

    /// Text of the column, or nil for NULL. Numbers are converted as SQLite does.
    package func string(at column: Int32) -> String? {
        guard let text = sqlite3_column_text(handle, column) else { return nil }
        return String(cString: text)
    }

    /// Bytes of the column (a blob, or text's UTF-8), nil for NULL.
    /// - Cost: one copy of the value.
    package func bytes(at column: Int32) -> [UInt8]? {
        if sqlite3_column_type(handle, column) == SQLITE_NULL { return nil }
        // blob first, then bytes: the documented order that avoids a conversion invalidating the pointer.
        let pointer = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer else { return [] }
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Calls `body` with the blob of `column` in place (SQLite's own buffer, valid until the
    /// next step or reset), or returns nil for NULL. Lets a reader copy a blob straight into
    /// a pooled buffer: no intermediate array.
    /// - Cost: no allocation beyond what `body` does.
    package func withBytes<R>(at column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R? {
        if sqlite3_column_type(handle, column) == SQLITE_NULL { return nil }
        let pointer = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        guard count > 0, let pointer else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    private func check(_ code: Int32) throws(SQLiteError) {
        guard code == SQLITE_OK else { throw connection.error(code: code, sql: sql) }
    }
}

@available(*, unavailable)
extension SQLiteStatement: Sendable {}
