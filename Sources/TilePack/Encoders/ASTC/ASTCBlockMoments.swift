/// What rate-distortion optimisation's repeat candidates need of the block being chosen (its
/// texels' sum, per-channel spread, rounded mean and that mean's error), measured once per
/// block: the repeat tried before the search and the choice after it read the same figures, and
/// every weight-reuse trial reads `squares`.
///
/// Cost: one pass over the block's texels, exact in integers.
struct ASTCBlockMoments {
    /// Σ texels, n × their mean (0…255 a channel, n ≤ 144: no overflow).
    let sum: SIMD4<Int32>
    /// Per channel √Σ(x − mean)² (``spread(sum:squares:count:)``).
    let spread: SIMD4<Float>
    /// The rounded mean, a constant block's colour, and that block's summed squared error.
    let mean: SIMD4<Int32>
    let flatError: Int
    /// Σ|x|² over the texels' red, green and blue (rounded to a Float: it only enters a bound).
    let squares: Float

    init(_ texels: UnsafeMutablePointer<SIMD4<Int32>>, count: Int) {
        let (sum, squares) = Self.channelSums(texels, count: count)
        let n = Int32(count)
        let mean = (sum &+ n / 2) / n
        self.sum = sum
        self.mean = mean
        // Σ(x − m)² = Σx² − 2m·Σx + n·m², per channel, exact in integers.
        flatError = Int((squares &- 2 &* mean &* sum &+ n &* mean &* mean).wrappedSum())
        self.squares = Float((squares &* SIMD4(1, 1, 1, 0)).wrappedSum())
        spread = Self.spread(sum: sum, squares: squares, count: count)
    }

    /// Per channel Σx and Σx² of `count` texels (0…255 a channel, `count` ≤ 144: Σx² ≤
    /// 144 × 255², no overflow). Cost: one pass, four channels a lane.
    @inline(__always)
    static func channelSums(
        _ texels: UnsafeMutablePointer<SIMD4<Int32>>, count: Int
    ) -> (sum: SIMD4<Int32>, squares: SIMD4<Int32>) {
        var sum = SIMD4<Int32>(), squares = SIMD4<Int32>()
        for t in 0..<count {
            sum &+= texels[t]
            squares &+= texels[t] &* texels[t]
        }
        return (sum, squares)
    }

    /// Per channel √Σ(x − mean)² from ``channelSums(_:count:)``. Two blocks' squared error is
    /// n × their means' squared difference plus that of the centred texels, which is at least
    /// the squared difference of these roots (the triangle inequality), channel by channel.
    /// n·Σx² − (Σx)² = n·Σ(x − mean)², at most n² × 255² (n ≤ 144: under 2³¹), exact in Int32.
    @inline(__always)
    static func spread(sum: SIMD4<Int32>, squares: SIMD4<Int32>, count: Int) -> SIMD4<Float> {
        let n = Int32(count)
        return (SIMD4<Float>(n &* squares &- sum &* sum) / Float(n)).squareRoot()
    }
}
