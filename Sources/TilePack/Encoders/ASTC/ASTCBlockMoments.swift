/// What rate-distortion optimisation's repeat candidates need of the block being chosen (its
/// texels' sum, per-channel spread, rounded mean and that mean's error), measured once per
/// block: the repeat tried before the search and the choice after it read the same figures, and
/// every weight-reuse trial reads `squares`.
///
/// Cost: two passes over the block's texels, exact in integers.
struct ASTCBlockMoments {
    /// Σ texels, n × their mean (0…255 a channel, n ≤ 144: no overflow).
    let sum: SIMD4<Int32>
    /// Per channel √Σ(x − mean)² (``ASTCRecentBlocks/spread(of:count:)``).
    let spread: SIMD4<Float>
    /// The rounded mean, a constant block's colour, and that block's summed squared error.
    let mean: SIMD4<Int32>
    let flatError: Int
    /// Σ|x|² over the texels' four channels (rounded to a Float: it only enters a bound).
    let squares: Float

    init(_ texels: UnsafeMutablePointer<SIMD4<Int32>>, count: Int) {
        var sum = SIMD4<Int32>()
        for t in 0..<count { sum &+= texels[t] }
        let n = Int32(count)
        let mean = (sum &+ n / 2) / n
        var flatError = 0, squares = 0
        for t in 0..<count {
            let d = texels[t] &- mean
            flatError += Int((d &* d).wrappedSum())
            squares += Int((texels[t] &* texels[t]).wrappedSum())
        }
        self.sum = sum
        self.mean = mean
        self.flatError = flatError
        self.squares = Float(squares)
        spread = ASTCRecentBlocks.spread(of: texels, count: count)
    }
}
