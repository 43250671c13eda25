import TilePackCore
/// The GDAL_METADATA tag (42112): GDAL's XML of dataset and band metadata, e.g.
///
/// ```xml
/// <GDALMetadata>
///   <Item name="DESCRIPTION" sample="0" role="description">Elevation</Item>
///   <Item name="UNITTYPE" sample="0" role="unittype">m</Item>
/// </GDALMetadata>
/// ```
///
/// Only `<Item>` elements are read (their `name`, `sample`, `role` and `domain` attributes and
/// text, with the five XML entities decoded); anything else in the text is ignored, and text
/// that is not GDAL's XML yields no items rather than an error, since the tag only adds hints.
public struct GDALMetadata: Sendable, Equatable {
    public struct Item: Sendable, Equatable {
        public var name: String
        public var value: String
        /// The band (0-based) the item describes; nil for dataset metadata.
        public var sample: Int?
        /// GDAL's role for band properties: "description", "unittype", "offset", "scale".
        public var role: String?
        /// The metadata domain; nil for the default one.
        public var domain: String?

        public init(name: String, value: String, sample: Int? = nil, role: String? = nil, domain: String? = nil) {
            self.name = name
            self.value = value
            self.sample = sample
            self.role = role
            self.domain = domain
        }
    }

    public var items: [Item]

    public init(items: [Item]) { self.items = items }

    /// Items of the tag's text; unreadable text gives no items.
    public init(xml: String) {
        var items: [Item] = []
        var rest = Substring(xml)
        while let open = rest.firstRange(of: "<Item") {
            let afterName = rest[open.upperBound...]
            // "<Items" or "<ItemX" is another element.
            guard let next = afterName.first, next == " " || next == ">" || next == "\t" || next == "\n" || next == "\r"
            else {
                rest = afterName
                continue
            }
            guard let tagEnd = afterName.firstIndex(of: ">") else { break }
            let attributes = afterName[..<tagEnd]
            let body = afterName[afterName.index(after: tagEnd)...]
            if attributes.hasSuffix("/") {  // <Item name="X"/>: empty value
                if let item = Self.item(attributes: attributes.dropLast(), text: "") { items.append(item) }
                rest = body
                continue
            }
            guard let close = body.firstRange(of: "</Item>") else { break }
            if let item = Self.item(attributes: attributes, text: body[..<close.lowerBound]) { items.append(item) }
            rest = body[close.upperBound...]
        }
        self.items = items
    }

    /// The tag's text as GDAL writes it.
    public var xml: String {
        var s = "<GDALMetadata>\n"
        for item in items {
            s += "  <Item name=\"\(Self.escape(item.name))\""
            if let domain = item.domain { s += " domain=\"\(Self.escape(domain))\"" }
            if let sample = item.sample { s += " sample=\"\(sample)\"" }
            if let role = item.role { s += " role=\"\(Self.escape(role))\"" }
            s += ">\(Self.escape(item.value))</Item>\n"
        }
        return s + "</GDALMetadata>\n"
    }

    private static func item(attributes: Substring, text: Substring) -> Item? {
        let attrs = Self.attributes(attributes)
        guard let name = attrs["name"] else { return nil }
        // A sample attribute that is not a small non-negative integer names no band.
        let sample = attrs["sample"].flatMap { Int($0) }.flatMap { (0...65_535).contains($0) ? $0 : nil }
        return Item(name: name, value: unescape(text), sample: sample, role: attrs["role"], domain: attrs["domain"])
    }

    /// `key="value"` (or single-quoted) pairs of a start tag.
    private static func attributes(_ text: Substring) -> [String: String] {
        var out: [String: String] = [:]
        var rest = text
        while let eq = rest.firstIndex(of: "=") {
            let key = rest[..<eq].trimmingWhitespace()
            var after = rest[rest.index(after: eq)...].drop { $0 == " " }
            guard let quote = after.first, quote == "\"" || quote == "'" else { break }
            after = after.dropFirst()
            guard let end = after.firstIndex(of: quote) else { break }
            out[String(key)] = unescape(after[..<end])
            rest = after[after.index(after: end)...]
        }
        return out
    }

    private static let entities: [(String, String)] = [
        ("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&apos;", "'"), ("&amp;", "&"),
    ]

    private static func unescape(_ text: Substring) -> String {
        var s = String(text)
        guard s.contains("&") else { return s }
        for (entity, char) in entities { s = s.replacing(entity, with: char) }
        return s
    }

    private static func escape(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;").replacing(">", with: "&gt;")
            .replacing("\"", with: "&quot;")
    }
}
