import TilePackCore
/// Decodes PVRTC1 4bpp and 2bpp words to RGBA8 rows exactly as the hardware does
/// (bilinear upscaling of the A and B images with wrap-around at every edge, the
/// 4bpp punch-through mode and the 2bpp interpolated modulation modes).
///
/// Cost: 4bpp is one pass over the word rows (``PVRTCBlocks4``): each 4 × 4 block is
/// decoded from its own modulation word and the expanded colours of its 3 × 3 word
/// neighbourhood, a block row of four pixels at a time in 16-bit SIMD lanes, with
/// O(width) scratch. 2bpp builds a per-pixel modulation-weight plane first (its
/// interpolated modes read neighbouring pixels), then walks word quads with four 16-bit
/// lanes packed in a `UInt64`; it keeps those scratch buffers between calls.
/// Not thread-safe.
public final class PVRTCDecoder {
    /// Per word (row-major): expanded colours A and B, see ``PVRTCColour``.
    var colourA: [UInt64] = []
    var colourB: [UInt64] = []
    /// Per pixel: modulation weight 0…8; bit 7 marks 4bpp punch-through (alpha forced to 0).
    var weights: [UInt8] = []
    /// Per word: 2bpp modulation mode (0 direct, 1 both axes, 2 horizontal, 3 vertical).
    var modes: [UInt8] = []
    /// The 4bpp path's word order and rolling rows, kept between decodes of one size.
    private var cachedMorton: PVRTCMorton?
    private var rowScratch: [UInt64] = []

    public init() {}

    /// Decodes `words` (Morton order, as stored) into a new RGBA8 buffer.
    public func decode(_ words: [UInt8], format: PVRTCFormat, width: Int, height: Int) throws -> [UInt8] {
        try format.validate(width: width, height: height)
        let expected = format.byteCount(width: width, height: height)
        guard words.count == expected else {
            throw CodecError.byteCount(what: "\(format.rawValue) words", expected: expected, actual: words.count)
        }
        let layout = PVRTCLayout(format: format, width: width, height: height)
        // Every output byte is written by the decoder, so skip zero-filling.
        return words.withUnsafeBytes { src in
            [UInt8](unsafeUninitializedCapacity: width * height * 4) { dst, count in
                decodeChecked(src, layout: layout, into: UnsafeMutableRawBufferPointer(dst))
                count = width * height * 4
            }
        }
    }

    /// Decodes `words` into `rgba` (width × height × 4 bytes, rows top first).
    /// Throws when the size is not a PVRTC size or a buffer length does not match it.
    public func decode(
        _ words: UnsafeRawBufferPointer, format: PVRTCFormat, width: Int, height: Int,
        into rgba: UnsafeMutableRawBufferPointer
    ) throws {
        try format.validate(width: width, height: height)
        let expected = format.byteCount(width: width, height: height)
        guard words.count == expected else {
            throw CodecError.byteCount(what: "\(format.rawValue) words", expected: expected, actual: words.count)
        }
        guard rgba.count == width * height * 4 else {
            throw CodecError.byteCount(what: "RGBA output", expected: width * height * 4, actual: rgba.count)
        }
        decodeChecked(words, layout: PVRTCLayout(format: format, width: width, height: height), into: rgba)
    }

    /// Decodes once sizes and lengths have been checked.
    func decodeChecked(_ words: UnsafeRawBufferPointer, layout: PVRTCLayout, into rgba: UnsafeMutableRawBufferPointer) {
        if layout.format == .pvrtc4 {
            // The word order and the row scratch are kept for the next decode of this size:
            // a pooled decoder then decodes tile after tile without allocating.
            if cachedMorton?.wordsWide != layout.wordsWide || cachedMorton?.wordsHigh != layout.wordsHigh {
                cachedMorton = PVRTCMorton(wordsWide: layout.wordsWide, wordsHigh: layout.wordsHigh)
            }
            if rowScratch.count < 6 * layout.wordsWide {
                rowScratch = [UInt64](repeating: 0, count: 6 * layout.wordsWide)
            }
            guard let morton = cachedMorton else { preconditionFailure("set above") }
            rowScratch.withUnsafeMutableBufferPointer { scratch in
                PVRTCBlocks4.decode(words, layout: layout, morton: morton, scratch: scratch, into: rgba)
            }
            return
        }
        prepare(words, layout: layout)
        let out = rgba.baseAddress!.assumingMemoryBound(to: UInt32.self)
        colourA.withUnsafeBufferPointer { a in
            colourB.withUnsafeBufferPointer { b in
                weights.withUnsafeBufferPointer { w in
                    PVRTCQuads.run(
                        layout: layout, a: a.baseAddress!, b: b.baseAddress!, weights: w.baseAddress!,
                        quadRows: 0..<layout.wordsHigh, output: .pixels(out))
                }
            }
        }
    }

