import TilePackCodec

// Rate-distortion optimisation: after the search has found a block's best-error encoding, the
// block that minimises D + λ·R among it and cheaper alternatives that deflate codes in fewer
// bits, given the tile's earlier blocks. The encoder's search is in ASTCEncoder.swift;
// docs/ASTC.md, "Rate-distortion optimisation", tells the candidates and the measurements.
extension ASTCEncoder {
    /// Reuse trials per block and kind (endpoints, weights) among the newest distinct blocks
    /// with a reusable layout; the block above is tried as well.
    static let reuseTrials = 4

    /// Bits below which a fresh block (the search's, or a reuse of an earlier block's endpoints
    /// or weights: some of its bytes new) is taken never to come, so a repeat costing less than
    /// λ × this skips the search. An approximation, not a bound: the model charges only one
    /// 16-byte match (15 bits) for a block found whole further back. Measured on a 2048² crop
    /// of the 4096² bench source at λ 12 (CPU of the encode, deflated bytes, RGB PSNR): 15 bits
    /// (never skips) 1.03 s, 920,491 B, 39.00 dB; 40: 0.91 s, +0.4 %; 60: 0.84 s, −0.1 %,
    /// 38.96 dB; 80: 0.77 s, +1.2 %; 100: 0.73 s, +1.1 % (`--rdo 0`: 0.47 s, 1,435,894 B).
    static let freshBitsFloor: Float = 60

    /// Bits under which a candidate that also errs under half the search's limit settles the
    /// choice: the reuse trials and simple layouts not yet tried are skipped. Every one of them
    /// is a fresh block, taken never to cost under λ × ``freshBitsFloor`` (60), so it could
    /// win back at most λ × 20 bits and the settled candidate's small error. Measured with
    /// `checks/bench/bench-rdo` against main (issue 30's sixth round): the five sources' bytes
    /// −0.2…+0.2 % and PSNR −0.02…+0.01 dB, the 4096² bench build's user CPU −9 to −10 %;
    /// 90 bits cost +0.2 % bytes for no more time, 100–120 bits +0.5…+2.3 %, and without the
    /// error condition world.rgb lost 0.22 dB (90 bits) to 0.45 dB (120). The encoder's
    /// ``settledBits`` (tests set 0: no choice settles); docs/ASTC.md, the seventh round.
    static let standardSettledBits: Float = 80

    /// A tile's rate-distortion state for `blockCount` blocks, with this encoder's layouts indexed.
    /// Cost: a few allocations (see ``ASTCRecentBlocks``), one pass over the layouts.
    func recentBlocks(blockCount: Int, columns: Int) -> ASTCRecentBlocks {
        let recent = ASTCRecentBlocks(format: format, blockCount: blockCount, columns: columns)
        for (i, c) in (candidates + [fastCandidate] + simpleCandidates + luminanceScreening).enumerated()
        where !c.dual && !c.mixed {
            let key = ASTCRecentBlocks.layoutKey(mode: c.mode, endpointMode: c.endpointMode)
            if recent.layoutIndex[key] < 0 { recent.layoutIndex[key] = i }
        }
        return recent
    }

    /// Layout `i` of ``recentBlocks(blockCount:columns:)``'s index (`candidates`, then
    /// `fastCandidate`, then `simpleCandidates`, then `luminanceScreening`).
    @inline(__always) func reusableLayout(_ i: Int) -> Candidate {
        if i < candidates.count { return candidates[i] }
        if i == candidates.count { return fastCandidate }
        let simple = i - simpleLayoutBase
        return simple < simpleCandidates.count
            ? simpleCandidates[simple] : luminanceScreening[simple - simpleCandidates.count]
    }

    /// The layout index of one of our single-partition blocks (luminance, direct or
    /// colour-scaled RGB endpoints, one plane), -1 for any other.
    func reusableLayout(of block: ASTCBits, in recent: ASTCRecentBlocks) -> Int {
        let mode = Int(block.lo & 0x7FF), partitions = Int(block.lo >> 11 & 3), cem = Int(block.lo >> 13 & 0xF)
        guard mode & 0x1FF != 0x1FC, partitions == 0, cem == 0 || cem == 6 || cem == 8 else { return -1 }
        return recent.layoutIndex[ASTCRecentBlocks.layoutKey(mode: mode, endpointMode: cem)]
    }

