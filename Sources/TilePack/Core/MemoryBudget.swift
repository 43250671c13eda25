/// A hard ceiling on the bytes a cache may hold at any instant (the tile store's budget).
///
/// Sizes read as people write them: `8MiB`, `512 KiB`, `1.5GiB`, `65536` (bytes). Binary
/// units only (KiB = 1024), plus `KB`/`MB`/`GB` read as their binary counterparts because
/// that is what people mean when they size a cache; `B` or no unit is bytes.
public struct MemoryBudget: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The ceiling in bytes, at least 1.
    public let bytes: Int

    /// - Throws: ``MemoryBudgetError`` for zero or a negative size.
    public init(bytes: Int) throws {
        guard bytes > 0 else {
            throw MemoryBudgetError(.outOfRange, text: "\(bytes)", detail: "a budget must be at least 1 byte")
        }
        self.bytes = bytes
    }

    /// Parses `8MiB`, `512KiB`, `2 GiB`, `1.5MiB`, `4096`.
    /// - Throws: ``MemoryBudgetError`` naming the text for anything else, zero, or a size past
    ///   `Int.max`.
    public init(parsing text: String) throws {
        let bytes = try ByteSize.parse(text)
        guard bytes > 0 else {
            throw MemoryBudgetError(.outOfRange, text: text, detail: "a budget must be at least 1 byte")
        }
        self.bytes = bytes
    }

    public init(from decoder: any Decoder) throws {
        let bytes = try decoder.singleValueContainer().decode(Int.self)
        do { try self.init(bytes: bytes) } catch {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "\(error)"))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        try c.encode(bytes)
    }

    public var description: String { ByteSize.format(bytes) }
}

/// A size or budget that cannot be used: `subject` is "size 'TEXT'", `detail` the problem.
public struct MemoryBudgetError: TilePackError, Equatable {
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// Not a size at all (`8 parsecs`).
        public static let notASize = Code("notASize")
        /// A size, but not one that can be used (zero, more than the machine addresses).
        public static let outOfRange = Code("outOfRange")
    }

    public let code: Code
    /// "size 'TEXT'", TEXT as the user wrote it.
    public let subject: String
    public let detail: String
    public var cause: (any Error)? { nil }
    public var category: TilePackErrorCategory { .invalidArgument }

    public init(_ code: Code, text: String, detail: String) {
        self.code = code
        self.subject = "size '\(text)'"
        self.detail = detail
    }
}

/// Byte counts as text: parsing `8MiB` and printing `8 MiB`.
public enum ByteSize {
    private static let units: [(suffix: String, shift: Int)] = [
        ("kib", 10), ("kb", 10), ("k", 10), ("mib", 20), ("mb", 20), ("m", 20),
        ("gib", 30), ("gb", 30), ("g", 30), ("tib", 40), ("tb", 40), ("b", 0),
    ]

    /// Bytes in `text` (`8MiB`, `1.5 GiB`, `4096`); fractions round to the nearest byte.
    public static func parse(_ text: String) throws -> Int {
        let lower = text.lowercased().filter { $0 != " " && $0 != "_" }
        var number = Substring(lower), shift = 0
        for (suffix, s) in units where lower.hasSuffix(suffix) {
            number = lower.dropLast(suffix.count)
            shift = s
            break
        }
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
            let value = Double(number), value.isFinite
        else {
            throw MemoryBudgetError(
                .notASize, text: text, detail: "not a size (write e.g. 8MiB, 512KiB, 1GiB or a byte count)")
        }
        let bytes = (value * Double(1 << shift)).rounded()
        guard let exact = Int(exactly: bytes) else {
            throw MemoryBudgetError(.outOfRange, text: text, detail: "is larger than this machine can address")
        }
        return exact
    }

    /// `bytes` in the largest binary unit that keeps a whole or one-decimal number:
    /// `8 MiB`, `1.5 GiB`, `312 KiB`, `900 B`.
    public static func format(_ bytes: Int) -> String {
        for (name, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] where bytes.magnitude >= UInt(1) << shift {
            let tenths = (Double(bytes) / Double(1 << shift) * 10).rounded()
            let whole = Int(tenths) / 10, frac = abs(Int(tenths)) % 10
            return frac == 0 ? "\(whole) \(name)" : "\(whole).\(frac) \(name)"
        }
        return "\(bytes) B"
    }
}