    /// Expands the colours of every word and builds the modulation-weight plane.
    func prepare(_ words: UnsafeRawBufferPointer, layout: PVRTCLayout) {
        let wordCount = layout.wordsWide * layout.wordsHigh
        let pixelCount = layout.width * layout.height
        if colourA.count < wordCount {
            colourA = [UInt64](repeating: 0, count: wordCount)
            colourB = [UInt64](repeating: 0, count: wordCount)
            modes = [UInt8](repeating: 0, count: wordCount)
        }
        if weights.count < pixelCount { weights = [UInt8](repeating: 0, count: pixelCount) }
        let morton = PVRTCMorton(wordsWide: layout.wordsWide, wordsHigh: layout.wordsHigh)
        colourA.withUnsafeMutableBufferPointer { a in
            colourB.withUnsafeMutableBufferPointer { b in
                weights.withUnsafeMutableBufferPointer { w in
                    modes.withUnsafeMutableBufferPointer { m in
                        PVRTCWeights.build(
                            words: words, layout: layout, morton: morton, a: a.baseAddress!, b: b.baseAddress!,
                            weights: w.baseAddress!, modes: m.baseAddress!)
                    }
                }
            }
        }
    }
}

@available(*, unavailable) extension PVRTCDecoder: Sendable {}

/// Geometry of one texture: pixel and word counts and the shifts the decoder uses.
package struct PVRTCLayout {
    package let format: PVRTCFormat
    package let width: Int
    package let height: Int
    package let wordsWide: Int
    package let wordsHigh: Int

    package init(format: PVRTCFormat, width: Int, height: Int) {
        self.format = format
        self.width = width
        self.height = height
        (wordsWide, wordsHigh) = format.wordGrid(width: width, height: height)
    }
}

/// Expanded base colours as four 16-bit lanes of a `UInt64`: R, G, B in 5-bit units and
/// alpha as twice its 4-bit value. Doubling alpha lets all four lanes share the first shift
/// of the 8-bit conversion (see ``PVRTCQuads``).
package enum PVRTCColour {
    @inline(__always) static func lanes(_ r: UInt32, _ g: UInt32, _ b: UInt32, _ a4: UInt32) -> UInt64 {
        UInt64(r) | UInt64(g) << 16 | UInt64(b) << 32 | UInt64(a4 << 1) << 48
    }
    @inline(__always) static func from4(_ c: UInt32) -> UInt32 { (c << 1) | (c >> 3) }
    @inline(__always) static func from3(_ c: UInt32) -> UInt32 { (c << 2) | (c >> 1) }

    /// Colour A: bits 1–15 of the colour word, bit 15 the opaque flag.
    @inline(__always) package static func expandA(_ c: UInt32) -> UInt64 {
        if c & 0x8000 != 0 {
            return lanes((c >> 10) & 31, (c >> 5) & 31, from4((c >> 1) & 15), 15)
        }
        return lanes(from4((c >> 8) & 15), from4((c >> 4) & 15), from3((c >> 1) & 7), ((c >> 12) & 7) << 1)
    }

    /// Colour B: bits 16–31 of the colour word, bit 31 the opaque flag.
    @inline(__always) package static func expandB(_ c: UInt32) -> UInt64 {
        if c & 0x8000_0000 != 0 {
            return lanes((c >> 26) & 31, (c >> 21) & 31, (c >> 16) & 31, 15)
        }
        return lanes(from4((c >> 24) & 15), from4((c >> 20) & 15), from4((c >> 16) & 15), ((c >> 28) & 7) << 1)
    }
}

