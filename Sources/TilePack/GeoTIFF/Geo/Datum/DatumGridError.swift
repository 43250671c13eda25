import TilePackCore

/// Why a datum-shift grid file (NTv2 `.gsb`, PROJ GeoTIFF `.tif`) or a proj.db
/// transformation row could not be used. One line naming the file and the problem.
///
/// A grid that exists but cannot be read is an error, never a silent fall back to a
/// Helmert: the user put a file there and would otherwise get a map off by metres without
/// knowing why.
public struct DatumGridError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// Cannot open or read the file (permissions, I/O, not a regular file).
        public static let unreadable = Code("unreadable")
        /// Shorter than its headers say.
        public static let truncated = Code("truncated")
        /// A header field is missing, misspelt or impossible (counts, extents, increments).
        public static let badHeader = Code("badHeader")
        /// Dimensions or counts beyond what a horizontal shift grid can sensibly hold.
        public static let tooLarge = Code("tooLarge")
        /// A shift value is NaN or infinite.
        public static let badValue = Code("badValue")
        /// A layout tilepack does not read (another GeoTIFF grid type, a band it lacks).
        public static let unsupported = Code("unsupported")
        /// A proj.db row that cannot be turned into an operation (unknown unit, bad value).
        public static let badOperation = Code("badOperation")
    }

    public let code: Code
    /// The grid file (or proj.db for a transformation row).
    public let subject: String
    /// The problem: "datum shift grid: …" for a grid file.
    public let detail: String
    public var cause: (any Error)? { nil }

    /// `detail` is the problem; a grid file's gets the "datum shift grid: " prefix.
    public init(path: String, code: Code, detail: String) {
        self.subject = path
        self.code = code
        self.detail = code == .badOperation ? detail : "datum shift grid: \(detail)"
    }

    public var category: TilePackErrorCategory {
        switch code {
        case .unreadable: .environment
        case .unsupported: .unsupported
        default: .invalidInput
        }
    }
}
