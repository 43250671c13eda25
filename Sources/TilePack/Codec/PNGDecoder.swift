import TilePackCore
/// Reads non-interlaced PNGs into RGBA8: gray, gray+alpha, RGB, RGBA and palette images at
/// every bit depth the spec allows for them (1/2/4/8/16), with `tRNS` transparency.
/// 16-bit samples keep their high byte.
///
/// Damaged input is a thrown ``PNGError``, never a crash or a huge allocation: every chunk
/// length is checked against the data left, every CRC is verified, IHDR is checked for
/// sanity, the pixel count is capped by ``maxPixels`` before any image buffer exists, and the
/// zlib stream inflates into a buffer of exactly the size the header implies.
/// Interlaced (Adam7) images are refused as unsupported.
///
/// - Cost: O(file + pixels); allocations: the concatenated IDAT data, the raw rows
///   (height × (1 + row bytes)) and the RGBA output.
public struct PNGDecoder: Sendable {
    /// Largest width × height accepted (default 64 Mpx, 256 MiB of RGBA).
    public var maxPixels: Int

    public init(maxPixels: Int = 1 << 26) {
        precondition(maxPixels > 0)
        self.maxPixels = maxPixels
    }

    fileprivate struct Header {
        var width = 0, height = 0, depth = 0
        var colorType = PNG.ColorType.rgba
    }

