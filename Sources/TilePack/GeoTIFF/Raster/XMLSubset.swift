import TilePackCore
/// A strict reader for the XML that GDAL writes in VRT files: elements, attributes, text,
/// comments, the `<?xml …?>` declaration, the five predefined entities and numeric
/// character references. No DTDs, CDATA or namespaces: a VRT never needs them, and a
/// parser this small is easier to trust with input than a general one.
///
/// Foundation's `XMLParser` lives in FoundationXML on Linux and drags libxml2 into every
/// binary that links Build; this covers the subset in about 150 lines.
///
/// - Cost: one pass over the bytes, O(n) time, the tree's size in memory. Documents larger
///   than ``maxBytes`` or nested deeper than ``maxDepth`` are refused before allocating.
package struct XMLElement: Sendable, Equatable {
    package var name: String
    package var attributes: [String: String]
    package var children: [XMLElement]
    /// Concatenated character data directly inside this element, entities decoded.
    package var text: String

    /// First child named `name`.
    package func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }

    /// Text with leading and trailing whitespace removed.
    package var trimmedText: String {
        var s = Substring(text)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }

    /// A VRT is a few KiB per source; 64 MiB covers a mosaic of ~100,000 files.
    package static let maxBytes = 64 << 20
    /// GDAL's VRT nests four levels; 64 leaves room and stops stack exhaustion.
    package static let maxDepth = 64

    /// Parses a whole document and returns its root element.
    /// - Throws: a one-line `problem` (the caller adds the path) naming the byte offset.
    package static func parse(_ bytes: [UInt8]) throws(XMLSyntaxError) -> XMLElement {
        guard bytes.count <= maxBytes else { throw XMLSyntaxError(offset: 0, problem: "document larger than \(maxBytes) bytes") }
        var p = XMLCursor(bytes: bytes)
        try p.skipMisc()
        guard p.peek() == UInt8(ascii: "<") else { throw p.error("expected the root element") }
        let root = try p.element(depth: 0)
        try p.skipMisc()
        guard p.atEnd else { throw p.error("content after the root element") }
        return root
    }
}

/// Where and why a document is not the XML subset ``XMLElement`` reads.
package struct XMLSyntaxError: Error, Equatable {
    package let offset: Int
    package let problem: String
    package var description: String { "XML error at byte \(offset): \(problem)" }
}

private struct XMLCursor {
    let bytes: [UInt8]
    var i = 0

    var atEnd: Bool { i >= bytes.count }
    func peek(_ k: Int = 0) -> UInt8? { i + k < bytes.count ? bytes[i + k] : nil }
    func error(_ problem: String) -> XMLSyntaxError { XMLSyntaxError(offset: i, problem: problem) }

    func starts(with s: String) -> Bool {
        let u = Array(s.utf8)
        guard i + u.count <= bytes.count else { return false }
        return bytes[i..<(i + u.count)].elementsEqual(u)
    }

    mutating func skipSpace() {
        while let c = peek(), c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D { i += 1 }
    }

    /// Skips to just after `terminator`, or throws `unterminated`.
    mutating func skip(past terminator: String, _ what: String) throws(XMLSyntaxError) {
        while !atEnd {
            if starts(with: terminator) { i += terminator.utf8.count; return }
            i += 1
        }
        throw error("unterminated \(what)")
    }

    /// Whitespace, comments and processing instructions between elements.
    mutating func skipMisc() throws(XMLSyntaxError) {
        while true {
            skipSpace()
            if starts(with: "<!--") { try skip(past: "-->", "comment") }
            else if starts(with: "<?") { try skip(past: "?>", "processing instruction") }
            else if starts(with: "<!") { throw error("DTDs and CDATA are not supported") }
            else { return }
        }
    }

    static func isNameByte(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || (c >= 0x30 && c <= 0x39)
            || c == UInt8(ascii: "_") || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: ":") || c >= 0x80
    }

    mutating func name() throws(XMLSyntaxError) -> String {
        let start = i
        while let c = peek(), Self.isNameByte(c) { i += 1 }
        guard i > start else { throw error("expected a name") }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    /// Text up to `stop` with entities decoded.
    mutating func characters(until stop: UInt8) throws(XMLSyntaxError) -> String {
        var out: [UInt8] = []
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
        let named: [String: String] = ["lt": "<", "gt": ">", "amp": "&", "quot": "\"", "apos": "'"]
        if let s = named[body] { out.append(contentsOf: Array(s.utf8)); return }
        var scalar: UInt32?
        if body.hasPrefix("#x") { scalar = UInt32(body.dropFirst(2), radix: 16) }
        else if body.hasPrefix("#") { scalar = UInt32(body.dropFirst(), radix: 10) }
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
            guard let q = peek(), q == UInt8(ascii: "\"") || q == UInt8(ascii: "'") else { throw error("expected a quoted value for \(key)") }
            i += 1
            let value = try characters(until: q)
            guard peek() == q else { throw error("unterminated value of \(key)") }
            i += 1
            guard node.attributes[key] == nil else { throw error("attribute \(key) given twice") }
            node.attributes[key] = value
        }
        while true {
            node.text += try characters(until: UInt8(ascii: "<"))
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
            node.children.append(try element(depth: depth + 1))
        }
    }
}
