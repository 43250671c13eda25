import TilePackCore
/// The byte order a TIFF declares in its first two bytes: "II" (Intel, little-endian) or
/// "MM" (Motorola, big-endian). Every multi-byte read names it explicitly, as swift-nio's
/// `ByteBuffer` does with `endianness:`, so no value is ever read in the host's order by accident.
public enum TIFFByteOrder: String, Sendable, Equatable {
    case little
    case big
}

/// Reads fixed-width integers and floats from a byte array at explicit offsets in an explicit
/// byte order. Bounds are the caller's duty (checked once per structure, not per read), so
/// every read here is a precondition-checked array access.
struct TIFFByteReader {
    let bytes: [UInt8]
    let order: TIFFByteOrder

    init(_ bytes: [UInt8], order: TIFFByteOrder) {
        self.bytes = bytes
        self.order = order
    }

    var count: Int { bytes.count }

    @inline(__always)
    func uint8(at i: Int) -> UInt8 { bytes[i] }

    @inline(__always)
    func uint16(at i: Int) -> UInt16 {
        let a = UInt16(bytes[i]), b = UInt16(bytes[i + 1])
        return order == .little ? a | b << 8 : a << 8 | b
    }

    @inline(__always)
    func uint32(at i: Int) -> UInt32 {
        var v: UInt32 = 0
        if order == .little {
            for k in (0..<4).reversed() { v = v << 8 | UInt32(bytes[i + k]) }
        } else {
            for k in 0..<4 { v = v << 8 | UInt32(bytes[i + k]) }
        }
        return v
    }

    @inline(__always)
    func uint64(at i: Int) -> UInt64 {
        var v: UInt64 = 0
        if order == .little {
            for k in (0..<8).reversed() { v = v << 8 | UInt64(bytes[i + k]) }
        } else {
            for k in 0..<8 { v = v << 8 | UInt64(bytes[i + k]) }
        }
        return v
    }

    @inline(__always)
    func float32(at i: Int) -> Float { Float(bitPattern: uint32(at: i)) }

    @inline(__always)
    func float64(at i: Int) -> Double { Double(bitPattern: uint64(at: i)) }
}
