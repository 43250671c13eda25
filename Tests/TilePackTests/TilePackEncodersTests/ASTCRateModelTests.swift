import Testing
@testable import TilePackCodec
import TilePackCore
@testable import TilePackEncoders

/// ``ASTCRateModel``'s parse compares eight bytes a step; it must price every block exactly as
/// a byte-at-a-time parse of the same rules does (the bytes RDO writes depend on it).
@Suite struct ASTCRateModelTests {
    /// The model's rules, one byte at a time and without its chains: the newest ``chainDepth``
    /// earlier positions with the same 3-byte hash, found by scanning back.
    struct ReferenceParse {
        var bytes: [UInt8] = []

        func hash(_ b: [UInt8], _ i: Int) -> Int {
            let v = UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16
            return Int((v &* 0x9E37_79B1) >> UInt32(32 - ASTCRateModel.hashBits))
        }

        func bits(_ block: [UInt8]) -> Float {
            let all = bytes + block, count = bytes.count
            func length(_ p: Int, _ at: Int, _ limit: Int) -> Int {
                var n = 0
                while n < limit && all[p + n] == all[at + n] { n += 1 }
                return n
            }
            var total: Float = 0, i = 0
            while i < 16 {
                var bestLength = 0, bestDistance = 0
                if i <= 13 {
                    let at = count + i
                    for p in count..<at where all[p] == all[at] {
                        let l = length(p, at, 16 - i)
                        if l > bestLength || (l == bestLength && l > 0) { (bestLength, bestDistance) = (l, at - p) }
                    }
                    var depth = 0, p = count - 3
                    while p >= 0 && depth < ASTCRateModel.chainDepth && bestLength < 16 - i {
                        if hash(all, p) == hash(all, at) {
                            let l = length(p, at, 16 - i)
                            if l > bestLength { (bestLength, bestDistance) = (l, at - p) }
                            depth += 1
                        }
                        p -= 1
                    }
                }
                let cost = ASTCRateModel.matchBits(distance: bestDistance)
                if bestLength >= 3 && cost < Float(bestLength) * ASTCRateModel.literalBits {
                    (total, i) = (total + cost, i + bestLength)
                } else {
                    (total, i) = (total + ASTCRateModel.literalBits, i + 1)
                }
            }
            return total
        }
    }

    static func bits(_ bytes: [UInt8]) -> ASTCBits {
        var lo: UInt64 = 0, hi: UInt64 = 0
        for k in 0..<8 { lo |= UInt64(bytes[k]) << (8 * k); hi |= UInt64(bytes[8 + k]) << (8 * k) }
        return ASTCBits(lo: lo, hi: hi)
    }

    /// Blocks like a tile's: repeats of earlier blocks, blocks sharing their first or last
    /// bytes with an earlier one, runs of zeros, a few bytes changed, fresh random ones, and
    /// runs of one random byte (matches inside the block, one byte back, that the tile's
    /// history rarely holds).
    @Test(arguments: [1, 2, 3] as [UInt64])
    func matchesAByteAtATimeParse(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let blockCount = 300
        let model = ASTCRateModel(capacity: blockCount * 16)
        var reference = ReferenceParse()
        var written: [[UInt8]] = []
        for _ in 0..<blockCount {
            var block = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
            if let earlier = written.randomElement(using: &random) {
                switch random.next() % 7 {
                case 0: block = earlier
                case 1:
                    let (cut, kept) = (Int(random.next() % 16), Int(random.next() % 16))
                    block.replaceSubrange(0..<cut, with: earlier.prefix(kept))
                case 2:
                    let from = Int(random.next() % 16)
                    block.replaceSubrange(from..<16, with: earlier[from...])
                case 3: for k in Int(random.next() % 16)..<16 { block[k] = 0 }
                case 5:
                    let (from, run) = (Int(random.next() % 13), 4 + Int(random.next() % 6))
                    let byte = UInt8(truncatingIfNeeded: random.next())
                    for k in from..<min(from + run, 16) { block[k] = byte }
                case 4:
                    block = earlier
                    block[Int(random.next() % 16)] ^= UInt8(truncatingIfNeeded: random.next() | 1)
                default: break
                }
                block = Array(block.prefix(16)) + [UInt8](repeating: 0, count: max(0, 16 - block.count))
            }
            let expected = reference.bits(block)
            #expect(model.bits(Self.bits(block)) == expected)
            // A limit below the cost gives infinity; at or above it, the cost.
            #expect(model.bits(Self.bits(block), limit: expected + 1) == expected)
            #expect(model.bits(Self.bits(block), limit: expected - 1) == .infinity)
            model.append(Self.bits(block))
            reference.bytes += block
            written.append(block)
        }
    }
}
