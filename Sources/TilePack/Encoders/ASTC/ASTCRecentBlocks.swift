import TilePackCodec

/// One tile's rate-distortion state: the blocks written so far as deflate sees them
/// (``ASTCRateModel``), the last ``capacity`` distinct blocks with their decoded texels (copy
/// candidates) and, for single-partition layouts of the encoder's own, their colour values
/// (endpoint-reuse candidates), and a decoder for the true error of any candidate.
///
/// Cost: per tile, a few allocations (the tile's bytes, `capacity` blocks of texels); per
/// block written, one decode and a scan of the distinct blocks.
///
/// Its per-entry lists are fixed buffers, not arrays: an array in a class's `var` is checked for
/// exclusive access at run time on every read (`swift_beginAccess`, with a thread-local lookup),
/// which the choice does per entry and trial (about 1 % of a default build's CPU in perf).
final class ASTCRecentBlocks {
    static let capacity = 32

    let rate: ASTCRateModel
    let decoder: ASTCDecoder
    let texelCount: Int
    /// Entry `i`: the block, its decoded texels (`texelCount` at `i · texelCount`), its layout
    /// (index in the encoder's `candidates`, -1 when not a reusable one) and colour values.
    var bits: UnsafeBufferPointer<ASTCBits> { UnsafeBufferPointer(start: bitsStorage, count: entryCount) }
    private let bitsStorage: UnsafeMutablePointer<ASTCBits>
    /// Entries in use (at most ``capacity``).
    private(set) var entryCount = 0
    let decoded: UnsafeMutablePointer<SIMD4<Int32>>
    /// … and the sum of those texels (n × their mean, for a lower bound of a copy's error) and
    /// per channel the root of their summed squared distance from their mean
    /// (``ASTCBlockMoments/spread(sum:squares:count:)``: with the means, a tighter bound).
    /// Channel by channel, four entries a lane: channel `c` of entries `4k…4k+3` at
    /// `sumLanes[c · capacity / 4 + k]`.
    let sumLanes: UnsafeMutablePointer<SIMD4<Float>>
    let spreadLanes: UnsafeMutablePointer<SIMD4<Float>>
    /// Per entry, the lower bound of a copy's error for the block being chosen
    /// (``copyBounds(sum:spread:)``), and the rate model's byte count they were computed at.
    private let bounds: UnsafeMutablePointer<SIMD4<Float>>
    private var boundsAt = -1
    /// Per entry (valid below ``entryCount``).
    let layouts: UnsafeMutablePointer<Int>
    let colours: UnsafeMutablePointer<UInt8>
    /// … and their grid values (64 a block: the largest grid of one plane).
    let grids: UnsafeMutablePointer<UInt8>
    /// … and, once a weight-reuse trial has made them, those grid values infilled to texel
    /// weights (the encoder's `texelW`, then `texelSum`: 2 × `texelCount` a block), valid where
    /// `infilled[e]`. Why: an entry is tried by each of the next few blocks, and the infill
    /// (four taps a texel) was most of a trial that its bound then stops.
    let infilledWeights: UnsafeMutablePointer<Int32>
    let infilled: UnsafeMutablePointer<Bool>
    /// What the repeat scan (``ASTCEncoder/cheapestRepeat(lambda:recent:below:)``, run before the
    /// search and again in the choice, with another limit) measured of entry `e` (index
    /// ``capacity``: the constant block) for the block being chosen, valid while
    /// `measuredAt[e]` is the rate model's byte count: a copy's squared error from a pass stopped
    /// once past `errorLimit[e]` (exact when not above it), and the rate estimate under
    /// `bitsLimit[e]` (exact when finite). Why: the second scan re-measured most entries.
    let measuredAt: UnsafeMutablePointer<Int>
    let copyError: UnsafeMutablePointer<Int>
    let errorLimit: UnsafeMutablePointer<Int>
    let copyBits: UnsafeMutablePointer<Float>
    let bitsLimit: UnsafeMutablePointer<Float>
    /// Entries from the newest back: `order[0]` was written last.
    var order: UnsafeBufferPointer<Int> { UnsafeBufferPointer(start: orderStorage, count: entryCount) }
    private let orderStorage: UnsafeMutablePointer<Int>
    /// The decoded texels of the block being chosen (scratch), and of a trial candidate.
    let scratch: UnsafeMutablePointer<UInt32>
    let chosenTexels: UnsafeMutablePointer<SIMD4<Int32>>
    /// The chosen block's colour and grid values (an entry's may be overwritten by the block itself).
    let colourScratch: UnsafeMutablePointer<UInt8>
    let gridScratch: UnsafeMutablePointer<UInt8>
    /// The block column being chosen (set by the encode loop), and per column the last block
    /// written there (the one above the next): its layout (-1: not reusable), colour and grid values.
    var column = 0
    let aboveLayouts: UnsafeMutablePointer<Int>
    let aboveColours: UnsafeMutablePointer<UInt8>
    let aboveGrids: UnsafeMutablePointer<UInt8>
    /// Per ``layoutKey(mode:endpointMode:)``: the encoder's single-partition layout with that
    /// block mode and endpoint mode (-1: none); filled by the encoder.
    let layoutIndex: UnsafeMutablePointer<Int>

