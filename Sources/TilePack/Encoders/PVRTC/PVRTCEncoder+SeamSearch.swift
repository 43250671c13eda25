import TilePackCore
import TilePackCodec

// MARK: Seam search

extension PVRTCEncoder {
    /// Per footprint pixel of one search group: the decoded state the moves start from.
    struct SeamPixel {
        /// Bilinear sums (weights total 16) of A and B per lane (R, G, B, alpha doubled).
        var sumA: SIMD4<Int32>
        var sumB: SIMD4<Int32>
        var target: SIMD4<Int32>
        /// The pixel's modulation weights (0, 3, 5, 8, or 0, 4, 4, 8 in a punch-through word).
        var modulation: SIMD4<Int32>
        /// Squared error per modulation value of R, G, B and alpha, and their sum.
        var red: SIMD4<Int32>
        var green: SIMD4<Int32>
        var blue: SIMD4<Int32>
        var total: SIMD4<Int32>
        /// Bilinear weights of the group's first and second word at this pixel.
        var weight0: Int32
        var weight1: Int32
        /// Band weight of the objective.
        var importance: Int32
        /// 0 when the source pixel is fully transparent (its colour error does not count), else 1.
        var visible: Int32
    }

    /// One channel's view of a ``SeamPixel`` for the candidate loop (no variable lane index there).
    struct SeamChannel {
        /// Squared error of the other channels per modulation value.
        var other: SIMD4<Int32>
        var modulation: SIMD4<Int32>
        var sumA: Int32
        var sumB: Int32
        var weight0: Int32
        var weight1: Int32
        var target: Int32
        var importance: Int32
        var visible: Int32
    }

