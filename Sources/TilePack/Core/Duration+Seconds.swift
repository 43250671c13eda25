extension Duration {
    /// The duration in seconds as a Double, for rates and reports (`Duration` itself has
    /// no such accessor). O(1).
    public var inSeconds: Double {
        let c = components
        return Double(c.seconds) + Double(c.attoseconds) * 1e-18
    }
}
