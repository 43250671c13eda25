/// What sort of failure an error is, stable across releases: the CLI maps it to an exit
/// status and a server to an HTTP status, so the library never decides either.
public enum TilePackErrorCategory: String, Sendable, Codable, CaseIterable {
    /// A value a person typed (argument, coordinate, zoom, size) is malformed or out of range.
    case invalidArgument
    /// A file or payload is damaged, truncated or not what it claims (the default).
    case invalidInput
    /// A valid input uses a feature tilepack declines (a compression, a CRS, a codec).
    case unsupported
    /// A named file, archive, region or tile does not exist.
    case notFound
    /// The machine failed us: cannot open, write, rename, disk full, I/O error.
    case environment
    /// A memory budget cannot hold what was asked (leases alone fill it).
    case budgetExhausted
    /// Access denied until a product is bought (the region store's policy).
    case locked
}

/// The common face of every error tilepack throws.
///
/// Each layer has its own typed error (``InputFileError`` here; `TIFFError`, `CRSError`,
/// `ArchiveError`, `CodecError`, …) whose `description` is one line that names the file (or
/// value) and the problem, and whose ``category`` says what sort of failure it is. Library users
/// can `catch` the concrete type; front ends map ``category`` to exit or HTTP statuses.
public protocol TilePackError: Error, CustomStringConvertible, Sendable {
    var category: TilePackErrorCategory { get }
}

extension TilePackError {
    public var category: TilePackErrorCategory { .invalidInput }
}

/// A problem with one input file that belongs to no single stage's error type: a source
/// that cannot be georeferenced or tiled, an unreadable file, an undecodable archive tile.
/// `description` is "PATH: problem", one line.
public struct InputFileError: TilePackError, Equatable {
    public let path: String
    /// The problem, without the path.
    public let problem: String

    public init(path: String, problem: String) {
        self.path = path
        self.problem = problem
    }

    public var description: String { "\(path): \(problem)" }
}

/// Text from outside (SQL, SQLite's messages, names read from a file) made safe for the
/// one-line `description` every ``TilePackError`` promises.
package enum ErrorText {
    /// Collapses runs of whitespace, line breaks included, into single spaces, so multi-line
    /// SQL or a report spanning lines stays on the one error line.
    package static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: { $0.isWhitespace || $0.isNewline }).joined(separator: " ")
    }

    /// A value read from a file, in double quotes with control characters escaped as Swift
    /// writes them (`"f32\n"`), so a hostile name can neither break the line nor hide.
    package static func quoted(_ text: String) -> String {
        String(reflecting: text)
    }
}
