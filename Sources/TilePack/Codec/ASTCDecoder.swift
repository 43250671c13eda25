import TilePackCore
/// Decodes ASTC LDR 2D blocks to RGBA8 rows exactly as ARM's astcenc decompressor does in
/// its unorm8 decode mode (the specification's `decode_unorm8` extension): 8-bit endpoints
/// widened to 16 bits by replication, interpolated with 6-bit weights, the top 8 bits kept.
///
/// Every block is handled: void-extent (constant colour), 1–4 partitions from the
/// specification's partition hash, dual weight planes, the ten LDR endpoint modes with
/// blue contraction, trit/quint/bit integer sequences and the bilinear weight-grid infill.
/// Reserved or illegal encodings (and HDR endpoints, which the LDR profile does not allow)
/// decode to the error colour, opaque magenta, as the specification says.
///
/// Cost: per block, one integer-sequence decode of the weights and colours, the weight
/// infill (skipped when the grid matches the footprint) and four multiply-adds per texel.
/// Partition maps are computed once per (count, seed) and cached. All scratch is owned by
/// the decoder, so decoding into a caller's buffer allocates nothing. Not thread-safe.
public final class ASTCDecoder {
    public let format: ASTCFormat
    let blockWidth: Int
    let blockHeight: Int
    let texelCount: Int

    /// Opaque magenta, the specification's error colour, as a little-endian RGBA word.
    public static let errorColour: UInt32 = 0xFFFF_00FF

    /// Per 11-bit block mode: see ``ASTCBlockModes``.
    let modes: ASTCBlockModes
    /// Per texel of every partition (count 2…4, seed 0…1023): its partition, filled lazily.
    private let partitionMaps: UnsafeMutablePointer<UInt8>
    private let partitionReady: UnsafeMutablePointer<Bool>
    // Tables copied out of their arrays so the block loop reads plain pointers.
    private let trits: UnsafeMutablePointer<UInt8>
    private let quints: UnsafeMutablePointer<UInt8>
    private let colourUnquantised: UnsafeMutablePointer<UInt8>
    private let weightUnquantised: UnsafeMutablePointer<UInt8>
    private let colourLevels: UnsafeMutablePointer<Int8>
    private let levelBits: UnsafeMutablePointer<UInt8>       // per level: plain bits a value
    private let levelKinds: UnsafeMutablePointer<UInt8>      // per level: 1, 3 or 5
    // Per-block scratch.
    private let rawWeights: UnsafeMutablePointer<UInt8>      // 64 scrambled weights
    private let gridWeights: UnsafeMutablePointer<UInt8>     // 2 × 64 unquantised, plane-major
    private let texelWeights: UnsafeMutablePointer<UInt8>    // 2 × 144 infilled, plane-major
    private let colourValues: UnsafeMutablePointer<UInt8>    // 18 (+ slack) unquantised colour integers
    private let endpointBase: UnsafeMutablePointer<SIMD4<Int32>>   // per partition: 257·64·e0 + 32
    private let endpointSlope: UnsafeMutablePointer<SIMD4<Int32>>  // per partition: 257·(e1 − e0)
    /// ``ASTCBlockModes/entries`` copied out so the block loop reads a plain pointer.
    private let entries: UnsafeMutablePointer<ASTCBlockModes.Entry>
    private let blockTexels: UnsafeMutablePointer<UInt32>    // one decoded block
    private let endpointModes: UnsafeMutablePointer<Int>     // per partition
    private let singlePartition: UnsafeMutablePointer<UInt8> // all zero: the map of a 1-partition block

