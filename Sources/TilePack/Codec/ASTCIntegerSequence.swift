import TilePackCore
/// ASTC's bounded integer sequence encoding (BISE) and the quantisation levels it serves.
///
/// A range of `3 · 2ⁿ` packs five values into `5n + 8` bits (the five trits share one 8-bit
/// field split between the values' low bits), `5 · 2ⁿ` packs three values into `3n + 7` bits,
/// and `2ⁿ` is plain bits. Values are numbered in "scrambled" order: `(trit or quint) << n | bits`.
/// The unquantisation tables here map that scrambled number straight to the value the
/// decoder uses (0…255 for colours, 0…64 for weights), computed from the specification's
/// bit-replication formulas (Khronos Data Format Specification, ASTC chapter).
package enum ASTCIntegerSequence {
    /// The 21 ranges, indexed by quantisation level: weights use levels 0…11, colours 4…20.
    package static let ranges: [Int] = [
        2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 256,
    ]
    /// Level of the smallest colour range a valid block may use (range 6).
    package static let minimumColourLevel = 4

    /// 1 (bits only), 3 (trits) or 5 (quints) per level.
    package static let kinds: [UInt8] = ranges.map { $0 % 3 == 0 ? 3 : ($0 % 5 == 0 ? 5 : 1) }
    /// Plain bits per value per level.
    package static let bitCounts: [UInt8] = ranges.map { r in
        let base = r % 3 == 0 ? r / 3 : (r % 5 == 0 ? r / 5 : r)
        return UInt8(base.trailingZeroBitCount)
    }

    /// Bits `count` values take at `level`.
    @inline(__always) package static func bitCount(count: Int, level: Int) -> Int {
        let n = Int(bitCounts[level])
        switch kinds[level] {
        case 3: return n * count + (8 * count + 4) / 5
        case 5: return n * count + (7 * count + 2) / 3
        default: return n * count
        }
    }

    /// Five trits per 8-bit field, five bytes an entry (specification's decoding procedure).
    package static let tritTable: [UInt8] = (0..<256).flatMap { tritsOf(UInt32($0)) }
    /// Three quints per 7-bit field, three bytes an entry.
    package static let quintTable: [UInt8] = (0..<128).flatMap { quintsOf(UInt32($0)) }

    private static func bit(_ v: UInt32, _ i: UInt32) -> UInt32 { (v >> i) & 1 }

    private static func tritsOf(_ t: UInt32) -> [UInt8] {
        var c: UInt32, t4: UInt32, t3: UInt32
        if (t >> 2) & 7 == 7 {
            c = ((t >> 5) & 7) << 2 | (t & 3)
            t4 = 2; t3 = 2
        } else {
            c = t & 0x1F
            if (t >> 5) & 3 == 3 { t4 = 2; t3 = bit(t, 7) } else { t4 = bit(t, 7); t3 = (t >> 5) & 3 }
        }
        var t0: UInt32, t1: UInt32, t2: UInt32
        if c & 3 == 3 {
            t2 = 2; t1 = bit(c, 4); t0 = bit(c, 3) << 1 | (bit(c, 2) & ~bit(c, 3) & 1)
        } else if (c >> 2) & 3 == 3 {
            t2 = 2; t1 = 2; t0 = c & 3
        } else {
            t2 = bit(c, 4); t1 = (c >> 2) & 3; t0 = bit(c, 1) << 1 | (bit(c, 0) & ~bit(c, 1) & 1)
        }
        return [t0, t1, t2, t3, t4].map { UInt8($0) }
    }

    private static func quintsOf(_ q: UInt32) -> [UInt8] {
        var q0: UInt32, q1: UInt32, q2: UInt32
        if (q >> 1) & 3 == 3 && (q >> 5) & 3 == 0 {
            q1 = 4; q0 = 4
            let low = bit(q, 0)
            q2 = low << 2 | ((bit(q, 4) & ~low & 1) << 1) | (bit(q, 3) & ~low & 1)
        } else {
            let c: UInt32
            if (q >> 1) & 3 == 3 {
                q2 = 4
                c = ((q >> 3) & 3) << 3 | ((~(q >> 5)) & 3) << 1 | bit(q, 0)
            } else {
                q2 = (q >> 5) & 3
                c = q & 0x1F
            }
            if c & 7 == 5 { q1 = 4; q0 = (c >> 3) & 3 } else { q1 = (c >> 3) & 3; q0 = c & 7 }
        }
        return [q0, q1, q2].map { UInt8($0) }
    }

    /// Repeats the `n`-bit `v` until it fills `to` bits (the specification's bit replication).
    package static func replicate(_ v: Int, bits n: Int, to: Int) -> Int {
        guard n > 0 else { return 0 }
        var out = 0, have = 0
        while have < to { out = out << n | v; have += n }
        return out >> (have - to)
    }

    /// Colour unquantisation: 256 entries a level (scrambled value → 0…255).
    package static let colourUnquantised: [UInt8] = {
        // (C, B bit pattern over the value's bits b…f, most significant first) per (kind, n).
        let pattern: [String: (Int, String)] = [
            "3,1": (204, "000000000"), "5,1": (113, "000000000"), "3,2": (93, "b000b0bb0"), "5,2": (54, "b0000bb00"),
            "3,3": (44, "cb000cbcb"), "5,3": (26, "cb0000cbc"), "3,4": (22, "dcb000dcb"), "5,4": (13, "dcb0000dc"),
            "3,5": (11, "edcb000ed"), "5,5": (6, "edcb0000e"), "3,6": (5, "fedcb000f"),
        ]
        var table = [UInt8](repeating: 0, count: 21 * 256)
        for level in 0..<21 {
            let kind = Int(kinds[level]), n = Int(bitCounts[level])
            for value in 0..<ranges[level] {
                let out: Int
                if kind == 1 {
                    out = replicate(value, bits: n, to: 8)
                } else if let (c, b) = pattern["\(kind),\(n)"] {
                    out = unquantise(value: value, n: n, c: c, pattern: b, aMask: 0x1FF, topBit: 0x80)
                } else {
                    continue  // trit/quint levels with no plain bits are weight-only ranges
                }
                table[level * 256 + value] = UInt8(out)
            }
        }
        return table
    }()

    /// Weight unquantisation: 32 entries a level (scrambled value → 0…64), levels 0…11.
    package static let weightUnquantised: [UInt8] = {
        let pattern: [String: (Int, String)] = [
            "3,1": (50, "0000000"), "5,1": (28, "0000000"), "3,2": (23, "b000b0b"), "5,2": (13, "b0000b0"),
            "3,3": (11, "cb000cb"),
        ]
        var table = [UInt8](repeating: 0, count: 12 * 32)
        for level in 0..<12 {
            let kind = Int(kinds[level]), n = Int(bitCounts[level])
            for value in 0..<ranges[level] {
                var out: Int
                if kind == 1 {
                    out = replicate(value, bits: n, to: 6)
                } else if n == 0 {
                    out = kind == 3 ? [0, 32, 63][value] : [0, 16, 32, 47, 63][value]
                } else {
                    let (c, b) = pattern["\(kind),\(n)"]!
                    out = unquantise(value: value, n: n, c: c, pattern: b, aMask: 0x7F, topBit: 0x20)
                }
                if out > 32 { out += 1 }
                table[level * 32 + value] = UInt8(out)
            }
        }
        return table
    }()

    /// `T = D·C + B; T ^= A; T = (A & top) | (T >> 2)`, with A the value's lowest bit replicated.
    private static func unquantise(value: Int, n: Int, c: Int, pattern: String, aMask: Int, topBit: Int) -> Int {
        let d = value >> n, m = value & ((1 << n) - 1)
        let a = m & 1 != 0 ? aMask : 0
        var b = 0
        for ch in pattern.utf8 {
            let letter = Int(ch) - Int(UInt8(ascii: "a"))  // b=1 … f=5: bit index in m
            b = b << 1 | (ch == UInt8(ascii: "0") ? 0 : (m >> letter) & 1)
        }
        let t = (d * c + b) ^ a
        return (a & topBit) | (t >> 2)
    }

    /// Colour level for `integerCount` values in `bits` bits: the largest range that fits,
    /// -1 when none does. Indexed `[integerCount / 2 * 128 + bits]` (bits clamped to 0…127).
    package static let colourLevels: [Int8] = {
        var table = [Int8](repeating: -1, count: 10 * 128)
        for pairs in 1..<10 {
            for bits in 0..<128 {
                for level in stride(from: 20, through: 0, by: -1) where bitCount(count: pairs * 2, level: level) <= bits
                {
                    table[pairs * 128 + bits] = Int8(level)
                    break
                }
            }
        }
        return table
    }()
}