    /// The slot in ``layoutIndex`` of block mode `mode` (0…2047) with endpoint mode 0, 6 or 8.
    @inline(__always) static func layoutKey(mode: Int, endpointMode: Int) -> Int {
        mode << 2 | ASTCEncoder.Candidate.lane(endpointMode: endpointMode)
    }
    /// Entries whose endpoints and weights the choice has tried for the block being chosen
    /// (scratch, ``capacity`` entries; ``triedBefore(layout:colour:valueCount:grid:gridCount:among:)``).
    let tried: UnsafeMutablePointer<Int>
    /// The block being chosen's moments, and the rate model's byte count when they were measured
    /// (-1: never): the encoder's ``ASTCEncoder/moments(in:)`` measures each block once.
    var moments: ASTCBlockMoments?
    var momentsAt = -1

    init(format: ASTCFormat, blockCount: Int, columns: Int) {
        let n = format.blockWidth * format.blockHeight
        texelCount = n
        aboveLayouts = .allocate(capacity: columns)
        aboveLayouts.initialize(repeating: -1, count: columns)
        layoutIndex = .allocate(capacity: 2048 << 2)
        layoutIndex.initialize(repeating: -1, count: 2048 << 2)
        bitsStorage = .allocate(capacity: Self.capacity)
        bitsStorage.initialize(repeating: ASTCBits(lo: 0, hi: 0), count: Self.capacity)
        layouts = .allocate(capacity: Self.capacity)
        layouts.initialize(repeating: -1, count: Self.capacity)
        infilled = .allocate(capacity: Self.capacity)
        infilled.initialize(repeating: false, count: Self.capacity)
        orderStorage = .allocate(capacity: Self.capacity)
        orderStorage.initialize(repeating: 0, count: Self.capacity)
        aboveColours = .allocate(capacity: columns * 16)
        aboveColours.initialize(repeating: 0, count: columns * 16)
        aboveGrids = .allocate(capacity: columns * 64)
        aboveGrids.initialize(repeating: 0, count: columns * 64)
        rate = ASTCRateModel(capacity: blockCount * 16)
        decoder = ASTCDecoder(format: format)
        decoded = .allocate(capacity: Self.capacity * n)
        decoded.initialize(repeating: SIMD4(), count: Self.capacity * n)
        colours = .allocate(capacity: Self.capacity * 16)
        colours.initialize(repeating: 0, count: Self.capacity * 16)
        grids = .allocate(capacity: Self.capacity * 64)
        grids.initialize(repeating: 0, count: Self.capacity * 64)
        measuredAt = .allocate(capacity: Self.capacity + 1)
        measuredAt.initialize(repeating: -1, count: Self.capacity + 1)
        copyError = .allocate(capacity: Self.capacity + 1)
        copyError.initialize(repeating: 0, count: Self.capacity + 1)
        errorLimit = .allocate(capacity: Self.capacity + 1)
        errorLimit.initialize(repeating: 0, count: Self.capacity + 1)
        copyBits = .allocate(capacity: Self.capacity + 1)
        copyBits.initialize(repeating: 0, count: Self.capacity + 1)
        bitsLimit = .allocate(capacity: Self.capacity + 1)
        bitsLimit.initialize(repeating: 0, count: Self.capacity + 1)
        infilledWeights = .allocate(capacity: Self.capacity * 2 * n)
        infilledWeights.initialize(repeating: 0, count: Self.capacity * 2 * n)
        gridScratch = .allocate(capacity: 64)
        gridScratch.initialize(repeating: 0, count: 64)
        scratch = .allocate(capacity: n)
        scratch.initialize(repeating: 0, count: n)
        chosenTexels = .allocate(capacity: n)
        chosenTexels.initialize(repeating: SIMD4(), count: n)
        sumLanes = .allocate(capacity: Self.capacity)
        sumLanes.initialize(repeating: SIMD4(), count: Self.capacity)
        spreadLanes = .allocate(capacity: Self.capacity)
        spreadLanes.initialize(repeating: SIMD4(), count: Self.capacity)
        bounds = .allocate(capacity: Self.capacity / 4)
        bounds.initialize(repeating: SIMD4(), count: Self.capacity / 4)
        tried = .allocate(capacity: Self.capacity)
        tried.initialize(repeating: 0, count: Self.capacity)
        colourScratch = .allocate(capacity: 16)
        colourScratch.initialize(repeating: 0, count: 16)
    }

