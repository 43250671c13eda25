import TilePackCore

/// Why a region catalog could not be read or was refused.
///
/// `description` is one line naming the file, the field (a JSON path) and the problem:
/// `catalog.json: products[2].price "-1.00" is negative`.
public struct CatalogError: TilePackError, Equatable {
    /// The kinds of failure a caller (or a test) may want to tell apart.
    public enum Kind: Sendable, Equatable {
        /// The catalog file does not exist.
        case notFound
        /// The file exists but cannot be read (permissions, a directory, too large).
        case cannotRead
        /// The path names a FIFO, directory, device or socket where a catalog is expected.
        case notRegularFile
        /// Not JSON, or JSON of the wrong shape (a missing field, a string where a number goes).
        case malformed
        /// A field the schema does not have (a typo such as `minZoom`), or one that does not
        /// belong to the product's kind (`includes` on a region).
        case unknownField
        /// A `version` this tilepack does not read.
        case unsupportedVersion
        /// A value out of range or of the wrong form (a zoom of 30, an id with a space, a bad period).
        case invalidValue
        /// A price that is not a decimal string with at most the currency's minor units.
        case badPrice
        /// A negative price.
        case negativePrice
        /// A currency that is not three uppercase letters, or differs from the catalog's others.
        case badCurrency
        /// Two products with one id.
        case duplicateID
        /// A bundle or subscription naming a product the catalog does not have.
        case unknownProduct
        /// A bundle that includes itself, directly or through other bundles.
        case cycle
        /// An area that is not a valid polygon (not closed, too few points, self-intersecting, …).
        case badPolygon
        /// minzoom > maxzoom, or a zoom outside 0…24.
        case badZoomRange
        /// A region without archives, or an archive name that is not a plain file name.
        case badArchives
        /// A library whose trust anchors name publisher keys has no `catalog.jws`, or its
        /// signature does not verify with any of them, or its `typ` or `alg` is wrong.
        case badSignature
        /// A signed catalog whose `serial` is lower than one this device already accepted.
        case staleSerial
    }

    /// The file, as the caller named it.
    public var path: String
    /// The JSON path of the field at fault (`products[2].price`), nil for the file as a whole.
    public var field: String?
    public var kind: Kind
    /// The problem, after the field's name (`"-1.00" is negative`).
    public var detail: String

    public init(path: String, field: String?, kind: Kind, detail: String) {
        self.path = path
        self.field = field
        self.kind = kind
        self.detail = detail
    }

    public var category: TilePackErrorCategory {
        switch kind {
        case .notFound: .notFound
        case .cannotRead: .environment
        case .unsupportedVersion: .unsupported
        default: .invalidInput
        }
    }

    public var description: String {
        // Parts of the field and detail come from the file (keys, ids): keep them on one line.
        let text = ErrorText.oneLine(detail)
        return field.map { "\(path): \(ErrorText.oneLine($0)) \(text)" } ?? "\(path): \(text)"
    }
}

/// A problem found while decoding, before the file's name is known (`init(from:)` sees only
/// the JSON): ``Catalog`` adds the path and throws a ``CatalogError``.
struct CatalogIssue: Error {
    var field: String?
    var kind: CatalogError.Kind
    var detail: String

    init(_ kind: CatalogError.Kind, _ field: String?, _ detail: String) {
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