/// Builds the per-pixel modulation-weight plane from the modulation words.
enum PVRTCWeights {
    /// 4bpp: one byte of modulation word (a row of four 2-bit codes) → four weight bytes.
    static let table4: [UInt32] = (0..<512).map { index in
        let punch = index >= 256
        let values: [UInt32] = punch ? [0, 4, 0x84, 8] : [0, 3, 5, 8]
        var packed: UInt32 = 0
        for i in 0..<4 { packed |= values[Int((index >> (2 * i)) & 3)] << (8 * UInt32(i)) }
        return packed
    }
    /// 2bpp direct mode: one byte (a row of eight 1-bit codes) → eight weight bytes (0 or 8).
    static let table2: [UInt64] = (0..<256).map { byte in
        var packed: UInt64 = 0
        for i in 0..<8 where (byte >> i) & 1 != 0 { packed |= 8 << (8 * UInt64(i)) }
        return packed
    }
    /// The 2bpp interpolated modes store 2-bit codes with these weights (as 4bpp mode 0).
    static let codeWeight: (UInt8, UInt8, UInt8, UInt8) = (0, 3, 5, 8)

    static func build(
        words: UnsafeRawBufferPointer, layout: PVRTCLayout, morton: PVRTCMorton,
        a: UnsafeMutablePointer<UInt64>, b: UnsafeMutablePointer<UInt64>,
        weights: UnsafeMutablePointer<UInt8>, modes: UnsafeMutablePointer<UInt8>
    ) {
        let width = layout.width
        var anyInterpolated = false
        table4.withUnsafeBufferPointer { t4 in
            table2.withUnsafeBufferPointer { t2 in
                for wy in 0..<layout.wordsHigh {
                    for wx in 0..<layout.wordsWide {
                        let byteOffset = morton.offset(x: wx, y: wy) * 8
                        let modulation = UInt32(
                            littleEndian: words.loadUnaligned(fromByteOffset: byteOffset, as: UInt32.self))
                        let colour = UInt32(
                            littleEndian: words.loadUnaligned(fromByteOffset: byteOffset + 4, as: UInt32.self))
                        let index = wy * layout.wordsWide + wx
                        a[index] = PVRTCColour.expandA(colour)
                        b[index] = PVRTCColour.expandB(colour)
                        let flag = Int(colour & 1)
                        if layout.format == .pvrtc4 {
                            let base = UnsafeMutableRawPointer(weights + (wy * 4) * width + wx * 4)
                            for row in 0..<4 {
                                let byte = Int((modulation >> (8 * UInt32(row))) & 0xFF)
                                base.storeBytes(of: t4[flag << 8 | byte], toByteOffset: row * width, as: UInt32.self)
                            }
                            modes[index] = 0
                        } else if flag == 0 {
                            let base = UnsafeMutableRawPointer(weights + (wy * 4) * width + wx * 8)
                            for row in 0..<4 {
                                let byte = Int((modulation >> (8 * UInt32(row))) & 0xFF)
                                base.storeBytes(of: t2[byte], toByteOffset: row * width, as: UInt64.self)
                            }
                            modes[index] = 0
                        } else {
                            anyInterpolated = true
                            modes[index] = storeInterpolated(
                                modulation, at: weights + (wy * 4) * width + wx * 8, width: width)
                        }
                    }
                }
            }
        }
        if anyInterpolated { fillInterpolated(layout: layout, weights: weights, modes: modes) }
    }

    /// Writes the 16 stored 2-bit values of an interpolated 2bpp word at the checkerboard
    /// positions and returns its mode (1 both axes, 2 horizontal, 3 vertical).
    static func storeInterpolated(_ modulation: UInt32, at base: UnsafeMutablePointer<UInt8>, width: Int) -> UInt8 {
        var bits = modulation
        var mode: UInt8 = 1
        if bits & 1 != 0 {
            // Bit 20 chooses the axis, then (like bit 0) takes a copy of the bit above it.
            mode = bits & (1 << 20) != 0 ? 3 : 2
            if bits & (1 << 21) != 0 { bits |= 1 << 20 } else { bits &= ~(1 << 20) }
        }
        if bits & 2 != 0 { bits |= 1 } else { bits &= ~1 }
        let w = codeWeight
        for row in 0..<4 {
            for column in stride(from: row & 1, to: 8, by: 2) {
                let code = bits & 3
                bits >>= 2
                base[row * width + column] = code == 0 ? w.0 : code == 1 ? w.1 : code == 2 ? w.2 : w.3
            }
        }
        return mode
    }

