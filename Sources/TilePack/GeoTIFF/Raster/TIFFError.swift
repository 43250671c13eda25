import TilePackCore
/// Why a TIFF could not be read: a typed error whose `description` is one line,
/// `PATH: problem`, as the CLI prints it.
///
/// `kind` lets callers (and tests) match the class of problem without parsing text;
/// `detail` says what exactly was wrong, in the TIFF spec's words.
public struct TIFFError: TilePackError, Equatable {
    /// The class of problem.
    public enum Kind: Sendable, Equatable {
        /// The file ends before a structure it announces (header, IFD, value, block).
        case truncated
        /// Not a TIFF: wrong byte-order mark or magic number.
        case badHeader
        /// An offset (IFD, tag value, block) points past the end of the file.
        case offsetPastEnd
        /// The IFD chain visits the same directory twice.
        case ifdLoop
        /// Dimensions, counts or block sizes no real image has (or that would need absurd memory).
        case absurdDimensions
        /// A valid TIFF feature this reader declines, named with its TIFF code.
        case unsupported(feature: String, code: Int)
        /// A required tag is missing or holds values that contradict the image.
        case badTag
        /// A block's compressed data does not decode to the size the image needs.
        case corruptBlock
        /// A requested window lies outside the image.
        case badWindow
        /// The operating system refused to open or read the file.
        case io
        /// The path names a FIFO, directory, device or socket (the user's input, exit 2).
        case notRegularFile
    }

    /// The file the problem is in.
    public var path: String
    /// The class of problem.
    public var kind: Kind
    /// What exactly was wrong, one line.
    public var detail: String

    public init(path: String, kind: Kind, detail: String) {
        self.path = path
        self.kind = kind
        self.detail = detail
    }

    public var description: String { "\(path): \(detail)" }

    public var category: TilePackErrorCategory {
        switch kind {
        case .unsupported: .unsupported
        case .io: .environment
        default: .invalidInput
        }
    }

    /// An error for a feature this reader does not decode.
    static func unsupported(_ path: String, _ feature: String, code: Int) -> TIFFError {
        TIFFError(
            path: path, kind: .unsupported(feature: feature, code: code),
            detail: "unsupported \(feature) (code \(code))")
    }
}
