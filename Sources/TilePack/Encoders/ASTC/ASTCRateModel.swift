import TilePackCodec

/// An estimate of the bits deflate spends on the next 16-byte block of a tile, given the
/// blocks already written: a greedy LZ77 parse of the block against the tile so far (what
/// zlib's 32 KiB window holds: a whole 256 × 256 ASTC 6 × 6 tile is 29,584 bytes), matches
/// of 3 bytes or more found through hash chains as zlib finds them, each costing a length and
/// a distance code, other bytes a literal each. Rate-distortion optimisation compares
/// candidate blocks with it (``ASTCEncoder``'s `rdo`), so only differences between
/// candidates matter; docs/ASTC.md gives its agreement with zlib's output on real tiles.
///
/// Cost: ``bits(_:)`` reads the block's 14 slots (no chain to follow), then compares at most
/// ``chainDepth`` earlier positions per byte of the block, and the block's own earlier positions
/// that share its next three bytes; ``append(_:)`` is a few stores. Two allocations per
/// tile (the bytes, 128 KiB of slots).
final class ASTCRateModel {
    /// Bits a literal byte costs: ASTC bytes are close to uniform, and deflate's Huffman code
    /// for literals settles near 7½ bits on them (measured on real tiles, docs/ASTC.md).
    static let literalBits: Float = 7.5
    /// Positions followed per byte (zlib level 6 follows up to 128; the estimate only
    /// ranks candidates, and the longest matches of block data are nearly always among the newest).
    /// The slots of ``newest`` hold this many (lanes 0–3, their keys in lanes 4–7).
    static let chainDepth = 4
    static let hashBits = 12

    /// The tile's bytes so far, then room for one trial block after them.
    private let bytes: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private(set) var count = 0
    /// Per 3-byte hash, its ``chainDepth`` most recent positions, newest in lane 0 (-1: none):
    /// the hash chain zlib would follow, cut at the depth the model follows. Why not a chain
    /// (a head and each position's previous): following it was a load that waited on the one
    /// before, four deep, for every byte of every candidate (a third of the model's time in
    /// perf); the slot is one load, and the four positions' bytes are fetched together.
    /// Lanes 4–7: the three bytes at each of those positions (a 24-bit key; -1: none). A position
    /// whose key is not the trial's shares at most two bytes with it, which can never be a
    /// match (3 bytes at least), so its bytes are not read: most positions in a slot are
    /// other 3-byte values with the same hash.
    private let newest: UnsafeMutablePointer<SIMD8<Int32>>
    /// The slots of a trial block's positions 0…13 (those that can start a match), read by
    /// ``bits(_:limit:)`` before its parse. Why: a slot read misses the first-level cache (the
    /// 4,096 slots take 128 KiB), and in the parse each read waited behind the branches on the
    /// one before (41 % of the model's time in perf sat on that load); read in one batch, the
    /// independent loads overlap.
    private let trialSlots: UnsafeMutablePointer<SIMD8<Int32>>
    /// … and the three bytes at each of those positions (``key(at:)``), then two lanes of
    /// `UInt32.max` (-1 as `Int32`, never a key), so the 16 load as two `SIMD8<Int32>`.
    private let trialKeys: UnsafeMutablePointer<UInt32>

    /// Bytes after the trial block that ``matchLength(from:at:limit:)``'s 8-byte steps may read.
    private static let padding = 8

    /// `capacity`: the tile's byte count (its blocks × 16).
    init(capacity: Int) {
        self.capacity = capacity
        bytes = .allocate(capacity: capacity + 16 + Self.padding)
        bytes.initialize(repeating: 0, count: capacity + 16 + Self.padding)
        newest = .allocate(capacity: 1 << Self.hashBits)
        newest.initialize(repeating: SIMD8(repeating: -1), count: 1 << Self.hashBits)
        trialSlots = .allocate(capacity: 14)
        trialSlots.initialize(repeating: SIMD8(repeating: -1), count: 14)
        trialKeys = .allocate(capacity: 16)
        trialKeys.initialize(repeating: .max, count: 16)
    }

    deinit {
        bytes.deallocate()
        newest.deallocate()
        trialSlots.deallocate()
        trialKeys.deallocate()
    }

