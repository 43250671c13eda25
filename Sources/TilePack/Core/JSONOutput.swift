#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The house JSON: every `--json` output and every JSON value the library stores goes through
/// ``string(_:)``, so they all agree. Keys are sorted; slashes are not escaped (paths stay
/// readable); numbers are the shortest round-tripping decimal with integral values printed
/// without a fraction (JSONEncoder drops Swift's ".0"); non-finite numbers become the strings
/// "nan", "inf", "-inf" (JSON has no NaN).
package enum JSONOutput {
    /// `value` as one line of JSON text. Throws only what `JSONEncoder` throws (nothing for
    /// tilepack's own reports).
    package static func string(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// A number as tilepack prints it: negative zero as 0 (JSONEncoder would print "-0"),
    /// every other value unchanged. Apply to each Double a report encodes.
    @inlinable
    package static func number(_ value: Double) -> Double { value == 0 ? 0 : value }
}

extension KeyedEncodingContainer {
    /// `value`, or an explicit `null` when it is nil: synthesized `Encodable` would omit the
    /// key, and the documented schemas print `null`.
    package mutating func encodeOrNull<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
}
