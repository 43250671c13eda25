import TilePackCore

#if _endian(big)
#error("GeoTIFFWriter writes sample bytes as they lie in memory and assumes a little-endian host")
#endif

/// One IFD entry with its value already in little-endian bytes.
struct IFDEntry {
    var tag: UInt16
    var type: TIFFFieldType
    var count: Int
    var payload: [UInt8]

    init(_ tag: UInt16, shorts: [UInt16]) {
        var b = LittleEndianBytes(capacity: shorts.count * 2)
        for v in shorts { b.append(v) }
        self.init(tag: tag, type: .short, count: shorts.count, payload: b.bytes)
    }

    init(_ tag: UInt16, longs: [UInt32]) {
        var b = LittleEndianBytes(capacity: longs.count * 4)
        for v in longs { b.append(v) }
        self.init(tag: tag, type: .long, count: longs.count, payload: b.bytes)
    }

    init(_ tag: UInt16, long8s: [UInt64]) {
        var b = LittleEndianBytes(capacity: long8s.count * 8)
        for v in long8s { b.append(v) }
        self.init(tag: tag, type: .long8, count: long8s.count, payload: b.bytes)
    }

    init(_ tag: UInt16, doubles: [Double]) {
        var b = LittleEndianBytes(capacity: doubles.count * 8)
        for v in doubles { b.append(v) }
        self.init(tag: tag, type: .double, count: doubles.count, payload: b.bytes)
    }

    /// ASCII with its terminating NUL, as TIFF counts it.
    init(_ tag: UInt16, ascii: String) {
        let bytes = Array(ascii.utf8) + [0]
        self.init(tag: tag, type: .ascii, count: bytes.count, payload: bytes)
    }

    init(tag: UInt16, type: TIFFFieldType, count: Int, payload: [UInt8]) {
        self.tag = tag
        self.type = type
        self.count = count
        self.payload = payload
    }

    /// Bytes the IFD and its out-of-line values take.
    static func serializedSize(_ entries: [IFDEntry], big: Bool) -> Int {
        var size = big ? 8 + 20 * entries.count + 8 : 2 + 12 * entries.count + 4
        let inline = big ? 8 : 4
        for e in entries where e.payload.count > inline {
            size = (size + 7) & ~7
            size += e.payload.count
        }
        return size
    }

    /// The IFD (entries sorted by tag, as TIFF requires) followed by out-of-line values,
    /// for placement at file offset `offset` (which must be even).
    static func serialize(_ entries: [IFDEntry], big: Bool, at offset: UInt64) -> [UInt8] {
        precondition(offset % 2 == 0)
        let sorted = entries.sorted { $0.tag < $1.tag }
        let inline = big ? 8 : 4
        var ifd = LittleEndianBytes()
        var values = LittleEndianBytes()
        let valuesStart = offset + UInt64(big ? 8 + 20 * sorted.count + 8 : 2 + 12 * sorted.count + 4)
        if big { ifd.append(UInt64(sorted.count)) } else { ifd.append(UInt16(sorted.count)) }
        for e in sorted {
            ifd.append(e.tag)
            ifd.append(e.type.rawValue)
            if big { ifd.append(UInt64(e.count)) } else { ifd.append(UInt32(e.count)) }
            if e.payload.count <= inline {
                ifd.append(contentsOf: e.payload)
                for _ in e.payload.count..<inline { ifd.append(UInt8(0)) }
            } else {
                // Align to 8 relative to the file (valuesStart may be only word aligned).
                while (valuesStart + UInt64(values.count)) % 8 != 0 { values.append(UInt8(0)) }
                let at = valuesStart + UInt64(values.count)
                if big { ifd.append(at) } else { ifd.append(UInt32(at)) }
                values.append(contentsOf: e.payload)
            }
        }
        if big { ifd.append(UInt64(0)) } else { ifd.append(UInt32(0)) }  // no next IFD
        ifd.append(contentsOf: values.bytes)
        return ifd.bytes
    }
}
