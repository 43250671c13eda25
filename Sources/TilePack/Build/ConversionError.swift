import TilePackCore

/// Why `tilepack convert` refused: `subject` is the path, `detail` the problem; one line.
public struct ConversionError: TilePackError, Equatable {
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The output exists and replacing it was not asked for (`--force`).
        public static let outputExists = Code("outputExists")
        /// Input and output are the same kind (nothing to convert) or the same file.
        public static let nothingToConvert = Code("nothingToConvert")
    }

    public let code: Code
    public let subject: String
    public let detail: String
    public var cause: (any Error)? { nil }

    public init(_ code: Code, path: String, detail: String) {
        self.code = code
        self.subject = path
        self.detail = detail
    }

    /// Both are arguments a person can change.
    public var category: TilePackErrorCategory { .invalidArgument }
}
