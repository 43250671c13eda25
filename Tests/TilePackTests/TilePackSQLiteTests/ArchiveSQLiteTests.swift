import Testing
@testable import TilePackCore
@testable import TilePackSQLite
import TilePackTestSupport

@Suite struct ArchiveSQLiteTests {
    @Test func errorsCarryCodeMessageSQLAndPath() throws {
        let dir = TemporaryDirectory()
        let db = try SQLiteConnection(path: dir.file("a.db"), mode: .readWriteCreate)
        do {
            _ = try db.prepare("SELECT nope FROM nowhere")
            Issue.record("prepare of a bad statement succeeded")
        } catch {
            #expect(error.code == .error)
            #expect(error.message.contains("no such table"))
            #expect(error.sql == "SELECT nope FROM nowhere")
            #expect(error.subject == dir.file("a.db"))
            #expect(
                error.description
                    == "\(dir.file("a.db")): SQLite error 1 (no such table: nowhere) in `SELECT nope FROM nowhere`")
        }
        try db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        let insert = try db.prepare("INSERT INTO t (k, v) VALUES (?, ?)")
        try insert.bind(1, at: 1)
        try insert.bind("one", at: 2)
        try insert.run()
        try insert.bind(1, at: 1)
        try insert.bind("again", at: 2)
        do {
            try insert.run()
            Issue.record("duplicate key accepted")
        } catch {
            // Extended code SQLITE_CONSTRAINT_PRIMARYKEY (1555) matches the primary pattern.
            #expect(error.code.rawValue == 1555)
            #expect(SQLiteResultCode.constraint ~= error.code)
            #expect(error.description.contains("UNIQUE constraint failed"))
        }
    }

    @Test func openingAMissingFileReadOnlyThrowsCantOpen() {
        let dir = TemporaryDirectory()
        #expect {
            _ = try SQLiteConnection(path: dir.file("missing.db"), mode: .readOnly)
        } throws: { error in
            (error as? SQLiteError).map { SQLiteResultCode.cantOpen ~= $0.code } ?? false
        }
    }

    @Test func statementsAreReusedAcrossRowsAndTypes() throws {
        let dir = TemporaryDirectory()
        let db = try SQLiteConnection(path: dir.file("a.db"), mode: .readWriteCreate)
        try db.execute("CREATE TABLE t (i INTEGER, d REAL, s TEXT, b BLOB)")
        let insert = try db.prepare("INSERT INTO t VALUES (?, ?, ?, ?)")
        for n in 0..<100 {
            try insert.bind(n, at: 1)
            try insert.bind(Double(n) / 4, at: 2)
            try insert.bind(n.isMultiple(of: 2) ? "even \(n)" : nil, at: 3)
            try insert.bind([UInt8(n), 0, 255], at: 4)
            try insert.run()
        }
        let select = try db.prepare("SELECT i, d, s, b FROM t WHERE i = ?")
        for n in [0, 7, 99] {
            select.reset()
            try select.bind(n, at: 1)
            #expect(try select.step())
            #expect(select.int(at: 0) == n)
            #expect(select.double(at: 1) == Double(n) / 4)
            #expect(select.string(at: 2) == (n.isMultiple(of: 2) ? "even \(n)" : nil))
            #expect(select.isNull(at: 2) == !n.isMultiple(of: 2))
            #expect(select.bytes(at: 3) == [UInt8(n), 0, 255])
            #expect(try select.step() == false)
        }
        let count = try db.prepare("SELECT count(*) FROM t")
        #expect(try count.step() && count.int(at: 0) == 100)
    }

    @Test func transactionRollsBackWhenTheBodyThrows() throws {
        struct Boom: Error {}
        let dir = TemporaryDirectory()
        let db = try SQLiteConnection(path: dir.file("a.db"), mode: .readWriteCreate)
        try db.execute("CREATE TABLE t (v INTEGER)")
        try db.inTransaction { try db.execute("INSERT INTO t VALUES (1)") }
        #expect(throws: Boom.self) {
            try db.inTransaction {
                try db.execute("INSERT INTO t VALUES (2)")
                throw Boom()
            }
        }
        #expect(!db.isInTransaction)
        let rows = try db.prepare("SELECT group_concat(v) FROM t")
        #expect(try rows.step() && rows.string(at: 0) == "1")
        let mode = try db.prepare("PRAGMA journal_mode")
        #expect(try mode.step() && mode.string(at: 0) == "wal")
    }

    @Test func readOnlyConnectionRefusesWrites() throws {
        let dir = TemporaryDirectory()
        do {
            let db = try SQLiteConnection(path: dir.file("a.db"), mode: .readWriteCreate)
            try db.execute("CREATE TABLE t (v INTEGER)")
        }
        let ro = try SQLiteConnection(path: dir.file("a.db"), mode: .readOnly)
        #expect {
            try ro.execute("INSERT INTO t VALUES (1)")
        } throws: { error in
            (error as? SQLiteError).map { SQLiteResultCode.readOnly ~= $0.code } ?? false
        }
    }
}