    /// Exact discrete search on the words whose footprints wrap (the first and last row and
    /// column of words), 4bpp only, after the least-squares passes. Those fit a band-weighted
    /// quadratic with the modulation held fixed and then round; here each candidate lattice
    /// point is judged by the decoded error itself, every affected pixel taking its best
    /// modulation again, pixels within 2 px of a border weighing ``seamBandWeight`` and the
    /// colour of pixels the source has fully transparent not counting (only their alpha does).
    /// Moves, per channel (R, G, B, and alpha where a colour is translucent): A and B of one
    /// border word by −1, 0 or +1 code each, in that colour's own bit layout; then A and/or B
    /// by the same ±1 in R, G and B at once (``maximumSeamRounds`` rounds, a word searched
    /// again only when a word its footprint reads has moved); then the pair of words facing
    /// each other across the wrap (last and first of a row or column) together, at most one
    /// value of each word by ±1; then one more round of single words. Opaque, translucent and
    /// punch-through words all move (opaque flags and modes stay). Then, ``seamWrapPasses``
    /// times, every opaque pair across the wrap whose footprint changed since its last refit is
    /// re-fitted from both A/B orderings
    /// (``seamWrapSolve(_:layout:first:second:originX:originY:wordsAcross:wordsDown:)``) and
    /// the single moves run again around the pairs that changed; after the last pass,
    /// ``seamWrapFinalRounds`` more rounds of single moves.
    /// Cost: per group one exact decode of its footprint (49 or 77 pixels), then per channel
    /// and candidate about 15 SIMD operations a pixel, three times that per brightness move;
    /// a 256² tile encodes at about 0.7× the speed without it (docs/history/BENCHMARKS-history.md, issue 11, third
    /// and fourth passes: the brightness moves and translucent words cost 1.16× on top).
    func seamSearch(_ source: UnsafeRawPointer, layout: PVRTCLayout) {
        let wordsWide = layout.wordsWide, wordsHigh = layout.wordsHigh
        guard layout.format == .pvrtc4, wordsWide >= 2, wordsHigh >= 2 else { return }
        let wordCount = wordsWide * wordsHigh
        precondition(
            colourWords.count >= wordCount && lanesA.count >= wordCount && lanesB.count >= wordCount
                && weights.count >= layout.width * layout.height)
        for i in 0..<wordCount {
            lanesA[i] = PVRTCColour.expandA(colourWords[i])
            lanesB[i] = PVRTCColour.expandB(colourWords[i])
        }
        if seamPixels.count < 11 * 7 {
            seamPixels = [SeamPixel](
                repeating: SeamPixel(
                    sumA: .zero, sumB: .zero, target: .zero, modulation: .zero, red: .zero, green: .zero,
                    blue: .zero, total: .zero, weight0: 0, weight1: 0, importance: 0, visible: 0),
                count: 11 * 7)
            seamChannels = [SeamChannel](
                repeating: SeamChannel(
                    other: .zero, modulation: .zero, sumA: 0, sumB: 0, weight0: 0, weight1: 0,
                    target: 0, importance: 0, visible: 0), count: 11 * 7)
        }
        // A word is searched again only when a word its footprint reads (the 3 × 3 around it)
        // moved since its last search: otherwise the same moves would be judged the same.
        if seamDirty.count < wordCount { seamDirty = [Bool](repeating: false, count: wordCount) }
        let lastX = wordsWide - 1, lastY = wordsHigh - 1
        for wy in 0..<wordsHigh {
            for wx in 0..<wordsWide {
                seamDirty[wy * wordsWide + wx] = wy == 0 || wy == lastY || wx == 0 || wx == lastX
            }
        }
        // Likewise a wrap pair is re-fitted only when a word its footprint reads (the 3 × 3 around
        // either word) moved since its last refit: row pair k at k, column pair k at wordsHigh + k.
        if seamPairDirty.count < wordsHigh + wordsWide {
            seamPairDirty = [Bool](repeating: true, count: wordsHigh + wordsWide)
        }
        for k in 0..<(wordsHigh + wordsWide) { seamPairDirty[k] = true }
        func markAround(_ word: Int) {
            let wx = word % wordsWide, wy = word / wordsWide
            for dy in -1...1 {
                let y = (wy + dy + wordsHigh) % wordsHigh
                for dx in -1...1 {
                    let x = (wx + dx + wordsWide) % wordsWide
                    seamDirty[y * wordsWide + x] = true
                    if x == 0 || x == lastX { seamPairDirty[y] = true }
                    if y == 0 || y == lastY { seamPairDirty[wordsHigh + x] = true }
                }
            }
        }
        func singles() {
            for wy in 0..<wordsHigh {
                for wx in 0..<wordsWide
                where (wy == 0 || wy == lastY || wx == 0 || wx == lastX) && seamDirty[wy * wordsWide + wx] {
                    let word = wy * wordsWide + wx
                    seamDirty[word] = false
                    if seamMove(
                        source, layout: layout, first: word, second: nil, originX: wx, originY: wy, wordsAcross: 1,
                        wordsDown: 1)
                    {
                        markAround(word)
                    }
                }
            }
        }
        /// Runs `move` on every pair of words facing each other across the wrap (last and first of
        /// row k, then of column k, k ascending) and marks both words' neighbours after a move.
        func forEachWrapPair(
            onlyDirty: Bool = false,
            _ move: (
                _ first: Int, _ second: Int, _ originX: Int, _ originY: Int,
                _ wordsAcross: Int, _ wordsDown: Int
            ) -> Bool
        ) {
            for k in 0..<max(wordsWide, wordsHigh) {
                if k < wordsHigh && (!onlyDirty || seamPairDirty[k]) {
                    if onlyDirty { seamPairDirty[k] = false }
                    if move(k * wordsWide + lastX, k * wordsWide, lastX, k, 2, 1) {
                        markAround(k * wordsWide + lastX); markAround(k * wordsWide)
                    }
                }
                if k < wordsWide && (!onlyDirty || seamPairDirty[wordsHigh + k]) {
                    if onlyDirty { seamPairDirty[wordsHigh + k] = false }
                    if move(lastY * wordsWide + k, k, k, lastY, 1, 2) {
                        markAround(lastY * wordsWide + k); markAround(k)
                    }
                }
            }
        }
        for _ in 0..<maximumSeamRounds { singles() }
        forEachWrapPair { first, second, originX, originY, wordsAcross, wordsDown in
            seamMove(
                source, layout: layout, first: first, second: second, originX: originX, originY: originY,
                wordsAcross: wordsAcross, wordsDown: wordsDown)
        }
        singles()
        // The pairs facing each other across the wrap, re-fitted from both A/B orderings; then
        // one more round of single moves around the pairs that changed.
        for _ in 0..<(seamWrapIterations > 0 ? seamWrapPasses : 0) {
            if seamWrapPixels.count < 11 * 7 {
                seamWrapPixels = [SeamWrapPixel](
                    repeating: SeamWrapPixel(
                        words: (0, 0, 0, 0), f: .zero, target: .zero, modulation: .zero,
                        weight0: 0, weight1: 0, importance: 0, visible: 0, chosen: 0, startChosen: 0,
                        restA: .zero, restB: .zero, alpha: .zero),
                    count: 11 * 7)
            }
            forEachWrapPair(onlyDirty: true) { first, second, originX, originY, wordsAcross, wordsDown in
                seamWrapSolve(
                    source, layout: layout, first: first, second: second, originX: originX, originY: originY,
                    wordsAcross: wordsAcross, wordsDown: wordsDown)
            }
            singles()
        }
        if seamWrapIterations > 0 && seamWrapPasses > 0 { for _ in 0..<seamWrapFinalRounds { singles() } }
    }

