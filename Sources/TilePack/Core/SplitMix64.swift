/// SplitMix64 (Steele, Lea and Flood 2014): a tiny generator fully determined by its seed,
/// unlike `SystemRandomNumberGenerator`, so sample terrain, viewer traces, simulated memory
/// warnings and fuzz iterations replay exactly on every machine. Sampling is done here, not
/// by the standard library, whose algorithms may change between Swift versions.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// - Cost: O(1), a few multiplies.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in 0..<1 from the top 53 bits.
    public mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

    /// Uniform in lo..<hi.
    public mutating func uniform(_ lo: Double, _ hi: Double) -> Double { lo + (hi - lo) * unit() }

    /// Uniform in 0..<n (n ≥ 1); the modulo bias is below n·2⁻⁶⁴, nothing for the small n used here.
    public mutating func below(_ n: Int) -> Int {
        Int(next() % UInt64(max(1, n)))
    }
}