/// A 128-bit block as two little-endian halves; bit `i` is bit `i % 64` of half `i / 64`.
package struct ASTCBits {
    package var lo: UInt64
    package var hi: UInt64

    @inline(__always) package init(lo: UInt64, hi: UInt64) { self.lo = lo; self.hi = hi }

    /// `count` (≤ 32) bits from `position`; bits past 127 read as zero.
    @inline(__always) package func read(_ position: Int, _ count: Int) -> UInt32 {
        let v: UInt64
        if position >= 64 {
            v = hi >> UInt64(position - 64)
        } else if position == 0 {
            v = lo
        } else {
            v = (lo >> UInt64(position)) | (hi << UInt64(64 - position))
        }
        return UInt32(truncatingIfNeeded: v & ((1 << UInt64(count)) &- 1))
    }

    /// The block with its bit order reversed (bit 127 becomes bit 0): weights are stored
    /// from the top down.
    @inline(__always) package var reversed: ASTCBits {
        ASTCBits(lo: Self.reverse(hi), hi: Self.reverse(lo))
    }

    @inline(__always) static func reverse(_ x: UInt64) -> UInt64 {
        var v = x
        v = ((v >> 1) & 0x5555_5555_5555_5555) | ((v & 0x5555_5555_5555_5555) << 1)
        v = ((v >> 2) & 0x3333_3333_3333_3333) | ((v & 0x3333_3333_3333_3333) << 2)
        v = ((v >> 4) & 0x0F0F_0F0F_0F0F_0F0F) | ((v & 0x0F0F_0F0F_0F0F_0F0F) << 4)
        return v.byteSwapped
    }
}

