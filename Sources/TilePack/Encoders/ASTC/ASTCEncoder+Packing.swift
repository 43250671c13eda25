import TilePackCore
import TilePackCodec

// Symbolic to physical: the chosen layout, endpoints and weights packed into the 128-bit block (integer sequence
// encoding of trits and quints).
// The encoder's state and search are in ASTCEncoder.swift; docs/ASTC.md tells the algorithm.
extension ASTCEncoder {
    /// The block for layout `c` with the given grid and colour values; `offset`: base + offset
    /// endpoints (mode 9) instead of direct RGB (mode 8), the same values in the same bits.
    /// A mixed layout (``Candidate/mixed``) writes per-partition endpoint modes: class base 1
    /// (selector 2), a class bit per partition (1 for mode 6, 2 for mode 8), two mode bits
    /// each; the second partition's mode bits sit just below the weights.
    func pack(
        _ c: Candidate, partitions: Int, seed: Int, opaque: Bool,
        gridValues: UnsafeMutablePointer<UInt8>, colourValues: UnsafeMutablePointer<UInt8>,
        mixedScaled: Int = 0, plane2: Int = 0, offset: Bool = false
    ) -> ASTCBits {
        let endpointMode = c.luminance ? 0 : c.scaled ? 6 : opaque ? (offset ? 9 : 8) : 12
        var writer = ASTCBitWriter(lo: UInt64(c.mode) | UInt64(partitions - 1) << 11, hi: 0)
        let colourStart: Int
        if c.mixed {
            // Mode 6 is class 1 with mode bits 2; mode 8 is class 2 with mode bits 0.
            let classBits = mixedScaled == 0 ? 0b10 : 0b01, modeBits0 = mixedScaled == 0 ? 2 : 0
            writer.lo |= UInt64(seed) << 13 | UInt64(2 | classBits << 2 | modeBits0 << 4) << 23
            writer.write(mixedScaled == 1 ? 2 : 0, 2, at: 128 - c.weightBits - 2)
            colourStart = 29
        } else if partitions == 2 {
            writer.lo |= UInt64(seed) << 13 | UInt64(endpointMode << 2) << 23
            colourStart = 29
        } else {
            writer.lo |= UInt64(endpointMode) << 13
            colourStart = 17
            // Dual plane: the second plane's channel just below the weights.
            if c.dual { writer.write(plane2, 2, at: 128 - c.weightBits - 2) }
        }
        writeSequence(
            colourValues, count: c.luminance ? 2 : c.mixed ? 10 : partitions * (c.scaled ? 4 : opaque ? 6 : 8),
            level: opaque ? c.rgbLevel : c.rgbaLevel,
            start: colourStart, into: &writer)
        var weightWriter = ASTCBitWriter(lo: 0, hi: 0)
        writeSequence(
            gridValues, count: c.dual ? 2 * c.gridCount : c.gridCount, level: c.weightLevel, start: 0,
            into: &weightWriter)
        let reversed = ASTCBits(lo: weightWriter.lo, hi: weightWriter.hi).reversed
        return ASTCBits(lo: writer.lo | reversed.lo, hi: writer.hi | reversed.hi)
    }

    /// Writes `count` scrambled `values` as an integer sequence at `level` from bit `start`.
    func writeSequence(
        _ values: UnsafeMutablePointer<UInt8>, count: Int, level: Int, start: Int, into w: inout ASTCBitWriter
    ) {
        let n = Int(sequenceBits[level])
        let kind = sequenceKinds[level]
        var pos = start
        let mask = (1 << n) - 1
        switch kind {
        case 1:
            for i in 0..<count { w.write(Int(values[i]), n, at: pos); pos += n }
        case 3:
            var i = 0
            while i < count {
                let group = min(5, count - i)
                var key = 0, scale = 1
                for j in 0..<group { key += (Int(values[i + j]) >> n) * scale; scale *= 3 }
                let t = Int(tritPack[key])
                for j in 0..<group {
                    let (width, shift) = j == 0 ? (2, 0) : j == 1 ? (2, 2) : j == 2 ? (1, 4) : j == 3 ? (2, 5) : (1, 7)
                    w.write(Int(values[i + j]) & mask, n, at: pos); pos += n
                    w.write((t >> shift) & ((1 << width) - 1), width, at: pos); pos += width
                }
                i += 5
            }
        default:
            var i = 0
            while i < count {
                let group = min(3, count - i)
                var key = 0, scale = 1
                for j in 0..<group { key += (Int(values[i + j]) >> n) * scale; scale *= 5 }
                let q = Int(quintPack[key])
                for j in 0..<group {
                    let (width, shift) = j == 0 ? (3, 0) : j == 1 ? (2, 3) : (2, 5)
                    w.write(Int(values[i + j]) & mask, n, at: pos); pos += n
                    w.write((q >> shift) & ((1 << width) - 1), width, at: pos); pos += width
                }
                i += 3
            }
        }
    }
}

/// ORs bit fields into a 128-bit block.
struct ASTCBitWriter {
    var lo: UInt64
    var hi: UInt64

    @inline(__always) mutating func write(_ value: Int, _ count: Int, at position: Int) {
        guard count > 0 else { return }
        let v = UInt64(truncatingIfNeeded: value) & ((1 << UInt64(count)) - 1)
        if position >= 64 {
            hi |= v << UInt64(position - 64)
        } else {
            lo |= v << UInt64(position)
            if position + count > 64 { hi |= v >> UInt64(64 - position) }
        }
    }
}
