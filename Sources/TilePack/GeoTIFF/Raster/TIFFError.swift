import TilePackCore
/// Why a TIFF could not be read: `subject` is the file, `detail` what exactly was wrong in the
/// TIFF spec's words, `code` the class of problem for callers (and tests) to match without
/// parsing text. `description` is one line, `PATH: problem`, as the CLI prints it.
public struct TIFFError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The file ends before a structure it announces (header, IFD, value, block).
        public static let truncated = Code("truncated")
        /// Not a TIFF: wrong byte-order mark or magic number.
        public static let badHeader = Code("badHeader")
        /// An offset (IFD, tag value, block) points past the end of the file.
        public static let offsetPastEnd = Code("offsetPastEnd")
        /// The IFD chain visits the same directory twice.
        public static let ifdLoop = Code("ifdLoop")
        /// Dimensions, counts or block sizes no real image has (or that would need absurd memory).
        public static let absurdDimensions = Code("absurdDimensions")
        /// A valid TIFF feature this reader declines, named with its TIFF code in `detail`.
        public static let unsupported = Code("unsupported")
        /// A required tag is missing or holds values that contradict the image.
        public static let badTag = Code("badTag")
        /// A block's compressed data does not decode to the size the image needs.
        public static let corruptBlock = Code("corruptBlock")
        /// A requested window lies outside the image.
        public static let badWindow = Code("badWindow")
        /// The operating system refused to open or read the file.
        public static let io = Code("io")
        /// No file at the path (`ENOENT`, `ENOTDIR`): missing input, exit 2, not the machine's fault.
        public static let notFound = Code("notFound")
        /// The path names a FIFO, directory, device or socket (the user's input, exit 2).
        public static let notRegularFile = Code("notRegularFile")
    }

    public let code: Code
    /// The file the problem is in.
    public let subject: String
    /// What exactly was wrong, one line.
    public let detail: String
    /// The error underneath (a zlib failure), if any; not compared by `==`.
    public let cause: (any Error)?

    public init(path: String, code: Code, detail: String, cause: (any Error)? = nil) {
        self.subject = path
        self.code = code
        self.detail = detail
        self.cause = cause
    }

    public var category: TilePackErrorCategory {
        switch code {
        case .unsupported: .unsupported
        case .io: .environment
        case .notFound: .notFound
        default: .invalidInput
        }
    }

    /// An error for a feature this reader does not decode: "unsupported FEATURE (code N)".
    static func unsupported(_ path: String, _ feature: String, code: Int) -> TIFFError {
        TIFFError(path: path, code: .unsupported, detail: "unsupported \(feature) (code \(code))")
    }
}
