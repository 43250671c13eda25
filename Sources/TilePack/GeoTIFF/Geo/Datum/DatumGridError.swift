import TilePackCore

/// Why a datum-shift grid file (NTv2 `.gsb`, PROJ GeoTIFF `.tif`) or a proj.db
/// transformation row could not be used. One line naming the file and the problem.
///
/// A grid that exists but cannot be read is an error, never a silent fall back to a
/// Helmert: the user put a file there and would otherwise get a map off by metres without
/// knowing why.
public struct DatumGridError: TilePackError, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Cannot open or read the file (permissions, I/O, not a regular file).
        case unreadable
        /// Shorter than its headers say.
        case truncated
        /// A header field is missing, misspelt or impossible (counts, extents, increments).
        case badHeader
        /// Dimensions or counts beyond what a horizontal shift grid can sensibly hold.
        case tooLarge
        /// A shift value is NaN or infinite.
        case badValue
        /// A layout tilepack does not read (another GeoTIFF grid type, a band it lacks).
        case unsupported
        /// A proj.db row that cannot be turned into an operation (unknown unit, bad value).
        case badOperation
    }

    public let path: String
    public let kind: Kind
    public let detail: String

    public init(path: String, kind: Kind, detail: String) {
        self.path = path
        self.kind = kind
        self.detail = detail
    }

    public var category: TilePackErrorCategory {
        switch kind {
        case .unreadable: .environment
        case .unsupported: .unsupported
        default: .invalidInput
        }
    }

    public var description: String {
        kind == .badOperation ? "\(path): \(detail)" : "\(path): datum shift grid: \(detail)"
    }
}
