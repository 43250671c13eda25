/// Unsigned LEB128 varints as PMTiles directories store them (7 bits a byte, low first).
enum PMTilesVarint {
    /// Appends `value`.
    /// - Cost: at most 10 bytes.
    static func append(_ value: UInt64, to out: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    /// Reads a varint at `position` in `bytes`, advancing it; nil when the bytes end first or
    /// the value overflows 64 bits (an eleventh byte, or high bits in the tenth).
    /// - Cost: at most 10 bytes read.
    static func read(_ bytes: UnsafeBufferPointer<UInt8>, at position: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while position < bytes.count {
            let byte = bytes[position]
            position += 1
            if shift == 63 && byte > 1 { return nil }
            value |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 { return value }
            shift += 7
            if shift > 63 { return nil }
        }
        return nil
    }
}
