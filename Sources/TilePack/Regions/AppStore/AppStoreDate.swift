#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Dates in App Store signed data: milliseconds since 1970-01-01 UTC, as a JSON number.
///
/// The App Store writes integers; StoreKit Testing in Xcode writes fractions
/// (`1697679936049.7297`), which are truncated to the millisecond. Anything outside
/// 1970…9999 (negative, `1e300`, not finite) is refused: no store signs such a date.
package enum AppStoreDate {
    /// 9999-12-31T23:59:59.999Z.
    static let maxMilliseconds: Int64 = 253_402_300_799_999

    /// The ISO 8601 text of `milliseconds` (UTC, to the second), for error messages.
    package static func text(milliseconds: Int64) -> String {
        let seconds = milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Civil from days (Howard Hinnant's algorithm), proleptic Gregorian.
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return
            "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }
}

extension KeyedDecodingContainer {
    /// The date at `key`, nil when absent or null; a fraction of a millisecond is truncated.
    /// Throws `DecodingError.dataCorrupted` for a number outside 1970…9999 or not finite.
    func decodeAppStoreDate(forKey key: Key) throws -> Date? {
        guard contains(key), try !decodeNil(forKey: key) else { return nil }
        if let whole = try? decode(Int64.self, forKey: key) {
            guard whole >= 0, whole <= AppStoreDate.maxMilliseconds else {
                throw DecodingError.dataCorruptedError(
                    forKey: key, in: self, debugDescription: "\(whole) is outside 1970…9999")
            }
            return Date(appStoreMilliseconds: whole)
        }
        let value = try decode(Double.self, forKey: key)
        guard value.isFinite, value >= 0, value < Double(AppStoreDate.maxMilliseconds) + 1 else {
            throw DecodingError.dataCorruptedError(
                forKey: key, in: self, debugDescription: "\(value) is outside 1970…9999")
        }
        return Date(appStoreMilliseconds: Int64(value.rounded(.towardZero)))
    }
}

extension KeyedEncodingContainer {
    /// Writes `date` as whole milliseconds since 1970, as the App Store does; nothing when nil.
    mutating func encodeAppStoreDate(_ date: Date?, forKey key: Key) throws {
        guard let date else { return }
        try encode(date.appStoreMilliseconds, forKey: key)
    }
}

extension Date {
    /// The instant `milliseconds` after 1970-01-01T00:00:00Z: how App Store signed data and
    /// the ledger count time. Exact: ``appStoreMilliseconds`` gives `milliseconds` back.
    package init(appStoreMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// This instant in whole milliseconds since 1970 (to the nearest), clamped to the App
    /// Store's 1970…9999: a date from outside (an app's `.distantFuture`, a clock set to 1900)
    /// still compares, and nothing converts unchecked.
    /// - Cost: O(1).
    package var appStoreMilliseconds: Int64 {
        let milliseconds = (timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite, milliseconds > 0 else { return 0 }
        guard milliseconds < Double(AppStoreDate.maxMilliseconds) else { return AppStoreDate.maxMilliseconds }
        return Int64(milliseconds)
    }

    /// Whether this instant lies in 1970…9999, the range App Store dates and the ledger use.
    package var isInAppStoreRange: Bool {
        let seconds = timeIntervalSince1970
        return seconds.isFinite && seconds >= 0 && seconds * 1000 <= Double(AppStoreDate.maxMilliseconds)
    }
}

/// The one-line reason a `DecodingError` gives for App Store JSON: the path of the field and
/// what was wrong with it (`payload field expiresDate: -5 is outside 1970…9999`).
func appStoreDecodingProblem(_ error: any Error) -> String {
    guard let error = error as? DecodingError else { return "not JSON" }
    func path(_ context: DecodingError.Context, _ last: (any CodingKey)? = nil) -> String {
        var text = ""
        for key in context.codingPath + (last.map { [$0] } ?? []) {
            if let index = key.intValue {
                text += "[\(index)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text
    }
    switch error {
    case .keyNotFound(let key, let context):
        return "missing field \(path(context, key))"
    case .typeMismatch(let type, let context):
        let where_ = path(context)
        return where_.isEmpty
            ? "not a JSON object"
            : "field \(where_) is not \(type == String.self ? "a string" : "the expected \(type)")"
    case .valueNotFound(_, let context):
        return "field \(path(context)) is null"
    case .dataCorrupted(let context):
        let where_ = path(context)
        if where_.isEmpty { return "not JSON" }
        return "field \(where_): \(context.debugDescription)"
    @unknown default:
        return "not JSON"
    }
}
