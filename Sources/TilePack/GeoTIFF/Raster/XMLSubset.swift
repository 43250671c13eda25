import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
/// A strict reader for the XML that GDAL writes in VRT files: elements, attributes, text,
/// comments, the `<?xml …?>` declaration, the five predefined entities and numeric
/// character references. No DTDs, CDATA or namespaces: a VRT never needs them, and a
/// parser this small is easier to trust with input than a general one.
///
/// Foundation's `XMLParser` lives in FoundationXML on Linux and drags libxml2 into every
/// binary that links Build; this covers the subset in about 150 lines.
///
/// Children are kept as runs: siblings equal to the one before them (whatever their spacing or
/// quoting) are one child with ``repeats`` counting them, so a tree's size follows the number of
/// distinct siblings, not the document's length.
///
/// - Cost: one pass over the bytes, O(n) time, memory for the distinct siblings. A child element
///   whose bytes repeat its previous sibling's exactly is compared (`memcmp`) and counted, not
///   parsed again: a VRT listing one source 240,000 times costs a compare per repeat and holds
///   one source. Documents larger than ``maxBytes`` or nested deeper than ``maxDepth`` are
///   refused before allocating.
package struct XMLElement: Sendable, Equatable {
    package var name: String
    package var attributes: XMLAttributes
    /// Runs of equal siblings in document order: no child equals the one before it.
    package var children: [XMLElement]
    /// Concatenated character data directly inside this element, entities decoded.
    package var text: String
    /// How many times this element occurs in a row in its parent (1 for the root).
    package var repeats = 1

    /// Whether `other` is this element apart from the repeat counts of the two.
    func sameContent(_ other: XMLElement) -> Bool {
        name == other.name && attributes == other.attributes && text == other.text && children == other.children
    }

    /// First child named `name`.
    package func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }

    /// Text with leading and trailing whitespace removed.
    /// XML's whitespace is the four ASCII bytes, so this trims on UTF-8 without grapheme work.
    package var trimmedText: String {
        let u = text.utf8
        func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
        guard let first = u.firstIndex(where: { !isSpace($0) }), let last = u.lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        if first == u.startIndex && last == u.index(before: u.endIndex) { return text }
        return String(text[first...last])
    }

    /// A VRT is a few KiB per source; 64 MiB covers a mosaic of ~100,000 files.
    package static let maxBytes = 64 << 20
    /// GDAL's VRT nests four levels; 64 leaves room and stops stack exhaustion.
    package static let maxDepth = 64

    /// Parses a whole document and returns its root element.
    /// - Throws: a one-line `problem` (the caller adds the path) naming the byte offset.
    package static func parse(_ bytes: [UInt8]) throws(XMLSyntaxError) -> XMLElement {
        try bytes.withUnsafeBytes { raw in Result { () throws(XMLSyntaxError) in try parse(raw) } }.get()
    }

    /// Parses a whole document held in memory the caller owns (valid for the call).
    package static func parse(_ bytes: UnsafeRawBufferPointer) throws(XMLSyntaxError) -> XMLElement {
        guard bytes.count <= maxBytes else {
            throw XMLSyntaxError(offset: 0, problem: "document larger than \(maxBytes) bytes")
        }
        var p = XMLCursor(bytes: bytes)
        try p.skipMisc()
        guard p.peek() == UInt8(ascii: "<") else { throw p.error("expected the root element") }
        let root = try p.element(depth: 0)
        try p.skipMisc()
        guard p.atEnd else { throw p.error("content after the root element") }
        return root
    }
}

