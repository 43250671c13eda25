import TilePackCore

/// A trust file (``TrustAnchors/init(contentsOf:)``) that cannot be used: `subject` is the file
/// and, when there is one, the field (`trust.json: app_store_roots[1]`), `detail` the problem.
public struct TrustFileError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The file or a field cannot be used (the only code today; ``category`` tells why).
        public static let unusable = Code("unusable")
    }

    public let code: Code
    /// "PATH" or "PATH: FIELD".
    public let subject: String
    /// The problem, without the path or field, on one line.
    public let detail: String
    public var cause: (any Error)? { nil }
    public let category: TilePackErrorCategory

    /// `field` is the JSON field at fault, nil when the file as a whole is (missing, too large, not JSON).
    public init(path: String, field: String? = nil, _ detail: String, category: TilePackErrorCategory = .invalidInput) {
        self.code = .unusable
        self.subject = field.map { "\(path): \($0)" } ?? path
        self.detail = ErrorText.oneLine(detail)
        self.category = category
    }
}