    /// Second pass for interpolated words: the pixels off the checkerboard average their
    /// stored neighbours, which may lie in adjacent words (wrapping at the texture edges).
    static func fillInterpolated(layout: PVRTCLayout, weights: UnsafeMutablePointer<UInt8>, modes: UnsafePointer<UInt8>)
    {
        let width = layout.width, xMask = layout.width - 1, yMask = layout.height - 1
        for wy in 0..<layout.wordsHigh {
            for wx in 0..<layout.wordsWide {
                let mode = modes[wy * layout.wordsWide + wx]
                if mode == 0 { continue }
                for row in 0..<4 {
                    let y = wy * 4 + row
                    let up = ((y - 1) & yMask) * width, down = ((y + 1) & yMask) * width, here = y * width
                    for column in stride(from: 1 - (row & 1), to: 8, by: 2) {
                        let x = wx * 8 + column
                        let left = Int(weights[here + ((x - 1) & xMask)]),
                            right = Int(weights[here + ((x + 1) & xMask)])
                        let above = Int(weights[up + x]), below = Int(weights[down + x])
                        let value: Int
                        switch mode {
                        case 1: value = (left + right + above + below + 2) >> 2
                        case 2: value = (left + right + 1) >> 1
                        default: value = (above + below + 1) >> 1
                        }
                        weights[here + x] = UInt8(value)
                    }
                }
            }
        }
    }
}

