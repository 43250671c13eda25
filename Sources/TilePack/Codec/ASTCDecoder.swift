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
/// How it is fast: the block mode's 11 bits index a table of descriptors (grid, weight
/// range, plane count, infill table), so the header is one lookup. The integer sequences
/// decode with every shift a constant (one specialised loop per range) and unquantise in
/// the same pass. Every texel's weight is carried as four 16-bit lanes (one per channel; a
/// dual-plane block puts the second plane's weight in its channel's lane), infilled with
/// one 64-bit multiply (``ASTCBlockModes/infilled(_:_:)``) when the grid is smaller than
/// the footprint. The interpolation runs four texels at a time in 16-bit SIMD lanes
/// (``ASTCTexels``) and stores RGBA8 straight into the image.
///
/// Cost: per block, two integer-sequence decodes (weights, colours) at a shift, a mask and
/// a table load a value; per texel one or two multiplies; per four texels about ten SIMD
/// instructions. Partition maps are computed once per (count, seed) and cached. All
/// scratch is owned by the decoder, so decoding into a caller's buffer allocates nothing.
/// Not thread-safe.
public final class ASTCDecoder {
    public let format: ASTCFormat
    let blockWidth: Int
    let blockHeight: Int
    let texelCount: Int

    /// Opaque magenta, the specification's error colour, as a little-endian RGBA word.
    public static let errorColour: UInt32 = 0xFFFF_00FF

    /// Per 11-bit block mode: see ``ASTCBlockModes``.
    let modes: ASTCBlockModes
    /// ``modes`` as the block loop reads it, one ``Descriptor`` per 11-bit mode.
    private let descriptors: UnsafeMutablePointer<Descriptor>
    /// Per texel of every partition (count 2…4, seed 0…1023): its partition, filled lazily.
    private let partitionMaps: UnsafeMutablePointer<UInt8>
    private let partitionReady: UnsafeMutablePointer<Bool>
    // Tables copied out of their arrays so the block loop reads plain pointers.
    private let trits: UnsafeMutablePointer<UInt8>
    private let quints: UnsafeMutablePointer<UInt8>
    /// The unquantisation tables widened to 16 bits: see
    /// ``ASTCIntegerSequence/decode(_:count:level:table:into:trits:quints:)``.
    private let colourUnquantised: UnsafeMutablePointer<UInt16>
    private let weightUnquantised: UnsafeMutablePointer<UInt16>
    private let colourLevels: UnsafeMutablePointer<Int8>
    // Per-block scratch.
    private let rawWeights: UnsafeMutablePointer<UInt16>  // 64 (+ 4 slack) unquantised dual-plane weights
    /// 2 planes × 80 unquantised grid weights (0…64), 16 bits each so a weight and its right
    /// neighbour load as one 32-bit word (two lanes); the 16 past the largest grid keep
    /// values ≤ 64, so a neighbour read past a grid's end stays inside and multiplies a zero
    /// tap weight.
    private let gridWeights: UnsafeMutablePointer<UInt16>
    private let texelLanes: UnsafeMutablePointer<UInt64>  // 144 texels: a 16-bit weight per channel
    private let colourValues: UnsafeMutablePointer<UInt16>  // 18 (+ 4 slack) unquantised colour integers
    /// Per partition: base (64·e0) and slope (e1 − e0) as four 16-bit lanes; see ``ASTCTexels``.
    private let endpointBase: UnsafeMutablePointer<UInt64>
    private let endpointSlope: UnsafeMutablePointer<UInt64>
    /// Per texel of a multi-partition block: its partition's base and slope.
    private let texelBase: UnsafeMutablePointer<UInt64>
    private let texelSlope: UnsafeMutablePointer<UInt64>
    private let blockTexels: UnsafeMutablePointer<UInt32>  // one decoded block
    private let endpointModes: UnsafeMutablePointer<Int>  // per partition

