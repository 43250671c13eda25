import TilePackCore
import TilePackSQLite
import TilePackCodec
/// Why an MBTiles archive could not be opened, read or written.
///
/// `description` is one line naming the file and the problem, e.g.
/// `"/data/a.mbtiles: not an MBTiles archive (no tiles table or view)"`.
public struct ArchiveError: TilePackError, Equatable {
    /// The kinds of failure a caller may want to tell apart.
    public enum Problem: Sendable, Equatable {
        /// The file does not exist.
        case notFound
        /// The file is unreadable (permissions, an I/O error).
        case cannotOpen
        /// The path names a FIFO, directory, device or socket where an archive is expected.
        case notRegularFile
        /// The bytes are not an SQLite database (random data, truncated header, wrong file).
        case notSQLite
        /// An SQLite database without the MBTiles tables, or a foreign `application_id`.
        case notMBTiles
        /// An SQLite database whose pages or rows are damaged (truncated file, corrupt page).
        case damaged
        /// A stored elevation tile that does not decode (unknown encoding, wrong size).
        case badElevation
        /// The writer could not create, fill or move the archive into place.
        case writeFailed
        /// The caller passed a value the archive cannot store (bad tile size, empty name).
        case invalidArgument
        /// An MBTiles file that is not a tilepack pack (or delta): pack tables missing or
        /// not as the pack format defines them.
        case notPack
        /// A pack written by a newer tilepack (its `tilepack_pack_format` is above
        /// ``PackSchema/readerVersion``).
        case unsupportedVersion
        /// Content whose SHA-256 is not the one its tile index row (or content key) records:
        /// a tile edited or swapped in after the pack was written.
        case hashMismatch
        /// A delta that does not apply here: another pack or version, or a result whose tile
        /// index digest is not the expected one.
        case deltaMismatch
    }

    public var path: String
    public var problem: Problem
    /// What exactly is wrong, in words.
    public var detail: String

    public init(path: String, problem: Problem, detail: String) {
        self.path = path
        self.problem = problem
        self.detail = detail
    }

    /// Environment trouble (cannot open, cannot write), or a bad archive.
    public var category: TilePackErrorCategory {
        switch problem {
        case .notFound: .notFound
        case .cannotOpen, .writeFailed: .environment
        default: .invalidInput
        }
    }

    public var description: String { "\(path): \(detail)" }

    /// Maps an SQLite failure while reading an archive to the archive-level problem.
    static func reading(_ error: SQLiteError, path: String, doing what: String) -> ArchiveError {
        let problem: Problem
        switch error.code {
        case .notADatabase: problem = .notSQLite
        case .corrupt: problem = .damaged
        case .cantOpen: problem = .cannotOpen
        default: problem = .damaged
        }
        // SQL and SQLite's messages may span lines (multi-line statements, names from the file).
        let sqlPart = error.sql.map { " in `\(ErrorText.oneLine($0))`" } ?? ""
        let what = problem == .notSQLite ? "not an SQLite database" : "\(what) failed"
        return ArchiveError(
            path: path, problem: problem,
            detail: "\(what): SQLite error \(error.code.rawValue) (\(ErrorText.oneLine(error.message)))\(sqlPart)")
    }
}