    /// Code layout of colour channel `c` (0 R, 1 G, 2 B) in one half of a colour word:
    /// (shift, bits). Opaque A: R5 G5 B4; opaque B: R5 G5 B5; translucent A: R4 G4 B3;
    /// translucent B: R4 G4 B4 (PVRTC.md).
    @inline(__always) static func seamField(_ word: UInt32, colourB: Bool, _ c: Int) -> (shift: UInt32, bits: Int32) {
        if colourB {
            if word & 0x8000_0000 != 0 { return (c == 0 ? 26 : c == 1 ? 21 : 16, 5) }
            return (c == 0 ? 24 : c == 1 ? 20 : 16, 4)
        }
        if word & 0x8000 != 0 { return (c == 0 ? 10 : c == 1 ? 5 : 1, c == 2 ? 4 : 5) }
        return (c == 0 ? 8 : c == 1 ? 4 : 1, c == 2 ? 3 : 4)
    }

    /// A code of `bits` bits in the decoder's 5-bit units (PVRTC.md: `c<<1 | c>>3`, `c<<2 | c>>1`).
    @inline(__always) static func seamExpand(_ code: Int32, _ bits: Int32) -> Int32 {
        bits == 5 ? code : bits == 4 ? (code << 1) | (code >> 3) : (code << 2) | (code >> 1)
    }