    /// The encode loop's hook for a block that is not constant: opaque blocks get
    /// ``rateDistortionChoice(_:error:level:lambda:recent:decoded:)`` at the tile's current λ; others keep
    /// `best` (alpha stays the search's, exact where the source's is 0 or 255). Either is recorded
    /// in `recent`, and `best`'s error in `tile`.
    /// Cost: for an opaque block the search measured (``searchedError``), nothing more before
    /// ``rateDistortionChoice(_:error:level:lambda:recent:decoded:)`` (which decodes the block
    /// only when it keeps it); else a decode and an error pass.
    func rateDistortion(
        _ best: ASTCBits, opaque: Bool, level: Level, tile: inout ASTCTileLambda, in recent: ASTCRecentBlocks
    ) -> ASTCBits {
        let bestError: Int, decoded: Bool
        if opaque && searchedError >= 0 {
            // The search's error is the decoder's: measuring it again needs a decode, which half
            // the blocks (those the choice replaces) never need otherwise.
            (bestError, decoded) = (searchedError, false)
            assert(
                {
                    recent.decode(best)
                    return squaredError(recent.chosenTexels, limit: Int.max) == bestError
                }(), "the search's error is the decoded block's")
        } else {
            recent.decode(best)
            (bestError, decoded) = (squaredError(recent.chosenTexels, limit: Int.max), true)
        }
        let lambda = tile.lambda
        tile.record(error: bestError)
        guard opaque else {
            recent.append(best, layout: -1)
            return best
        }
        let (bits, layout) = rateDistortionChoice(
            best, error: bestError, level: level, lambda: lambda, recent: recent, decoded: decoded)
        recent.append(bits, layout: layout)
        return bits
    }

    /// The encode loop's shortcut before the search, for an opaque block: a repeat
    /// (``cheapestRepeat(lambda:recent:below:)``) whose `D + λ·R` is under λ × ``freshBitsFloor``
    /// at the tile's current λ, which no fresh block (the search's or a reuse) is expected to
    /// beat, recorded in `recent` and its error in `tile`; nil when there is none and the search must run.
    /// Cost: ``cheapestRepeat(lambda:recent:below:)`` and a decode of a constant block.
    func repeatBeforeSearch(tile: inout ASTCTileLambda, in recent: ASTCRecentBlocks) -> ASTCBits? {
        let lambda = tile.lambda
        guard let cheap = cheapestRepeat(lambda: lambda, recent: recent, below: lambda * Self.freshBitsFloor)
        else { return nil }
        if cheap.copy >= 0 {
            recent.chosenTexels.update(from: recent.decoded + cheap.copy * texelCount, count: texelCount)
            if cheap.layout >= 0 { recent.takeValues(ofEntry: cheap.copy) }
        } else {
            recent.decode(cheap.bits)
        }
        tile.record(error: cheap.error)
        recent.append(cheap.bits, layout: cheap.layout)
        return cheap.bits
    }

