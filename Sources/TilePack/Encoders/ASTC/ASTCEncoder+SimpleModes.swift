import TilePackCore
import TilePackCodec

// Rate-distortion optimisation's "simple layouts": single-partition blocks whose weights take few
// bits and whose endpoint values reach the colour cap (range 256), so the bits between the
// colour values and the weights are zero. Deflate codes those zero bytes as short matches, and
// such blocks repeat their first bytes (mode and endpoint mode) too. The search never tries these
// layouts (it ranks by weight precision); the rate-distortion choice does
// (ASTCEncoder+RateDistortion.swift), and docs/ASTC.md tells what they pay.
extension ASTCEncoder {
    /// Grids and weight levels of the simple layouts, as (grid width, grid height, weight
    /// range): each taken with colour-scaled and direct RGB endpoints when the footprint has the
    /// mode and the endpoint values still reach range 256. Measured with `checks/bench/bench-rdo`
    /// at λ 30 (docs/ASTC.md): 3 × 3 of range 8 and 4 × 4 of range 4 alone, montblanc-dem
    /// −25.6 %, world.rgb −35.5 %; with 3 × 3 of range 12 and 4 × 4 of range 5 too, −25.3 % and
    /// −34.5 % (finer weights cost more bytes than they save in error); with 3 × 3 of range 6 and
    /// 4 × 4 of range 3 instead, −25.9 % and −36.6 %, and the same without 4 × 4 of range 3
    /// (the rarest winner) for fewer fits. The winners on world.rgb: direct 3 × 3 range 6 (a
    /// third of its blocks), scaled 3 × 3 range 6, direct 3 × 3 range 8; on dem: scaled 3 × 3
    /// range 8 and 6, 4 × 4 range 4.
    static let simpleShapes: [(Int, Int, Int)] = [(3, 3, 6), (3, 3, 8), (4, 4, 4)]
    /// The simple layouts with luminance endpoints (mode 0: two values), tried on grey blocks
    /// only. Measured with `checks/bench/bench-rdo --sources "rio-tiler web" --lambdas 32,64,96`
    /// (docs/ASTC.md, the thirteenth round): 3 × 3 of range 12 alone moves the source's bytes at
    /// the same PSNR by −1.1 points; 3 × 3 of range 8, 4 × 4 of range 8 or 12, 5 × 5 of range 5 or 8
    /// and 6 × 6 of range 3 to 5, alone or beside it, within 0.3 points of that or no better.
    static let luminanceShapes: [(Int, Int, Int)] = [(3, 3, 12)]
    /// The share of the search's estimate (off-line, grid and rounding error) a simple layout
    /// must keep under the cost to beat before it is fitted: the estimate is no bound (the
    /// fit's refit and weight steps often do better). On the 4096² bench source (default build,
    /// 2 workers, user CPU, two rounds each): fitting every layout that passes the rate floor
    /// (with 4 × 4 of range 3 as well) 20.1 s; 0.5 × 17.9 s; 0.8 × 16.8 s; 1 × 16.5 s (main: 12.2 s); bytes at λ 30: dem −25.9 / −25.8 /
    /// −25.5 %, world.rgb −36.6 / −36.6 / −36.4 %.
    static let simpleEstimateShare: Float = 0.8

    /// The bits layout `c`'s header, colour values and weights would take as literals, and one
    /// match for the zero bits between them: the rate term that ranks a kind's simple layouts
    /// (``simplePicks(lambda:limit:floorBits:offLine:)``). No estimate of the block's real rate
    /// (its first bytes often repeat an earlier block's); it tells the layouts' weight bits apart.
    static func simpleLiteralBits(_ c: Candidate) -> Float {
        Float(17 + 8 * c.valueCount + c.weightBits) / 8 * ASTCRateModel.literalBits
            + ASTCRateModel.matchBits(distance: 16)
    }

