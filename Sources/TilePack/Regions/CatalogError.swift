import TilePackCore

/// Why a region catalog could not be read or was refused.
///
/// `subject` is the file, `detail` the field (a JSON path) and the problem, one line:
/// `catalog.json: products[2].price "-1.00" is negative`.
public struct CatalogError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The catalog file does not exist.
        public static let notFound = Code("notFound")
        /// The file exists but cannot be read (permissions, a directory, too large).
        public static let cannotRead = Code("cannotRead")
        /// The path names a FIFO, directory, device or socket where a catalog is expected.
        public static let notRegularFile = Code("notRegularFile")
        /// Not JSON, or JSON of the wrong shape (a missing field, a string where a number goes).
        public static let malformed = Code("malformed")
        /// A field the schema does not have (a typo such as `minZoom`), or one that does not
        /// belong to the product's kind (`includes` on a region).
        public static let unknownField = Code("unknownField")
        /// A `version` this tilepack does not read.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// A value out of range or of the wrong form (a zoom of 30, an id with a space, a bad period).
        public static let invalidValue = Code("invalidValue")
        /// A price that is not a decimal string with at most the currency's minor units.
        public static let badPrice = Code("badPrice")
        /// A negative price.
        public static let negativePrice = Code("negativePrice")
        /// A currency that is not three uppercase letters, or differs from the catalog's others.
        public static let badCurrency = Code("badCurrency")
        /// Two products with one id.
        public static let duplicateID = Code("duplicateID")
        /// A bundle or subscription naming a product the catalog does not have.
        public static let unknownProduct = Code("unknownProduct")
        /// A bundle that includes itself, directly or through other bundles.
        public static let cycle = Code("cycle")
        /// An area that is not a valid polygon (not closed, too few points, self-intersecting, …).
        public static let badPolygon = Code("badPolygon")
        /// minzoom > maxzoom, or a zoom outside 0…24.
        public static let badZoomRange = Code("badZoomRange")
        /// A region without archives, or an archive name that is not a plain file name.
        public static let badArchives = Code("badArchives")
        /// A library whose trust anchors name publisher keys has no `catalog.jws`, or its
        /// signature does not verify with any of them, or its `typ` or `alg` is wrong.
        public static let badSignature = Code("badSignature")
        /// A signed catalog whose `serial` is lower than one this device already accepted.
        public static let staleSerial = Code("staleSerial")
    }

    public let code: Code
    /// The file, as the caller named it.
    public let subject: String
    /// The JSON path of the field at fault (`products[2].price`), nil for the file as a whole.
    public let field: String?
    /// The field and the problem (`products[2].price "-1.00" is negative`), on one line.
    public let detail: String
    public var cause: (any Error)? { nil }

    /// `detail` is the problem after the field's name (`"-1.00" is negative`).
    public init(path: String, field: String?, code: Code, detail: String) {
        self.subject = path
        self.field = field
        self.code = code
        // Parts of the field and detail come from the file (keys, ids): keep them on one line.
        let text = ErrorText.oneLine(detail)
        self.detail = field.map { "\(ErrorText.oneLine($0)) \(text)" } ?? text
    }

    public var category: TilePackErrorCategory {
        switch code {
        case .notFound: .notFound
        case .cannotRead: .environment
        case .unsupportedVersion: .unsupported
        default: .invalidInput
        }
    }
}

/// A problem found while decoding, before the file's name is known (`init(from:)` sees only
/// the JSON): ``Catalog`` adds the path and throws a ``CatalogError``.
struct CatalogIssue: Error {
    var field: String?
    var kind: CatalogError.Code
    var detail: String

    init(_ kind: CatalogError.Code, _ field: String?, _ detail: String) {
        self.kind = kind
        self.field = field
        self.detail = detail
    }

    /// The JSON path of a coding path: `products[2].area`.
    static func field(_ path: [any CodingKey]) -> String? {
        var text = ""
        for key in path {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text.isEmpty ? nil : text
    }

    /// `base` followed by `suffix` keys or indices, as a JSON path.
    static func field(_ path: [any CodingKey], _ suffix: String) -> String {
        let base = field(path) ?? ""
        if base.isEmpty || suffix.hasPrefix("[") { return base + suffix }
        return base + "." + suffix
    }
}