    /// Records the constant block the encode loop wrote at `offset` of `blocks` (in `tile` when opaque).
    /// Cost: one decode of a constant block, the scan of the distinct blocks.
    func recordConstant(
        _ blocks: UnsafeMutableRawBufferPointer, at offset: Int, tile: inout ASTCTileLambda, in recent: ASTCRecentBlocks
    ) {
        let bits = ASTCBits(
            lo: UInt64(littleEndian: blocks.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
            hi: UInt64(littleEndian: blocks.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
        recent.decode(bits)
        recent.append(bits, layout: -1)
        // Exact; one not opaque (outside the source: alpha 0) is in no one's view and does not count.
        if bits.hi >> 56 == 0xFF { tile.record(error: 0) }
    }

    /// The block to write for the opaque texels in `texels`/`texelInts` whose best-error block
    /// is `best` (just returned by ``encodeBlock(opaque:level:)``, whose values are still in the
    /// scratch; with `bestError`; decoded in `recent.chosenTexels` when `decoded`): the least
    /// `D + λ·R` among
    /// - `best`;
    /// - a constant (void-extent) block of the texels' mean;
    /// - each recent distinct block as it is (a 16-byte match);
    /// - the newest blocks' endpoints with weights fitted to these texels (the block's first
    ///   bytes, mode and colour values, repeat);
    /// - the newest blocks' weights with endpoints fitted to these texels (its last bytes
    ///   repeat), when the search stopped at `fast`'s block (``searchedPastFast``);
    /// - a simple layout: few weight bits, endpoints at the colour cap, zero bits between them
    ///   (``cheapestSimple(lambda:recent:below:)``).
    /// D is the exact decoded error; R the ``ASTCRateModel`` estimate. Leaves the choice's
    /// texels in `recent.chosenTexels` and, for a reusable layout, its values in
    /// `recent.colourScratch`/`gridScratch`, for ``ASTCRecentBlocks/append(_:layout:)``.
    /// Cost: a block decode (none for a copy, or `best` already `decoded`), a squared-error pass
    /// per recent block (stopped once it cannot win), up to 2 × (``reuseTrials`` + 1) weight or
    /// endpoint fits, a rate estimate each, and ``cheapestSimple(lambda:recent:below:)``'s lines,
    /// estimates and fits; the fits and the simple layouts left once a candidate settles the
    /// choice (``standardSettledBits``) are skipped.
    func rateDistortionChoice(
        _ best: ASTCBits, error bestError: Int, level: Level, lambda: Float, recent: ASTCRecentBlocks,
        decoded: Bool
    ) -> (bits: ASTCBits, layout: Int) {
        var chosen = best, chosenLayout = reusableLayout(of: best, in: recent), chosenCopy = -1
        var chosenCost = Float(bestError) + lambda * recent.rate.bits(best), chosenError = bestError
        if chosenLayout >= 0 {
            recent.colourScratch.update(from: level == .fast ? colourQ : bestColourQ, count: 16)
            recent.gridScratch.update(from: level == .fast ? gridQ : bestGridQ, count: 64)
        }
        var decodedChosen = decoded
        // A reuse candidate repeats part of an earlier block: one match at the least.
        let floorBits = lambda * ASTCRateModel.matchBits(distance: 16)
        if let cheap = cheapestRepeat(lambda: lambda, recent: recent, below: chosenCost) {
            (chosen, chosenLayout, chosenCost, chosenCopy) = (cheap.bits, cheap.layout, cheap.cost, cheap.copy)
            chosenError = cheap.error
            decodedChosen = false
            if chosenCopy >= 0 && chosenLayout >= 0 { recent.takeValues(ofEntry: chosenCopy) }
        }
        let moments = self.moments(in: recent), blockSum = SIMD4<Float>(moments.sum)

        // Reuse: an earlier block's endpoints (weights fitted) or weights (endpoints fitted),
        // of the newest reusable blocks and of the block above.
        var next = 0, triedCount = 0
        for t in 0..<texelCount { partitionOf[t] = 0 }
        let blockMean = blockSum / Float(texelCount)
        // Settled (``standardSettledBits``): cheap in bits and close to the texels, so no fresh
        // candidate left (reuse trial or simple layout) can gain much on it.
        let settledCost = lambda * settledBits, settledError = errorLimit / 2
        func settled() -> Bool { chosenCost < settledCost && chosenError <= settledError }
        for k in 0...Self.reuseTrials {
            if settled() { break }
            let layout: Int, colour: UnsafeMutablePointer<UInt8>, grid: UnsafeMutablePointer<UInt8>
            var entry = -1
            if k < Self.reuseTrials {
                while next < recent.order.count && recent.layouts[recent.order[next]] < 0 { next += 1 }
                guard next < recent.order.count else { continue }
                entry = recent.order[next]
                next += 1
                (layout, colour, grid) = (recent.layouts[entry], recent.colours + entry * 16, recent.grids + entry * 64)
            } else {
                let a = recent.column
                guard recent.aboveLayouts[a] >= 0 else { continue }
                (layout, colour, grid) = (
                    recent.aboveLayouts[a], recent.aboveColours + a * 16, recent.aboveGrids + a * 64
                )
            }
            let c = reusableLayout(layout)
            // A trial with the inputs of an earlier one gives the same block at the same cost,
            // which cannot win twice: endpoints of equal colour values (a block that reused
            // its neighbour's, ~11 % of endpoint trials), or the block above as an entry tried.
            let repeated = recent.triedBefore(
                layout: layout, colour: colour, valueCount: c.valueCount, grid: grid, gridCount: c.gridCount,
                among: triedCount)
            if entry >= 0 {
                recent.tried[triedCount] = entry
                triedCount += 1
            }
            for reuseWeights in [false, true] {
                guard !(reuseWeights ? repeated.block : repeated.ends) else { continue }
                // Weights are reused only for a block the search settled at `fast`'s: after a
                // longer search a reused grid won 0.25 % of the blocks (the 4096² bench
                // source), and skipping those trials saves ~1.7 % of a default build's CPU for
                // +0.04 % bytes (docs/ASTC.md, the eighth round).
                guard !(reuseWeights && searchedPastFast) else { continue }
                setEnds(c, colour: colour)
                // Every decoded texel lies on the segment between the endpoints (within the
                // decoder's rounding), so their mean does: n × the block mean's squared distance
                // from it bounds the error below; then, about as firmly, each texel's own
                // distance less a margin for the rounding, before the weights are fitted.
                if !reuseWeights {
                    let o = decodedEnds[0], d = decodedEnds[1] - o, len = (d * d).sum()
                    let scale = len > 0 ? 1 / len : 0
                    let w = min(max(((blockMean - o) * d).sum() * scale, 0), 1)
                    let r = blockMean - (o + d * w)
                    guard Float(texelCount) * (r * r).sum() + floorBits < chosenCost else { continue }
                    let offSegment = offSegmentError(plus: floorBits, stoppingAt: chosenCost)
                    guard offSegment + floorBits < chosenCost else { continue }
                }
                if reuseWeights {
                    gridQ.update(from: grid, count: c.gridCount)
                    if entry >= 0 { infill(c, entry: entry, in: recent) } else { infill(c) }
                    guard leastSquaresError(squares: moments.squares) + floorBits < chosenCost else { continue }
                    ends[0] = decodedEnds[0]
                    ends[1] = decodedEnds[1]
                    refitEnds(partitions: 1)
                    if c.scaled { refitScaledEnds(partition: 0) }
                    quantise(c, partitions: 1, level: c.rgbLevel, opaque: true)
                } else {
                    computeWeights(c, partitions: 1)
                }
                let d = error(partitions: 1)
                guard Float(d) + floorBits < chosenCost else { continue }
                let values = reuseWeights ? colourQ : colour
                var block = pack(c, partitions: 1, seed: 0, opaque: true, gridValues: gridQ, colourValues: values)
                var cost = Float(d) + lambda * recent.rate.bits(block, limit: (chosenCost - Float(d)) / lambda)
                var trialError = d
                guard cost < chosenCost else { continue }
                if !reuseWeights {
                    // Weight steps only for a winner (they lower the error, and change some of
                    // the weight bytes the estimate saw).
                    let stepped = refineWeights(c, partitions: 1, error: d)
                    if stepped < d {
                        trialError = stepped
                        block = pack(c, partitions: 1, seed: 0, opaque: true, gridValues: gridQ, colourValues: values)
                        cost =
                            Float(stepped)
                            + lambda * recent.rate.bits(block, limit: (chosenCost - Float(stepped)) / lambda)
                    }
                }
                if cost < chosenCost {
                    (chosen, chosenLayout, chosenCost, chosenCopy) = (block, layout, cost, -1)
                    chosenError = trialError
                    recent.colourScratch.update(from: values, count: 16)
                    recent.gridScratch.update(from: gridQ, count: 64)
                    decodedChosen = false
                }
            }
        }

        // Simple layouts: few weight bits, endpoints at the colour cap (ASTCEncoder+SimpleModes.swift).
        if !settled(), let simple = cheapestSimple(lambda: lambda, recent: recent, below: chosenCost) {
            (chosen, chosenLayout, chosenCost, chosenCopy) = (simple.bits, simple.layout, simple.cost, -1)
            decodedChosen = false
        }

        if chosenCopy >= 0 {
            recent.chosenTexels.update(from: recent.decoded + chosenCopy * texelCount, count: texelCount)
        } else if !decodedChosen {
            recent.decode(chosen)
        }
        return (chosen, chosenLayout)
    }

    /// `infill(c)` of entry `e`'s grid values (already in `gridQ`; `c` its layout): the weights
    /// from `recent`'s cache when an earlier trial made them, else made and kept there. Same
    /// `texelW` and `texelSum` either way (`infill` leaves `texelSum` alone for an undecimated grid).
    /// Cost: a copy of 2 × `texelCount` integers, or the infill once per entry.
    func infill(_ c: Candidate, entry e: Int, in recent: ASTCRecentBlocks) {
        let cached = recent.infilledWeights + e * 2 * texelCount
        if recent.infilled[e] {
            texelW.update(from: cached, count: texelCount)
            if c.taps >= 0 { texelSum.update(from: cached + texelCount, count: texelCount) }
        } else {
            infill(c)
            cached.update(from: texelW, count: texelCount)
            if c.taps >= 0 { (cached + texelCount).update(from: texelSum, count: texelCount) }
            recent.markInfilled(e)
        }
    }

    /// A repeat: a constant (void-extent) block of the texels' mean (flat water, snow, shadow) or
    /// one of the tile's recent distinct blocks as it is (a 16-byte match), whichever has the
    /// least `D + λ·R` under `limit`; nil when none is under it. `copy` is the entry's index in
    /// `recent` (-1: the constant block), `error` its D (exact: a winner's pass is never stopped early).
    /// Cost: a pass over the texels; per recent block, a bound from the means and, when that
    /// passes, a squared-error pass stopped once it cannot win; a rate estimate per survivor.
    func cheapestRepeat(
        lambda: Float, recent: ASTCRecentBlocks, below limit: Float
    ) -> (bits: ASTCBits, layout: Int, cost: Float, copy: Int, error: Int)? {
        var found: (bits: ASTCBits, layout: Int, cost: Float, copy: Int, error: Int)? = nil
        var limit = limit
        let moments = self.moments(in: recent), flatError = moments.flatError
        if Float(flatError) < limit {
            let c = SIMD4<UInt64>(truncatingIfNeeded: moments.mean) &* 257
            let flat = ASTCBits(lo: 0xDFC | ((1 << 52) - 1) << 12, hi: c[0] | c[1] << 16 | c[2] << 32 | c[3] << 48)
            let bits = recent.repeatBits(
                flat, entry: ASTCRecentBlocks.capacity, limit: (limit - Float(flatError)) / lambda)
            let cost = Float(flatError) + lambda * bits
            if cost < limit { (found, limit) = ((flat, -1, cost, -1, flatError), cost) }
        }
        // A block's error is at least n × the squared difference of the two means plus, per
        // channel, the squared difference of their spreads
        // (``ASTCBlockMoments/spread(sum:squares:count:)``), four entries a lane.
        // The least λ·R of any block but a run of repeats: one 16-byte match.
        let matchBits = lambda * ASTCRateModel.matchBits(distance: 16)
        let bounds = recent.copyBounds(sum: SIMD4<Float>(moments.sum), spread: moments.spread)
        for e in recent.order {
            let bound = limit - matchBits
            guard bound > 0 else { break }
            guard bounds[e / 4][e % 4] < bound else { continue }
            let d = copyError(entry: e, limit: Int(bound), in: recent)
            guard Float(d) < bound else { continue }
            let bits = recent.repeatBits(recent.bits[e], entry: e, limit: (limit - Float(d)) / lambda)
            let cost = Float(d) + lambda * bits
            if cost < limit { (found, limit) = ((recent.bits[e], recent.layouts[e], cost, e, d), cost) }
        }
        return found
    }

    /// Entry `e`'s copy error as `squaredError(_:limit:)` decides it (exact when not above
    /// `limit`, else some sum above it), from `recent`'s measures when this block's earlier
    /// scan decides it: an exact error, or a sum already above `limit`.
    /// Cost: a compare, or a squared-error pass stopped past `limit`.
    func copyError(entry e: Int, limit: Int, in recent: ASTCRecentBlocks) -> Int {
        recent.measuring(e)
        let known = recent.copyError[e]
        if known <= recent.errorLimit[e] || known > limit { return known }
        let d = squaredError(recent.decoded + e * texelCount, limit: limit)
        (recent.copyError[e], recent.errorLimit[e]) = (d, limit)
        return d
    }

    /// The block's ``ASTCBlockMoments``, measured on its first use for this block (the rate
    /// model's byte count tells the block apart). Cost: one pass over the texels, once a block.
    func moments(in recent: ASTCRecentBlocks) -> ASTCBlockMoments {
        if let known = recent.moments, recent.momentsAt == recent.rate.count { return known }
        let moments = ASTCBlockMoments(texelInts, count: texelCount)
        (recent.moments, recent.momentsAt) = (moments, recent.rate.count)
        return moments
    }

    /// Σ over the texels of the squared distance from the segment between `decodedEnds[0]` and
    /// `decodedEnds[1]`, each less a margin of 3 for the decoder's rounding: about a lower bound
    /// of the error of any weights with those (opaque) endpoints. Four texels a lane from
    /// `planes` (RGB: the alpha of an opaque block and its endpoints is 255; the encoder's
    /// footprints, 4×4, 6×6 and 8×8, are whole chunks of four).
    /// With a `limit`, the pass stops (returning the sum so far) once that sum `+ extra` reaches
    /// it: the terms are never negative, so the whole sum `+ extra` would reach it too, and the
    /// caller's `sum + extra < limit` fails either way. Why: most endpoint trials fail this bound,
    /// most of them well before the last texel.
    /// Cost: one pass over the texels at most, a horizontal add every second chunk of four.
    func offSegmentError(plus extra: Float = 0, stoppingAt limit: Float = .infinity) -> Float {
        let o = decodedEnds[0], d = decodedEnds[1] - o, len = (d * d).sum()
        let scale = len > 0 ? 1 / len : 0
        var total = SIMD4<Float>()
        for k in 0..<chunkCount {
            let r: SIMD4<Float> = planes[k] - o[0], g: SIMD4<Float> = planes[16 + k] - o[1]
            let b: SIMD4<Float> = planes[32 + k] - o[2]
            var dot: SIMD4<Float> = r * d[0] + g * d[1]
            dot += b * d[2]
            // `clampedWeights`, not `clamped(lowerBound:upperBound:)`: the stdlib's is not inlined
            // (out-of-line `pointwiseMax`/`pointwiseMin` calls a chunk, 1.2 % of a default build
            // in perf). The two differ only in the sign of a zero, which the squares below drop (and for NaN,
            // which finite texels and ends never give).
            let w = clampedWeights(dot * scale)
            let er: SIMD4<Float> = r - d[0] * w, eg: SIMD4<Float> = g - d[1] * w, eb: SIMD4<Float> = b - d[2] * w
            var e: SIMD4<Float> = er * er + eg * eg
            e += eb * eb - 3
            total += e.replacing(with: 0, where: e .< 0)
            if k & 1 == 1, total.sum() + extra >= limit { return total.sum() }
        }
        return total.sum()
    }

    /// A lower bound, up to the decoder's rounding, of the error of any endpoints with the
    /// weights in `texelW` (one partition, all texels): the least-squares line's residual
    /// Σ|x|² − (e₀·b₀ + e₁·b₁) over RGB (an opaque block's alpha fits exactly), less a margin
    /// of 3 a texel for the rounding (as the endpoint trials' bound; not proven, measured).
    /// A weight-reuse trial whose bound cannot win skips the refit,
    /// quantisation and error pass: measured on a 2048² crop of the bench source at λ 12, it
    /// stops 77 % of those trials and none that would have won. 0 when the weights are
    /// (nearly) all equal. `squares`: Σ|x|² of the block (``ASTCBlockMoments/squares``).
    /// Cost: one pass over the texels, four a lane from `planes`.
    func leastSquaresError(squares: Float) -> Float {
        var a00 = SIMD4<Float>(), a01 = SIMD4<Float>(), a11 = SIMD4<Float>()
        var b0 = (SIMD4<Float>(), SIMD4<Float>(), SIMD4<Float>()), b1 = b0
        let weights = UnsafeRawPointer(texelW)
        for k in 0..<chunkCount {
            let w = SIMD4<Float>(weights.loadUnaligned(fromByteOffset: 16 * k, as: SIMD4<Int32>.self)) * (1 / 64)
            let v = 1 - w
            a00 += v * v; a01 += v * w; a11 += w * w
            let (r, g, b) = (planes[k], planes[16 + k], planes[32 + k])
            b0.0 += r * v; b0.1 += g * v; b0.2 += b * v
            b1.0 += r * w; b1.1 += g * w; b1.2 += b * w
        }
        let sums = (a00.sum(), a01.sum(), a11.sum())
        let s0 = SIMD4<Float>(b0.0.sum(), b0.1.sum(), b0.2.sum(), 0)
        let s1 = SIMD4<Float>(b1.0.sum(), b1.1.sum(), b1.2.sum(), 0)
        let det = sums.0 * sums.2 - sums.1 * sums.1
        guard det > 1e-3 else { return 0 }
        let fitted = ((s0 * s0).sum() * sums.2 - 2 * sums.1 * (s0 * s1).sum() + (s1 * s1).sum() * sums.0) / det
        return max(squares - fitted - 3 * Float(texelCount), 0)
    }

    /// Summed squared error of `decoded` against `texelInts`, stopping once past `limit`.
    @inline(__always)
    func squaredError(_ decoded: UnsafeMutablePointer<SIMD4<Int32>>, limit: Int) -> Int {
        var sum = 0
        for t in 0..<texelCount {
            let d = decoded[t] &- texelInts[t]
            sum += Int((d &* d).wrappedSum())
            if sum > limit { return sum }
        }
        return sum
    }

    /// `decodedEnds`, `base` and `slope` of partition 0 from layout `c`'s (opaque) colour values,
    /// read back by the decoder's own rule (``ASTCEndpoints/endpoints(mode:values:e0:e1:)``:
    /// colour-scaled, or direct with blue contraction, which the search stores).
    /// Cost: four or six table reads.
    func setEnds(_ c: Candidate, colour: UnsafeMutablePointer<UInt8>) {
        let values = colourValue + c.rgbLevel * 256
        var q0 = SIMD4<Int32>(0, 0, 0, 255), q1 = q0
        withUnsafeTemporaryAllocation(of: UInt16.self, capacity: 6) { unquantised in
            for k in 0..<c.valueCount { unquantised[k] = UInt16(values[Int(colour[k])]) }
            guard let v = unquantised.baseAddress else { return }
            ASTCEndpoints.endpoints(mode: c.endpointMode, values: v, e0: &q0, e1: &q1)
        }
        decodedEnds[0] = SIMD4<Float>(q0)
        decodedEnds[1] = SIMD4<Float>(q1)
        base[0] = 257 &* 64 &* q0 &+ 32
        slope[0] = 257 &* (q1 &- q0)
    }
}

extension ASTCEncoder {
    /// The rate model's estimate of deflate's output for a whole tile of `blocks` (16 bytes
    /// each, in order), in bytes: what `rdo` optimises, for comparing with zlib's real output
    /// (`tilepack codec encode --stats` prints both).
    /// Cost: the model's estimate per block (see ``ASTCRateModel``); two allocations.
    public static func estimatedDeflateBytes(_ blocks: [UInt8]) -> Int {
        let model = ASTCRateModel(capacity: blocks.count)
        var bits: Float = 0
        blocks.withUnsafeBytes { raw in
            for offset in stride(from: 0, to: raw.count - 15, by: 16) {
                let block = ASTCBits(
                    lo: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
                    hi: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
                bits += model.bits(block)
                model.append(block)
            }
        }
        return Int((bits / 8).rounded(.up))
    }
}
