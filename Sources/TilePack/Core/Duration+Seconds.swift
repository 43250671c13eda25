extension Duration {
    /// The duration in seconds as a Double, for rates and reports (`Duration` itself has
    /// no such accessor). O(1).
    public var inSeconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) * 1e-18
    }

    /// Whole nanoseconds, saturating at `Int64.max`. O(1).
    public var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : whole &+ attoseconds / 1_000_000_000
    }
}