    /// The simple layouts of `format` (see ``simpleShapes``), without infill tables (the
    /// encoder's init places them). Cost: a scan of the 2048 block modes per shape.
    static func simpleLayouts(format: ASTCFormat, modes: ASTCBlockModes) -> [Candidate] {
        var list: [Candidate] = []
        // Colour-scaled, direct, then luminance layouts (the order of their indices for reuse).
        for (scaled, luminance) in [(true, false), (false, false), (false, true)] {
            for (gw, gh, range) in luminance ? luminanceShapes : simpleShapes {
                guard let level = ASTCIntegerSequence.ranges.firstIndex(of: range), level < 12 else { continue }
                guard
                    let mode = (0..<2048).first(where: { m in
                        let e = modes.entries[m]
                        return e.valid && !e.dualPlane && m & 0x1FF != 0x1FC && Int(e.gridWidth) == gw
                            && Int(e.gridHeight) == gh && Int(e.weightLevel) == level
                    })
                else { continue }
                let e = modes.entries[mode], wbits = Int(e.weightBits)
                var c = Candidate(
                    mode: mode, gridWidth: gw, gridHeight: gh, weightLevel: level, weightBits: wbits,
                    rgbLevel: 0, rgbaLevel: 0, taps: Int(e.infill), coverage: -1, scaled: scaled,
                    luminance: luminance)
                c.rgbLevel = Int(ASTCIntegerSequence.colourLevels[(c.valueCount >> 1) * 128 + min(111 - wbits, 127)])
                guard c.rgbLevel == 20 else { continue }
                list.append(c)
            }
        }
        return list
    }

    /// The simple layout with the least `D + λ·R` under `limit` for the (opaque) block's texels,
    /// among at most one of each endpoint kind (``simplePicks(lambda:limit:floorBits:offLine:)``),
    /// each fitted by the search's own functions (principal-axis or line-through-black ends,
    /// one refit, weight steps); nil when none is under it. Leaves the winner's values in
    /// `recent.colourScratch`/`gridScratch` (for a reusable layout: `layout` ≥ 0) and the
    /// encoder's scratch (ends, weights) changed.
    /// Nothing is tried when `limit` is under λ × ``freshBitsFloor`` or under that plus the
    /// block's least off-line error (its principal line's: no single-partition block does
    /// better).
    /// Cost: the principal line's weights (a pass over the texels) and the line through black
    /// (two), none of them when the search left both for this block (its cached grid errors
    /// too); a grid estimate per grid whose layouts pass without it; per fitted layout (two at most) a
    /// fit (two weight passes, a refit), an error pass, the weight steps and a rate estimate.
    func cheapestSimple(
        lambda: Float, recent: ASTCRecentBlocks, below limit: Float
    ) -> (bits: ASTCBits, layout: Int, cost: Float)? {
        guard !simpleCandidates.isEmpty else { return nil }
        // A fresh block's bits: most are literals (see ``freshBitsFloor``).
        let floorBits = lambda * Self.freshBitsFloor
        guard floorBits < limit else { return nil }
        // `fast`'s principal line (the search's one-partition line), not a second power iteration.
        (axisEnds[0], axisEnds[1]) = fastAxisEnds
        // Both lines and their packed kinds: the search's, when it screened this block's one-
        // partition layouts and nothing has replaced them since (``oneLineSerial``; the same
        // passes would give the same values, and its cached grid errors are those
        // ``gridError(_:)`` would compute again); else computed here.
        let searched = oneLineSerial == blockSerial
        let directOffLine: Float
        if searched {
            directOffLine = oneLineDirectOffLine
        } else {
            let direct = idealWeights(axisEnds, partitions: 1, into: screenIdeal, lengths: lineLength2)
            (directOffLine, lineTotal) = (direct.offLine, direct.total)
        }
        guard directOffLine + floorBits < limit else { return nil }
        let scaledOffLine: Float
        if searched {
            scaledOffLine = oneLineScaledOffLine
            lineTotalScaled = oneLineScaledTotal
        } else {
            setChromaEnds(partitions: 1, mask: UInt64.max >> UInt64(64 - texelCount))
            let scaled = idealWeights(chromaEnds, partitions: 1, into: screenIdealScaled, lengths: lineLength2Scaled)
            (scaledOffLine, lineTotalScaled) = (scaled.offLine, scaled.total)
        }
        let grey = isGrey()
        let picks = simplePicks(
            lambda: lambda, limit: limit, floorBits: floorBits,
            offLine: SIMD4(directOffLine, scaledOffLine, grey ? directOffLine : .infinity, .infinity),
            kindsFilled: searched)
        var found: (bits: ASTCBits, layout: Int, cost: Float)? = nil
        var limit = limit
        // The luminance pick first (a grey block's), then the direct one; each later pick is
        // fitted only if its gate still passes under what the ones before cost.
        for kind in [2, 0, 1] where picks.index[kind] >= 0 && picks.estimate[kind] + floorBits < limit {
            let i = picks.index[kind], c = simpleCandidates[i]
            var d = fit(c, partitions: 1, opaque: true, refits: 1)
            guard Float(d) + floorBits < limit else { continue }
            d = refineWeights(c, partitions: 1, error: d)
            let block = pack(c, partitions: 1, seed: 0, opaque: true, gridValues: gridQ, colourValues: colourQ)
            let cost = Float(d) + lambda * recent.rate.bits(block, limit: (limit - Float(d)) / lambda)
            guard cost < limit else { continue }
            found = (block, simpleLayoutBase + i, cost)
            limit = cost
            recent.colourScratch.update(from: colourQ, count: 16)
            recent.gridScratch.update(from: gridQ, count: 64)
        }
        return found
    }