    /// Decodes a whole PNG file. `source` names it in errors (a path, or a tile id).
    public func decode(_ data: [UInt8], source: String = "PNG data") throws -> RGBAImage {
        func fail(_ problem: PNGError.Code, _ detail: String) -> PNGError {
            PNGError(problem, source: source, detail: detail)
        }
        guard data.count >= 8, data.prefix(8).elementsEqual(PNG.signature) else {
            throw fail(.notPNG, "signature missing (not a PNG file)")
        }
        var header: Header?
        var palette: [UInt8] = []  // RGBA, 4 bytes an entry
        var transparentKey: [Int]?  // gray or RGB sample values that mean alpha 0
        var idat: [UInt8] = []
        var sawIDAT = false, idatEnded = false, sawIEND = false
        var offset = 8
        while offset < data.count {
            guard data.count - offset >= 12 else {
                throw fail(.truncated, "chunk at byte \(offset) is cut short (\(data.count - offset) bytes left)")
            }
            let length = Self.be32(data, offset)
            guard length <= Int(Int32.max), length <= data.count - offset - 12 else {
                throw fail(
                    .truncated,
                    "chunk at byte \(offset) claims \(length) bytes, only \(data.count - offset - 12) remain")
            }
            let typeBytes = Array(data[(offset + 4)..<(offset + 8)])
            guard typeBytes.allSatisfy({ ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }) else {
                throw fail(.malformed, "chunk at byte \(offset) has an invalid type")
            }
            let type = String(decoding: typeBytes, as: UTF8.self)
            let bodyStart = offset + 8, bodyEnd = offset + 8 + length
            let stored = UInt32(Self.be32(data, bodyEnd))
            let computed = data.withUnsafeBytes {
                Zlib.crc32(UnsafeRawBufferPointer(rebasing: $0[(offset + 4)..<bodyEnd]))
            }
            guard stored == computed else {
                throw fail(
                    .badCRC,
                    """
                    chunk \(type) has a bad CRC (stored 0x\(String(stored, radix: 16)), computed \
                    0x\(String(computed, radix: 16)))
                    """
                )
            }
            let body = data[bodyStart..<bodyEnd]
            offset = bodyEnd + 4
            if sawIDAT && type != "IDAT" { idatEnded = true }
            if type == "IHDR" {
                guard header == nil else { throw fail(.malformed, "has a second IHDR") }
                header = try parseHeader(body, fail)
                continue
            }
            guard let h = header else { throw fail(.malformed, "first chunk is \(type), not IHDR") }
            switch type {
            case "PLTE":
                guard !sawIDAT, palette.isEmpty else { throw fail(.malformed, "PLTE after IDAT or repeated") }
                guard length % 3 == 0, length >= 3, length <= 768 else {
                    throw fail(.malformed, "PLTE length \(length) is not 3…768 and a multiple of 3")
                }
                let ct = h.colorType
                guard ct != .gray && ct != .grayAlpha else { throw fail(.malformed, "PLTE in a gray image") }
                for i in stride(from: body.startIndex, to: body.endIndex, by: 3) {
                    palette += [data[i], data[i + 1], data[i + 2], 255]
                }
            case "tRNS":
                guard !sawIDAT else { throw fail(.malformed, "tRNS after IDAT") }
                switch h.colorType {
                case .palette:
                    guard !palette.isEmpty, length <= palette.count / 4 else {
                        throw fail(.malformed, "tRNS has \(length) entries for a palette of \(palette.count / 4)")
                    }
                    for (i, alpha) in body.enumerated() { palette[4 * i + 3] = alpha }
                case .gray:
                    guard length == 2 else { throw fail(.malformed, "gray tRNS must be 2 bytes, is \(length)") }
                    transparentKey = [Int(data[bodyStart]) << 8 | Int(data[bodyStart + 1])]
                case .rgb:
                    guard length == 6 else { throw fail(.malformed, "RGB tRNS must be 6 bytes, is \(length)") }
                    transparentKey = (0..<3).map {
                        Int(data[bodyStart + 2 * $0]) << 8 | Int(data[bodyStart + 2 * $0 + 1])
                    }
                case .grayAlpha, .rgba:
                    throw fail(.malformed, "tRNS in an image that has an alpha channel")
                }
            case "IDAT":
                guard !idatEnded else { throw fail(.malformed, "IDAT chunks are not consecutive") }
                sawIDAT = true
                // Bounded by the file size, which the caller already holds in memory.
                idat.append(contentsOf: body)
            case "IEND":
                sawIEND = true
            default:
                // Bit 5 of the first letter clear (uppercase) marks a chunk critical to decoding.
                if typeBytes[0] & 0x20 == 0 { throw fail(.unsupported, "critical chunk \(type) is not supported") }
            }
            if sawIEND { break }
        }
        guard let h = header else { throw fail(.truncated, "has no IHDR") }
        guard sawIDAT else { throw fail(.truncated, "has no IDAT (no image data)") }
        guard sawIEND else { throw fail(.truncated, "ends without IEND (file cut short)") }
        if h.colorType == .palette && palette.isEmpty { throw fail(.malformed, "palette image without PLTE") }

        let bitsPerPixel = h.colorType.channels * h.depth
        let rowBytes = (h.width * bitsPerPixel + 7) / 8
        let rawCount = h.height * (rowBytes + 1)
        var raw = [UInt8](repeating: 0, count: rawCount)
        let inflated: Result<Int, any Error> = idat.withUnsafeBytes { src in
            raw.withUnsafeMutableBytes { dst in Result { try Zlib.inflate(src, into: dst) } }
        }
        switch inflated {
        case .failure(let error):
            let why = (error as? Zlib.Failure)?.detail ?? "\(error)"
            throw fail(why.contains("truncated") ? .truncated : .corruptData, "IDAT does not inflate: \(why)")
        case .success(let produced):
            guard produced == rawCount else {
                throw fail(.truncated, "IDAT holds \(produced) bytes of rows, the image needs \(rawCount)")
            }
        }
        let filterBpp = max(1, bitsPerPixel / 8)
        var rgba = [UInt8](repeating: 0, count: h.width * h.height * 4)
        let badFilter: Int? = raw.withUnsafeMutableBufferPointer { rows in
            rgba.withUnsafeMutableBufferPointer { out in
                for y in 0..<h.height {
                    let start = y * (rowBytes + 1)
                    let filter = rows[start]
                    guard filter <= 4 else { return y }
                    Self.unfilter(
                        rows, row: start + 1, previous: y == 0 ? nil : start - rowBytes,
                        count: rowBytes, bpp: filterBpp, filter: filter)
                    Self.expand(
                        rows, from: start + 1, header: h, palette: palette,
                        transparentKey: transparentKey, into: out, at: y * h.width * 4)
                }
                return nil
            }
        }
        if let badFilter {
            throw fail(.corruptData, "row \(badFilter) has filter type \(raw[badFilter * (rowBytes + 1)]), not 0…4")
        }
        return RGBAImage(width: h.width, height: h.height, pixels: rgba)
    }

