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
    /// A floor under the squared distance of the texels' RGB from any line, hence under the
    /// error of every single-partition block (its decoded texels lie on the segment between its
    /// endpoints, up to the decoder's rounding) and under ``ASTCEncoder``'s principal-line
    /// residual: with S the RGB scatter matrix (Σ of the centred texels' outer products), the
    /// best line's residual is trace(S) − λmax(S). λmax is approached from above by Newton's
    /// method on S's characteristic polynomial (convex and increasing from the largest root up,
    /// so every step stays above it), so the result is never above the true residual; it is
    /// shrunk by a relative 10⁻³ and 1 more for the Float sums it is compared with.
    /// `sum`: the texels' ``sum``.
    /// Cost: one pass over the texels (products in integers, exact), a few Double operations.
    static func lineResidualFloor(
        _ texels: UnsafeMutablePointer<SIMD4<Int32>>, count: Int, sum: SIMD4<Int32>
    ) -> Float {
        // Σ x², Σ y², Σ z² and Σ xy, Σ yz, Σ zx: at most 144 × 255² each, exact in Int32.
        var squares = SIMD4<Int32>(), cross = SIMD4<Int32>()
        for t in 0..<count {
            let v = texels[t] &* SIMD4(1, 1, 1, 0)
            squares &+= v &* v
            cross &+= v &* SIMD4(v[1], v[2], v[0], 0)
        }
        let n = Double(count), s = SIMD4<Double>(sum &* SIMD4(1, 1, 1, 0))
        let q = SIMD4<Double>(squares), products = SIMD4<Double>(cross)
        let rotated = SIMD4<Double>(s[1], s[2], s[0], 0)
        // Centred: Σxy − Σx·Σy / n.
        let diagonal = q - s * s / n, off = products - s * rotated / n
        let (a, b, c) = (diagonal[0], diagonal[1], diagonal[2]), (ab, bc, ca) = (off[0], off[1], off[2])
        let trace: Double = a + b + c
        let minors: Double = a * b + b * c + c * a - (ab * ab + bc * bc + ca * ca)
        let determinant: Double = a * b * c + 2 * ab * bc * ca - a * bc * bc - b * ca * ca - c * ab * ab
        func polynomial(_ x: Double) -> Double { ((x - trace) * x + minors) * x - determinant }
        // From the Frobenius norm (√Σλ², at least λmax), or the trace (Σλ, S being positive
        // semi-definite) when rounding puts the norm below the root; a step is taken only when
        // it stays where the polynomial is not negative (above λmax, not below by rounding).
        // Close eigenvalues (noise-like blocks) slow Newton down: sixteen steps at most.
        let frobenius = (a * a + b * b + c * c + 2 * (ab * ab + bc * bc + ca * ca)).squareRoot()
        var x = frobenius < trace && polynomial(frobenius) >= 0 ? frobenius : trace
        for _ in 0..<16 {
            let p = polynomial(x), slope = (3 * x - 2 * trace) * x + minors
            guard p > 0, slope > 0 else { break }
            let next = x - p / slope
            guard next < x, polynomial(next) >= 0 else { break }
            x = next
        }
        return max(Float((trace - x) * 0.999) - 1, 0)
    }
}