    /// One group (a word, or two words side by side across the wrap): for each colour channel,
    /// the best of every ±1 move of the group's A and B codes by the exact weighted error;
    /// for a single word then the eight moves of A and/or B by the same ±1 code in all three
    /// channels at once (a brightness shift of one end or both, which the per-channel moves
    /// cannot reach when each channel alone costs more than it gains).
    func seamMove(
        _ source: UnsafeRawPointer, layout: PVRTCLayout, first: Int, second: Int?,
        originX: Int, originY: Int, wordsAcross: Int, wordsDown: Int
    ) -> Bool {
        var moved = false
        let wordsWide = layout.wordsWide, width = layout.width, height = layout.height
        let xMask = width - 1, yMask = height - 1
        let wordXMask = wordsWide - 1, wordYMask = layout.wordsHigh - 1
        let spanX = 4 * wordsAcross + 3, spanY = 4 * wordsDown + 3
        let pixelCount = spanX * spanY
        let band = seamBandWeight
        let modulationPlain = SIMD4<Int32>(0, 3, 5, 8), modulationPunch = SIMD4<Int32>(0, 4, 4, 8)
        @inline(__always) func channelError(_ ca: Int32, _ cb: Int32, _ m: SIMD4<Int32>, _ t: Int32) -> SIMD4<Int32> {
            let a8 = (ca &>> 1) &+ (ca &>> 6), b8 = (cb &>> 1) &+ (cb &>> 6)
            let d = ((SIMD4(repeating: a8) &* (8 &- m) &+ SIMD4(repeating: b8) &* m) &>> 3) &- t
            return d &* d
        }
        colourWords.withUnsafeMutableBufferPointer { words in
            lanesA.withUnsafeMutableBufferPointer { la in
                lanesB.withUnsafeMutableBufferPointer { lb in
                    seamPixels.withUnsafeMutableBufferPointer { px in
                        seamChannels.withUnsafeMutableBufferPointer { lane in
                            precondition(px.count >= pixelCount && lane.count >= pixelCount)
                            // The exact decode of every footprint pixel, once for the group.
                            for j in 0..<spanY {
                                let y = (originY * 4 - 1 + j) & yMask
                                let ym = y - 2, yl = ym >> 2, yr = Int32(ym - 4 * yl)
                                let y0 = yl & wordYMask, y1 = (yl + 1) & wordYMask
                                for i in 0..<spanX {
                                    let x = (originX * 4 - 1 + i) & xMask
                                    let xm = x - 2, xl = xm >> 2, xr = Int32(xm - 4 * xl)
                                    let x0 = xl & wordXMask, x1 = (xl + 1) & wordXMask
                                    let n = (
                                        y0 * wordsWide + x0, y0 * wordsWide + x1, y1 * wordsWide + x0,
                                        y1 * wordsWide + x1
                                    )
                                    let f = ((4 - xr) * (4 - yr), xr * (4 - yr), (4 - xr) * yr, xr * yr)
                                    @inline(__always) func sum(
                                        _ lanes: UnsafeMutableBufferPointer<UInt64>
                                    ) -> SIMD4<Int32> {
                                        Self.unpackLanes(lanes[n.0]) &* f.0 &+ Self.unpackLanes(lanes[n.1]) &* f.1
                                            &+ Self.unpackLanes(lanes[n.2]) &* f.2 &+ Self.unpackLanes(lanes[n.3])
                                            &* f.3
                                    }
                                    let sa = sum(la), sb = sum(lb)
                                    let p = y * width + x
                                    let t = Self.unpack(source.loadUnaligned(fromByteOffset: p * 4, as: UInt32.self))
                                    let punch = words[(y >> 2) * wordsWide + (x >> 2)] & 1 != 0
                                    let m = punch ? modulationPunch : modulationPlain
                                    // Alpha is stored doubled: its 8-bit value is (C >> 1) + (C >> 5).
                                    let aa = (sa.w &>> 1) &+ (sa.w &>> 5), ab = (sb.w &>> 1) &+ (sb.w &>> 5)
                                    var alpha = ((SIMD4(repeating: aa) &* (8 &- m) &+ SIMD4(repeating: ab) &* m) &>> 3)
                                    if punch { alpha[2] = 0 }
                                    alpha = (alpha &- t.w) &* (alpha &- t.w)
                                    // A pixel the source has fully transparent shows no colour: only its alpha
                                    // counts, so the colours are free to serve the visible pixels around it.
                                    let visible: Int32 = t.w == 0 ? 0 : 1
                                    let red = channelError(sa.x, sb.x, m, t.x) &* visible,
                                        green = channelError(sa.y, sb.y, m, t.y) &* visible
                                    let blue = channelError(sa.z, sb.z, m, t.z) &* visible
                                    @inline(__always) func weightOf(_ word: Int) -> Int32 {
                                        (n.0 == word ? f.0 : 0) &+ (n.1 == word ? f.1 : 0) &+ (n.2 == word ? f.2 : 0)
                                            &+ (n.3 == word ? f.3 : 0)
                                    }
                                    let inBand = x < 2 || x >= width - 2 || y < 2 || y >= height - 2
                                    px[j * spanX + i] = SeamPixel(
                                        sumA: sa, sumB: sb, target: t, modulation: m, red: red, green: green,
                                        blue: blue,
                                        total: red &+ green &+ blue &+ alpha, weight0: weightOf(first),
                                        weight1: second.map(weightOf) ?? 0, importance: inBand ? band : 1,
                                        visible: visible)
                                }
                            }
                            let secondWord = second ?? first
                            for c in 0..<3 {
                                let fieldA0 = Self.seamField(words[first], colourB: false, c),
                                    fieldB0 = Self.seamField(words[first], colourB: true, c)
                                let fieldA1 = Self.seamField(words[secondWord], colourB: false, c)
                                let fieldB1 = Self.seamField(words[secondWord], colourB: true, c)
                                @inline(__always) func code(_ word: Int, _ field: (shift: UInt32, bits: Int32)) -> Int32
                                {
                                    Int32(
                                        truncatingIfNeeded: (words[word] >> field.shift)
                                            & ((1 << UInt32(field.bits)) - 1))
                                }
                                let codeA0 = code(first, fieldA0), codeB0 = code(first, fieldB0)
                                let codeA1 = second == nil ? 0 : code(secondWord, fieldA1),
                                    codeB1 = second == nil ? 0 : code(secondWord, fieldB1)
                                @inline(__always) func expanded(_ codes: SIMD4<Int32>) -> SIMD4<Int32> {
                                    SIMD4(
                                        Self.seamExpand(codes.x, fieldA0.bits), Self.seamExpand(codes.y, fieldB0.bits),
                                        Self.seamExpand(codes.z, fieldA1.bits), Self.seamExpand(codes.w, fieldB1.bits))
                                }
                                let start = SIMD4<Int32>(codeA0, codeB0, codeA1, codeB1)
                                let own = expanded(start)
                                for q in 0..<pixelCount {
                                    let s = px[q]
                                    let mine = c == 0 ? s.red : c == 1 ? s.green : s.blue
                                    lane[q] = SeamChannel(
                                        other: s.total &- mine, modulation: s.modulation,
                                        sumA: s.sumA[c] &- s.weight0 &* own.x &- s.weight1 &* own.z,
                                        sumB: s.sumB[c] &- s.weight0 &* own.y &- s.weight1 &* own.w,
                                        weight0: s.weight0, weight1: s.weight1, target: s.target[c],
                                        importance: s.importance,
                                        visible: s.visible)
                                }
                                /// Weighted error with the group's channel-`c` codes replaced (the other channels as
                                /// decoded).
                                @inline(__always) func cost(_ codes: SIMD4<Int32>) -> Int {
                                    let e = expanded(codes)
                                    var total = 0
                                    for q in 0..<pixelCount {
                                        let s = lane[q]
                                        let d =
                                            s.other &+ channelError(
                                                s.sumA &+ s.weight0 &* e.x &+ s.weight1 &* e.z,
                                                s.sumB &+ s.weight0 &* e.y &+ s.weight1 &* e.w, s.modulation, s.target)
                                            &* s.visible
                                        total &+= Int(min(min(d.x, d.y), min(d.z, d.w)) &* s.importance)
                                    }
                                    return total
                                }
                                let top = SIMD4<Int32>(
                                    (1 << fieldA0.bits) - 1, (1 << fieldB0.bits) - 1, (1 << fieldA1.bits) - 1,
                                    (1 << fieldB1.bits) - 1)
                                let bestCodes = Self.seamBestMove(start, top: top, pair: second != nil, cost: cost)
                                if bestCodes == start { continue }
                                moved = true
                                Self.seamStore(words, la, lb, first, c, codeA: bestCodes.x, codeB: bestCodes.y)
                                if let second {
                                    Self.seamStore(words, la, lb, second, c, codeA: bestCodes.z, codeB: bestCodes.w)
                                }
                                // The footprint's decode of channel c follows the move.
                                let delta = expanded(bestCodes) &- own
                                for q in 0..<pixelCount {
                                    var s = px[q]
                                    s.sumA[c] = s.sumA[c] &+ s.weight0 &* delta.x &+ s.weight1 &* delta.z
                                    s.sumB[c] = s.sumB[c] &+ s.weight0 &* delta.y &+ s.weight1 &* delta.w
                                    let mine =
                                        channelError(s.sumA[c], s.sumB[c], s.modulation, s.target[c]) &* s.visible
                                    switch c {
                                    case 0: s.total = s.total &- s.red &+ mine; s.red = mine
                                    case 1: s.total = s.total &- s.green &+ mine; s.green = mine
                                    default: s.total = s.total &- s.blue &+ mine; s.blue = mine
                                    }
                                    px[q] = s
                                }
                            }
                            // Alpha of translucent colours (an opaque half has none: its alpha is fixed at 15), the
                            // same moves as a colour channel; only groups with a translucent half reach here.
                            let opaque: UInt32 = 0x8000_8000
                            if words[first] & opaque != opaque || words[secondWord] & opaque != opaque {
                                /// (shift, bits) of a half's 3-bit alpha; bits 0 for an opaque half.
                                @inline(__always) func alphaField(
                                    _ word: UInt32, colourB: Bool
                                ) -> (shift: UInt32, bits: Int32) {
                                    colourB
                                        ? (word & 0x8000_0000 != 0 ? (28, 0) : (28, 3))
                                        : (word & 0x8000 != 0 ? (12, 0) : (12, 3))
                                }
                                let fields = (
                                    alphaField(words[first], colourB: false), alphaField(words[first], colourB: true),
                                    alphaField(words[secondWord], colourB: false),
                                    alphaField(words[secondWord], colourB: true)
                                )
                                @inline(__always) func code(_ word: Int, _ field: (shift: UInt32, bits: Int32)) -> Int32
                                {
                                    field.bits == 0 ? 0 : Int32(truncatingIfNeeded: (words[word] >> field.shift) & 7)
                                }
                                let start = SIMD4<Int32>(
                                    code(first, fields.0), code(first, fields.1),
                                    second == nil ? 0 : code(secondWord, fields.2),
                                    second == nil ? 0 : code(secondWord, fields.3))
                                let bits = SIMD4<Int32>(fields.0.bits, fields.1.bits, fields.2.bits, fields.3.bits)
                                // Alpha lanes hold the 4-bit alpha doubled: opaque 15 → 30, a 3-bit code a → 4a.
                                @inline(__always) func expanded(_ codes: SIMD4<Int32>) -> SIMD4<Int32> {
                                    SIMD4(
                                        bits.x == 0 ? 30 : codes.x << 2, bits.y == 0 ? 30 : codes.y << 2,
                                        bits.z == 0 ? 30 : codes.z << 2, bits.w == 0 ? 30 : codes.w << 2)
                                }
                                let own = expanded(start)
                                @inline(__always) func alphaError(
                                    _ ca: Int32, _ cb: Int32, _ m: SIMD4<Int32>, _ t: Int32
                                ) -> SIMD4<Int32> {
                                    let a8 = (ca &>> 1) &+ (ca &>> 5), b8 = (cb &>> 1) &+ (cb &>> 5)
                                    var v = (SIMD4(repeating: a8) &* (8 &- m) &+ SIMD4(repeating: b8) &* m) &>> 3
                                    if m.y == 4 { v[2] = 0 }  // punch-through: code 2 is transparent
                                    let d = v &- t
                                    return d &* d
                                }
                                for q in 0..<pixelCount {
                                    let s = px[q]
                                    lane[q] = SeamChannel(
                                        other: s.red &+ s.green &+ s.blue, modulation: s.modulation,
                                        sumA: s.sumA.w &- s.weight0 &* own.x &- s.weight1 &* own.z,
                                        sumB: s.sumB.w &- s.weight0 &* own.y &- s.weight1 &* own.w,
                                        weight0: s.weight0, weight1: s.weight1, target: s.target.w,
                                        importance: s.importance,
                                        visible: 1)
                                }
                                @inline(__always) func cost(_ codes: SIMD4<Int32>) -> Int {
                                    let e = expanded(codes)
                                    var total = 0
                                    for q in 0..<pixelCount {
                                        let s = lane[q]
                                        let d =
                                            s.other
                                            &+ alphaError(
                                                s.sumA &+ s.weight0 &* e.x &+ s.weight1 &* e.z,
                                                s.sumB &+ s.weight0 &* e.y &+ s.weight1 &* e.w, s.modulation, s.target)
                                        total &+= Int(min(min(d.x, d.y), min(d.z, d.w)) &* s.importance)
                                    }
                                    return total
                                }
                                // A half without an alpha field cannot move (top 0); the unused second word neither.
                                let limit = SIMD4<Int32>(
                                    bits.x == 0 ? 0 : 7, bits.y == 0 ? 0 : 7,
                                    second == nil || bits.z == 0 ? 0 : 7, second == nil || bits.w == 0 ? 0 : 7)
                                let bestCodes = Self.seamBestMove(start, top: limit, pair: second != nil, cost: cost)
                                if bestCodes != start {
                                    moved = true
                                    @inline(__always) func store(
                                        _ index: Int, _ a: Int32, _ b: Int32, _ fa: (shift: UInt32, bits: Int32),
                                        _ fb: (shift: UInt32, bits: Int32)
                                    ) {
                                        var word = words[index]
                                        if fa.bits != 0 {
                                            word =
                                                (word & ~(7 << fa.shift)) | UInt32(truncatingIfNeeded: a & 7)
                                                << fa.shift
                                        }
                                        if fb.bits != 0 {
                                            word =
                                                (word & ~(7 << fb.shift)) | UInt32(truncatingIfNeeded: b & 7)
                                                << fb.shift
                                        }
                                        words[index] = word
                                        la[index] = PVRTCColour.expandA(word)
                                        lb[index] = PVRTCColour.expandB(word)
                                    }
                                    store(first, bestCodes.x, bestCodes.y, fields.0, fields.1)
                                    if let second { store(second, bestCodes.z, bestCodes.w, fields.2, fields.3) }
                                    let delta = expanded(bestCodes) &- own
                                    for q in 0..<pixelCount {
                                        var s = px[q]
                                        s.sumA.w = s.sumA.w &+ s.weight0 &* delta.x &+ s.weight1 &* delta.z
                                        s.sumB.w = s.sumB.w &+ s.weight0 &* delta.y &+ s.weight1 &* delta.w
                                        s.total =
                                            s.red &+ s.green &+ s.blue
                                            &+ alphaError(s.sumA.w, s.sumB.w, s.modulation, s.target.w)
                                        px[q] = s
                                    }
                                }
                            }
                            guard second == nil else { return }
                            // Brightness moves of one word: A and/or B by the same ±1 code in R, G and B.
                            let word = words[first]
                            let fA = (
                                Self.seamField(word, colourB: false, 0), Self.seamField(word, colourB: false, 1),
                                Self.seamField(word, colourB: false, 2)
                            )
                            let fB = (
                                Self.seamField(word, colourB: true, 0), Self.seamField(word, colourB: true, 1),
                                Self.seamField(word, colourB: true, 2)
                            )
                            @inline(__always) func codes(
                                _ f: (
                                    (shift: UInt32, bits: Int32), (shift: UInt32, bits: Int32),
                                    (shift: UInt32, bits: Int32)
                                )
                            ) -> SIMD4<Int32> {
                                SIMD4(
                                    Int32(truncatingIfNeeded: (word >> f.0.shift) & ((1 << UInt32(f.0.bits)) - 1)),
                                    Int32(truncatingIfNeeded: (word >> f.1.shift) & ((1 << UInt32(f.1.bits)) - 1)),
                                    Int32(truncatingIfNeeded: (word >> f.2.shift) & ((1 << UInt32(f.2.bits)) - 1)), 0)
                            }
                            let startA = codes(fA), startB = codes(fB)
                            let bitsA = SIMD4<Int32>(fA.0.bits, fA.1.bits, fA.2.bits, 5),
                                bitsB = SIMD4<Int32>(fB.0.bits, fB.1.bits, fB.2.bits, 5)
                            let topA = (SIMD4<Int32>(repeating: 1) &<< bitsA) &- 1,
                                topB = (SIMD4<Int32>(repeating: 1) &<< bitsB) &- 1
                            @inline(__always) func expandedLanes(
                                _ codes: SIMD4<Int32>, _ bits: SIMD4<Int32>
                            ) -> SIMD4<Int32> {
                                SIMD4(
                                    Self.seamExpand(codes.x, bits.x), Self.seamExpand(codes.y, bits.y),
                                    Self.seamExpand(codes.z, bits.z), 0)
                            }
                            let ownA = expandedLanes(startA, bitsA), ownB = expandedLanes(startB, bitsB)
                            var best = 0
                            for q in 0..<pixelCount {
                                let s = px[q]
                                best &+= Int(min(min(s.total.x, s.total.y), min(s.total.z, s.total.w)) &* s.importance)
                            }
                            var bestMove = SIMD2<Int32>(0, 0)
                            for db: Int32 in -1...1 {
                                for da: Int32 in -1...1 where da != 0 || db != 0 {
                                    // Lane 3 (alpha) stays 0, inside every range.
                                    let ca = startA &+ SIMD4(da, da, da, 0), cb = startB &+ SIMD4(db, db, db, 0)
                                    if any(ca .< 0) || any(ca .> topA) || any(cb .< 0) || any(cb .> topB) { continue }
                                    let deltaA = expandedLanes(ca, bitsA) &- ownA,
                                        deltaB = expandedLanes(cb, bitsB) &- ownB
                                    var total = 0
                                    for q in 0..<pixelCount {
                                        let s = px[q]
                                        let sa = s.sumA &+ s.weight0 &* deltaA, sb = s.sumB &+ s.weight0 &* deltaB
                                        let e =
                                            (s.total &- s.red &- s.green &- s.blue)
                                            &+ (channelError(sa.x, sb.x, s.modulation, s.target.x)
                                                &+ channelError(sa.y, sb.y, s.modulation, s.target.y)
                                                &+ channelError(sa.z, sb.z, s.modulation, s.target.z)) &* s.visible
                                        total &+= Int(min(min(e.x, e.y), min(e.z, e.w)) &* s.importance)
                                        if total >= best { break }
                                    }
                                    if total < best { best = total; bestMove = SIMD2(da, db) }
                                }
                            }
                            if bestMove == SIMD2(0, 0) { return }
                            moved = true
                            let ca = startA &+ SIMD4(bestMove.x, bestMove.x, bestMove.x, 0),
                                cb = startB &+ SIMD4(bestMove.y, bestMove.y, bestMove.y, 0)
                            for c in 0..<3 { Self.seamStore(words, la, lb, first, c, codeA: ca[c], codeB: cb[c]) }
                            // No footprint update: the group is done (the next search decodes afresh).
                        }
                    }
                }
            }
        }
        return moved
    }

