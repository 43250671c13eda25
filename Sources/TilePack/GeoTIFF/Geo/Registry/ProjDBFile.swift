import TilePackCore
import TilePackSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Opening proj.db safely: the checks made before SQLite touches the file, then the schema
/// and metadata checks after.
///
/// Before: opened `O_NONBLOCK` and `fstat`ed, so a FIFO or device is refused instead of
/// blocking SQLite's open; the 100-byte header must start "SQLite format 3\0" and the file
/// must be as long as the header's page count × page size (a truncated copy is refused
/// here, not found pages later by a query that would then fail halfway through a list).
/// After: `metadata` must say DATABASE.LAYOUT.VERSION.MAJOR = 1 (any minor: minors only add
/// tables and columns, and tilepack reads only ones layout 1.0, PROJ 8.1, already had) and
/// give EPSG.VERSION; every statement the reader uses is prepared at once, so a missing
/// table or column is reported when the file is opened.
///
/// Residual race: the path is checked, then opened again by SQLite; replacing the file in
/// between is the device owner's own doing (the threat model's attacker only hurts
/// themselves) and SQLite then fails with an error, never a wrong map.
enum ProjDBFile {
    /// The layout major version this reader understands.
    static let layoutMajor = 1

    /// Checks `path` is a regular, complete SQLite file. Cost: one open, fstat and 100-byte read.
    static func checkFile(path: String, origin: String) throws(CRSRegistryError) {
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .missing(path: path, origin: origin) }
            throw .unreadable(path: path, origin: origin, reason: String(cString: strerror(code)))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw .unreadable(path: path, origin: origin, reason: String(cString: strerror(errno)))
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw .notRegularFile(path: path, origin: origin, kind: RegularFile.kind(mode: info.st_mode))
        }
        var header = [UInt8](repeating: 0, count: 100)
        var filled = 0
        while filled < header.count {
            let n = header.withUnsafeMutableBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return read(fd, base + filled, raw.count - filled)
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw .unreadable(path: path, origin: origin, reason: String(cString: strerror(errno)))
            }
            if n == 0 { break }
            filled += n
        }
        let magic = Array("SQLite format 3".utf8) + [0]
        guard filled == header.count, Array(header[0..<16]) == magic else {
            throw .notSQLite(path: path, origin: origin)
        }
        // Page size: big-endian at 16 (1 means 65536); page count at 28, valid when the
        // "version-valid-for" number at 92 equals the change counter at 24 (SQLite ≥ 3.7.0).
        func be32(_ at: Int) -> Int {
            Int(header[at]) << 24 | Int(header[at + 1]) << 16 | Int(header[at + 2]) << 8 | Int(header[at + 3])
        }
        let rawPage = Int(header[16]) << 8 | Int(header[17])
        let pageSize = rawPage == 1 ? 65_536 : rawPage
        guard pageSize >= 512, pageSize & (pageSize - 1) == 0 else {
            throw .badSchema(path: path, origin: origin, problem: "damaged SQLite header (page size \(rawPage))")
        }
        let size = Int(info.st_size)
        let pages = be32(28)
        if pages > 0, be32(92) == be32(24) {
            let (expected, overflow) = pages.multipliedReportingOverflow(by: pageSize)
            guard !overflow, size >= expected else {
                throw .badSchema(
                    path: path, origin: origin,
                    problem: "truncated: \(size) bytes, the SQLite header says \(pages) pages of \(pageSize) bytes")
            }
        } else if size % pageSize != 0 {
            throw .badSchema(
                path: path, origin: origin,
                problem: "truncated: \(size) bytes is not a whole number of \(pageSize)-byte pages")
        }
    }

    /// Opens a checked file read-only and reads its EPSG version after checking the layout.
    /// Cost: one small metadata query.
    static func openDatabase(
        path: String, origin: String
    ) throws(CRSRegistryError) -> (SQLiteConnection, epsgVersion: String) {
        try checkFile(path: path, origin: origin)
        let db: SQLiteConnection
        do { db = try SQLiteConnection(path: path, mode: .readOnly) } catch {
            throw .badSchema(path: path, origin: origin, problem: "SQLite cannot open it (\(error.message))")
        }
        var meta: [String: String] = [:]
        do {
            let stmt = try db.prepare(
                """
                SELECT key, value FROM metadata WHERE key IN ('DATABASE.LAYOUT.VERSION.MAJOR', \
                'DATABASE.LAYOUT.VERSION.MINOR', 'EPSG.VERSION')
                """
            )
            while try stmt.step() {
                if let k = stmt.string(at: 0), let v = stmt.string(at: 1) { meta[k] = v }
            }
        } catch {
            throw .badSchema(
                path: path, origin: origin, problem: "not a proj.db: cannot read its metadata table (\(error.message))")
        }
        guard let majorText = meta["DATABASE.LAYOUT.VERSION.MAJOR"], let major = Int(majorText) else {
            throw .badSchema(
                path: path, origin: origin, problem: "not a proj.db: metadata has no DATABASE.LAYOUT.VERSION.MAJOR")
        }
        guard major == layoutMajor else {
            let minor = meta["DATABASE.LAYOUT.VERSION.MINOR"].map { ".\($0)" } ?? ""
            throw .badSchema(
                path: path, origin: origin,
                problem:
                    "database layout version \(major)\(minor); tilepack reads layout \(layoutMajor).x (PROJ 8.1 to 9.x)"
            )
        }
        guard let version = meta["EPSG.VERSION"], !version.isEmpty else {
            throw .badSchema(path: path, origin: origin, problem: "metadata has no EPSG.VERSION: no EPSG dataset in it")
        }
        return (db, ErrorText.oneLine(version))
    }
}