    deinit {
        decoded.deallocate()
        colours.deallocate()
        grids.deallocate()
        infilledWeights.deallocate()
        measuredAt.deallocate()
        copyError.deallocate()
        errorLimit.deallocate()
        copyBits.deallocate()
        bitsLimit.deallocate()
        gridScratch.deallocate()
        scratch.deallocate()
        chosenTexels.deallocate()
        colourScratch.deallocate()
        tried.deallocate()
        sumLanes.deallocate()
        spreadLanes.deallocate()
        bounds.deallocate()
        aboveColours.deallocate()
        aboveGrids.deallocate()
        aboveLayouts.deallocate()
        layoutIndex.deallocate()
        bitsStorage.deallocate()
        layouts.deallocate()
        infilled.deallocate()
        orderStorage.deallocate()
    }

    /// Whether one of the entries `tried[0..<count]` has `layout` and the same first
    /// `valueCount` colour values (`ends`: an endpoint-reuse trial of these values was made), and
    /// whether one also has the same first `gridCount` grid values (`block`: so was a
    /// weight-reuse trial of these values). Cost: a few byte compares per entry.
    func triedBefore(
        layout: Int, colour: UnsafeMutablePointer<UInt8>, valueCount: Int, grid: UnsafeMutablePointer<UInt8>,
        gridCount: Int, among count: Int
    ) -> (ends: Bool, block: Bool) {
        var ends = false
        for i in 0..<count where layouts[tried[i]] == layout {
            let e = tried[i]
            guard (0..<valueCount).allSatisfy({ colours[e * 16 + $0] == colour[$0] }) else { continue }
            ends = true
            if (0..<gridCount).allSatisfy({ grids[e * 64 + $0] == grid[$0] }) { return (true, true) }
        }
        return (ends, false)
    }

    /// Per entry, 0.99 × (n × the squared difference of its texels' mean and the block's
    /// (`sum` / n) plus, per channel, the squared difference of their spreads): at most the
    /// error of a copy of the entry (the 0.99: the roots' rounding must not drop a candidate).
    /// Entry `e`'s at `[e / 4][e % 4]`. Computed once a block (an append or a new byte count
    /// computes them again), four entries a lane. Cost: a few vector operations per four entries.
    func copyBounds(sum: SIMD4<Float>, spread: SIMD4<Float>) -> UnsafeMutablePointer<SIMD4<Float>> {
        guard boundsAt != rate.count else { return bounds }
        let lanes = Self.capacity / 4, n = Float(texelCount)
        for k in 0..<(entryCount + 3) / 4 {
            var gaps = SIMD4<Float>(), aparts = SIMD4<Float>()
            for c in 0..<4 {
                let gap = sum[c] - sumLanes[c * lanes + k], apart = spread[c] - spreadLanes[c * lanes + k]
                gaps += gap * gap
                aparts += apart * apart
            }
            bounds[k] = (gaps / n + aparts) * 0.99
        }
        boundsAt = rate.count
        return bounds
    }