/// The per-quad inner loop shared by the decoder and the encoder. A quad is the
/// blockWidth × 4 pixels between four word centres: its A and B colours are bilinear in
/// the same four words, so the vertical interpolation is done once per quad row and the
/// horizontal one is two multiplies per pixel. Indices wrap only in the last quad of a row.
package enum PVRTCQuads {
    package enum Output {
        /// Final RGBA8 pixels.
        case pixels(UnsafeMutablePointer<UInt32>)
        /// The upscaled A and B images as RGBA8 (for the encoder's modulation choice).
        case upscaled(UnsafeMutablePointer<UInt32>, UnsafeMutablePointer<UInt32>)
    }

    package static func run(
        layout: PVRTCLayout, a: UnsafePointer<UInt64>, b: UnsafePointer<UInt64>,
        weights: UnsafePointer<UInt8>, quadRows: Range<Int>, output: Output
    ) {
        switch (layout.format, output) {
        case let (.pvrtc4, .pixels(out)):
            quads(
                layout: layout, blockWidth: 4, shift: 1, a: a, b: b, weights: weights, quadRows: quadRows, out: out,
                outB: nil)
        case let (.pvrtc2, .pixels(out)):
            quads(
                layout: layout, blockWidth: 8, shift: 2, a: a, b: b, weights: weights, quadRows: quadRows, out: out,
                outB: nil)
        case let (.pvrtc4, .upscaled(outA, outB)):
            quads(
                layout: layout, blockWidth: 4, shift: 1, a: a, b: b, weights: weights, quadRows: quadRows, out: outA,
                outB: outB)
        case let (.pvrtc2, .upscaled(outA, outB)):
            quads(
                layout: layout, blockWidth: 8, shift: 2, a: a, b: b, weights: weights, quadRows: quadRows, out: outA,
                outB: outB)
        }
    }

    /// Bilinear sum (weights total 16 at 4bpp, 32 at 2bpp) → 8 bits per lane:
    /// colour `(C >> s) + (C >> (s+5))`, alpha (stored doubled) `(C >> s) + (C >> (s+4))`.
    @inline(__always) static func to8(_ c: UInt64, _ s: UInt64) -> UInt64 {
        ((c &>> s) & 0x00FF_00FF_00FF_00FF)
            &+ (((c &>> (s &+ 5)) & 0x0000_001F_001F_001F) | ((c &>> (s &+ 4)) & 0x001F_0000_0000_0000))
    }

    /// Four 8-bit lanes → RGBA8 in memory order.
    @inline(__always) static func pack(_ p: UInt64) -> UInt32 {
        let t = p | (p &>> 8)
        return UInt32(
            littleEndian: UInt32(truncatingIfNeeded: t & 0xFFFF) | UInt32(truncatingIfNeeded: (t &>> 16) & 0xFFFF_0000))
    }

    @inline(__always) static func pixel(
        _ lA: UInt64, _ rA: UInt64, _ lB: UInt64, _ rB: UInt64,
        _ wl: UInt64, _ wr: UInt64, _ s: UInt64, _ weight: UInt8
    ) -> UInt32 {
        let a8 = to8(lA &* wl &+ rA &* wr, s)
        let b8 = to8(lB &* wl &+ rB &* wr, s)
        let w = UInt64(weight & 0x0F)
        let blended = ((a8 &* (8 &- w) &+ b8 &* w) &>> 3) & 0x00FF_00FF_00FF_00FF
        let punch = UInt32(weight >> 7) &* 0xFF00_0000
        return pack(blended) & ~UInt32(littleEndian: punch)
    }

    @inline(__always) static func quads(
        layout: PVRTCLayout, blockWidth bw: Int, shift s: UInt64,
        a: UnsafePointer<UInt64>, b: UnsafePointer<UInt64>, weights: UnsafePointer<UInt8>,
        quadRows: Range<Int>, out: UnsafeMutablePointer<UInt32>, outB: UnsafeMutablePointer<UInt32>?
    ) {
        let width = layout.width, wordsWide = layout.wordsWide
        let xMask = width - 1, yMask = layout.height - 1, half = bw / 2
        for qy in quadRows {
            let top = qy * wordsWide
            let bottom = ((qy + 1) & (layout.wordsHigh - 1)) * wordsWide
            for yr in 0..<4 {
                let y = (qy * 4 + 2 + yr) & yMask
                let wy0 = UInt64(4 - yr), wy1 = UInt64(yr)
                let row = out + y * width, weightRow = weights + y * width
                let rowB = outB.map { $0 + y * width }
                var lA = a[top] &* wy0 &+ a[bottom] &* wy1
                var lB = b[top] &* wy0 &+ b[bottom] &* wy1
                for qx in 0..<wordsWide {
                    let next = qx + 1 == wordsWide ? 0 : qx + 1
                    let rA = a[top + next] &* wy0 &+ a[bottom + next] &* wy1
                    let rB = b[top + next] &* wy0 &+ b[bottom + next] &* wy1
                    let x0 = qx * bw + half
                    if let rowB {
                        for xr in 0..<bw {
                            let x = (x0 + xr) & xMask
                            let wl = UInt64(bw - xr), wr = UInt64(xr)
                            row[x] = pack(to8(lA &* wl &+ rA &* wr, s))
                            rowB[x] = pack(to8(lB &* wl &+ rB &* wr, s))
                        }
                    } else if next != 0 {
                        for xr in 0..<bw {
                            let x = x0 + xr
                            row[x] = pixel(lA, rA, lB, rB, UInt64(bw - xr), UInt64(xr), s, weightRow[x])
                        }
                    } else {
                        for xr in 0..<bw {
                            let x = (x0 + xr) & xMask
                            row[x] = pixel(lA, rA, lB, rB, UInt64(bw - xr), UInt64(xr), s, weightRow[x])
                        }
                    }
                    lA = rA
                    lB = rB
                }
            }
        }
    }
}