/// An element's attributes in document order. Why not a dictionary: an element has a handful,
/// a VRT has over a million elements, and a dictionary per element was a third of the parse.
/// Lookup is a linear search over those few; equality ignores order, as XML's does.
package struct XMLAttributes: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    package private(set) var pairs: [(name: String, value: String)] = []

    package init(dictionaryLiteral elements: (String, String)...) {
        pairs = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The value of attribute `name`, nil when absent. Cost: O(attributes).
    package subscript(name: String) -> String? {
        for p in pairs where p.name == name { return p.value }
        return nil
    }

    /// Adds `name`; false (and nothing added) when the element already has it.
    mutating func add(_ name: String, _ value: String) -> Bool {
        guard self[name] == nil else { return false }
        pairs.append((name: name, value: value))
        return true
    }

    package static func == (a: XMLAttributes, b: XMLAttributes) -> Bool {
        a.pairs.count == b.pairs.count && a.pairs.allSatisfy { b[$0.name] == $0.value }
    }
}

/// Where and why a document is not the XML subset ``XMLElement`` reads.
package struct XMLSyntaxError: Error, Equatable {
    package let offset: Int
    package let problem: String
    package var description: String { "XML error at byte \(offset): \(problem)" }
}

private struct XMLCursor {
    let bytes: UnsafeRawBufferPointer
    var i = 0

    var atEnd: Bool { i >= bytes.count }
    func peek(_ k: Int = 0) -> UInt8? { i + k < bytes.count ? bytes[i + k] : nil }
    func error(_ problem: String) -> XMLSyntaxError { XMLSyntaxError(offset: i, problem: problem) }

    /// Whether the bytes at the cursor are `s`. Why a `StaticString`: the markup tested for is
    /// fixed, and comparing its bytes in place allocates nothing (this runs several times per
    /// element; a VRT of 240,000 sources has over a million).
    func starts(with s: StaticString) -> Bool {
        let n = s.utf8CodeUnitCount
        guard i + n <= bytes.count else { return false }
        return s.withUTF8Buffer { u in
            for k in 0..<n where bytes[i + k] != u[k] { return false }
            return true
        }
    }

    mutating func skipSpace() {
        while let c = peek(), c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { i += 1 }
    }

    /// Skips to just after `terminator`, or throws `unterminated`.
    mutating func skip(past terminator: StaticString, _ what: String) throws(XMLSyntaxError) {
        while !atEnd {
            if starts(with: terminator) { i += terminator.utf8CodeUnitCount; return }
            i += 1
        }
        throw error("unterminated \(what)")
    }

    /// Whitespace, comments and processing instructions between elements.
    mutating func skipMisc() throws(XMLSyntaxError) {
        while true {
            skipSpace()
            if starts(with: "<!--") {
                try skip(past: "-->", "comment")
            } else if starts(with: "<?") {
                try skip(past: "?>", "processing instruction")
            } else if starts(with: "<!") {
                throw error("DTDs and CDATA are not supported")
            } else {
                return
            }
        }
    }