    // MARK: - Internals

    private func parseHeader(
        _ body: ArraySlice<UInt8>, _ fail: (PNGError.Code, String) -> PNGError
    ) throws(PNGError) -> Header {
        guard body.count == 13 else { throw fail(.badHeader, "IHDR is \(body.count) bytes, not 13") }
        let b = Array(body)
        var h = Header()
        h.width = Self.be32(b, 0)
        h.height = Self.be32(b, 4)
        h.depth = Int(b[8])
        guard h.width > 0, h.height > 0, h.width <= Int(Int32.max), h.height <= Int(Int32.max) else {
            throw fail(.badHeader, "size \(h.width)×\(h.height) is invalid")
        }
        guard let ct = PNG.ColorType(rawValue: b[9]) else { throw fail(.badHeader, "colour type \(b[9]) is invalid") }
        h.colorType = ct
        guard ct.allowedDepths.contains(h.depth) else {
            throw fail(.badHeader, "bit depth \(h.depth) is invalid for colour type \(ct.rawValue)")
        }
        guard b[10] == 0, b[11] == 0 else {
            throw fail(.badHeader, "compression \(b[10]) / filter method \(b[11]) is invalid")
        }
        guard b[12] <= 1 else { throw fail(.badHeader, "interlace method \(b[12]) is invalid") }
        guard b[12] == 0 else { throw fail(.unsupported, "interlaced (Adam7) images are not supported") }
        let (pixels, overflow) = h.width.multipliedReportingOverflow(by: h.height)
        guard !overflow, pixels <= maxPixels else {
            throw fail(.tooLarge, "size \(h.width)×\(h.height) exceeds the limit of \(maxPixels) pixels")
        }
        return h
    }

    static func be32<C: RandomAccessCollection<UInt8>>(_ d: C, _ at: Int) -> Int where C.Index == Int {
        let i = d.startIndex + at
        return Int(d[i]) << 24 | Int(d[i + 1]) << 16 | Int(d[i + 2]) << 8 | Int(d[i + 3])
    }

    /// Reverses one row's filter in place; `previous` is the start of the unfiltered row above.
    /// Cost: one pass over the row, on pointers with the bounds checked once, the first pixel
    /// (no left neighbour) peeled off: no branch per byte, nothing generic (what a debug build
    /// pays for per call).
    @inline(__always)
    static func unfilter(
        _ p: UnsafeMutableBufferPointer<UInt8>, row: Int, previous: Int?, count: Int, bpp: Int, filter: UInt8
    ) {
        precondition(bpp >= 1 && row >= 0 && count >= 0 && row + count <= p.count)
        precondition(previous.map { $0 >= 0 && $0 + count <= row } ?? true, "the row above lies before this one")
        guard count > 0, let base = p.baseAddress else { return }
        let x = base + row, up = previous.map { base + $0 }
        let first = min(bpp, count)
        var i = 0
        switch (filter, up) {
        case (1, _), (4, nil):
            // Paeth with no row above (up = up-left = 0) predicts `left`: Sub.
            i = first
            while i < count { x[i] = x[i] &+ x[i - bpp]; i += 1 }
        case (2, let up?):
            while i < count { x[i] = x[i] &+ up[i]; i += 1 }
        case (3, nil):
            i = first
            while i < count { x[i] = x[i] &+ (x[i - bpp] >> 1); i += 1 }
        case (3, let up?):
            while i < first { x[i] = x[i] &+ (up[i] >> 1); i += 1 }
            while i < count { x[i] = x[i] &+ UInt8(truncatingIfNeeded: (Int(x[i - bpp]) + Int(up[i])) >> 1); i += 1 }
        case (4, let up?):
            // No left neighbour (left = up-left = 0): Paeth predicts `up`.
            while i < first { x[i] = x[i] &+ up[i]; i += 1 }
            while i < count { x[i] = x[i] &+ PNG.paeth(x[i - bpp], up[i], up[i - bpp]); i += 1 }
        default:
            break  // None, or Up on the first row (adds zeros).
        }
    }

