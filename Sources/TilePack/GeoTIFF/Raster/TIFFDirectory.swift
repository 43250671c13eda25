import TilePackCore
/// What the first bytes of a TIFF say: byte order, classic or BigTIFF, where IFD 0 is.
struct TIFFHeader: Sendable, Equatable {
    var order: TIFFByteOrder
    var isBigTIFF: Bool
    var firstIFDOffset: UInt64
}

/// One 12-byte (classic) or 20-byte (BigTIFF) IFD entry. Values that fit in the entry's
/// value field are kept inline; larger ones are read from `valueOffset` on demand, so a
/// directory with a million tile offsets costs nothing until someone asks for them.
struct TIFFDirectoryEntry: Sendable {
    var tag: UInt16
    var type: TIFFFieldType
    var count: UInt64
    /// The value bytes when they fit in the entry (nil otherwise).
    var inline: [UInt8]?
    /// Where the value bytes are when they do not fit.
    var valueOffset: UInt64

    var byteCount: UInt64 {
        count.multipliedReportingOverflow(by: UInt64(type.size)).overflow ? .max : count * UInt64(type.size)
    }
}

/// One image file directory: its entries by tag and the offset of the next one.
struct TIFFDirectory: Sendable {
    var offset: UInt64
    var entries: [UInt16: TIFFDirectoryEntry]
    var nextOffset: UInt64

    subscript(tag: UInt16) -> TIFFDirectoryEntry? { entries[tag] }
}

/// Reads TIFF structure (header, IFDs, tag values) through a file handle, in the file's byte order.
struct TIFFStructureReader: Sendable {
    let handle: TIFFFileHandle
    let order: TIFFByteOrder
    let isBigTIFF: Bool

    /// Upper bound on IFDs followed in one chain; real pyramids have a few dozen.
    static let maxDirectories = 4096
    /// Upper bound on entries in one IFD; TIFF defines a few hundred tags.
    static let maxEntries = 65_535

    var path: String { handle.path }

    /// Parses the 8-byte (classic) or 16-byte (BigTIFF) header.
    static func readHeader(_ handle: TIFFFileHandle) throws(TIFFError) -> TIFFHeader {
        guard handle.size >= 8 else {
            throw TIFFError(
                path: handle.path, code: .truncated,
                detail: "file is \(handle.size) bytes, too short for a TIFF header")
        }
        let head = try handle.read(offset: 0, count: Int(min(16, handle.size)), what: "header")
        let order: TIFFByteOrder
        switch (head[0], head[1]) {
        case (0x49, 0x49): order = .little
        case (0x4D, 0x4D): order = .big
        default:
            throw TIFFError(path: handle.path, code: .badHeader, detail: "not a TIFF file (no II/MM byte-order mark)")
        }
        let r = TIFFByteReader(head, order: order)
        switch r.uint16(at: 2) {
        case 42:
            return TIFFHeader(order: order, isBigTIFF: false, firstIFDOffset: UInt64(r.uint32(at: 4)))
        case 43:
            guard head.count >= 16 else {
                throw TIFFError(path: handle.path, code: .truncated, detail: "file too short for a BigTIFF header")
            }
            guard r.uint16(at: 4) == 8, r.uint16(at: 6) == 0 else {
                throw TIFFError(
                    path: handle.path, code: .badHeader,
                    detail: "BigTIFF header declares offset size \(r.uint16(at: 4)), expected 8")
            }
            return TIFFHeader(order: order, isBigTIFF: true, firstIFDOffset: r.uint64(at: 8))
        case let magic:
            throw TIFFError(path: handle.path, code: .badHeader, detail: "not a TIFF file (magic number \(magic))")
        }
    }

    /// Follows the IFD chain from `first`, refusing loops and absurd chains.
    func readDirectories(first: UInt64) throws(TIFFError) -> [TIFFDirectory] {
        var result: [TIFFDirectory] = []
        var seen: Set<UInt64> = []
        var offset = first
        while offset != 0 {
            guard seen.insert(offset).inserted else {
                throw TIFFError(
                    path: path, code: .ifdLoop,
                    detail: "IFD chain loops back to offset \(offset) after \(result.count) directories")
            }
            guard result.count < Self.maxDirectories else {
                throw TIFFError(
                    path: path, code: .absurdDimensions,
                    detail: "more than \(Self.maxDirectories) IFDs in the chain")
            }
            let dir = try readDirectory(at: offset, index: result.count)
            result.append(dir)
            offset = dir.nextOffset
        }
        guard !result.isEmpty else {
            throw TIFFError(path: path, code: .badHeader, detail: "header points to no IFD (offset 0)")
        }
        return result
    }