    /// Entry `e`'s (``capacity``: the constant block's) rate estimate under `limit`: exactly
    /// `rate.bits(block, limit: limit)`, from ``copyBits`` when the block's earlier scan decides it.
    /// Cost: a compare, or the estimate.
    func repeatBits(_ block: ASTCBits, entry e: Int, limit: Float) -> Float {
        measuring(e)
        let known = copyBits[e]
        // Finite: the whole parse (every partial sum is below it). Infinite: the parse reached
        // the earlier limit, so it reaches any limit not above it.
        if known.isFinite { return known < limit ? known : .infinity }
        if limit <= bitsLimit[e] { return .infinity }
        let bits = rate.bits(block, limit: limit)
        (copyBits[e], bitsLimit[e]) = (bits, limit)
        return bits
    }

    /// Starts entry `e`'s measures for the block being chosen, unless they are this block's:
    /// nothing known (an error of 0 above a limit of -1, which decides no limit ≥ 0; no bits).
    func measuring(_ e: Int) {
        guard measuredAt[e] != rate.count else { return }
        measuredAt[e] = rate.count
        (copyError[e], errorLimit[e]) = (0, -1)
        (copyBits[e], bitsLimit[e]) = (.infinity, -.infinity)
    }

    /// Marks entry `e`'s ``infilledWeights`` as written.
    func markInfilled(_ e: Int) { infilled[e] = true }

    /// Decodes `block` into `chosenTexels`.
    func decode(_ block: ASTCBits) {
        decoder.decodeBlock(block, into: scratch)
        for t in 0..<texelCount {
            let w = scratch[t]
            chosenTexels[t] = SIMD4(Int32(w & 0xFF), Int32(w >> 8 & 0xFF), Int32(w >> 16 & 0xFF), Int32(w >> 24))
        }
    }

    /// Entry `e`'s colour and grid values into `colourScratch` and `gridScratch`: a copy of it
    /// is the chosen block.
    func takeValues(ofEntry e: Int) {
        colourScratch.update(from: colours + e * 16, count: 16)
        gridScratch.update(from: grids + e * 64, count: 64)
    }

    /// Records the block written at `column` (its texels in `chosenTexels`; with `layout` ≥ 0, a
    /// reusable layout, its values in `colourScratch` and `gridScratch`): into the rate model's
    /// bytes, as the column's block above the next row's, and among the distinct blocks as the
    /// newest (the oldest dropped when full).
    func append(_ block: ASTCBits, layout: Int) {
        rate.append(block)
        aboveLayouts[column] = layout
        if layout >= 0 {
            (aboveColours + column * 16).update(from: colourScratch, count: 16)
            (aboveGrids + column * 64).update(from: gridScratch, count: 64)
        }
        if let known = bits.firstIndex(where: { $0.lo == block.lo && $0.hi == block.hi }) {
            // Every entry in use is in `order` once: the scan stays inside it (checked in debug).
            var position = 0
            while position < entryCount - 1 && orderStorage[position] != known { position += 1 }
            assert(orderStorage[position] == known, "a known entry is in the order")
            moveToFront(known, from: position)
            return
        }
        let slot: Int
        if entryCount < Self.capacity {
            slot = entryCount
            entryCount += 1
        } else {
            slot = orderStorage[Self.capacity - 1]
        }
        bitsStorage[slot] = block
        layouts[slot] = layout
        infilled[slot] = false
        moveToFront(slot, from: entryCount - 1)
        (decoded + slot * texelCount).update(from: chosenTexels, count: texelCount)
        let (sum, squares) = ASTCBlockMoments.channelSums(chosenTexels, count: texelCount)
        let spread = ASTCBlockMoments.spread(sum: sum, squares: squares, count: texelCount)
        let lanes = Self.capacity / 4
        for c in 0..<4 {
            sumLanes[c * lanes + slot / 4][slot % 4] = Float(sum[c])
            spreadLanes[c * lanes + slot / 4][slot % 4] = spread[c]
        }
        boundsAt = -1
        if layout >= 0 {
            (colours + slot * 16).update(from: colourScratch, count: 16)
            (grids + slot * 64).update(from: gridScratch, count: 64)
        }
    }
}

extension ASTCRecentBlocks {
    /// Puts `entry`, at `order[position]` (or new there, past the end before the count grew), first
    /// in ``order``, the entries before it one later. Cost: a shift of at most ``capacity`` entries.
    @inline(__always)
    private func moveToFront(_ entry: Int, from position: Int) {
        var j = position
        while j > 0 {
            orderStorage[j] = orderStorage[j - 1]
            j -= 1
        }
        orderStorage[0] = entry
    }
}

@available(*, unavailable) extension ASTCRecentBlocks: Sendable {}