    public init(format: ASTCFormat) {
        self.format = format
        blockWidth = format.blockWidth
        blockHeight = format.blockHeight
        texelCount = blockWidth * blockHeight
        modes = ASTCBlockModes.table(for: format)
        partitionMaps = .allocate(capacity: 3 * 1024 * texelCount)
        partitionReady = .allocate(capacity: 3 * 1024)
        partitionReady.initialize(repeating: false, count: 3 * 1024)
        func copy<T>(_ array: [T]) -> UnsafeMutablePointer<T> {
            let p = UnsafeMutablePointer<T>.allocate(capacity: array.count)
            _ = UnsafeMutableBufferPointer(start: p, count: array.count).initialize(from: array)
            return p
        }
        trits = copy(ASTCIntegerSequence.tritTable)
        quints = copy(ASTCIntegerSequence.quintTable)
        colourUnquantised = copy(ASTCIntegerSequence.colourUnquantised)
        weightUnquantised = copy(ASTCIntegerSequence.weightUnquantised)
        colourLevels = copy(ASTCIntegerSequence.colourLevels)
        levelBits = copy(ASTCIntegerSequence.bitCounts)
        levelKinds = copy(ASTCIntegerSequence.kinds)
        rawWeights = .allocate(capacity: 64)
        gridWeights = .allocate(capacity: 128)
        texelWeights = .allocate(capacity: 2 * 144)
        colourValues = .allocate(capacity: 32)
        endpointBase = .allocate(capacity: 4)
        endpointSlope = .allocate(capacity: 4)
        endpointBase.initialize(repeating: .zero, count: 4)
        endpointSlope.initialize(repeating: .zero, count: 4)
        entries = copy(modes.entries)
        blockTexels = .allocate(capacity: 144)
        endpointModes = .allocate(capacity: 4)
        endpointModes.initialize(repeating: 0, count: 4)
        singlePartition = .allocate(capacity: 144)
        singlePartition.initialize(repeating: 0, count: 144)
        rawWeights.initialize(repeating: 0, count: 64)
        colourValues.initialize(repeating: 0, count: 32)
    }

    deinit {
        partitionMaps.deallocate(); partitionReady.deallocate()
        trits.deallocate(); quints.deallocate(); colourUnquantised.deallocate(); weightUnquantised.deallocate()
        colourLevels.deallocate(); rawWeights.deallocate(); gridWeights.deallocate(); texelWeights.deallocate()
        colourValues.deallocate(); endpointBase.deallocate(); endpointSlope.deallocate(); blockTexels.deallocate()
        endpointModes.deallocate(); singlePartition.deallocate(); entries.deallocate()
        levelBits.deallocate(); levelKinds.deallocate()
    }

    /// Decodes `blocks` (row-major, 16 bytes each) into a new RGBA8 buffer of `width × height`.
    /// - Throws: ``CodecError`` for a size outside 1…16384 or a byte count that does not match.
    public func decode(_ blocks: [UInt8], width: Int, height: Int) throws(CodecError) -> [UInt8] {
        try check(blockCount: blocks.count, width: width, height: height)
        return blocks.withUnsafeBytes { src in
            [UInt8](unsafeUninitializedCapacity: width * height * 4) { dst, count in
                decodeChecked(src, width: width, height: height, into: UnsafeMutableRawBufferPointer(dst))
                count = width * height * 4
            }
        }
    }

    /// Decodes `blocks` into `rgba` (`width × height × 4` bytes, rows top first).
    /// - Throws: ``CodecError`` when the size is out of range or a buffer length does not match.
    /// - Cost: no allocation.
    public func decode(_ blocks: UnsafeRawBufferPointer, width: Int, height: Int,
                       into rgba: UnsafeMutableRawBufferPointer) throws(CodecError) {
        try check(blockCount: blocks.count, width: width, height: height)
        guard rgba.count == width * height * 4 else {
            throw .byteCount(what: "RGBA output", expected: width * height * 4, actual: rgba.count)
        }
        decodeChecked(blocks, width: width, height: height, into: rgba)
    }

    private func check(blockCount: Int, width: Int, height: Int) throws(CodecError) {
        try format.validate(width: width, height: height)
        let expected = format.byteCount(width: width, height: height)
        guard blockCount == expected else { throw .byteCount(what: "\(format.rawValue) blocks", expected: expected, actual: blockCount) }
    }

