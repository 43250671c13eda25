import TilePackCore

/// Which pixels of one tile the user owns: the answer of an ``AccessPolicy`` for a tile that
/// an owned area's edge crosses (``TileAccess/partial(_:unlockedBy:)``).
///
/// One bit per pixel, row-major (row 0 at the top, as tiles are stored), each row padded to
/// whole 64-bit words; immutable, so a copy shares the words (a reference count, no copy).
///
/// ```swift
/// let mask = TileMask(side: 4) { x, y in x < 2 }   // the west half
/// mask.isOwned(x: 1, y: 3)    // true
/// mask.ownedCount             // 8
/// ```
///
/// Cost: side² / 8 bytes (8 KiB for a 256-pixel tile); ``isOwned(x:y:)`` is O(1); building is
/// O(side²/64) words plus the runs set.
public struct TileMask: Sendable, Hashable, CustomStringConvertible {
    /// The largest side a mask takes (as ``ElevationTile/maxSide``): 4096² bits are 2 MiB.
    public static let maxSide = 4096

    /// Pixels a side.
    public let side: Int
    /// Owned pixels, 0…side².
    public let ownedCount: Int
    /// A 64-bit digest of the side and every bit: names the mask in cache keys and ETags
    /// (two different masks of one tile share it with probability 2⁻⁶⁴).
    public let fingerprint: UInt64
    private let words: [UInt64]
    private let wordsPerRow: Int

    /// The mask with `isOwned(x, y)` for every pixel.
    /// - Precondition: `side` in 1…``maxSide``.
    public init(side: Int, isOwned: (_ x: Int, _ y: Int) -> Bool) {
        var builder = Builder(side: side)
        for y in 0..<side {
            var x = 0
            while x < side {
                guard isOwned(x, y) else { x += 1; continue }
                let start = x
                while x < side, isOwned(x, y) { x += 1 }
                builder.own(row: y, columns: start..<x)
            }
        }
        self = builder.build()
    }

    fileprivate init(side: Int, wordsPerRow: Int, words: [UInt64]) {
        self.side = side
        self.wordsPerRow = wordsPerRow
        self.words = words
        var count = 0
        // FNV-1a over the words, then an avalanche: cheap, and what the ETags need.
        var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(side)
        for w in words {
            count += w.nonzeroBitCount
            h = (h ^ w) &* 0x0000_0100_0000_01b3
            h ^= h >> 29
        }
        h = (h ^ (h >> 33)) &* 0xff51_afd7_ed55_8ccd
        ownedCount = count
        fingerprint = h ^ (h >> 33)
    }

    /// Whether pixel (x, y) is owned (x east, y south, both 0…side − 1).
    @inline(__always)
    public func isOwned(x: Int, y: Int) -> Bool {
        precondition(x >= 0 && x < side && y >= 0 && y < side, "pixel outside the mask")
        return words[y * wordsPerRow + x >> 6] >> UInt64(x & 63) & 1 != 0
    }

    /// Pixels in the tile: side².
    public var pixelCount: Int { side * side }
    /// No pixel owned.
    public var isEmpty: Bool { ownedCount == 0 }
    /// Every pixel owned.
    public var isFull: Bool { ownedCount == pixelCount }
    /// The bytes the bits take (for cache accounting).
    public var byteCount: Int { words.count * 8 }

    /// Calls `body` with each maximal run of pixels of row `y` that are owned (`owned`
    /// true) or not owned (false), west to east.
    /// - Cost: O(side / 64 + runs).
    public func forEachRun(row y: Int, owned: Bool, _ body: (Range<Int>) -> Void) {
        precondition(y >= 0 && y < side, "row outside the mask")
        let base = y * wordsPerRow
        var x = 0
        while x < side {
            // Skip to the next pixel of the wanted kind, a word at a time.
            guard let start = next(row: base, from: x, owned: owned) else { return }
            let end = next(row: base, from: start, owned: !owned) ?? side
            body(start..<end)
            x = end
        }
    }

    /// The first x ≥ `from` whose bit is `owned`, nil when none.
    private func next(row base: Int, from: Int, owned: Bool) -> Int? {
        var x = from
        while x < side {
            var w = words[base + x >> 6]
            if !owned { w = ~w }
            w >>= UInt64(x & 63)
            if w != 0 {
                let found = x + w.trailingZeroBitCount
                return found < side ? found : nil
            }
            x = (x | 63) + 1
        }
        return nil
    }

    /// The same area at another side, nearest pixel: pixel (x, y) of the result takes the
    /// pixel of this mask that holds its centre. `self` when the sides agree.
    public func scaled(toSide other: Int) -> TileMask {
        if other == side { return self }
        return TileMask(side: other) { x, y in
            isOwned(x: (2 * x + 1) * side / (2 * other), y: (2 * y + 1) * side / (2 * other))
        }
    }

    public static func == (a: TileMask, b: TileMask) -> Bool {
        a.side == b.side && a.fingerprint == b.fingerprint && a.words == b.words
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(fingerprint) }

    public var description: String { "\(ownedCount) of \(pixelCount) pixels owned" }

    /// Sets runs of owned pixels, then ``build()``s the immutable mask. Runs may overlap
    /// (owning a pixel twice is owning it): the union of several areas is their runs added.
    public struct Builder: Sendable {
        public let side: Int
        private var words: [UInt64]
        private let wordsPerRow: Int

        /// An empty mask of `side` pixels a side.
        /// - Precondition: `side` in 1…``TileMask/maxSide``.
        public init(side: Int) {
            precondition(side >= 1 && side <= TileMask.maxSide, "mask side out of range")
            self.side = side
            wordsPerRow = (side + 63) / 64
            words = [UInt64](repeating: 0, count: wordsPerRow * side)
        }

        /// Owns pixels `columns` of row `y` (clamped to the tile).
        public mutating func own(row y: Int, columns: Range<Int>) {
            precondition(y >= 0 && y < side, "row outside the mask")
            let lo = max(0, columns.lowerBound), hi = min(side, columns.upperBound)
            guard lo < hi else { return }
            let base = y * wordsPerRow
            var x = lo
            while x < hi {
                let bit = x & 63
                let n = min(64 - bit, hi - x)
                let run: UInt64 = n == 64 ? ~0 : ((1 << UInt64(n)) - 1) << UInt64(bit)
                words[base + x >> 6] |= run
                x += n
            }
        }

        /// Owns every pixel.
        public mutating func ownAll() {
            for y in 0..<side { own(row: y, columns: 0..<side) }
        }

        public func build() -> TileMask { TileMask(side: side, wordsPerRow: wordsPerRow, words: words) }
    }
}
