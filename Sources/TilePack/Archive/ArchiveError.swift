import TilePackCore
import TilePackSQLite
import TilePackCodec
/// Why an MBTiles archive (or pack) could not be opened, read or written.
///
/// `subject` is the file, `detail` the problem, `cause` the SQLite or I/O error underneath when
/// there was one: `"/data/a.mbtiles: not an MBTiles archive (no tiles table or view)"`.
public struct ArchiveError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The file does not exist.
        public static let notFound = Code("notFound")
        /// The file is unreadable (permissions, an I/O error).
        public static let cannotOpen = Code("cannotOpen")
        /// The path names a FIFO, directory, device or socket where an archive is expected.
        public static let notRegularFile = Code("notRegularFile")
        /// The bytes are not an SQLite database (random data, truncated header, wrong file).
        public static let notSQLite = Code("notSQLite")
        /// An SQLite database without the MBTiles tables, or a foreign `application_id`.
        public static let notMBTiles = Code("notMBTiles")
        /// A file that does not start with PMTiles' magic (`PMTiles`).
        public static let notPMTiles = Code("notPMTiles")
        /// A valid archive compressed in a way tilepack does not read (PMTiles brotli or zstd).
        public static let unsupportedCompression = Code("unsupportedCompression")
        /// An SQLite database whose pages or rows are damaged (truncated file, corrupt page).
        public static let damaged = Code("damaged")
        /// A stored elevation tile that does not decode (unknown encoding, wrong size).
        public static let badElevation = Code("badElevation")
        /// The writer could not create, fill or move the archive into place.
        public static let writeFailed = Code("writeFailed")
        /// The caller passed a value the archive cannot store (bad tile size, empty name).
        public static let invalidArgument = Code("invalidArgument")
        /// An MBTiles file that is not a tilepack pack (or delta): pack tables missing or
        /// not as the pack format defines them.
        public static let notPack = Code("notPack")
        /// A pack written by a newer tilepack (its `tilepack_pack_format` is above
        /// ``PackSchema/readerVersion``).
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// Content whose SHA-256 is not the one its tile index row (or content key) records:
        /// a tile edited or swapped in after the pack was written.
        public static let hashMismatch = Code("hashMismatch")
        /// A delta that does not apply here: another pack or version, or a result whose tile
        /// index digest is not the expected one.
        public static let deltaMismatch = Code("deltaMismatch")
    }

    public let code: Code
    /// The archive's path.
    public let subject: String
    /// What exactly is wrong, in words.
    public let detail: String
    /// The error underneath (an ``SQLiteError``, a file error), if any; not compared by `==`.
    public let cause: (any Error)?

    public init(path: String, code: Code, detail: String, cause: (any Error)? = nil) {
        self.subject = path
        self.code = code
        self.detail = detail
        self.cause = cause
    }

    /// Environment trouble (cannot open, cannot write), or a bad archive.
    public var category: TilePackErrorCategory {
        switch code {
        case .notFound: .notFound
        case .cannotOpen, .writeFailed: .environment
        case .unsupportedCompression: .unsupported
        default: .invalidInput
        }
    }

    /// Maps an SQLite failure while reading an archive to the archive-level problem.
    static func reading(_ error: SQLiteError, path: String, doing what: String) -> ArchiveError {
        let code: Code
        switch error.code {
        case .notADatabase: code = .notSQLite
        case .corrupt: code = .damaged
        case .cantOpen: code = .cannotOpen
        default: code = .damaged
        }
        // SQL and SQLite's messages may span lines: the SQLite error's detail is one line.
        let what = code == .notSQLite ? "not an SQLite database" : "\(what) failed"
        return ArchiveError(path: path, code: code, detail: "\(what): \(error.detail)", cause: error)
    }

    /// Runs `body`, a call of the untyped public API whose implementation throws `ArchiveError`
    /// alone, for typed callers inside the module; anything else becomes `damaged`, as its cause.
    package static func typed<T>(path: String, _ body: () throws -> T) throws(ArchiveError) -> T {
        do {
            return try body()
        } catch let error as ArchiveError {
            throw error
        } catch {
            throw ArchiveError(path: path, code: .damaged, detail: "\(error)", cause: error)
        }
    }
}
