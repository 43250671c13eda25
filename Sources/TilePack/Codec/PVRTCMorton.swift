import TilePackCore
/// The "twiddled" word order of PVRTC1: a word's index interleaves the bits of its row (Y,
/// lowest bit) and column (X); when the grid is not square the high bits of the longer side
/// sit above the interleaved part.
///
/// The order is separable (`offset = x part | y part`), so one instance holds two small
/// tables and ``offset(x:y:)`` costs two loads and an OR.
package struct PVRTCMorton: Sendable {
    public let wordsWide: Int
    public let wordsHigh: Int
    @usableFromInline package let xPart: [Int]
    @usableFromInline package let yPart: [Int]

    /// - Precondition: both counts are powers of two (``PVRTCFormat/validate(width:height:)`` checks sizes).
    public init(wordsWide: Int, wordsHigh: Int) {
        precondition(wordsWide > 0 && wordsWide & (wordsWide - 1) == 0, "word columns must be a power of two")
        precondition(wordsHigh > 0 && wordsHigh & (wordsHigh - 1) == 0, "word rows must be a power of two")
        self.wordsWide = wordsWide
        self.wordsHigh = wordsHigh
        xPart = (0..<wordsWide).map { Self.offset(x: $0, y: 0, wordsWide: wordsWide, wordsHigh: wordsHigh) }
        yPart = (0..<wordsHigh).map { Self.offset(x: 0, y: $0, wordsWide: wordsWide, wordsHigh: wordsHigh) }
    }

    /// Index of word (`x`, `y`) in the stored order.
    @inlinable public func offset(x: Int, y: Int) -> Int { xPart[x] | yPart[y] }

    /// The defining formula, bit by bit (what the PowerVR SDK calls `TwiddleUV`).
    public static func offset(x: Int, y: Int, wordsWide: Int, wordsHigh: Int) -> Int {
        let minimum = min(wordsWide, wordsHigh)
        var result = 0, shift = 0, bit = 1
        while bit < minimum {
            result |= ((y & bit) | ((x & bit) << 1)) << shift
            bit <<= 1
            shift += 1
        }
        let high = (wordsWide > wordsHigh ? x : y) >> shift
        return result | (high << (2 * shift))
    }
}