    /// Parses one IFD: its entry count, entries and next-IFD offset.
    func readDirectory(at offset: UInt64, index: Int) throws(TIFFError) -> TIFFDirectory {
        let countSize = isBigTIFF ? 8 : 2
        let entrySize = isBigTIFF ? 20 : 12
        let countBytes = try handle.read(offset: offset, count: countSize, what: "IFD \(index)")
        let cr = TIFFByteReader(countBytes, order: order)
        let n64 = isBigTIFF ? cr.uint64(at: 0) : UInt64(cr.uint16(at: 0))
        guard n64 <= UInt64(Self.maxEntries) else {
            throw TIFFError(path: path, code: .absurdDimensions, detail: "IFD \(index) claims \(n64) entries")
        }
        let n = Int(n64)
        let bodySize = n * entrySize + (isBigTIFF ? 8 : 4)
        let body = try handle.read(
            offset: offset + UInt64(countSize), count: bodySize, what: "IFD \(index) (\(n) entries)")
        let r = TIFFByteReader(body, order: order)
        var entries: [UInt16: TIFFDirectoryEntry] = [:]
        entries.reserveCapacity(n)
        let inlineSize = isBigTIFF ? 8 : 4
        for i in 0..<n {
            let base = i * entrySize
            let tag = r.uint16(at: base)
            // Unknown field types are skipped, as libtiff does: their size is unknowable.
            guard let type = TIFFFieldType(rawValue: r.uint16(at: base + 2)) else { continue }
            let count = isBigTIFF ? r.uint64(at: base + 4) : UInt64(r.uint32(at: base + 4))
            let valueField = base + (isBigTIFF ? 12 : 8)
            var entry = TIFFDirectoryEntry(tag: tag, type: type, count: count, inline: nil, valueOffset: 0)
            if entry.byteCount <= UInt64(inlineSize) {
                entry.inline = Array(body[valueField..<valueField + Int(entry.byteCount)])
            } else {
                entry.valueOffset = isBigTIFF ? r.uint64(at: valueField) : UInt64(r.uint32(at: valueField))
            }
            // The first occurrence of a duplicated tag wins, as in libtiff.
            if entries[tag] == nil { entries[tag] = entry }
        }
        let next = isBigTIFF ? r.uint64(at: n * entrySize) : UInt64(r.uint32(at: n * entrySize))
        return TIFFDirectory(offset: offset, entries: entries, nextOffset: next)
    }

    /// The raw value bytes of an entry (inline or read from the file).
    func valueBytes(_ entry: TIFFDirectoryEntry) throws(TIFFError) -> [UInt8] {
        if let inline = entry.inline { return inline }
        let name = "tag \(entry.tag) (\(entry.count) values)"
        // Before the file-size check: a large file must not let one tag's claim drive a
        // large allocation either (its values are widened to 8 bytes each by ``unsigned``).
        guard entry.count <= UInt64(TIFFLimits.maxTagValues) else {
            throw TIFFError(
                path: path, code: .absurdDimensions,
                detail: "\(name) holds more than the \(TIFFLimits.maxTagValues) values tilepack reads from one tag")
        }
        // byteCount saturates at UInt64.max on overflow, so this one comparison also refuses
        // counts whose byte size does not fit 64 bits; the file size always fits an Int.
        guard entry.byteCount <= handle.size, let byteCount = Int(exactly: entry.byteCount) else {
            throw TIFFError(
                path: path, code: .absurdDimensions,
                detail: "\(name) is larger than the whole file")
        }
        return try handle.read(offset: entry.valueOffset, count: byteCount, what: name)
    }

    /// The entry's value count as an `Int`, proven to fit in `bytes` (what ``valueBytes(_:)``
    /// returned for it), so the typed reads that follow stay inside the array.
    /// - Throws: `.absurdDimensions` for a count the bytes cannot hold (only a count that
    ///   bypassed ``valueBytes(_:)``'s size check could get here, but the reads must not trust that).
    func valueCount(_ entry: TIFFDirectoryEntry, holding bytes: [UInt8]) throws(TIFFError) -> Int {
        guard let n = Int(exactly: entry.count),
            case let (needed, overflow) = n.multipliedReportingOverflow(by: entry.type.size),
            !overflow, needed <= bytes.count
        else {
            throw TIFFError(
                path: path, code: .absurdDimensions,
                detail: "tag \(entry.tag) claims \(entry.count) values, more than its \(bytes.count) bytes hold")
        }
        return n
    }