    /// The best of the ±1 moves of `start` (A and B codes of a group's first word, then of its
    /// second) by `cost`, every code kept within 0...`top`, or `start` when none beats it. A
    /// single word (`pair` false; lanes 2 and 3 unused) moves A and/or B; a pair moves at most
    /// one value of each word: the 56 moves that change both A and B of a word with the other
    /// word gained nothing measurable.
    /// Cost: `cost` once for the start and once per move inside the range (8 single, 24 pair).
    @inline(__always) static func seamBestMove(
        _ start: SIMD4<Int32>, top: SIMD4<Int32>, pair: Bool,
        cost: (SIMD4<Int32>) -> Int
    ) -> SIMD4<Int32> {
        var best = cost(start), bestCodes = start
        let span: Int32 = pair ? 1 : 0
        for d3 in -span...span {
            for d2 in -span...span {
                for d1: Int32 in -1...1 {
                    for d0: Int32 in -1...1
                    where (d0 != 0 || d1 != 0 || d2 != 0 || d3 != 0)
                        && (!pair || ((d0 == 0 || d1 == 0) && (d2 == 0 || d3 == 0)))
                    {
                        let codes = start &+ SIMD4(d0, d1, d2, d3)
                        if any(codes .< 0) || any(codes .> top) { continue }
                        let e = cost(codes)
                        if e < best { best = e; bestCodes = codes }
                    }
                }
            }
        }
        return bestCodes
    }