    /// One block mode as the block loop needs it (12 bytes).
    struct Descriptor {
        var valid = false
        var weightLevel: UInt8 = 0
        var weightBits: UInt8 = 0  // bits the weight sequence takes
        var gridCount: UInt8 = 0  // weights a plane
        var gridWidth: UInt8 = 0
        var dualPlane = false
        /// First texel of the grid's rows in ``ASTCBlockModes/infillOrigins`` and
        /// ``ASTCBlockModes/infillLanes``; -1 when the grid is the footprint.
        var infill: Int32 = -1
    }

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
        descriptors = copy(
            modes.entries.map { e in
                guard e.valid else { return Descriptor() }
                return Descriptor(
                    valid: true, weightLevel: e.weightLevel, weightBits: e.weightBits,
                    gridCount: e.gridWidth &* e.gridHeight,
                    gridWidth: e.gridWidth, dualPlane: e.dualPlane, infill: e.infill < 0 ? -1 : e.infill / 2)
            })
        trits = copy(ASTCIntegerSequence.tritTable)
        quints = copy(ASTCIntegerSequence.quintTable)
        colourUnquantised = copy(ASTCIntegerSequence.colourUnquantised.map(UInt16.init))
        weightUnquantised = copy(ASTCIntegerSequence.weightUnquantised.map(UInt16.init))
        colourLevels = copy(ASTCIntegerSequence.colourLevels)
        /// Zero-filled per-block scratch of `count` values (read before written on some paths).
        func zeroed<T: FixedWidthInteger>(_ count: Int) -> UnsafeMutablePointer<T> {
            let p = UnsafeMutablePointer<T>.allocate(capacity: count)
            p.initialize(repeating: 0, count: count)
            return p
        }
        rawWeights = zeroed(72)
        gridWeights = zeroed(160)
        texelLanes = zeroed(144)
        colourValues = zeroed(32)
        endpointBase = zeroed(4)
        endpointSlope = zeroed(4)
        texelBase = zeroed(144)
        texelSlope = zeroed(144)
        blockTexels = zeroed(144)
        endpointModes = zeroed(4)
    }

    deinit {
        descriptors.deallocate(); partitionMaps.deallocate(); partitionReady.deallocate()
        trits.deallocate(); quints.deallocate(); colourUnquantised.deallocate(); weightUnquantised.deallocate()
        colourLevels.deallocate()
        rawWeights.deallocate(); gridWeights.deallocate(); texelLanes.deallocate()
        colourValues.deallocate(); endpointBase.deallocate(); endpointSlope.deallocate()
        texelBase.deallocate(); texelSlope.deallocate(); blockTexels.deallocate(); endpointModes.deallocate()
    }

    /// Decodes `blocks` (row-major, 16 bytes each) into a new RGBA8 buffer of `width × height`.
    /// - Throws: ``CodecError`` for a size outside 1…16384 or a byte count that does not match.
    public func decode(_ blocks: [UInt8], width: Int, height: Int) throws -> [UInt8] {
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
    public func decode(
        _ blocks: UnsafeRawBufferPointer, width: Int, height: Int,
        into rgba: UnsafeMutableRawBufferPointer
    ) throws {
        try check(blockCount: blocks.count, width: width, height: height)
        guard rgba.count == width * height * 4 else {
            throw CodecError.byteCount(what: "RGBA output", expected: width * height * 4, actual: rgba.count)
        }
        decodeChecked(blocks, width: width, height: height, into: rgba)
    }

    private func check(blockCount: Int, width: Int, height: Int) throws {
        try format.validate(width: width, height: height)
        let expected = format.byteCount(width: width, height: height)
        guard blockCount == expected else {
            throw CodecError.byteCount(what: "\(format.rawValue) blocks", expected: expected, actual: blockCount)
        }
    }

    /// The image loop once sizes are proven: every block read is inside `blocks`, every
    /// row written inside `rgba`.
    private func decodeChecked(
        _ blocks: UnsafeRawBufferPointer, width: Int, height: Int, into rgba: UnsafeMutableRawBufferPointer
    ) {
        guard let src = blocks.baseAddress, let out = rgba.baseAddress else { return }  // 1×1 at least: never empty
        let grid = format.blockGrid(width: width, height: height)
        let dst = out.assumingMemoryBound(to: UInt32.self)
        for by in 0..<grid.high {
            let y0 = by * blockHeight
            let rows = min(blockHeight, height - y0)
            for bx in 0..<grid.wide {
                let offset = (by * grid.wide + bx) * 16
                let bits = ASTCBits(
                    lo: UInt64(littleEndian: src.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
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
        let mode = descriptors[modeBits]
        guard mode.valid else { return fail(texels, stride: stride) }
        let partitionCount = Int((bits.lo >> 11) & 3) + 1
        let dual = mode.dualPlane
        if dual && partitionCount == 4 { return fail(texels, stride: stride) }

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

        // Colour endpoints.
        let colourBits = max(0, belowWeights - (dual ? 2 : 0) - colourStart)
        let colourLevel = Int(colourLevels[(integerCount >> 1) * 128 + min(colourBits, 127)])
        guard colourLevel >= ASTCIntegerSequence.minimumColourLevel else { return fail(texels, stride: stride) }
        ASTCIntegerSequence.decode(
            bits.wide &>> UInt128(colourStart), count: integerCount, level: colourLevel,
            table: colourUnquantised + colourLevel * 256, into: colourValues, trits: trits, quints: quints)
        var valueOffset = 0
        for p in 0..<partitionCount {
            (endpointBase[p], endpointSlope[p]) = ASTCEndpoints.lanes(
                mode: endpointModes[p], values: colourValues + valueOffset)
            valueOffset += ((endpointModes[p] >> 2) + 1) * 2
        }

        // Weights (stored from bit 127 down), unquantised, to one lane word per texel.
        let gridCount = Int(mode.gridCount)
        let weightLevel = Int(mode.weightLevel)
        ASTCIntegerSequence.decode(
            bits.reversed.wide, count: dual ? 2 * gridCount : gridCount, level: weightLevel,
            table: weightUnquantised + weightLevel * 32, into: dual ? rawWeights : gridWeights,
            trits: trits, quints: quints)
        if dual {
            let channel = Int(bits.read(belowWeights - 2, 2))
            texelWeightLanes(dual: mode, second: UInt64(1) << UInt64(16 * channel))
        } else if mode.infill < 0 {
            for t in 0..<texelCount { texelLanes[t] = UInt64(gridWeights[t]) &* 0x0001_0001_0001_0001 }
        } else {
            let width = Int(mode.gridWidth)
            let origins = modes.infillOrigins + Int(mode.infill), taps = modes.infillLanes + Int(mode.infill)
            for t in 0..<texelCount {
                texelLanes[t] =
                    ASTCBlockModes.infilled(gridTaps(gridWeights, at: Int(origins[t]), width: width), taps[t])
                    &* 0x0001_0001_0001_0001
            }
        }

        // Texels.
        if partitionCount == 1 {
            ASTCTexels.rows(
                texels, stride: stride, width: blockWidth, height: blockHeight, weights: texelLanes,
                base: endpointBase, slope: endpointSlope, perTexel: false)
        } else {
            let map = partitionMap(count: partitionCount, seed: Int((bits.lo >> 13) & 0x3FF))
            for t in 0..<texelCount {
                let p = Int(map[t])
                texelBase[t] = endpointBase[p]
                texelSlope[t] = endpointSlope[p]
            }
            ASTCTexels.rows(
                texels, stride: stride, width: blockWidth, height: blockHeight, weights: texelLanes,
                base: texelBase, slope: texelSlope, perTexel: true)
        }
        return true
    }

    /// Dual-plane weights (`rawWeights` unquantised, planes interleaved): each texel's lane
    /// word holds the first plane's weight in three lanes and the second plane's in the lane
    /// where `second` has its 1.
    private func texelWeightLanes(dual mode: Descriptor, second: UInt64) {
        let first = 0x0001_0001_0001_0001 &- second
        if mode.infill < 0 {
            for t in 0..<texelCount {
                texelLanes[t] = UInt64(rawWeights[2 * t]) &* first &+ UInt64(rawWeights[2 * t + 1]) &* second
            }
            return
        }
        let gridCount = Int(mode.gridCount)
        let plane2 = gridWeights + 80
        for j in 0..<gridCount {
            gridWeights[j] = rawWeights[2 * j]
            plane2[j] = rawWeights[2 * j + 1]
        }
        let width = Int(mode.gridWidth)
        let origins = modes.infillOrigins + Int(mode.infill), taps = modes.infillLanes + Int(mode.infill)
        for t in 0..<texelCount {
            let o = Int(origins[t]), tap = taps[t]
            texelLanes[t] =
                ASTCBlockModes.infilled(gridTaps(gridWeights, at: o, width: width), tap) &* first
                &+ ASTCBlockModes.infilled(gridTaps(plane2, at: o, width: width), tap) &* second
        }
    }

    /// Grid weight `origin` with its right, lower and lower-right neighbours as four 16-bit
    /// lanes (the four infill taps of a texel whose top-left tap it is): two unaligned 32-bit
    /// loads. Reads up to `origin + width + 1`, inside the zero-padded plane.
    @inline(__always)
    private func gridTaps(_ g: UnsafeMutablePointer<UInt16>, at origin: Int, width: Int) -> UInt64 {
        let top = UInt32(littleEndian: UnsafeRawPointer(g + origin).loadUnaligned(as: UInt32.self))
        let below = UInt32(littleEndian: UnsafeRawPointer(g + origin + width).loadUnaligned(as: UInt32.self))
        return UInt64(top) | UInt64(below) << 32
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
        let word =
            UInt32(truncatingIfNeeded: (h >> 8) & 0xFF) | UInt32(truncatingIfNeeded: (h >> 24) & 0xFF) << 8
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
                    map[y * blockWidth + x] = ASTCPartition.select(
                        seed: seed, x: x, y: y, count: count, smallBlock: small)
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

/// The decoder's interpolation, exactly astcenc's unorm8 path: with endpoints e0, e1 widened
/// to 16 bits by ×257, `c = (257·e0·(64 − w) + 257·e1·w + 32) >> 6`, of which the top byte is
/// kept, i.e. `(257·v + 32) >> 14` with `v = 64·e0 + (e1 − e0)·w`. Since `257·v + 32 =
/// 256·(v + q) + r` with `q = (v + 32) >> 8` and `r < 256`, that equals
/// `(v + ((v + 32) >> 8)) >> 6`; `v` lies in 0…16320 and `(e1 − e0)·w` in −16320…16320, so
/// every step fits a 16-bit lane (x86-64's baseline SSE2 multiplies 16-bit lanes, not 32-bit
/// ones). Four texels (16 lanes, RGBA each) go through at a time and pack to 16 bytes.
package enum ASTCTexels {
    /// Writes `height` rows of `width` texels, rows `stride` words apart. `weights` holds a
    /// lane word per texel (row-major, `width` a row); `base` and `slope` hold the endpoint
    /// lanes (64·e0 and e1 − e0), one pair per texel when `perTexel`, else one pair for all.
    /// Cost: per four texels two 32-byte loads (four with `perTexel`), ten SIMD operations
    /// and one 16-byte store.
    @inline(__always)
    package static func rows(
        _ texels: UnsafeMutablePointer<UInt32>, stride: Int, width: Int, height: Int,
        weights: UnsafePointer<UInt64>, base: UnsafePointer<UInt64>, slope: UnsafePointer<UInt64>,
        perTexel: Bool
    ) {
        let base4 = unsafeBitCast(SIMD4<UInt64>(repeating: base[0]), to: SIMD16<Int16>.self)
        let slope4 = unsafeBitCast(SIMD4<UInt64>(repeating: slope[0]), to: SIMD16<Int16>.self)
        for y in 0..<height {
            let row = UnsafeMutableRawPointer(texels + y * stride)
            let first = y * width
            var x = 0
            while x + 4 <= width {
                let t = first + x
                let w = UnsafeRawPointer(weights + t).loadUnaligned(as: SIMD16<Int16>.self)
                let b = perTexel ? UnsafeRawPointer(base + t).loadUnaligned(as: SIMD16<Int16>.self) : base4
                let s = perTexel ? UnsafeRawPointer(slope + t).loadUnaligned(as: SIMD16<Int16>.self) : slope4
                let v = b &+ s &* w
                row.storeBytes(
                    of: SIMD16<UInt8>(truncatingIfNeeded: (v &+ ((v &+ 32) &>> 8)) &>> 6),
                    toByteOffset: 4 * x, as: SIMD16<UInt8>.self)
                x += 4
            }
            if x + 2 <= width {
                let t = first + x
                let w = UnsafeRawPointer(weights + t).loadUnaligned(as: SIMD8<Int16>.self)
                let b = perTexel ? UnsafeRawPointer(base + t).loadUnaligned(as: SIMD8<Int16>.self) : base4.lowHalf
                let s = perTexel ? UnsafeRawPointer(slope + t).loadUnaligned(as: SIMD8<Int16>.self) : slope4.lowHalf
                let v = b &+ s &* w
                row.storeBytes(
                    of: SIMD8<UInt8>(truncatingIfNeeded: (v &+ ((v &+ 32) &>> 8)) &>> 6),
                    toByteOffset: 4 * x, as: SIMD8<UInt8>.self)
                x += 2
            }
            if x < width {
                let t = first + x
                let w = unsafeBitCast(weights[t], to: SIMD4<Int16>.self)
                let b = unsafeBitCast(perTexel ? base[t] : base[0], to: SIMD4<Int16>.self)
                let s = unsafeBitCast(perTexel ? slope[t] : slope[0], to: SIMD4<Int16>.self)
                let v = b &+ s &* w
                row.storeBytes(
                    of: SIMD4<UInt8>(truncatingIfNeeded: (v &+ ((v &+ 32) &>> 8)) &>> 6),
                    toByteOffset: 4 * x, as: SIMD4<UInt8>.self)
            }
        }
    }
}

/// Colour endpoint modes → the two 8-bit RGBA endpoints, and those as the lane words the
/// decoder interpolates with (see ``ASTCTexels``).
package enum ASTCEndpoints {
    /// Mode `mode`'s endpoints from its unquantised `values` as the decoder's lane words
    /// (``ASTCTexels``): `64·e0` and `e1 − e0`, a 16-bit lane per channel (R lowest).
    @inline(__always)
    package static func lanes(mode: Int, values v: UnsafePointer<UInt16>) -> (base: UInt64, slope: UInt64) {
        var e0 = SIMD4<Int32>(0, 0, 0, 255), e1 = SIMD4<Int32>(0, 0, 0, 255)
        endpoints(mode: mode, values: v, e0: &e0, e1: &e1)
        return (
            unsafeBitCast(SIMD4<Int16>(truncatingIfNeeded: e0 &* 64), to: UInt64.self),
            unsafeBitCast(SIMD4<Int16>(truncatingIfNeeded: e1 &- e0), to: UInt64.self)
        )
    }

    /// The two 8-bit endpoints of mode `mode` (LDR modes per the specification's table).
    /// Every value is 0…255, so sums and products cannot overflow Int32: the arithmetic
    /// wraps (`&+`, `&*`) to drop the overflow checks.
    @inline(__always)
    package static func endpoints(
        mode: Int, values v: UnsafePointer<UInt16>, e0: inout SIMD4<Int32>, e1: inout SIMD4<Int32>
    ) {
        @inline(__always) func i(_ k: Int) -> Int32 { Int32(v[k]) }
        switch mode {
        case 0:  // luminance
            e0 = SIMD4(i(0), i(0), i(0), 255); e1 = SIMD4(i(1), i(1), i(1), 255)
        case 1:  // luminance, base + offset
            let l0 = (i(0) >> 2) | (i(1) & 0xC0)
            let l1 = min(l0 &+ (i(1) & 0x3F), 255)
            e0 = SIMD4(l0, l0, l0, 255); e1 = SIMD4(l1, l1, l1, 255)
        case 4:  // luminance + alpha
            e0 = SIMD4(i(0), i(0), i(0), i(2)); e1 = SIMD4(i(1), i(1), i(1), i(3))
        case 5:  // luminance + alpha, base + offset
            var (l0, l1) = transfer(base: i(0), offset: i(1))
            var (a0, a1) = transfer(base: i(2), offset: i(3))
            l1 = clamp(l0 &+ l1); a1 = clamp(a0 &+ a1)
            l0 = clamp(l0); a0 = clamp(a0)
            e0 = SIMD4(l0, l0, l0, a0); e1 = SIMD4(l1, l1, l1, a1)
        case 6:  // RGB × scale
            e1 = SIMD4(i(0), i(1), i(2), 255)
            e0 = SIMD4((i(0) &* i(3)) >> 8, (i(1) &* i(3)) >> 8, (i(2) &* i(3)) >> 8, 255)
        case 8:  // RGB direct
            rgba(SIMD4(i(0), i(2), i(4), 255), SIMD4(i(1), i(3), i(5), 255), e0: &e0, e1: &e1)
        case 9:  // RGB base + offset
            delta(SIMD4(i(0), i(2), i(4), 0), SIMD4(i(1), i(3), i(5), 0), e0: &e0, e1: &e1)
            e0[3] = 255; e1[3] = 255
        case 10:  // RGB × scale + two alphas
            e1 = SIMD4(i(0), i(1), i(2), i(5))
            e0 = SIMD4((i(0) &* i(3)) >> 8, (i(1) &* i(3)) >> 8, (i(2) &* i(3)) >> 8, i(4))
        case 12:  // RGBA direct
            rgba(SIMD4(i(0), i(2), i(4), i(6)), SIMD4(i(1), i(3), i(5), i(7)), e0: &e0, e1: &e1)
        case 13:  // RGBA base + offset
            delta(SIMD4(i(0), i(2), i(4), i(6)), SIMD4(i(1), i(3), i(5), i(7)), e0: &e0, e1: &e1)
        default:  // 2, 3, 7, 11, 14, 15: HDR, an error in the LDR profile
            e0 = SIMD4(255, 0, 255, 255); e1 = e0
        }
    }

    @inline(__always) static func clamp(_ x: Int32) -> Int32 { min(max(x, 0), 255) }

    /// The specification's `bit_transfer_signed`: the offset's top bit moves to the base's
    /// ninth bit, and the offset becomes a signed 6-bit value.
    @inline(__always) static func transfer(base: Int32, offset: Int32) -> (Int32, Int32) {
        let b = (base >> 1) | (offset & 0x80)
        var a = (offset >> 1) & 0x3F
        if a & 0x20 != 0 { a &-= 0x40 }
        return (b, a)
    }

    /// Blue contraction undone: R and G are stored as their average with B. The encoder's
    /// rounding of contracted ends reads them back through it.
    @inline(__always) package static func uncontract(_ c: SIMD4<Int32>) -> SIMD4<Int32> {
        SIMD4((c[0] &+ c[2]) >> 1, (c[1] &+ c[2]) >> 1, c[2], c[3])
    }

    /// Direct endpoints (modes 8 and 12) from the stored values of the first (`c0`) and second
    /// (`c1`) slot: swapped and blue-contracted when the second's R + G + B is the smaller.
    @inline(__always) package static func rgba(
        _ c0: SIMD4<Int32>, _ c1: SIMD4<Int32>, e0: inout SIMD4<Int32>, e1: inout SIMD4<Int32>
    ) {
        if c0[0] &+ c0[1] &+ c0[2] > c1[0] &+ c1[1] &+ c1[2] {
            e0 = uncontract(c1); e1 = uncontract(c0)
        } else {
            e0 = c0; e1 = c1
        }
    }

    @inline(__always) static func delta(
        _ b: SIMD4<Int32>, _ o: SIMD4<Int32>, e0: inout SIMD4<Int32>, e1: inout SIMD4<Int32>
    ) {
        var base = SIMD4<Int32>(), offset = SIMD4<Int32>()
        for c in 0..<4 { (base[c], offset[c]) = transfer(base: b[c], offset: o[c]) }
        let end = base &+ offset
        var lo = base, hi = end
        if offset[0] &+ offset[1] &+ offset[2] < 0 {
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
    /// The same texels in the same order (texel `t` of the grid whose taps start at `infill`
    /// is entry `infill / 2 + t`), as the decoder's one-multiply infill reads them: the grid
    /// index of the texel's top-left tap, ...
    package let infillOrigins: UnsafeMutablePointer<UInt8>
    /// ... and its four tap weights as 16-bit lanes in reverse order (lower-right tap's
    /// weight in lane 0, top-left's in lane 3); see ``infilled(_:_:)``.
    package let infillLanes: UnsafeMutablePointer<UInt64>

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
            var entry = Entry(
                gridWidth: UInt8(gw), gridHeight: UInt8(gh), weightLevel: UInt8(level),
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
        let texels = taps.count / 2
        infillOrigins = .allocate(capacity: max(texels, 1))
        infillLanes = .allocate(capacity: max(texels, 1))
        for t in 0..<texels {
            let w = UInt64(taps[2 * t + 1])
            (infillOrigins + t).initialize(to: UInt8(truncatingIfNeeded: taps[2 * t]))
            (infillLanes + t).initialize(
                to: w >> 24 | ((w >> 16) & 0xFF) << 16 | ((w >> 8) & 0xFF) << 32 | (w & 0xFF) << 48)
        }
    }

    deinit { infillTaps.deallocate(); infillOrigins.deallocate(); infillLanes.deallocate() }

    /// One texel's infilled weight, `(Σ grid[tap] · weight + 8) >> 4`, in one multiply:
    /// `grid` holds the four tap values (top-left, right, below, below-right; each ≤ 64)
    /// as 16-bit lanes and `taps` their weights (≤ 16, summing to 16) in reverse lane
    /// order, so lane 3 of the 64-bit product is the dot product. The lower lanes' sums
    /// stay under 2¹⁶ (three products of at most 255 · 16), so nothing carries into it.
    @inline(__always) package static func infilled(_ grid: UInt64, _ taps: UInt64) -> UInt64 {
        (((grid &* taps) >> 48) &+ 8) >> 4
    }

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
    static func infillTable(blockWidth bw: Int, blockHeight bh: Int, gridWidth gw: Int, gridHeight gh: Int) -> [UInt32]
    {
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
    package func infill(
        _ grid: UnsafePointer<UInt8>, at offset: Int, texels: Int, into out: UnsafeMutablePointer<UInt8>
    ) {
        let taps = infillTaps + offset
        for t in 0..<texels {
            let i = taps[2 * t], w = taps[2 * t + 1]
            let sum =
                UInt32(grid[Int(i & 0xFF)]) &* (w & 0xFF) &+ UInt32(grid[Int((i >> 8) & 0xFF)]) &* ((w >> 8) & 0xFF)
                &+ UInt32(grid[Int((i >> 16) & 0xFF)]) &* ((w >> 16) & 0xFF) &+ UInt32(grid[Int(i >> 24)]) &* (w >> 24)
            out[t] = UInt8(truncatingIfNeeded: (sum &+ 8) >> 4)
        }
    }
}