extension ASTCIntegerSequence {
    /// Trit-field bits a partial group of `group` values owns (2, 2, 1, 2, 1 after each value).
    @inline(__always) static func tritFieldMask(_ group: Int) -> UInt32 {
        group >= 5 ? 0xFF : group == 4 ? 0x7F : group == 3 ? 0x1F : group == 2 ? 0x0F : 0x03
    }

    /// Quint-field bits a partial group of `group` values owns (3, 2, 2 after each value).
    @inline(__always) static func quintFieldMask(_ group: Int) -> UInt32 {
        group >= 3 ? 0x7F : group == 2 ? 0x1F : 0x07
    }
}

extension ASTCIntegerSequence {
    /// Decodes `count` values at `level` from `x` (the sequence's first bit is bit 0) and
    /// writes each value's entry in `table` (the level's unquantisation row, widened to 16
    /// bits so a weight grid's neighbours load as 16-bit lanes), so the decoder gets
    /// unquantised values in one pass. `out` needs room for 4 values past
    /// `count`: whole trit and quint groups are written (the extra values are table entries
    /// too, never read). A partial last group leaves its missing trit or quint bits zero, as
    /// the specification says.
    /// Cost: a switch on the level, then per value a shift, a mask and a table load (per
    /// trit or quint group one more table row), every shift a constant.
    @inline(__always)
    package static func decode(
        _ x: UInt128, count: Int, level: Int, table: UnsafePointer<UInt16>, into out: UnsafeMutablePointer<UInt16>,
        trits: UnsafePointer<UInt8>, quints: UnsafePointer<UInt8>
    ) {
        switch level {
        case 0: plainValues(x, count: count, n: ASTCBits1.self, table: table, into: out)
        case 1: tritValues(x, count: count, n: ASTCBits0.self, table: table, into: out, trits: trits)
        case 2: plainValues(x, count: count, n: ASTCBits2.self, table: table, into: out)
        case 3: quintValues(x, count: count, n: ASTCBits0.self, table: table, into: out, quints: quints)
        case 4: tritValues(x, count: count, n: ASTCBits1.self, table: table, into: out, trits: trits)
        case 5: plainValues(x, count: count, n: ASTCBits3.self, table: table, into: out)
        case 6: quintValues(x, count: count, n: ASTCBits1.self, table: table, into: out, quints: quints)
        case 7: tritValues(x, count: count, n: ASTCBits2.self, table: table, into: out, trits: trits)
        case 8: plainValues(x, count: count, n: ASTCBits4.self, table: table, into: out)
        case 9: quintValues(x, count: count, n: ASTCBits2.self, table: table, into: out, quints: quints)
        case 10: tritValues(x, count: count, n: ASTCBits3.self, table: table, into: out, trits: trits)
        case 11: plainValues(x, count: count, n: ASTCBits5.self, table: table, into: out)
        case 12: quintValues(x, count: count, n: ASTCBits3.self, table: table, into: out, quints: quints)
        case 13: tritValues(x, count: count, n: ASTCBits4.self, table: table, into: out, trits: trits)
        case 14: plainValues(x, count: count, n: ASTCBits6.self, table: table, into: out)
        case 15: quintValues(x, count: count, n: ASTCBits4.self, table: table, into: out, quints: quints)
        case 16: tritValues(x, count: count, n: ASTCBits5.self, table: table, into: out, trits: trits)
        case 17: plainValues(x, count: count, n: ASTCBits7.self, table: table, into: out)
        case 18: quintValues(x, count: count, n: ASTCBits5.self, table: table, into: out, quints: quints)
        case 19: tritValues(x, count: count, n: ASTCBits6.self, table: table, into: out, trits: trits)
        default: plainValues(x, count: count, n: ASTCBits8.self, table: table, into: out)
        }
    }