    /// Writes channel `c`'s A and B codes into `words[index]` (in that half's own layout) and
    /// refreshes the word's expanded lanes.
    @inline(__always) static func seamStore(
        _ words: UnsafeMutableBufferPointer<UInt32>, _ la: UnsafeMutableBufferPointer<UInt64>,
        _ lb: UnsafeMutableBufferPointer<UInt64>, _ index: Int, _ c: Int, codeA: Int32, codeB: Int32
    ) {
        let word = words[index]
        let fieldA = seamField(word, colourB: false, c), fieldB = seamField(word, colourB: true, c)
        let maskA = (UInt32(1) << UInt32(fieldA.bits)) - 1, maskB = (UInt32(1) << UInt32(fieldB.bits)) - 1
        let mask = (maskA << fieldA.shift) | (maskB << fieldB.shift)
        words[index] =
            (word & ~mask) | (UInt32(truncatingIfNeeded: codeA) & maskA) << fieldA.shift
            | (UInt32(truncatingIfNeeded: codeB) & maskB) << fieldB.shift
        la[index] = PVRTCColour.expandA(words[index])
        lb[index] = PVRTCColour.expandB(words[index])
    }

    /// Expanded colour lanes (R, G, B in 5-bit units, alpha doubled) as four Int32.
    @inline(__always) static func unpackLanes(_ v: UInt64) -> SIMD4<Int32> {
        SIMD4<Int32>(
            Int32(truncatingIfNeeded: v & 0xFFFF), Int32(truncatingIfNeeded: (v >> 16) & 0xFFFF),
            Int32(truncatingIfNeeded: (v >> 32) & 0xFFFF), Int32(truncatingIfNeeded: v >> 48))
    }
}