    /// An integer-typed tag's values widened to UInt64 (nil when absent).
    func unsigned(_ dir: TIFFDirectory, _ tag: UInt16) throws(TIFFError) -> [UInt64]? {
        guard let entry = dir[tag] else { return nil }
        let bytes = try valueBytes(entry)
        let r = TIFFByteReader(bytes, order: order)
        let n = try valueCount(entry, holding: bytes)
        switch entry.type {
        case .byte, .undefined, .ascii: return (0..<n).map { UInt64(r.uint8(at: $0)) }
        case .sbyte: return (0..<n).map { UInt64(bitPattern: Int64(Int8(bitPattern: r.uint8(at: $0)))) }
        case .short: return (0..<n).map { UInt64(r.uint16(at: $0 * 2)) }
        case .sshort: return (0..<n).map { UInt64(bitPattern: Int64(Int16(bitPattern: r.uint16(at: $0 * 2)))) }
        case .long, .ifd: return (0..<n).map { UInt64(r.uint32(at: $0 * 4)) }
        case .slong: return (0..<n).map { UInt64(bitPattern: Int64(Int32(bitPattern: r.uint32(at: $0 * 4)))) }
        case .long8, .ifd8, .slong8: return (0..<n).map { r.uint64(at: $0 * 8) }
        case .rational, .srational, .float, .double:
            throw TIFFError(
                path: path, code: .badTag,
                detail: "tag \(tag) has non-integer type \(entry.type) where integers are required")
        }
    }

    /// The first value of an integer tag, or `default` when absent.
    func scalar(_ dir: TIFFDirectory, _ tag: UInt16, default value: UInt64? = nil) throws(TIFFError) -> UInt64? {
        guard let values = try unsigned(dir, tag) else { return value }
        guard let first = values.first else {
            throw TIFFError(path: path, code: .badTag, detail: "tag \(tag) has no values")
        }
        return first
    }

    /// The first value of an integer tag, or `fallback` when absent: the non-optional form
    /// for tags the TIFF spec gives a default, so callers need no force unwrap.
    func scalar(_ dir: TIFFDirectory, _ tag: UInt16, or fallback: UInt64) throws(TIFFError) -> UInt64 {
        try scalar(dir, tag) ?? fallback
    }

    /// A numeric tag's values as doubles (nil when absent).
    func doubles(_ dir: TIFFDirectory, _ tag: UInt16) throws(TIFFError) -> [Double]? {
        guard let entry = dir[tag] else { return nil }
        switch entry.type {
        case .double:
            let bytes = try valueBytes(entry)
            let n = try valueCount(entry, holding: bytes)
            let r = TIFFByteReader(bytes, order: order)
            return (0..<n).map { r.float64(at: $0 * 8) }
        case .float:
            let bytes = try valueBytes(entry)
            let n = try valueCount(entry, holding: bytes)
            let r = TIFFByteReader(bytes, order: order)
            return (0..<n).map { Double(r.float32(at: $0 * 4)) }
        case .rational, .srational:
            let bytes = try valueBytes(entry)
            let n = try valueCount(entry, holding: bytes)
            let r = TIFFByteReader(bytes, order: order)
            return (0..<n).map { i in
                let num = r.uint32(at: i * 8), den = r.uint32(at: i * 8 + 4)
                if entry.type == .srational {
                    return Double(Int32(bitPattern: num)) / Double(Int32(bitPattern: den))
                }
                return Double(num) / Double(den)
            }
        case .sbyte, .sshort, .slong, .slong8:
            return try unsigned(dir, tag)?.map { Double(Int64(bitPattern: $0)) }
        default:
            return try unsigned(dir, tag)?.map { Double($0) }
        }
    }

    /// An ASCII tag's text up to its first NUL (nil when absent).
    /// - Throws: `.absurdDimensions` for text longer than ``TIFFLimits/maxTextBytes``, before reading it.
    func ascii(_ dir: TIFFDirectory, _ tag: UInt16) throws(TIFFError) -> String? {
        guard let entry = dir[tag] else { return nil }
        var bytes = try textBytes(entry)
        if let nul = bytes.firstIndex(of: 0) { bytes.removeSubrange(nul...) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A text-like tag's raw bytes, refused unread above ``TIFFLimits/maxTextBytes``.
    func textBytes(_ entry: TIFFDirectoryEntry) throws(TIFFError) -> [UInt8] {
        guard entry.byteCount <= UInt64(TIFFLimits.maxTextBytes) else {
            throw TIFFError(
                path: path, code: .absurdDimensions,
                detail:
                    """
                    tag \(entry.tag) holds \(entry.byteCount) bytes of text, more than the \
                    \(TIFFLimits.maxTextBytes) tilepack reads
                    """
            )
        }
        return try valueBytes(entry)
    }
}
