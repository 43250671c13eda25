/// How long one term of an auto-renewing subscription lasts: an ISO 8601 duration of whole
/// years, months, weeks and days ("P1M", "P1Y", "P7D", "P1Y6M"), as StoreKit's
/// `subscriptionPeriod` is a count of one calendar unit.
///
/// Cost: parsing is O(length); ``expiry(after:)`` is O(1).
public struct SubscriptionPeriod: Sendable, Hashable, CustomStringConvertible {
    public let years: Int
    public let months: Int
    /// Days, weeks counted as 7.
    public let days: Int

    /// The most of any one unit: keeps date arithmetic far from overflow.
    static let maxCount = 1000

    /// Parses `P[nY][nM][nW][nD]`: at least one part, in that order, each a positive whole
    /// number ≤ 1000; no time part (`PT1H`): a subscription is sold by the day or longer.
    /// Returns nil for anything else.
    public init?(iso8601 text: String) {
        var bytes = Array(text.utf8)[...]
        guard bytes.first == UInt8(ascii: "P") else { return nil }
        bytes.removeFirst()
        var counts: [UInt8: Int] = [:]
        let order: [UInt8] = Array("YMWD".utf8)
        var next = 0
        while !bytes.isEmpty {
            let digits = bytes.prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            guard !digits.isEmpty, digits.count <= 4 else { return nil }
            bytes.removeFirst(digits.count)
            guard let unit = bytes.first, let at = order[next...].firstIndex(of: unit) else { return nil }
            bytes.removeFirst()
            var n = 0
            for d in digits { n = n * 10 + Int(d - UInt8(ascii: "0")) }
            guard n >= 1, n <= Self.maxCount else { return nil }
            counts[unit] = n
            next = at + 1
        }
        guard !counts.isEmpty else { return nil }
        years = counts[UInt8(ascii: "Y")] ?? 0
        months = counts[UInt8(ascii: "M")] ?? 0
        days = (counts[UInt8(ascii: "W")] ?? 0) * 7 + (counts[UInt8(ascii: "D")] ?? 0)
    }

    /// The ISO 8601 text ("P1Y", "P1M", "P14D"); weeks come back as days.
    public var description: String {
        var text = "P"
        if years > 0 { text += "\(years)Y" }
        if months > 0 { text += "\(months)M" }
        if days > 0 { text += "\(days)D" }
        return text
    }

    /// When a term that starts at `start` (seconds since 1970, UTC) ends: years and months
    /// added on the UTC calendar, the day clamped to the month's length (31 January + P1M is
    /// 28 or 29 February, as Foundation's Calendar does), then the days added. Nil for a
    /// start that is not finite or lies beyond ±30,000 years (no date to compute).
    public func expiry(after start: Double) -> Double? {
        guard start.isFinite, abs(start) < 9e11 else { return nil }
        let dayCount = (start / 86_400).rounded(.down)
        let secondsIntoDay = start - dayCount * 86_400
        var (y, m, d) = Self.civil(fromDays: Int(dayCount))
        let totalMonths = y * 12 + (m - 1) + years * 12 + months
        y = totalMonths / 12
        m = totalMonths % 12 + 1
        d = min(d, Self.daysIn(month: m, year: y))
        return Double(Self.days(fromCivil: y, m, d) + days) * 86_400 + secondsIntoDay
    }

    private static func daysIn(month m: Int, year y: Int) -> Int {
        switch m {
        case 2: (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian, day 0 = 1970-01-01).
    private static func days(fromCivil y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func civil(fromDays z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}