    static func isNameByte(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || (c >= 0x30 && c <= 0x39)
            || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: ":")
            || c >= 0x80
    }

    mutating func name() throws(XMLSyntaxError) -> String {
        let start = i
        while let c = peek(), Self.isNameByte(c) { i += 1 }
        guard i > start else { throw error("expected a name") }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    /// Text up to `stop` with entities decoded. Text without entities (nearly all of a VRT)
    /// becomes a `String` straight from its bytes; only text with one is copied byte by byte.
    mutating func characters(until stop: UInt8) throws(XMLSyntaxError) -> String {
        let start = i
        while let c = peek(), c != stop, c != UInt8(ascii: "&") {
            if c == UInt8(ascii: "<") { throw error("'<' inside an attribute value") }
            i += 1
        }
        guard peek() == UInt8(ascii: "&") else { return String(decoding: bytes[start..<i], as: UTF8.self) }
        var out = Array(bytes[start..<i])
        while let c = peek(), c != stop {
            if c == UInt8(ascii: "<") && stop != UInt8(ascii: "<") { throw error("'<' inside an attribute value") }
            if c == UInt8(ascii: "&") {
                try entity(into: &out)
            } else {
                out.append(c)
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    static let namedEntities: [String: UInt8] = [
        "lt": UInt8(ascii: "<"), "gt": UInt8(ascii: ">"), "amp": UInt8(ascii: "&"),
        "quot": UInt8(ascii: "\""), "apos": UInt8(ascii: "'"),
    ]

    mutating func entity(into out: inout [UInt8]) throws(XMLSyntaxError) {
        let start = i
        i += 1
        while let c = peek(), c != UInt8(ascii: ";") {
            guard i - start < 12 else { i = start; throw error("unterminated entity") }
            i += 1
        }
        guard peek() == UInt8(ascii: ";") else { i = start; throw error("unterminated entity") }
        let body = String(decoding: bytes[(start + 1)..<i], as: UTF8.self)
        i += 1
        if let byte = Self.namedEntities[body] { out.append(byte); return }
        var scalar: UInt32?
        if body.hasPrefix("#x") {
            scalar = UInt32(body.dropFirst(2), radix: 16)
        } else if body.hasPrefix("#") {
            scalar = UInt32(body.dropFirst(), radix: 10)
        }
        guard let v = scalar, let u = Unicode.Scalar(v) else { i = start; throw error("unknown entity &\(body);") }
        out.append(contentsOf: Array(String(Character(u)).utf8))
    }

    mutating func element(depth: Int) throws(XMLSyntaxError) -> XMLElement {
        guard depth < XMLElement.maxDepth else { throw error("elements nested deeper than \(XMLElement.maxDepth)") }
        i += 1  // '<'
        var node = XMLElement(name: try name(), attributes: [:], children: [], text: "")
        while true {
            skipSpace()
            if starts(with: "/>") { i += 2; return node }
            if peek() == UInt8(ascii: ">") { i += 1; break }
            let key = try name()
            skipSpace()
            guard peek() == UInt8(ascii: "=") else { throw error("expected '=' after attribute \(key)") }
            i += 1
            skipSpace()
            guard let q = peek(), q == UInt8(ascii: "\"") || q == UInt8(ascii: "'") else {
                throw error("expected a quoted value for \(key)")
            }
            i += 1
            let value = try characters(until: q)
            guard peek() == q else { throw error("unterminated value of \(key)") }
            i += 1
            guard node.attributes.add(key, value) else { throw error("attribute \(key) given twice") }
        }
        // The bytes of the last child parsed: a sibling with the same bytes is the same element
        // (parsing reads nothing outside an element's own bytes), so it is counted, not re-parsed.
        var previous: Range<Int>?
        while true {
            let text = try characters(until: UInt8(ascii: "<"))
            // Whitespace between child elements is kept (text is "directly inside"), but an
            // element with no text at all skips the append.
            if !text.isEmpty { node.text += text }
            guard !atEnd else { throw error("element <\(node.name)> is not closed") }
            if starts(with: "</") {
                i += 2
                let closing = try name()
                guard closing == node.name else { throw error("</\(closing)> closes <\(node.name)>") }
                skipSpace()
                guard peek() == UInt8(ascii: ">") else { throw error("expected '>'") }
                i += 1
                return node
            }
            if starts(with: "<!--") { try skip(past: "-->", "comment"); continue }
            if starts(with: "<?") { try skip(past: "?>", "processing instruction"); continue }
            if starts(with: "<!") { throw error("DTDs and CDATA are not supported") }
            if let previous, !node.children.isEmpty, repeats(previous) {
                node.children[node.children.count - 1].repeats += 1
                i += previous.count
                continue
            }
            let start = i
            let child = try element(depth: depth + 1)
            previous = start..<i
            // Equal content written with other bytes (spacing, quotes, entities) joins the run too,
            // so equal documents give equal trees.
            if let last = node.children.last, last.sameContent(child) {
                node.children[node.children.count - 1].repeats += 1
            } else {
                node.children.append(child)
            }
        }
    }

    /// Whether the bytes at the cursor begin with a copy of `range` (an earlier element's).
    /// Cost: one `memcmp` of `range.count` bytes.
    func repeats(_ range: Range<Int>) -> Bool {
        guard range.count <= bytes.count - i, let base = bytes.baseAddress else { return false }
        return memcmp(base + i, base + range.lowerBound, range.count) == 0
    }
}
