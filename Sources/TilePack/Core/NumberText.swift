/// Numbers as people write them in messages, summaries and legends: whole numbers without a
/// fraction. One place, so a value reads the same in a build summary, a legend and a query.
package enum NumberText {
    /// Whole numbers without a fraction, others to the hundredth ("1205", "-0.5", "2.25",
    /// "-0.04"); beyond ±10¹⁵ (no hundredths fit an Int64) or not finite, Swift's own form.
    /// - Cost: O(1).
    package static func hundredths(_ v: Double) -> String {
        guard v.isFinite, abs(v) < 1e15 else { return "\(v)" }
        if v.rounded() == v { return String(Int64(v)) }
        let hundredths = Int64((v * 100).rounded())
        let whole = hundredths / 100, frac = abs(hundredths % 100)
        let sign = hundredths < 0 && whole == 0 ? "-" : ""
        return "\(sign)\(whole).\(frac < 10 ? "0" : "")\(frac)"
    }

    /// Whole numbers without a fraction, others in Swift's shortest round-trip form ("1",
    /// "0.01", "37.5"). - Cost: O(1).
    package static func plain(_ v: Double) -> String {
        if v.rounded() == v, abs(v) < 1e15 { return String(Int64(v)) }
        return "\(v)"
    }
}