    @inline(__always)
    static func plainValues<Width: ASTCValueBits>(
        _ x: UInt128, count: Int, n _: Width.Type, table: UnsafePointer<UInt16>, into out: UnsafeMutablePointer<UInt16>
    ) {
        let n = Width.n, mask = (UInt64(1) << UInt64(n)) &- 1
        var x = x
        for i in 0..<count {
            out[i] = table[Int(UInt64(truncatingIfNeeded: x) & mask)]
            x &>>= UInt128(n)
        }
    }

    /// Groups of five: 5n + 8 ≤ 38 bits, so one 64-bit word holds a group.
    @inline(__always)
    static func tritValues<Width: ASTCValueBits>(
        _ x: UInt128, count: Int, n _: Width.Type, table: UnsafePointer<UInt16>, into out: UnsafeMutablePointer<UInt16>,
        trits: UnsafePointer<UInt8>
    ) {
        let n = Width.n, mask = (UInt64(1) << UInt64(n)) &- 1
        var x = x, i = 0
        while i < count {
            let w = UInt64(truncatingIfNeeded: x)
            var t =
                (w >> UInt64(n)) & 3 | ((w >> UInt64(2 * n + 2)) & 3) << 2 | ((w >> UInt64(3 * n + 4)) & 1) << 4
                | ((w >> UInt64(4 * n + 5)) & 3) << 5 | ((w >> UInt64(5 * n + 7)) & 1) << 7
            if count - i < 5 { t &= UInt64(tritFieldMask(count - i)) }
            let row = trits + Int(t) * 5
            out[i] = table[Int(w & mask) | Int(row[0]) << n]
            out[i + 1] = table[Int((w >> UInt64(n + 2)) & mask) | Int(row[1]) << n]
            out[i + 2] = table[Int((w >> UInt64(2 * n + 4)) & mask) | Int(row[2]) << n]
            out[i + 3] = table[Int((w >> UInt64(3 * n + 5)) & mask) | Int(row[3]) << n]
            out[i + 4] = table[Int((w >> UInt64(4 * n + 7)) & mask) | Int(row[4]) << n]
            i += 5
            x &>>= UInt128(5 * n + 8)
        }
    }

    /// Groups of three: 3n + 7 ≤ 22 bits.
    @inline(__always)
    static func quintValues<Width: ASTCValueBits>(
        _ x: UInt128, count: Int, n _: Width.Type, table: UnsafePointer<UInt16>, into out: UnsafeMutablePointer<UInt16>,
        quints: UnsafePointer<UInt8>
    ) {
        let n = Width.n, mask = (UInt64(1) << UInt64(n)) &- 1
        var x = x, i = 0
        while i < count {
            let w = UInt64(truncatingIfNeeded: x)
            var q = (w >> UInt64(n)) & 7 | ((w >> UInt64(2 * n + 3)) & 3) << 3 | ((w >> UInt64(3 * n + 5)) & 3) << 5
            if count - i < 3 { q &= UInt64(quintFieldMask(count - i)) }
            let row = quints + Int(q) * 3
            out[i] = table[Int(w & mask) | Int(row[0]) << n]
            out[i + 1] = table[Int((w >> UInt64(n + 3)) & mask) | Int(row[1]) << n]
            out[i + 2] = table[Int((w >> UInt64(2 * n + 5)) & mask) | Int(row[2]) << n]
            i += 3
            x &>>= UInt128(3 * n + 7)
        }
    }
}

/// Plain bits a value as a type, so each integer-sequence loop is specialised with its
/// shifts as constants (generic specialisation, which -O always does, unlike inlining).
package protocol ASTCValueBits { static var n: Int { get } }
package enum ASTCBits0: ASTCValueBits { package static var n: Int { 0 } }
package enum ASTCBits1: ASTCValueBits { package static var n: Int { 1 } }
package enum ASTCBits2: ASTCValueBits { package static var n: Int { 2 } }
package enum ASTCBits3: ASTCValueBits { package static var n: Int { 3 } }
package enum ASTCBits4: ASTCValueBits { package static var n: Int { 4 } }
package enum ASTCBits5: ASTCValueBits { package static var n: Int { 5 } }
package enum ASTCBits6: ASTCValueBits { package static var n: Int { 6 } }
package enum ASTCBits7: ASTCValueBits { package static var n: Int { 7 } }
package enum ASTCBits8: ASTCValueBits { package static var n: Int { 8 } }

extension ASTCBits {
    /// The block as one 128-bit integer.
    @inline(__always) package var wide: UInt128 { UInt128(hi) << 64 | UInt128(lo) }
}