    /// The three bytes at `i` as one number (the first lowest).
    @inline(__always) private func key(at i: Int) -> UInt32 {
        UInt32(bytes[i]) | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2]) << 16
    }

    @inline(__always) private func hash(_ key: UInt32) -> Int {
        Int((key &* 0x9E37_79B1) >> UInt32(32 - Self.hashBits))
    }

    /// Bits of a match `distance` bytes back: deflate's length code (about 7 bits for 3…16
    /// bytes) and distance code (about 5 bits, and `log2(distance) − 2` extra bits).
    @inline(__always) static func matchBits(distance: Int) -> Float {
        Float(10 + (Int.bitWidth - distance.leadingZeroBitCount))
    }

    /// Estimated bits for `block` (16 bytes) written after the tile so far; infinity once the
    /// count reaches `limit` (what a candidate may cost and still win): most candidates lose,
    /// and the bits only add up, so the rest of the parse is skipped.
    func bits(_ block: ASTCBits, limit: Float = .infinity) -> Float {
        let trial = bytes + count
        trial.withMemoryRebound(to: UInt64.self, capacity: 2) {
            $0[0] = block.lo.littleEndian
            $0[1] = block.hi.littleEndian
        }
        for i in 0..<14 {
            let triple = key(at: count + i)
            trialKeys[i] = triple
            trialSlots[i] = newest[hash(triple)]
        }
        // Whether any earlier position of the block shares a position's three bytes, eight keys a
        // vector, before the scalar scan below (most positions share them with none, and the
        // scan then compared up to 13 keys for nothing).
        let keys = UnsafeRawPointer(trialKeys)
        let keysLow = keys.loadUnaligned(as: SIMD8<Int32>.self)
        let keysHigh = keys.loadUnaligned(fromByteOffset: 32, as: SIMD8<Int32>.self)
        let lane = SIMD8<Int32>(0, 1, 2, 3, 4, 5, 6, 7)
        var total: Float = 0
        var i = 0
        while i < 16 {
            guard total < limit else { return .infinity }
            var bestLength = 0, bestDistance = 0
            if i <= 13 {
                let at = count + i, triple = trialKeys[i]
                // Earlier positions of this block with the same three bytes (runs of zero weight
                // bits; a match of fewer is never taken), the nearest first so it wins a tie;
                // then the tile's.
                let key = SIMD8(repeating: Int32(bitPattern: triple)), before = SIMD8(repeating: Int32(i))
                if any(((keysLow .== key) .& (lane .< before)) .| ((keysHigh .== key) .& (lane &+ 8 .< before))) {
                    for p in stride(from: i - 1, through: 0, by: -1) where trialKeys[p] == triple {
                        let length = matchLength(from: count + p, at: at, limit: 16 - i)
                        if length > bestLength { (bestLength, bestDistance) = (length, i - p) }
                    }
                }
                let slot = trialSlots[i]
                let same = slot.highHalf .== key.lowHalf
                // Empty lanes hold key -1, never equal: with no lane the same, the walk below
                // would only skip and stop.
                if any(same) {
                    for depth in 0..<Self.chainDepth {
                        let p = Int(slot[depth])
                        guard p >= 0 && bestLength < 16 - i else { break }
                        guard same[depth] else { continue }
                        let length = matchLength(from: p, at: at, limit: 16 - i)
                        if length > bestLength { (bestLength, bestDistance) = (length, at - p) }
                    }
                }
            }
            let cost = Self.matchBits(distance: bestDistance)
            if bestLength >= 3 && cost < Float(bestLength) * Self.literalBits {
                total += cost
                i += bestLength
            } else {
                total += Self.literalBits
                i += 1
            }
        }
        return total < limit ? total : .infinity
    }

    /// Bytes equal from `p` and from `at` (`p` < `at`), at most `limit` (`at + limit` ≤ the trial
    /// block's end): eight bytes a step, the first difference found from the XOR's low zero bits.
    /// A step may read up to 7 bytes past the trial block (``padding``), never counted.
    @inline(__always) private func matchLength(from p: Int, at: Int, limit: Int) -> Int {
        let raw = UnsafeRawPointer(bytes)
        var n = 0
        while n < limit {
            let x =
                UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: p + n, as: UInt64.self))
                ^ UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: at + n, as: UInt64.self))
            if x != 0 { return min(n + x.trailingZeroBitCount >> 3, limit) }
            n += 8
        }
        return limit
    }

    /// Adds `block` to the tile's bytes. Positions enter their hash's slot once the two bytes
    /// after them are known (the oldest of its four drops out).
    func append(_ block: ASTCBits) {
        guard count + 16 <= capacity else { return }
        (bytes + count).withMemoryRebound(to: UInt64.self, capacity: 2) {
            $0[0] = block.lo.littleEndian
            $0[1] = block.hi.littleEndian
        }
        let from = max(0, count - 2)
        count += 16
        for i in from..<count - 2 {
            let triple = key(at: i), h = hash(triple), old = newest[h]
            newest[h] = SIMD8(
                Int32(truncatingIfNeeded: i), old[0], old[1], old[2], Int32(bitPattern: triple), old[4], old[5], old[6])
        }
    }
}

@available(*, unavailable) extension ASTCRateModel: Sendable {}
