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

/// The kind of an error within its type (`ArchiveError.Code.notFound`), for callers to tell
/// failures apart without parsing text: `error.code == .notFound`.
///
/// Each error type's `Code` is an extensible struct in the swift-nio style, not a closed enum:
/// adding a code is not a source-breaking change, so a `switch` over codes needs a `default`.
/// `description` is the code's name.
public protocol TilePackErrorCode: Hashable, Sendable, CustomStringConvertible {}

/// The common face of every error tilepack throws: one shape for every public error type.
///
/// - `code`: the kind of failure, the type's own extensible ``TilePackErrorCode``.
/// - `subject`: what the error is about (a file path, an argument, a value); may be empty.
/// - `detail`: the problem in words, without the subject.
/// - `cause`: the underlying error when one was wrapped (an `SQLiteError` inside an
///   `ArchiveError`); `errno` text stays in `detail`.
/// - ``category``: what sort of failure it is; front ends map it to exit or HTTP statuses.
///
/// `description` is derived once, here: `"subject: detail"`, or `detail` alone when `subject` is
/// empty, always one line. Each layer keeps its own type (``InputFileError`` here; `TIFFError`,
/// `CRSError`, `ArchiveError`, `CodecError`, …) so library users can `catch` the concrete type.
public protocol TilePackError: Error, CustomStringConvertible, Sendable {
    associatedtype Code: TilePackErrorCode
    /// The kind of failure, for matching (`error.code == .notFound`).
    var code: Code { get }
    /// What the error is about: a path, an argument, a value; empty when nothing in particular.
    var subject: String { get }
    /// The problem in words, without the subject.
    var detail: String { get }
    /// The error underneath, when this one wraps another. (`Error` refines `Sendable`, so the
    /// existential is safe to keep in a `Sendable` value.)
    var cause: (any Error)? { get }
    /// What sort of failure this is (``TilePackErrorCategory/invalidInput`` unless a type says).
    var category: TilePackErrorCategory { get }
}

extension TilePackError {
    public var category: TilePackErrorCategory { .invalidInput }

    /// `"subject: detail"`, or `detail` alone when there is no subject: one line.
    public var description: String { subject.isEmpty ? detail : "\(subject): \(detail)" }
}

extension TilePackError {
    /// Runs `body`, a call of an untyped public API whose implementation throws `Self` alone,
    /// for a typed caller (`throws(Self)`): a `Self` passes through, anything else is `wrap`ped.
    package static func typed<T>(_ body: () throws -> T, or wrap: (any Error) -> Self) throws(Self) -> T {
        do {
            return try body()
        } catch let error as Self {
            throw error
        } catch {
            throw wrap(error)
        }
    }
}

extension Error {
    /// The ``TilePackError/detail`` of a tilepack error, the whole text of any other: what a
    /// wrapping error quotes after its own words.
    package var detailText: String { (self as? any TilePackError)?.detail ?? "\(self)" }
}

extension TilePackError where Self: Equatable {
    /// Errors are equal when their code, subject and detail are: the `cause` (an arbitrary,
    /// possibly non-`Equatable` error) is not compared.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.code == rhs.code && lhs.subject == rhs.subject && lhs.detail == rhs.detail
    }
}

/// A problem with one input file that belongs to no single stage's error type: a source
/// that cannot be georeferenced or tiled, an unreadable file, an undecodable archive tile.
/// `description` is "PATH: detail", one line. Cost: two strings.
public struct InputFileError: TilePackError, Equatable {
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The file cannot be used as an input (the only code today).
        public static let unusable = Code("unusable")
    }

    public let code: Code
    /// The file's path.
    public let subject: String
    /// The problem, without the path.
    public let detail: String
    public let cause: (any Error)?

    public init(_ code: Code = .unusable, path: String, detail: String, cause: (any Error)? = nil) {
        self.code = code
        self.subject = path
        self.detail = detail
        self.cause = cause
    }
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