    /// The image loop once sizes are proven: every block read is inside `blocks`, every
    /// row written inside `rgba`.
    private func decodeChecked(_ blocks: UnsafeRawBufferPointer, width: Int, height: Int, into rgba: UnsafeMutableRawBufferPointer) {
        let grid = format.blockGrid(width: width, height: height)
        let src = blocks.baseAddress!
        let dst = rgba.baseAddress!.assumingMemoryBound(to: UInt32.self)
        for by in 0..<grid.high {
            let y0 = by * blockHeight
            let rows = min(blockHeight, height - y0)
            for bx in 0..<grid.wide {
                let offset = (by * grid.wide + bx) * 16
                let bits = ASTCBits(lo: UInt64(littleEndian: src.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
                                    hi: UInt64(littleEndian: src.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
                let x0 = bx * blockWidth
                let columns = min(blockWidth, width - x0)
                if rows == blockHeight && columns == blockWidth {
                    decodeBlock(bits, into: dst + y0 * width + x0, stride: width)
                    continue
                }
                decodeBlock(bits, into: blockTexels, stride: blockWidth)
                for row in 0..<rows {
                    (dst + (y0 + row) * width + x0).update(from: blockTexels + row * blockWidth, count: columns)
                }
            }
        }
    }

    /// Decodes one block into `texels` (`blockWidth × blockHeight` little-endian RGBA words,
    /// row-major). Returns false when the block is an error block (filled with the error colour).
    @discardableResult
    package func decodeBlock(_ bits: ASTCBits, into texels: UnsafeMutablePointer<UInt32>) -> Bool {
        decodeBlock(bits, into: texels, stride: blockWidth)
    }

    /// Decodes one block into rows `stride` words apart (the image's width for a block
    /// that lies wholly inside it, so texels go straight to the output).
    @inline(__always) @discardableResult
    private func decodeBlock(_ bits: ASTCBits, into texels: UnsafeMutablePointer<UInt32>, stride: Int) -> Bool {
        let modeBits = Int(bits.lo & 0x7FF)
        if modeBits & 0x1FF == 0x1FC { return decodeVoidExtent(bits, into: texels, stride: stride) }
        let mode = entries[modeBits]
        guard mode.valid else { return fail(texels, stride: stride) }
        let partitionCount = Int((bits.lo >> 11) & 3) + 1
        let dual = mode.dualPlane
        if dual && partitionCount == 4 { return fail(texels, stride: stride) }

        // Weights: stored from bit 127 down.
        let gridCount = Int(mode.gridWidth) * Int(mode.gridHeight)
        let weightLevel = Int(mode.weightLevel)
        ASTCIntegerSequence.decode(bits.reversed, start: 0, count: dual ? 2 * gridCount : gridCount,
                                   bitsPerValue: Int(levelBits[weightLevel]), kind: Int(levelKinds[weightLevel]),
                                   into: rawWeights, trits: trits, quints: quints)
        let unquantW = weightUnquantised + weightLevel * 32
        if dual {
            for i in 0..<gridCount {
                gridWeights[i] = unquantW[Int(rawWeights[2 * i])]
                gridWeights[64 + i] = unquantW[Int(rawWeights[2 * i + 1])]
            }
        } else {
            for i in 0..<gridCount { gridWeights[i] = unquantW[Int(rawWeights[i])] }
        }

        // Endpoint modes.
        var belowWeights = 128 - Int(mode.weightBits)
        let colourStart: Int
        if partitionCount == 1 {
            endpointModes[0] = Int((bits.lo >> 13) & 0xF)
            colourStart = 17
        } else {
            colourStart = 29
            let shared = Int((bits.lo >> 23) & 0x3F)
            if shared & 3 == 0 {
                for p in 0..<partitionCount { endpointModes[p] = shared >> 2 }
            } else {
                // Per-partition modes: a class bit each, then two mode bits each; the
                // 3·count − 4 bits that do not fit sit just below the weights.
                let highSize = 3 * partitionCount - 4
                belowWeights -= highSize
                let encoded = shared | Int(bits.read(belowWeights, highSize)) << 6
                let baseClass = (encoded & 3) - 1
                for p in 0..<partitionCount {
                    let classBit = (encoded >> (2 + p)) & 1
                    let low = (encoded >> (2 + partitionCount + 2 * p)) & 3
                    endpointModes[p] = (classBit + baseClass) << 2 | low
                }
            }
        }
        var integerCount = 0
        for p in 0..<partitionCount { integerCount += ((endpointModes[p] >> 2) + 1) * 2 }
        guard integerCount <= 18 else { return fail(texels, stride: stride) }
        let colourBits = max(0, belowWeights - (dual ? 2 : 0) - colourStart)
        let colourLevel = Int(colourLevels[(integerCount >> 1) * 128 + min(colourBits, 127)])
        guard colourLevel >= ASTCIntegerSequence.minimumColourLevel else { return fail(texels, stride: stride) }
        ASTCIntegerSequence.decode(bits, start: colourStart, count: integerCount,
                                   bitsPerValue: Int(levelBits[colourLevel]), kind: Int(levelKinds[colourLevel]),
                                   into: colourValues, trits: trits, quints: quints)
        let unquantC = colourUnquantised + colourLevel * 256
        for i in 0..<integerCount { colourValues[i] = unquantC[Int(colourValues[i])] }
        let plane2Channel = dual ? Int(bits.read(belowWeights - 2, 2)) : -1

        var valueOffset = 0
        for p in 0..<partitionCount {
            ASTCEndpoints.unpack(mode: endpointModes[p], values: colourValues + valueOffset,
                                 base: endpointBase + p, slope: endpointSlope + p)
            valueOffset += ((endpointModes[p] >> 2) + 1) * 2
        }

        // Weight infill to texels.
        let plane1: UnsafePointer<UInt8>, plane2: UnsafePointer<UInt8>
        if mode.infill < 0 {
            plane1 = UnsafePointer(gridWeights)
            plane2 = UnsafePointer(gridWeights + 64)
        } else {
            modes.infill(UnsafePointer(gridWeights), at: Int(mode.infill), texels: texelCount, into: texelWeights)
            if dual { modes.infill(UnsafePointer(gridWeights + 64), at: Int(mode.infill), texels: texelCount, into: texelWeights + 144) }
            plane1 = UnsafePointer(texelWeights)
            plane2 = UnsafePointer(texelWeights + 144)
        }

        // Each texel: (base + slope · weight) >> 14 in four lanes, in Float: see ``ASTCLerp``.
        if partitionCount == 1 && !dual {
            let b = ASTCLerp.base(endpointBase[0]), s = ASTCLerp.slope(endpointSlope[0])
            for y in 0..<blockHeight {
                let row = texels + y * stride, weights = plane1 + y * blockWidth
                for x in 0..<blockWidth {
                    row[x] = ASTCLerp.word(b, s, SIMD4(repeating: Float(weights[x])))
                }
            }
            return true
        }
        let map = partitionCount > 1 ? partitionMap(count: partitionCount, seed: Int((bits.lo >> 13) & 0x3FF))
            : UnsafePointer(singlePartition)
        var bases = (SIMD4<Float>(), SIMD4<Float>(), SIMD4<Float>(), SIMD4<Float>()), slopes = bases
        bases.0 = ASTCLerp.base(endpointBase[0]); slopes.0 = ASTCLerp.slope(endpointSlope[0])
        if partitionCount > 1 { bases.1 = ASTCLerp.base(endpointBase[1]); slopes.1 = ASTCLerp.slope(endpointSlope[1]) }
        if partitionCount > 2 { bases.2 = ASTCLerp.base(endpointBase[2]); slopes.2 = ASTCLerp.slope(endpointSlope[2]) }
        if partitionCount > 3 { bases.3 = ASTCLerp.base(endpointBase[3]); slopes.3 = ASTCLerp.slope(endpointSlope[3]) }
        // Dual plane: the lane of the second plane's channel takes the second weight.
        var secondLane = SIMD4<Int32>()
        if dual { secondLane[plane2Channel] = -1 }
        let useSecond = secondLane .!= 0
        for y in 0..<blockHeight {
            let row = texels + y * stride
            for x in 0..<blockWidth {
                let t = y * blockWidth + x
                let p = map[t]
                let b = p == 0 ? bases.0 : p == 1 ? bases.1 : p == 2 ? bases.2 : bases.3
                let s = p == 0 ? slopes.0 : p == 1 ? slopes.1 : p == 2 ? slopes.2 : slopes.3
                let w = SIMD4(repeating: Float(plane1[t])).replacing(with: Float(plane2[t]), where: useSecond)
                row[x] = ASTCLerp.word(b, s, w)
            }
        }
        return true
    }

    @inline(__always) private func fill(_ texels: UnsafeMutablePointer<UInt32>, stride: Int, with word: UInt32) {
        for y in 0..<blockHeight { (texels + y * stride).update(repeating: word, count: blockWidth) }
    }

    @inline(__always) private func fail(_ texels: UnsafeMutablePointer<UInt32>, stride: Int) -> Bool {
        fill(texels, stride: stride, with: Self.errorColour)
        return false
    }

    /// Constant-colour block: 16-bit UNORM RGBA, of which unorm8 decoding keeps the top byte.
    /// HDR (FP16) void-extents and malformed extents are errors in the LDR profile.
    private func decodeVoidExtent(_ bits: ASTCBits, into texels: UnsafeMutablePointer<UInt32>, stride: Int) -> Bool {
        guard bits.lo & 0x200 == 0, bits.read(10, 2) == 3 else { return fail(texels, stride: stride) }
        let lowS = bits.read(12, 13), highS = bits.read(25, 13), lowT = bits.read(38, 13), highT = bits.read(51, 13)
        let allOnes = lowS == 0x1FFF && highS == 0x1FFF && lowT == 0x1FFF && highT == 0x1FFF
        guard allOnes || (lowS < highS && lowT < highT) else { return fail(texels, stride: stride) }
        let h = bits.hi
        let word = UInt32(truncatingIfNeeded: (h >> 8) & 0xFF) | UInt32(truncatingIfNeeded: (h >> 24) & 0xFF) << 8
            | UInt32(truncatingIfNeeded: (h >> 40) & 0xFF) << 16 | UInt32(truncatingIfNeeded: (h >> 56) & 0xFF) << 24
        fill(texels, stride: stride, with: word)
        return true
    }

    /// The partition of every texel for `count` partitions and `seed`, computed on first use.
    private func partitionMap(count: Int, seed: Int) -> UnsafePointer<UInt8> {
        let key = (count - 2) * 1024 + seed
        let map = partitionMaps + key * texelCount
        if !partitionReady[key] {
            let small = texelCount < 32
            for y in 0..<blockHeight {
                for x in 0..<blockWidth {
                    map[y * blockWidth + x] = ASTCPartition.select(seed: seed, x: x, y: y, count: count, smallBlock: small)
                }
            }
            partitionReady[key] = true
        }
        return UnsafePointer(map)
    }
}

@available(*, unavailable) extension ASTCDecoder: Sendable {}

/// The specification's procedural partition function: which of `count` partitions the
/// texel at (x, y) belongs to for a 10-bit `seed`.
package enum ASTCPartition {
    @inline(__always) static func hash(_ value: UInt32) -> UInt32 {
        var v = value
        v ^= v >> 15
        v &*= 0xEEDE_0891
        v ^= v >> 5
        v &+= v << 16
        v ^= v >> 7
        v ^= v >> 3
        v ^= v << 6
        v ^= v >> 17
        return v
    }

    package static func select(seed: Int, x: Int, y: Int, count: Int, smallBlock: Bool) -> UInt8 {
        guard count > 1 else { return 0 }
        let x = smallBlock ? x << 1 : x, y = smallBlock ? y << 1 : y
        let fullSeed = seed + (count - 1) * 1024
        let r = hash(UInt32(fullSeed))
        func nibble(_ shift: UInt32) -> Int {
            let n = Int((r >> shift) & 0xF)
            return n * n
        }
        var s = [nibble(0), nibble(4), nibble(8), nibble(12), nibble(16), nibble(20), nibble(24), nibble(28)]
        let sh1: Int, sh2: Int
        if fullSeed & 1 != 0 {
            sh1 = fullSeed & 2 != 0 ? 4 : 5
            sh2 = count == 3 ? 6 : 5
        } else {
            sh1 = count == 3 ? 6 : 5
            sh2 = fullSeed & 2 != 0 ? 4 : 5
        }
        for i in 0..<8 { s[i] >>= (i & 1 == 0 ? sh1 : sh2) }
        // z = 0 in 2D, so the third-axis seeds drop out.
        let a = (s[0] * x + s[1] * y + Int(r >> 14)) & 0x3F
        var b = (s[2] * x + s[3] * y + Int(r >> 10)) & 0x3F
        var c = (s[4] * x + s[5] * y + Int(r >> 6)) & 0x3F
        var d = (s[6] * x + s[7] * y + Int(r >> 2)) & 0x3F
        if count <= 3 { d = 0 }
        if count <= 2 { c = 0 }
        if count <= 1 { b = 0 }
        if a >= b && a >= c && a >= d { return 0 }
        if b >= c && b >= d { return 1 }
        return c >= d ? 2 : 3
    }
}

/// The decoder's interpolation `(base + slope · w) >> 14` (base = 257·64·e0 + 32, slope =
/// 257·(e1 − e0), w = 0…64) done in Float lanes, because x86-64's baseline SSE2 has no
/// 32-bit lane multiply. Exact: every value is below 2²³ and a multiple of 2⁻¹⁵ after the
/// scaling by 2⁻¹⁴, so no step rounds; the floor comes from shifting by half a step less
/// than ½ (so no value is a tie) and adding 1.5 · 2²³, where Floats are whole numbers
/// (also for the values just below zero), which leaves the integer in the low mantissa bits.
package enum ASTCLerp {
    @inline(__always) package static func base(_ b: SIMD4<Int32>) -> SIMD4<Float> {
        (SIMD4<Float>(b) - 8191.5) * (1 / 16384)
    }

    @inline(__always) package static func slope(_ s: SIMD4<Int32>) -> SIMD4<Float> {
        SIMD4<Float>(s) * (1 / 16384)
    }

    /// The texel as a little-endian RGBA word for weights `w` (one per lane).
    @inline(__always) package static func word(_ b: SIMD4<Float>, _ s: SIMD4<Float>, _ w: SIMD4<Float>) -> UInt32 {
        let v = (b + s * w) + 12_582_912
        return unsafeBitCast(SIMD4<UInt8>(truncatingIfNeeded: unsafeBitCast(v, to: SIMD4<UInt32>.self)), to: UInt32.self)
    }
}

/// Colour endpoint modes → the two 8-bit RGBA endpoints, stored as the interpolation
/// constants the decoder uses (`257·64·e0 + 32` and `257·(e1 − e0)`; see ``ASTCDecoder``).
package enum ASTCEndpoints {
    /// Unpacks mode `mode` from its unquantised `values`; HDR modes give the error colour.
    @inline(__always)
    package static func unpack(mode: Int, values v: UnsafePointer<UInt8>, base: UnsafeMutablePointer<SIMD4<Int32>>,
                               slope: UnsafeMutablePointer<SIMD4<Int32>>) {
        var e0 = SIMD4<Int32>(0, 0, 0, 255), e1 = SIMD4<Int32>(0, 0, 0, 255)
        endpoints(mode: mode, values: v, e0: &e0, e1: &e1)
        base.pointee = 257 &* 64 &* e0 &+ 32
        slope.pointee = 257 &* (e1 &- e0)
    }

    /// The two 8-bit endpoints of mode `mode` (LDR modes per the specification's table).
    package static func endpoints(mode: Int, values v: UnsafePointer<UInt8>, e0: inout SIMD4<Int32>, e1: inout SIMD4<Int32>) {
        @inline(__always) func i(_ k: Int) -> Int32 { Int32(v[k]) }
        switch mode {
        case 0: // luminance
            e0 = SIMD4(i(0), i(0), i(0), 255); e1 = SIMD4(i(1), i(1), i(1), 255)
        case 1: // luminance, base + offset
            let l0 = (i(0) >> 2) | (i(1) & 0xC0)
            let l1 = min(l0 + (i(1) & 0x3F), 255)
            e0 = SIMD4(l0, l0, l0, 255); e1 = SIMD4(l1, l1, l1, 255)
        case 4: // luminance + alpha
            e0 = SIMD4(i(0), i(0), i(0), i(2)); e1 = SIMD4(i(1), i(1), i(1), i(3))
        case 5: // luminance + alpha, base + offset
            var (l0, l1) = transfer(base: i(0), offset: i(1))
            var (a0, a1) = transfer(base: i(2), offset: i(3))
            l1 = clamp(l0 + l1); a1 = clamp(a0 + a1)
            l0 = clamp(l0); a0 = clamp(a0)
            e0 = SIMD4(l0, l0, l0, a0); e1 = SIMD4(l1, l1, l1, a1)
        case 6: // RGB × scale
            e1 = SIMD4(i(0), i(1), i(2), 255)
            e0 = SIMD4((i(0) * i(3)) >> 8, (i(1) * i(3)) >> 8, (i(2) * i(3)) >> 8, 255)
        case 8: // RGB direct
            rgba(SIMD4(i(0), i(2), i(4), 255), SIMD4(i(1), i(3), i(5), 255), e0: &e0, e1: &e1)
        case 9: // RGB base + offset
            delta(SIMD4(i(0), i(2), i(4), 0), SIMD4(i(1), i(3), i(5), 0), e0: &e0, e1: &e1)
            e0[3] = 255; e1[3] = 255
        case 10: // RGB × scale + two alphas
            e1 = SIMD4(i(0), i(1), i(2), i(5))
            e0 = SIMD4((i(0) * i(3)) >> 8, (i(1) * i(3)) >> 8, (i(2) * i(3)) >> 8, i(4))
        case 12: // RGBA direct
            rgba(SIMD4(i(0), i(2), i(4), i(6)), SIMD4(i(1), i(3), i(5), i(7)), e0: &e0, e1: &e1)
        case 13: // RGBA base + offset
            delta(SIMD4(i(0), i(2), i(4), i(6)), SIMD4(i(1), i(3), i(5), i(7)), e0: &e0, e1: &e1)
        default: // 2, 3, 7, 11, 14, 15: HDR, an error in the LDR profile
            e0 = SIMD4(255, 0, 255, 255); e1 = e0
        }
    }

    @inline(__always) static func clamp(_ x: Int32) -> Int32 { min(max(x, 0), 255) }

    /// The specification's `bit_transfer_signed`: the offset's top bit moves to the base's
    /// ninth bit, and the offset becomes a signed 6-bit value.
    @inline(__always) static func transfer(base: Int32, offset: Int32) -> (Int32, Int32) {
        let b = (base >> 1) | (offset & 0x80)
        var a = (offset >> 1) & 0x3F
        if a & 0x20 != 0 { a -= 0x40 }
        return (b, a)
    }

    /// Blue contraction undone: R and G are stored as their average with B.
    @inline(__always) static func uncontract(_ c: SIMD4<Int32>) -> SIMD4<Int32> {
        SIMD4((c[0] + c[2]) >> 1, (c[1] + c[2]) >> 1, c[2], c[3])
    }

    @inline(__always) static func rgba(_ c0: SIMD4<Int32>, _ c1: SIMD4<Int32>, e0: inout SIMD4<Int32>, e1: inout SIMD4<Int32>) {
        if c0[0] + c0[1] + c0[2] > c1[0] + c1[1] + c1[2] {
            e0 = uncontract(c1); e1 = uncontract(c0)
        } else {
            e0 = c0; e1 = c1
        }
    }

    @inline(__always) static func delta(_ b: SIMD4<Int32>, _ o: SIMD4<Int32>, e0: inout SIMD4<Int32>, e1: inout SIMD4<Int32>) {
        var base = SIMD4<Int32>(), offset = SIMD4<Int32>()
        for c in 0..<4 { (base[c], offset[c]) = transfer(base: b[c], offset: o[c]) }
        let end = base &+ offset
        var lo = base, hi = end
        if offset[0] + offset[1] + offset[2] < 0 {
            lo = uncontract(end); hi = uncontract(base)
        }
        for c in 0..<4 { e0[c] = clamp(lo[c]); e1[c] = clamp(hi[c]) }
    }
}

/// Per 11-bit block mode of one footprint: weight grid, weight quantisation, dual plane,
/// the weight bits it takes and its infill table; invalid modes (reserved encodings, grids
/// larger than the footprint, weight counts or bit counts outside the specification's
/// limits) are marked so the decoder emits the error colour.
///
/// Sendable: immutable after `init`; `infillTaps` is written only there.
package final class ASTCBlockModes: @unchecked Sendable {
    package struct Entry: Sendable {
        package var gridWidth: UInt8 = 0
        package var gridHeight: UInt8 = 0
        package var weightLevel: UInt8 = 0
        package var weightBits: UInt8 = 0
        package var dualPlane = false
        package var valid = false
        /// Offset of this grid's infill table in `infillTaps`, or -1 when the grid is the footprint.
        package var infill: Int32 = -1
    }

    package let entries: [Entry]
    /// Per texel of each decimated grid: 4 grid indices and 4 weights (summing to 16), as
    /// two packed words.
    package let infillTaps: UnsafeMutablePointer<UInt32>
    package let infillTapCount: Int

    private init(format: ASTCFormat) {
        let bw = format.blockWidth, bh = format.blockHeight
        var entries = [Entry](repeating: Entry(), count: 2048)
        var gridOffsets: [Int: Int32] = [:]
        var taps: [UInt32] = []
        for mode in 0..<2048 {
            guard let (gw, gh, dual, level) = Self.decodeMode(mode), gw <= bw, gh <= bh else { continue }
            let count = gw * gh * (dual ? 2 : 1)
            let bits = ASTCIntegerSequence.bitCount(count: count, level: level)
            guard count <= 64, bits >= 24, bits <= 96 else { continue }
            var entry = Entry(gridWidth: UInt8(gw), gridHeight: UInt8(gh), weightLevel: UInt8(level),
                              weightBits: UInt8(bits), dualPlane: dual, valid: true, infill: -1)
            if gw != bw || gh != bh {
                let key = gw * 16 + gh
                if let offset = gridOffsets[key] {
                    entry.infill = offset
                } else {
                    let offset = Int32(taps.count)
                    gridOffsets[key] = offset
                    taps += Self.infillTable(blockWidth: bw, blockHeight: bh, gridWidth: gw, gridHeight: gh)
                    entry.infill = offset
                }
            }
            entries[mode] = entry
        }
        self.entries = entries
        infillTapCount = taps.count
        infillTaps = .allocate(capacity: max(taps.count, 1))
        _ = UnsafeMutableBufferPointer(start: infillTaps, count: taps.count).initialize(from: taps)
    }

    deinit { infillTaps.deallocate() }

    private static let cache = ASTCFormat.allCases.map { ASTCBlockModes(format: $0) }

    /// The shared, immutable table for `format` (built once per process).
    package static func table(for format: ASTCFormat) -> ASTCBlockModes {
        cache[ASTCFormat.allCases.firstIndex(of: format)!]
    }

    /// Grid width, height, dual plane and weight level of an 11-bit mode; nil if reserved.
    package static func decodeMode(_ m: Int) -> (Int, Int, Bool, Int)? {
        var r = (m >> 4) & 1
        var h = (m >> 9) & 1
        var d = (m >> 10) & 1
        let a = (m >> 5) & 3
        let gw: Int, gh: Int
        if m & 3 != 0 {
            r |= (m & 3) << 1
            let b = (m >> 7) & 3
            switch (m >> 2) & 3 {
            case 0: (gw, gh) = (b + 4, a + 2)
            case 1: (gw, gh) = (b + 8, a + 2)
            case 2: (gw, gh) = (a + 2, b + 8)
            default:
                if m & 0x100 != 0 { (gw, gh) = ((b & 1) + 2, a + 2) } else { (gw, gh) = (a + 2, (b & 1) + 6) }
            }
        } else {
            r |= ((m >> 2) & 3) << 1
            guard (m >> 2) & 3 != 0 else { return nil }
            let b = (m >> 9) & 3
            switch (m >> 7) & 3 {
            case 0: (gw, gh) = (12, a + 2)
            case 1: (gw, gh) = (a + 2, 12)
            case 2: (gw, gh) = (a + 6, b + 6); d = 0; h = 0
            default:
                switch a {
                case 0: (gw, gh) = (6, 10)
                case 1: (gw, gh) = (10, 6)
                default: return nil
                }
            }
        }
        return (gw, gh, d != 0, r - 2 + 6 * h)
    }

    /// The specification's bilinear infill: texel (s, t) samples the grid at
    /// `((1024 + bw/2) / (bw − 1) · s · (gw − 1) + 32) >> 6` in 1/16 steps.
    static func infillTable(blockWidth bw: Int, blockHeight bh: Int, gridWidth gw: Int, gridHeight gh: Int) -> [UInt32] {
        var taps: [UInt32] = []
        let ds = (1024 + bw / 2) / (bw - 1), dt = (1024 + bh / 2) / (bh - 1)
        for t in 0..<bh {
            for s in 0..<bw {
                let gs = (ds * s * (gw - 1) + 32) >> 6, gt = (dt * t * (gh - 1) + 32) >> 6
                let js = gs >> 4, fs = gs & 0xF, jt = gt >> 4, ft = gt & 0xF
                let w11 = (fs * ft + 8) >> 4
                let w10 = ft - w11, w01 = fs - w11, w00 = 16 - fs - ft + w11
                let v0 = js + jt * gw
                // Taps with zero weight may fall off the grid: point them at v0.
                let i01 = w01 == 0 ? v0 : v0 + 1
                let i10 = w10 == 0 ? v0 : v0 + gw
                let i11 = w11 == 0 ? v0 : v0 + gw + 1
                taps.append(UInt32(v0) | UInt32(i01) << 8 | UInt32(i10) << 16 | UInt32(i11) << 24)
                taps.append(UInt32(w00) | UInt32(w01) << 8 | UInt32(w10) << 16 | UInt32(w11) << 24)
            }
        }
        return taps
    }

    /// Infills one plane: `out[texel] = (Σ grid[tap] · weight + 8) >> 4`.
    @inline(__always)
    package func infill(_ grid: UnsafePointer<UInt8>, at offset: Int, texels: Int, into out: UnsafeMutablePointer<UInt8>) {
        let taps = infillTaps + offset
        for t in 0..<texels {
            let i = taps[2 * t], w = taps[2 * t + 1]
            let sum = UInt32(grid[Int(i & 0xFF)]) &* (w & 0xFF) &+ UInt32(grid[Int((i >> 8) & 0xFF)]) &* ((w >> 8) & 0xFF)
                &+ UInt32(grid[Int((i >> 16) & 0xFF)]) &* ((w >> 16) & 0xFF) &+ UInt32(grid[Int(i >> 24)]) &* (w >> 24)
            out[t] = UInt8(truncatingIfNeeded: (sum &+ 8) >> 4)
        }
    }
}