/// The 4bpp decoder proper. A block's pixel row mixes, per pixel, at most two word columns
/// and two word rows of the 3 × 3 neighbourhood with weights that are fixed by the pixel's
/// position (word centres sit at pixel 2 of their block):
/// rows 0…3 take (2, 2), (1, 3), (0, 4), (0, 3, 1) quarters of the (above, own, below)
/// words, and columns 0…3 likewise of (left, own, right). The vertical mix is done once per
/// word and block row on packed `UInt64` lanes and rolled along the row; the horizontal
/// mix, the 8-bit conversion and the modulation blend run on all four pixels at once.
package enum PVRTCBlocks4 {
    /// Per modulation byte (a block row's four 2-bit codes), index `flag << 8 | byte`: the
    /// four pixels' weights, each repeated in its pixel's four channel lanes.
    static let weightTable: [SIMD16<UInt16>] = (0..<512).map { index in
        let values: [UInt16] = index >= 256 ? [0, 4, 4, 8] : [0, 3, 5, 8]
        var v = SIMD16<UInt16>()
        for i in 0..<16 { v[i] = values[(index >> (2 * (i / 4))) & 3] }
        return v
    }
    /// Punch-through words: per modulation byte, the mask that clears alpha where the code is 2.
    static let punchMask: [SIMD16<UInt8>] = (0..<256).map { byte in
        var v = SIMD16<UInt8>(repeating: 0xFF)
        for pixel in 0..<4 where (byte >> (2 * pixel)) & 3 == 2 { v[pixel * 4 + 3] = 0 }
        return v
    }
    /// Narrows 16 lanes holding 0…255 to bytes; spelled element by element because the
    /// generic `init(truncatingIfNeeded:)` is not inlined (a call per block row), while
    /// this form compiles to a pack instruction.
    @inline(__always) static func bytes(_ x: SIMD16<UInt16>) -> SIMD16<UInt8> {
        SIMD16<UInt8>(
            UInt8(truncatingIfNeeded: x[0]), UInt8(truncatingIfNeeded: x[1]), UInt8(truncatingIfNeeded: x[2]),
            UInt8(truncatingIfNeeded: x[3]), UInt8(truncatingIfNeeded: x[4]), UInt8(truncatingIfNeeded: x[5]),
            UInt8(truncatingIfNeeded: x[6]), UInt8(truncatingIfNeeded: x[7]), UInt8(truncatingIfNeeded: x[8]),
            UInt8(truncatingIfNeeded: x[9]), UInt8(truncatingIfNeeded: x[10]), UInt8(truncatingIfNeeded: x[11]),
            UInt8(truncatingIfNeeded: x[12]), UInt8(truncatingIfNeeded: x[13]), UInt8(truncatingIfNeeded: x[14]),
            UInt8(truncatingIfNeeded: x[15]))
    }

    @inline(__always) static func lanes(_ x0: UInt64, _ x1: UInt64, _ x2: UInt64, _ x3: UInt64) -> SIMD16<UInt16> {
        SIMD16(
            lowHalf: unsafeBitCast(SIMD2<UInt64>(x0, x1), to: SIMD8<UInt16>.self),
            highHalf: unsafeBitCast(SIMD2<UInt64>(x2, x3), to: SIMD8<UInt16>.self))
    }

    /// Horizontal mix of the vertically mixed (left, own, right) colours for the four
    /// pixels of a block row, then the 8-bit conversion (sum of weights is 16).
    /// Colour lanes take `C >> 6`, alpha (stored doubled) `C >> 5` = `(2C) >> 6`, so
    /// `alphaDouble` is 1 in colour lanes and 2 in alpha lanes.
    @inline(__always) package static func row8(
        _ l: UInt64, _ c: UInt64, _ r: UInt64, _ alphaDouble: SIMD16<UInt16>
    ) -> SIMD16<UInt16> {
        let c3 = c &* 3
        let v = lanes((l &+ c) &<< 1, l &+ c3, c &<< 2, c3 &+ r)
        return (v &>> 1) &+ ((v &* alphaDouble) &>> 6)
    }

    /// Vertical mixes of one word column for block rows 0…3.
    @inline(__always) package static func column(_ u: UInt64, _ c: UInt64, _ d: UInt64) -> SIMD4<UInt64> {
        let c3 = c &* 3
        return SIMD4((u &+ c) &<< 1, u &+ c3, c &<< 2, c3 &+ d)
    }

    /// `morton` must be the layout's word order and `scratch` hold at least 6 × wordsWide
    /// values (the caller keeps both between decodes, so a decode allocates nothing).
    static func decode(
        _ words: UnsafeRawBufferPointer, layout: PVRTCLayout, morton: PVRTCMorton,
        scratch: UnsafeMutableBufferPointer<UInt64>, into rgba: UnsafeMutableRawBufferPointer
    ) {
        let wordsWide = layout.wordsWide, wordsHigh = layout.wordsHigh, width = layout.width
        precondition(morton.wordsWide == wordsWide && morton.wordsHigh == wordsHigh && scratch.count >= 6 * wordsWide)
        let out = rgba.baseAddress!
        let source = words.baseAddress!
        let alphaDouble = SIMD16<UInt16>(1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 2)
        morton.xPart.withUnsafeBufferPointer { xPart in
            morton.yPart.withUnsafeBufferPointer { yPart in
                weightTable.withUnsafeBufferPointer { weightTable in
                    punchMask.withUnsafeBufferPointer { punchMask in
                        // Three rolling word rows of expanded colours: A at slot * 2, B at slot * 2 + 1.
                        do {
                            let rows = scratch.baseAddress!
                            func expand(row wy: Int, slot: Int) {
                                let a = rows + 2 * slot * wordsWide, b = a + wordsWide
                                let yBits = yPart[wy]
                                for wx in 0..<wordsWide {
                                    let colour = UInt32(
                                        littleEndian: source.loadUnaligned(
                                            fromByteOffset: (xPart[wx] | yBits) * 8 + 4, as: UInt32.self))
                                    a[wx] = PVRTCColour.expandA(colour)
                                    b[wx] = PVRTCColour.expandB(colour)
                                }
                            }
                            expand(row: wordsHigh - 1, slot: 2)
                            expand(row: 0, slot: 0)
                            for wy in 0..<wordsHigh {
                                expand(row: (wy + 1) & (wordsHigh - 1), slot: (wy + 1) % 3)
                                let upA = rows + 2 * ((wy + 2) % 3) * wordsWide, upB = upA + wordsWide
                                let ownA = rows + 2 * (wy % 3) * wordsWide, ownB = ownA + wordsWide
                                let downA = rows + 2 * ((wy + 1) % 3) * wordsWide, downB = downA + wordsWide
                                let last = wordsWide - 1
                                var leftA = column(upA[last], ownA[last], downA[last]),
                                    leftB = column(upB[last], ownB[last], downB[last])
                                var midA = column(upA[0], ownA[0], downA[0]), midB = column(upB[0], ownB[0], downB[0])
                                let yBits = yPart[wy]
                                let rowBase = out + (wy * 4) * width * 4
                                for wx in 0..<wordsWide {
                                    let next = wx == last ? 0 : wx + 1
                                    let rightA = column(upA[next], ownA[next], downA[next]),
                                        rightB = column(upB[next], ownB[next], downB[next])
                                    let offset = (xPart[wx] | yBits) * 8
                                    let modulation = UInt32(
                                        littleEndian: source.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                                    let flag = Int(source.load(fromByteOffset: offset + 4, as: UInt8.self) & 1)
                                    let block = rowBase + wx * 16
                                    // The four block rows by constant index: a loop indexes the column vectors in
                                    // memory.
                                    @inline(__always) func blockRow(
                                        _ r: Int, _ a8: SIMD16<UInt16>, _ b8: SIMD16<UInt16>
                                    ) {
                                        let byte = Int((modulation >> (8 * UInt32(r))) & 0xFF)
                                        let w = weightTable[flag << 8 | byte]
                                        var pixels = bytes(((a8 &<< 3) &+ (b8 &- a8) &* w) &>> 3)
                                        if flag != 0 { pixels &= punchMask[byte] }
                                        block.storeBytes(
                                            of: pixels, toByteOffset: r * width * 4, as: SIMD16<UInt8>.self)
                                    }
                                    blockRow(
                                        0, row8(leftA[0], midA[0], rightA[0], alphaDouble),
                                        row8(leftB[0], midB[0], rightB[0], alphaDouble))
                                    blockRow(
                                        1, row8(leftA[1], midA[1], rightA[1], alphaDouble),
                                        row8(leftB[1], midB[1], rightB[1], alphaDouble))
                                    blockRow(
                                        2, row8(leftA[2], midA[2], rightA[2], alphaDouble),
                                        row8(leftB[2], midB[2], rightB[2], alphaDouble))
                                    blockRow(
                                        3, row8(leftA[3], midA[3], rightA[3], alphaDouble),
                                        row8(leftB[3], midB[3], rightB[3], alphaDouble))
                                    leftA = midA; leftB = midB
                                    midA = rightA; midB = rightB
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
