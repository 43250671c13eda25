import TilePackCore

/// A price as an exact decimal: an integer count of 10^−scale units ("4.99" is 499 at scale 2).
///
/// Money is never a `Double` here: 0.1 + 0.2 must not come out as 0.30000000000000004, and
/// "cheapest first" must compare 4.99 and 4.990 as equal. The catalog writes prices as decimal
/// strings, which parse into this type; ``description`` gives them back as written.
///
/// ```swift
/// let p = try Price(parsing: "4.99", minorUnits: 2)   // units 499, scale 2
/// p < (try Price(parsing: "5", minorUnits: 2))        // true
/// ```
///
/// Cost: parsing is O(length of the text); comparison and hashing are O(1).
public struct Price: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The amount in units of 10^−``scale``.
    public let units: Int64
    /// Digits after the decimal point, as written (0…``maxScale``).
    public let scale: Int

    /// The most digits after the point any ISO 4217 currency uses (CLF, UYW have 4).
    public static let maxScale = 4
    /// The largest whole part accepted: 10^12 − 1 keeps every amount, rescaled to
    /// ``maxScale`` digits, far inside Int64, so comparisons never overflow.
    public static let maxWholeDigits = 12

    /// Why a price string was refused (the catalog wraps it with the file, field and text):
    /// `subject` is empty, `detail` the words that follow the price (`is negative`).
    public struct ParseProblem: TilePackError, Equatable {
        /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
        public struct Code: TilePackErrorCode {
            private let name: String
            private init(_ name: String) { self.name = name }
            public var description: String { name }
            /// Not digits with an optional point and fraction ("4,99", "", "1e3", " 4").
            public static let malformed = Code("malformed")
            /// A leading minus: prices are never negative.
            public static let negative = Code("negative")
            /// More fraction digits than the currency has minor units ("4.999" in EUR).
            public static let tooManyDecimals = Code("tooManyDecimals")
            /// More than ``Price/maxWholeDigits`` digits before the point.
            public static let tooLarge = Code("tooLarge")
        }

        public let code: Code
        public let subject: String
        public let detail: String
        public var cause: (any Error)? { nil }

        public init(_ code: Code, detail: String) {
            self.code = code
            self.subject = ""
            self.detail = detail
        }

        public static let malformed = ParseProblem(.malformed, detail: "is not a decimal such as \"4.99\"")
        public static let negative = ParseProblem(.negative, detail: "is negative")
        public static let tooLarge = ParseProblem(.tooLarge, detail: "is too large")
        public static func tooManyDecimals(allowed: Int) -> ParseProblem {
            ParseProblem(.tooManyDecimals, detail: "has more than \(allowed) decimal\(allowed == 1 ? "" : "s")")
        }
    }

    /// Parses "4.99", "0", "10.5": ASCII digits, optionally a point and 1…`minorUnits` digits.
    /// No sign, exponent, spaces or thousands separators. `minorUnits` is the currency's
    /// (``Price/minorUnits(ofCurrency:)``); "4.990" is refused for EUR even though it equals
    /// 4.99, because a store cannot charge a tenth of a cent.
    public init(parsing text: String, minorUnits: Int) throws {
        let bytes = Array(text.utf8)
        if bytes.first == UInt8(ascii: "-") { throw ParseProblem.negative }
        let point = bytes.firstIndex(of: UInt8(ascii: "."))
        let whole = bytes[..<(point ?? bytes.endIndex)]
        let fraction = point.map { bytes[($0 + 1)...] } ?? []
        func isDigits(_ s: ArraySlice<UInt8>) -> Bool {
            !s.isEmpty && s.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }
        guard isDigits(whole), point == nil || isDigits(fraction) else { throw ParseProblem.malformed }
        // Leading zeros do not count against the size ("0004.99" is small).
        guard whole.drop(while: { $0 == UInt8(ascii: "0") }).count <= Self.maxWholeDigits else {
            throw ParseProblem.tooLarge
        }
        let allowed = min(max(minorUnits, 0), Self.maxScale)
        guard fraction.count <= allowed else { throw ParseProblem.tooManyDecimals(allowed: allowed) }
        var value: Int64 = 0
        // At most 12 significant whole digits and 4 fraction digits: < 10^16, no overflow.
        for digit in whole.drop(while: { $0 == UInt8(ascii: "0") }) + fraction {
            value = value * 10 + Int64(digit - UInt8(ascii: "0"))
        }
        units = value
        scale = fraction.count
    }

    /// Digits after the point in a currency: 2 unless ISO 4217 says otherwise.
    ///
    /// Cost: O(1) (two small set lookups).
    public static func minorUnits(ofCurrency code: String) -> Int {
        if zeroDecimalCurrencies.contains(code) { return 0 }
        if threeDecimalCurrencies.contains(code) { return 3 }
        if fourDecimalCurrencies.contains(code) { return 4 }
        return 2
    }

    // ISO 4217 (list one, 2024): the currencies whose minor unit is not 2.
    private static let zeroDecimalCurrencies: Set<String> = [
        "BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "UYI",
        "VND", "VUV", "XAF", "XOF", "XPF",
    ]
    private static let threeDecimalCurrencies: Set<String> = ["BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"]
    private static let fourDecimalCurrencies: Set<String> = ["CLF", "UYW"]

    /// The amount in units of 10^−``maxScale``: the common scale comparisons use.
    @inlinable
    public var normalizedUnits: Int64 {
        var v = units
        // units < 10^(maxWholeDigits + scale), so rescaled to maxScale digits the amount
        // stays below 10^16: no overflow.
        for _ in scale..<Self.maxScale { v *= 10 }
        return v
    }

    public static func < (a: Price, b: Price) -> Bool { a.normalizedUnits < b.normalizedUnits }
    /// Equal by value: "4.9" == "4.90".
    public static func == (a: Price, b: Price) -> Bool { a.normalizedUnits == b.normalizedUnits }
    public func hash(into hasher: inout Hasher) { hasher.combine(normalizedUnits) }

    /// The decimal text, with as many fraction digits as were written ("4.99", "0", "10.5").
    public var description: String {
        guard scale > 0 else { return String(units) }
        var divisor: Int64 = 1
        for _ in 0..<scale { divisor *= 10 }
        let fraction = String(units % divisor)
        return "\(units / divisor)." + String(repeating: "0", count: scale - fraction.count) + fraction
    }
}
