import TilePackCore

/// A trust file (``TrustAnchors/init(contentsOf:)``) that cannot be used: one line naming the
/// file, the field when there is one (`app_store_roots[1]`, `publisher_keys[0].d`), and the problem.
public struct TrustFileError: TilePackError, Equatable {
    /// The trust file.
    public var path: String
    /// The JSON field at fault, or nil when the file as a whole is (missing, too large, not JSON).
    public var field: String?
    /// The problem, without the path or field.
    public var detail: String
    public var category: TilePackErrorCategory

    public init(path: String, field: String? = nil, _ detail: String, category: TilePackErrorCategory = .invalidInput) {
        self.path = path
        self.field = field
        self.detail = detail
        self.category = category
    }

    public var description: String {
        if let field { return "\(path): \(field): \(ErrorText.oneLine(detail))" }
        return "\(path): \(ErrorText.oneLine(detail))"
    }
}
