import Foundation
import TilePackCore
import TilePackGeoTIFF

/// Builds small TIFF files byte by byte for reader tests: any byte order, classic or BigTIFF,
/// strips or tiles, planar 1 or 2, each supported compression and predictor, plus extra tags.
/// Independent of the reader (its own encoders), so the tests compare two implementations.
package struct CraftedTIFF {
    package enum Value {
        case shorts([UInt16])
        case longs([UInt32])
        case long8s([UInt64])
        case doubles([Double])
        case ascii(String)
        case raw(type: UInt16, count: UInt64, bytes: [UInt8])
    }

    package var order: TIFFByteOrder = .little
    package var bigTIFF = false
    package var width = 8
    package var height = 6
    package var bands = 1
    package var bits = 8
    package var sampleFormat = 1
    package var compression: UInt16 = 1
    package var predictor = 1
    package var planar = 1
    package var photometric = 1
    package var tile: (width: Int, height: Int)?
    package var rowsPerStrip: Int?
    package var extraTags: [UInt16: Value] = [:]
    /// Overrides of encoded blocks (after compression), by block index.
    package var blockOverride: [Int: [UInt8]] = [:]
    /// Added to every offset written, for a file whose body (all but the header) will be
    /// appended after `baseOffset + header size` bytes of another: see ``chained(_:overview:)``.
    package var baseOffset = 0

    package init() {}

    /// Pixel-interleaved little-endian samples, `bits/8` bytes each.
    package func makeSamples(seed: Int = 1) -> [UInt8] {
        let n = width * height * bands * bits / 8
        var state = UInt32(truncatingIfNeeded: seed &* 2_654_435_761 &+ 12345)
        var out = [UInt8](repeating: 0, count: n)
        for i in 0..<n {
            // Smooth-ish data with noise so predictors and LZW have something to chew on.
            state = state &* 1_664_525 &+ 1_013_904_223
            out[i] = UInt8(truncatingIfNeeded: (i / 3) &+ Int(state >> 29))
        }
        if sampleFormat == 3 && (bits == 32 || bits == 64) {
            // Valid floats: overwrite with real values.
            let bw = bits / 8
            for s in 0..<(n / bw) {
                let v = Double(s % 97) * 0.25 - 7.5
                if bw == 4 {
                    withUnsafeBytes(of: Float(v).bitPattern.littleEndian) {
                        out.replaceSubrange(s * 4..<s * 4 + 4, with: $0)
                    }
                } else {
                    withUnsafeBytes(of: v.bitPattern.littleEndian) { out.replaceSubrange(s * 8..<s * 8 + 8, with: $0) }
                }
            }
        }
        return out
    }

    /// The file bytes for `samples`.
    package func build(_ samples: [UInt8]) throws -> [UInt8] {
        let bw = bits / 8
        let spb = planar == 2 ? 1 : bands
        let planes = planar == 2 ? bands : 1
        let (bwid, bhgt) = tile ?? (width, rowsPerStrip ?? height)
        let across = (width + bwid - 1) / bwid, down = (height + bhgt - 1) / bhgt
        var blocks: [[UInt8]] = []
        for plane in 0..<planes {
            for by in 0..<down {
                for bx in 0..<across {
                    let rows = tile != nil ? bhgt : min(bhgt, height - by * bhgt)
                    var block = [UInt8](repeating: 0, count: bwid * rows * spb * bw)
                    for r in 0..<rows {
                        let y = by * bhgt + r
                        guard y < height else { continue }
                        for c in 0..<bwid {
                            let x = bx * bwid + c
                            guard x < width else { continue }
                            for s in 0..<spb {
                                let band = planar == 2 ? plane : s
                                let src = ((y * width + x) * bands + band) * bw
                                let dst = ((r * bwid + c) * spb + s) * bw
                                for k in 0..<bw { block[dst + k] = samples[src + k] }
                            }
                        }
                    }
                    block = encodePredictor(block, rows: rows, rowSamples: bwid * spb, stride: spb, bw: bw)
                    blocks.append(try compress(block))
                }
            }
        }
        for (i, b) in blockOverride { blocks[i] = b }

        var tags: [UInt16: Value] = [
            256: .longs([UInt32(width)]), 257: .longs([UInt32(height)]),
            258: .shorts(Array(repeating: UInt16(bits), count: bands)),
            259: .shorts([compression]), 262: .shorts([UInt16(photometric)]),
            277: .shorts([UInt16(bands)]), 284: .shorts([UInt16(planar)]),
            339: .shorts(Array(repeating: UInt16(sampleFormat), count: bands)),
        ]
        if predictor != 1 { tags[317] = .shorts([UInt16(predictor)]) }
        if let tile {
            tags[322] = .longs([UInt32(tile.width)]); tags[323] = .longs([UInt32(tile.height)])
        } else {
            tags[278] = .longs([UInt32(bhgt)])
        }
        for (k, v) in extraTags { tags[k] = v }

        var file = [UInt8]()
        func bytes<T: FixedWidthInteger>(_ v: T) -> [UInt8] {
            withUnsafeBytes(of: order == .little ? v.littleEndian : v.bigEndian) { Array($0) }
        }
        file += order == .little ? [0x49, 0x49] : [0x4D, 0x4D]
        if bigTIFF {
            file += bytes(UInt16(43)) + bytes(UInt16(8)) + bytes(UInt16(0)) + bytes(UInt64(0))
        } else {
            file += bytes(UInt16(42)) + bytes(UInt32(0))
        }
        var offsets: [UInt64] = [], counts: [UInt64] = []
        for b in blocks {
            offsets.append(UInt64(baseOffset + file.count)); counts.append(UInt64(b.count))
            file += b
            if file.count % 2 == 1 { file.append(0) }
        }
        let offTag: UInt16 = tile != nil ? 324 : 273, cntTag: UInt16 = tile != nil ? 325 : 279
        if tags[offTag] == nil { tags[offTag] = bigTIFF ? .long8s(offsets) : .longs(offsets.map { UInt32($0) }) }
        if tags[cntTag] == nil { tags[cntTag] = bigTIFF ? .long8s(counts) : .longs(counts.map { UInt32($0) }) }

        // IFD at the end, out-of-line values after it.
        let ifdOffset = baseOffset + file.count
        let sorted = tags.keys.sorted()
        let entrySize = bigTIFF ? 20 : 12, inlineSize = bigTIFF ? 8 : 4
        var extra = [UInt8]()
        let extraBase = ifdOffset + (bigTIFF ? 8 : 2) + sorted.count * entrySize + (bigTIFF ? 8 : 4)
        var ifd = [UInt8]()
        ifd += bigTIFF ? bytes(UInt64(sorted.count)) : bytes(UInt16(sorted.count))
        for tag in sorted {
            let (type, count, data): (UInt16, UInt64, [UInt8]) =
                switch tags[tag]! {
                case .shorts(let v): (3, UInt64(v.count), v.flatMap { bytes($0) })
                case .longs(let v): (4, UInt64(v.count), v.flatMap { bytes($0) })
                case .long8s(let v): (16, UInt64(v.count), v.flatMap { bytes($0) })
                case .doubles(let v): (12, UInt64(v.count), v.flatMap { bytes($0.bitPattern) })
                case .ascii(let s): (2, UInt64(s.utf8.count + 1), Array(s.utf8) + [0])
                case .raw(let t, let c, let b): (t, c, b)
                }
            ifd += bytes(tag) + bytes(type)
            ifd += bigTIFF ? bytes(count) : bytes(UInt32(truncatingIfNeeded: count))
            if data.count <= inlineSize {
                ifd += data + [UInt8](repeating: 0, count: inlineSize - data.count)
            } else {
                let at = extraBase + extra.count
                ifd += bigTIFF ? bytes(UInt64(at)) : bytes(UInt32(at))
                extra += data
                if extra.count % 2 == 1 { extra.append(0) }
            }
        }
        ifd += bigTIFF ? bytes(UInt64(0)) : bytes(UInt32(0))
        file += ifd + extra
        // Patch the first-IFD pointer.
        let ptr = bigTIFF ? bytes(UInt64(ifdOffset)) : bytes(UInt32(ifdOffset))
        file.replaceSubrange((bigTIFF ? 8 : 4)..<(bigTIFF ? 16 : 8), with: ptr)
        return file
    }

    /// `main` followed by `overview` as its second IFD (a two-image pyramid): the overview is
    /// built with its offsets shifted past the main file, its body appended, and the main
    /// IFD's next-IFD field pointed at it. Both must share byte order and TIFF flavour.
    package static func chained(_ main: CraftedTIFF, overview: CraftedTIFF) throws -> [UInt8] {
        precondition(main.order == overview.order && main.bigTIFF == overview.bigTIFF)
        let big = main.bigTIFF, header = big ? 16 : 8
        let first = try main.build(main.makeSamples())
        var ov = overview
        ov.baseOffset = first.count - header
        let second = try ov.build(ov.makeSamples(seed: 2))
        func uint(_ b: [UInt8], _ at: Int, _ width: Int) -> Int {
            let bytes = b[at..<at + width]
            return (main.order == .little ? bytes.reversed() : Array(bytes)).reduce(0) { $0 << 8 | Int($1) }
        }
        let mainIFD = uint(first, big ? 8 : 4, big ? 8 : 4)
        let entries = uint(first, mainIFD, big ? 8 : 2)
        let nextField = mainIFD + (big ? 8 : 2) + entries * (big ? 20 : 12)
        var out = first
        // The overview's header already holds its IFD's absolute offset, in the file's order.
        out.replaceSubrange(nextField..<nextField + (big ? 8 : 4), with: second[(big ? 8 : 4)..<header])
        return out + second[header...]
    }

    private func encodePredictor(_ block: [UInt8], rows: Int, rowSamples: Int, stride: Int, bw: Int) -> [UInt8] {
        var b = block
        if predictor == 3 {
            let rowBytes = rowSamples * bw
            for r in 0..<rows {
                let base = r * rowBytes
                var tmp = [UInt8](repeating: 0, count: rowBytes)
                for s in 0..<rowSamples {
                    for k in 0..<bw {  // byte plane k = k-th most significant byte
                        tmp[k * rowSamples + s] = block[base + s * bw + (bw - 1 - k)]
                    }
                }
                var i = rowBytes - 1
                while i >= stride { tmp[i] = tmp[i] &- tmp[i - stride]; i -= 1 }
                b.replaceSubrange(base..<base + rowBytes, with: tmp)
            }
            return b  // floating-point predictor output has no byte order
        }
        if predictor == 2 {
            func value(_ i: Int) -> UInt64 {
                (0..<bw).reduce(UInt64(0)) { $0 | UInt64(block[i * bw + $1]) << (8 * UInt64($1)) }
            }
            for r in 0..<rows {
                for s in stride..<rowSamples {
                    let i = r * rowSamples + s
                    let d = value(i) &- value(i - stride)
                    for k in 0..<bw { b[i * bw + k] = UInt8(truncatingIfNeeded: d >> (8 * UInt64(k))) }
                }
            }
        }
        if order == .big && bw > 1 {
            for i in Swift.stride(from: 0, to: b.count, by: bw) { b[i..<i + bw].reverse() }
        }
        return b
    }

    private func compress(_ block: [UInt8]) throws -> [UInt8] {
        switch compression {
        case 1: block
        case 8, 32946: try Zlib.deflate(block)
        case 32773: Self.packBits(block)
        case 5: Self.lzw(block)
        default: block
        }
    }

    /// PackBits with runs for repeats and literals otherwise.
    package static func packBits(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](), i = 0
        while i < data.count {
            var run = 1
            while i + run < data.count, data[i + run] == data[i], run < 128 { run += 1 }
            if run >= 2 {
                out += [UInt8(bitPattern: Int8(1 - run)), data[i]]
                i += run
            } else {
                var j = i
                while j < data.count, j - i < 128, !(j + 1 < data.count && data[j + 1] == data[j]) { j += 1 }
                if j == i { j = i + 1 }
                out.append(UInt8(j - i - 1))
                out += data[i..<j]
                i = j
            }
        }
        return out
    }

    /// TIFF LZW: new-style (MSB-first, code width grows one code early) or old-style
    /// (pre-TIFF 6.0 libtiff: LSB-first, grows on time).
    package static func lzw(_ data: [UInt8], oldStyle: Bool = false) -> [UInt8] {
        var out = [UInt8](), acc: UInt64 = 0, nacc = 0
        var width = 9
        func emit(_ code: Int) {
            if oldStyle {
                acc |= UInt64(code) << UInt64(nacc); nacc += width
                while nacc >= 8 { out.append(UInt8(truncatingIfNeeded: acc)); acc >>= 8; nacc -= 8 }
            } else {
                acc = acc << UInt64(width) | UInt64(code); nacc += width
                while nacc >= 8 { out.append(UInt8(truncatingIfNeeded: acc >> UInt64(nacc - 8))); nacc -= 8 }
            }
        }
        // The encoder's table runs one entry ahead of the decoder's.
        func grow() {
            let limit = oldStyle ? (1 << width) + 1 : 1 << width
            if next >= limit, width < 12 { width += 1 }
        }
        var dict: [Int: Int] = [:]
        var next = 258
        emit(256)
        var w = -1
        for b in data {
            if w < 0 { w = Int(b); continue }
            let key = w << 8 | Int(b)
            if let c = dict[key] { w = c; continue }
            emit(w)
            dict[key] = next
            next += 1
            grow()
            if next == 4093 { emit(256); dict = [:]; next = 258; width = 9 }
            w = Int(b)
        }
        if w >= 0 {
            emit(w)
            next += 1
            grow()
        }
        emit(257)
        if nacc > 0 {
            out.append(oldStyle ? UInt8(truncatingIfNeeded: acc) : UInt8(truncatingIfNeeded: acc << UInt64(8 - nacc)))
        }
        return out
    }
}