    /// Converts one unfiltered row to RGBA8.
    @inline(__always)
    fileprivate static func expand(
        _ p: UnsafeMutableBufferPointer<UInt8>, from start: Int, header h: Header, palette: [UInt8],
        transparentKey: [Int]?, into out: UnsafeMutableBufferPointer<UInt8>, at base: Int
    ) {
        let w = h.width
        switch (h.colorType, h.depth) {
        case (.rgba, 8):
            for i in 0..<(w * 4) { out[base + i] = p[start + i] }
        case (.rgba, _):
            for i in 0..<(w * 4) { out[base + i] = p[start + 2 * i] }
        case (.rgb, let depth):
            let step = depth / 8
            for x in 0..<w {
                let s = start + 3 * step * x
                let r = p[s], g = p[s + step], b = p[s + 2 * step]
                out[base + 4 * x] = r
                out[base + 4 * x + 1] = g
                out[base + 4 * x + 2] = b
                var alpha: UInt8 = 255
                if let key = transparentKey {
                    let sample = { (k: Int) -> Int in
                        step == 2 ? Int(p[s + 2 * k]) << 8 | Int(p[s + 2 * k + 1]) : Int(p[s + k])
                    }
                    if sample(0) == key[0] && sample(1) == key[1] && sample(2) == key[2] { alpha = 0 }
                }
                out[base + 4 * x + 3] = alpha
            }
        case (.grayAlpha, let depth):
            let step = depth / 8
            for x in 0..<w {
                let v = p[start + 2 * step * x], a = p[start + 2 * step * x + step]
                out[base + 4 * x] = v
                out[base + 4 * x + 1] = v
                out[base + 4 * x + 2] = v
                out[base + 4 * x + 3] = a
            }
        case (.gray, let depth), (.palette, let depth):
            let isPalette = h.colorType == .palette
            let maxValue = (1 << min(depth, 8)) - 1
            for x in 0..<w {
                let sample: Int
                switch depth {
                case 16: sample = Int(p[start + 2 * x]) << 8 | Int(p[start + 2 * x + 1])
                case 8: sample = Int(p[start + x])
                default:
                    let bit = x * depth
                    sample = Int(p[start + (bit >> 3)] >> (8 - depth - (bit & 7))) & maxValue
                }
                let o = base + 4 * x
                if isPalette {
                    // An index past the palette is an error in the spec; libpng shows black, so do we.
                    let e = 4 * sample
                    if e + 3 < palette.count {
                        out[o] = palette[e]; out[o + 1] = palette[e + 1]; out[o + 2] = palette[e + 2];
                        out[o + 3] = palette[e + 3]
                    } else {
                        out[o] = 0; out[o + 1] = 0; out[o + 2] = 0; out[o + 3] = 255
                    }
                } else {
                    let v: UInt8 = depth == 16 ? UInt8(sample >> 8) : UInt8(sample * 255 / maxValue)
                    out[o] = v; out[o + 1] = v; out[o + 2] = v
                    out[o + 3] = transparentKey?[0] == sample ? 0 : 255
                }
            }
        }
    }
}