    /// Per endpoint kind (lanes of ``Candidate/endpointLane``: 0 direct, 1 colour-scaled,
    /// 2 luminance; lane 3 unused), the simple layout to fit (-1: none) and its gate estimate:
    /// of the layouts whose estimate at
    /// ``simpleEstimateShare`` (off-line error `offLine[kind]`, infinite for a kind not to try:
    /// luminance on a block that is not grey; grid and rounding error) plus
    /// `floorBits` is under `limit`, the one with the least gate estimate + λ ×
    /// ``simpleLiteralBits(_:)``. Why one a kind: fitting every layout that passed (4.1 fits a
    /// block where any was fitted, on the 4096² bench source) took 7–10 % more of a default
    /// build's CPU for 0.1–1.2 % fewer bytes (docs/ASTC.md), and the kinds differ most in what
    /// they fit (the line through black or the principal line); within a kind the rate term
    /// trades the grid's and weights' error against weight bits.
    /// Expects the lines' ideal weights and `lineTotal`/`lineTotalScaled` set (``cheapestSimple(lambda:recent:below:)``).
    /// Cost: a grid estimate per grid whose layouts pass without it (kinds packed on the first).
    func simplePicks(
        lambda: Float, limit: Float, floorBits: Float, offLine: SIMD4<Float>, kindsFilled: Bool = false
    ) -> (index: SIMD4<Int>, estimate: SIMD4<Float>) {
        var index = SIMD4<Int>(-1, -1, -1, -1), gate = SIMD4<Float>(repeating: .infinity)
        var score = SIMD4<Float>(repeating: .infinity)
        // The kinds' weights are packed (and the grid errors forgotten) on the first grid
        // error asked for, unless the search left them packed (`kindsFilled`): many blocks fail
        // every layout's gate before it.
        var kindsFilled = kindsFilled
        for (i, c) in simpleCandidates.enumerated() {
            // The search's estimate (off-line, grid and rounding error), at a margin: the fit's
            // refit and weight steps often do better than it. The grid error is never negative,
            // so the estimate without it is tried first (the same test, fewer decimations).
            let k = c.endpointLane
            let line = offLine[k], rounding = estimate(c, opaque: true)
            guard line + floorBits < limit, Self.simpleEstimateShare * (line + rounding) + floorBits < limit
            else { continue }
            if !kindsFilled {
                fillKinds(mixed: false)
                kindsFilled = true
            }
            let e = Self.simpleEstimateShare * (line + gridError(c) + rounding)
            guard e + floorBits < limit else { continue }
            let s = e + lambda * Self.simpleLiteralBits(c)
            if s < score[k] { (index[k], gate[k], score[k]) = (i, e, s) }
        }
        return (index, gate)
    }
}
