import TilePackCore
import TilePackStore

extension Catalog {
    /// One thing on sale: a region (an area with a zoom range and the archives holding it), a
    /// bundle of regions, or an auto-renewing subscription (map updates) over an area or
    /// over other products. Fields are those of docs/REGIONS.md.
    ///
    /// Decoding validates everything one product can know on its own (id form, price,
    /// currency, polygon, zoom range, which fields its kind takes); ``Catalog`` checks what
    /// spans products (duplicate ids, what bundles name, cycles, one currency).
    public struct Product: Sendable, Equatable, Codable {
        public enum Kind: String, Sendable, Codable, CaseIterable {
            case region, bundle, subscription
        }

        /// Whether the product can be sold and shown in this library.
        public enum Availability: Sendable, Equatable {
            case available
            /// An archive it needs is missing from the library (or a product it includes is
            /// unavailable); `reason` says which, in words.
            case unavailable(reason: String)
        }

        /// Reverse-DNS-ish: `[A-Za-z0-9._-]`, 1…100 characters (`com.example.montblanc.chamonix`).
        public let id: String
        public let title: String
        public let description: String
        /// Exact, in ``currency``; ``Price/description`` is the catalog's text.
        public let price: Price
        /// ISO 4217, three uppercase letters.
        public let currency: String
        public let kind: Kind
        /// A region's area; a subscription's own area, if it has one; nil for bundles.
        public let area: RegionPolygon?
        /// The zooms the area is sold for; nil exactly when ``area`` is.
        public let zoomRange: ClosedRange<Int>?
        /// File names in the library holding the area's tiles (non-empty when there is an area).
        public let archives: [String]
        /// Product ids a bundle (or a subscription without an area of its own) entitles.
        public let includes: [String]
        /// A subscription's term; nil for other kinds.
        public let period: SubscriptionPeriod?
        /// Set when a catalog is loaded from a library: a product whose archive is missing is
        /// unavailable, not an error. Decoded products start available.
        public internal(set) var availability: Availability = .available

        public var isAvailable: Bool { availability == .available }

        /// The offer a denial names.
        public var offer: ProductOffer {
            ProductOffer(id: id, title: title, price: price.description, currency: currency)
        }

        static let maxIDLength = 100

        enum Key: String, CodingKey, CaseIterable {
            case id, title, description, price, currency, kind, area, minzoom, maxzoom, archives, includes, period
        }

        public init(from decoder: any Decoder) throws {
            let path = decoder.codingPath
            func field(_ name: String) -> String { CatalogIssue.field(path, name) }
            try Self.refuseUnknownKeys(decoder, known: Key.allCases.map(\.rawValue))
            let c = try decoder.container(keyedBy: Key.self)

            id = try c.decode(String.self, forKey: .id)
            guard Self.isValidID(id) else {
                throw CatalogIssue(
                    .invalidValue, field("id"),
                    "\(ErrorText.quoted(id)) must be 1…\(Self.maxIDLength) characters of A–Z a–z 0–9 . _ -")
            }
            title = try c.decode(String.self, forKey: .title)
            guard !title.allSatisfy(\.isWhitespace) else {
                throw CatalogIssue(.invalidValue, field("title"), "is empty")
            }
            description = try c.decodeIfPresent(String.self, forKey: .description) ?? ""

            currency = try c.decode(String.self, forKey: .currency)
            guard currency.utf8.count == 3,
                currency.utf8.allSatisfy({ $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") })
            else {
                throw CatalogIssue(
                    .badCurrency, field("currency"),
                    "\(ErrorText.quoted(currency)) is not an ISO 4217 code (three uppercase letters)")
            }
            let priceText: String
            do {
                priceText = try c.decode(String.self, forKey: .price)
            } catch DecodingError.typeMismatch {
                // A JSON number would already have gone through a Double: refuse it.
                throw CatalogIssue(.badPrice, field("price"), "must be a decimal string such as \"4.99\", not a number")
            }
            do {
                price = try Price(parsing: priceText, minorUnits: Price.minorUnits(ofCurrency: currency))
            } catch let error as Price.ParseProblem {
                let quoted = ErrorText.quoted(priceText)
                let kind: CatalogError.Code = error.code == .negative ? .negativePrice : .badPrice
                let currencyNote = error.code == .tooManyDecimals ? " (\(currency)'s minor units)" : ""
                throw CatalogIssue(kind, field("price"), "\(quoted) \(error.detail)\(currencyNote)")
            }

            let kindText = try c.decode(String.self, forKey: .kind)
            guard let kind = Kind(rawValue: kindText) else {
                throw CatalogIssue(
                    .invalidValue, field("kind"), "\(ErrorText.quoted(kindText)) is not region, bundle or subscription")
            }
            self.kind = kind

            func refuse(_ key: Key, _ why: String) throws {
                if c.contains(key) { throw CatalogIssue(.unknownField, field(key.rawValue), why) }
            }
            let periodText = try c.decodeIfPresent(String.self, forKey: .period)
            if kind == .subscription {
                guard let periodText else {
                    throw CatalogIssue(.malformed, field("period"), "is missing (a subscription needs one)")
                }
                guard let p = SubscriptionPeriod(iso8601: periodText) else {
                    throw CatalogIssue(
                        .invalidValue, field("period"),
                        """
                        \(ErrorText.quoted(periodText)) is not an ISO 8601 duration of years, months, weeks or \
                        days such as \"P1M\" or \"P1Y\"
                        """
                    )
                }
                period = p
            } else {
                try refuse(.period, "is only for subscriptions")
                period = nil
            }

            let hasArea = kind == .region || (kind == .subscription && c.contains(.area))
            if hasArea {
                let rings: [[[Double]]]
                do {
                    rings = try c.decode([[[Double]]].self, forKey: .area)
                } catch DecodingError.typeMismatch {
                    throw CatalogIssue(.badPolygon, field("area"), "must be an array of rings of [lon, lat] points")
                }
                do {
                    area = try RegionPolygon(rings: rings)
                } catch let error as RegionPolygon.Problem {
                    throw CatalogIssue(.badPolygon, field("area") + error.subject, error.detail)
                }
                let minZoom = try c.decode(Int.self, forKey: .minzoom)
                let maxZoom = try c.decode(Int.self, forKey: .maxzoom)
                for (key, z) in [("minzoom", minZoom), ("maxzoom", maxZoom)] where !(0...TileID.maxZoom).contains(z) {
                    throw CatalogIssue(.badZoomRange, field(key), "\(z) is outside 0…\(TileID.maxZoom)")
                }
                guard minZoom <= maxZoom else {
                    throw CatalogIssue(.badZoomRange, field("maxzoom"), "\(maxZoom) is below minzoom \(minZoom)")
                }
                zoomRange = minZoom...maxZoom
                archives = try c.decode([String].self, forKey: .archives)
                guard !archives.isEmpty else {
                    throw CatalogIssue(
                        .badArchives, field("archives"), "is empty (the area's tiles must be in some archive)")
                }
                for (i, name) in archives.enumerated() where !Self.isPlainFileName(name) {
                    throw CatalogIssue(
                        .badArchives, field("archives[\(i)]"),
                        "\(ErrorText.quoted(name)) is not a file name in the library (no directories)")
                }
            } else {
                try refuse(.area, "is not allowed for a \(kind.rawValue)")
                try refuse(.minzoom, "is not allowed without an area")
                try refuse(.maxzoom, "is not allowed without an area")
                try refuse(.archives, "is not allowed without an area")
                area = nil
                zoomRange = nil
                archives = []
            }

            if kind == .region {
                try refuse(.includes, "is not allowed for a region")
                includes = []
            } else {
                let list = try c.decodeIfPresent([String].self, forKey: .includes)
                if kind == .bundle || !hasArea {
                    guard let list, !list.isEmpty else {
                        throw CatalogIssue(
                            .malformed, field("includes"),
                            kind == .bundle
                                ? "is missing or empty (a bundle includes products)"
                                : "is missing (a subscription needs an area or includes)")
                    }
                }
                includes = list ?? []
                var seen: Set<String> = []
                for (i, other) in includes.enumerated() where !seen.insert(other).inserted {
                    throw CatalogIssue(
                        .duplicateID, field("includes[\(i)]"), "\(ErrorText.quoted(other)) is listed twice")
                }
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Key.self)
            try c.encode(id, forKey: .id)
            try c.encode(title, forKey: .title)
            try c.encode(description, forKey: .description)
            try c.encode(price.description, forKey: .price)
            try c.encode(currency, forKey: .currency)
            try c.encode(kind, forKey: .kind)
            try c.encodeIfPresent(area, forKey: .area)
            try c.encodeIfPresent(zoomRange?.lowerBound, forKey: .minzoom)
            try c.encodeIfPresent(zoomRange?.upperBound, forKey: .maxzoom)
            if !archives.isEmpty { try c.encode(archives, forKey: .archives) }
            if !includes.isEmpty { try c.encode(includes, forKey: .includes) }
            try c.encodeIfPresent(period?.description, forKey: .period)
        }

        static func isValidID(_ id: String) -> Bool {
            !id.isEmpty && id.utf8.count <= maxIDLength
                && id.utf8.allSatisfy { b in
                    (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z"))
                        || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                        || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9"))
                        || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-")
                }
        }

        /// A name that stays inside the library directory: no slash, not `.`/`..`, no NUL.
        static func isPlainFileName(_ name: String) -> Bool {
            !name.isEmpty && name != "." && name != ".." && !name.utf8.contains(UInt8(ascii: "/"))
                && !name.utf8.contains(0) && name.utf8.count <= 255
        }

        /// Refuses a key the schema does not have: a typo (`minZoom`) would otherwise be
        /// silently ignored and the product sold with the wrong zooms.
        static func refuseUnknownKeys(_ decoder: any Decoder, known: [String]) throws {
            let any = try decoder.container(keyedBy: AnyKey.self)
            if let unknown = any.allKeys.map(\.stringValue).filter({ !known.contains($0) }).sorted().first {
                // A key that is not a plain name is shown quoted, escapes and all (`["a\nb"]`).
                let plain =
                    !unknown.isEmpty
                    && unknown.utf8.allSatisfy { b in
                        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z"))
                            || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
                            || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "_")
                    }
                throw CatalogIssue(
                    .unknownField,
                    CatalogIssue.field(decoder.codingPath, plain ? unknown : "[\(ErrorText.quoted(unknown))]"),
                    "is not a field of the catalog schema")
            }
        }
    }
}

/// Any JSON object key, to list the keys a file actually has.
struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}
