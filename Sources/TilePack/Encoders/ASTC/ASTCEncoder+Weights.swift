import TilePackCore
import TilePackCodec

// Weights: ideal weights on the endpoint line, their averages on each weight grid (infill taps), the estimate that
// ranks layouts, and the exact per-texel errors that pick a block.
// The encoder's state and search are in ASTCEncoder.swift; docs/ASTC.md tells the algorithm.
extension ASTCEncoder {
    /// Ideal weights of every texel on its partition's line (`lineEnds`: two per partition) in
    /// `weights` (0…1), with each texel's squared line length in `lengths`.
    /// Returns the squared distance of the texels from their lines (the error no weight can
    /// remove) and the sum of `lengths`, each in total and per partition (`offLine` of
    /// partitions 0 and 1, then `total` of each: mixed endpoint modes take one of each kind).
    /// Cost: one pass over the texels.
    func idealWeights(
        _ lineEnds: UnsafeMutablePointer<SIMD4<Float>>, partitions: Int,
        into weights: UnsafeMutablePointer<Float>, lengths: UnsafeMutablePointer<Float>
    )
        -> (offLine: Float, total: Float, split: SIMD4<Float>)
    {
        var origin = (lineEnds[0], lineEnds[0]), direction = (lineEnds[1] - lineEnds[0], SIMD4<Float>())
        if partitions == 2 { origin.1 = lineEnds[2]; direction.1 = lineEnds[3] - lineEnds[2] }
        let len = ((direction.0 * direction.0).sum(), (direction.1 * direction.1).sum())
        let scale = (len.0 > 0 ? 1 / len.0 : 0, len.1 > 0 ? 1 / len.1 : 0)
        if partitions == 1 {
            // Four texels a lane from `planes`; each lane adds a texel's channels in the order
            // `SIMD4.sum()` does, and `off` takes the lanes in texel order: the one-texel-at-a-time
            // figures bit for bit.
            let o = origin.0, d = direction.0, s = scale.0
            let r = planes, g = planes + 16, b = planes + 32, a = planes + 48
            let out = UnsafeMutableRawPointer(weights)
            var off: Float = 0
            for k in 0..<chunkCount {
                var p: SIMD4<Float> = (r[k] - o[0]) * d[0]
                p += (g[k] - o[1]) * d[1]
                p += (b[k] - o[2]) * d[2]
                p += (a[k] - o[3]) * d[3]
                let w = clampedWeights(p * s)
                out.storeBytes(of: w, toByteOffset: 16 * k, as: SIMD4<Float>.self)
                let rr: SIMD4<Float> = r[k] - (o[0] + d[0] * w), rg: SIMD4<Float> = g[k] - (o[1] + d[1] * w)
                let rb: SIMD4<Float> = b[k] - (o[2] + d[2] * w), ra: SIMD4<Float> = a[k] - (o[3] + d[3] * w)
                var e: SIMD4<Float> = rr * rr + rg * rg
                e += rb * rb
                e += ra * ra
                off += e[0]; off += e[1]; off += e[2]; off += e[3]
            }
            lengths.update(repeating: len.0, count: texelCount)
            let total = len.0 * Float(texelCount)
            return (off, total, SIMD4(off, 0, total, 0))
        }
        var off0: Float = 0, off1: Float = 0, count1: Float = 0
        for t in 0..<texelCount {
            let second = partitionOf[t] == 1
            let o = second ? origin.1 : origin.0, d = second ? direction.1 : direction.0
            let w = min(max(((texels[t] - o) * d).sum() * (second ? scale.1 : scale.0), 0), 1)
            weights[t] = w
            lengths[t] = second ? len.1 : len.0
            let r = texels[t] - (o + d * w)
            let off = (r * r).sum()
            off0 += second ? 0 : off
            off1 += second ? off : 0
            count1 += second ? 1 : 0
        }
        let total0 = len.0 * (Float(texelCount) - count1), total1 = len.1 * count1
        return (off0 + off1, total0 + total1, SIMD4(off0, off1, total0, total1))
    }

    /// Mixed endpoint modes for the current two partitions: the partition whose line through
    /// black costs least over its principal line gets colour-scaled endpoints (``mixedScaled``).
    /// `direct`/`scaled` are ``idealWeights``' per-partition figures for the two kinds.
    /// Returns the off-line error. Cost: a few scalar operations.
    func setMixed(direct: SIMD4<Float>, scaled: SIMD4<Float>) -> Float {
        let p = scaled[0] - direct[0] <= scaled[1] - direct[1] ? 0 : 1
        mixedScaled = p
        lineTotalMixed = scaled[2 + p] + direct[3 - p]
        return scaled[p] + direct[1 - p]
    }

    /// Packs the kinds' ideal weights and line lengths per texel (`screenKinds`,
    /// `lengthKinds`; the mixed lane only when `mixed`) and forgets the cached grid errors.
    /// Cost: one pass over the texels.
    func fillKinds(mixed: Bool) {
        generation += 1
        let p = mixed ? mixedScaled : -1
        for t in 0..<texelCount {
            let fromScaled = partitionOf[t] == p
            let d = screenIdeal[t], s = screenIdealScaled[t], dl = lineLength2[t], sl = lineLength2Scaled[t]
            screenKinds[t] = SIMD4(d, s, fromScaled ? s : d, 0)
            lengthKinds[t] = SIMD4(dl, sl, fromScaled ? sl : dl, 0)
        }
    }

    /// Per-texel values averaged onto layout `c`'s weight grid (`gridIdeal`) with the infill
    /// tap weights, each grid weight gathering the texels its taps reach.
    /// Cost: one multiply-add per tap that reaches a grid weight.
    @inline(__always)
    func average(_ values: UnsafeMutablePointer<Float>, onto c: Candidate) {
        let count = c.gridCount
        if c.reach < 0 {
            for i in 0..<count { gridIdeal[i] = values[i] }
            return
        }
        let inverse = inverseCoverage + c.coverage, starts = reachStart + c.reach
        for i in 0..<count {
            var sum: Float = 0
            for r in Int(starts[i])..<Int(starts[i + 1]) { sum += reachWeightF[r] * values[Int(reachTexel[r])] }
            gridIdeal[i] = sum * inverse[i]
        }
    }

    /// Improves the grid weights `average(values, onto: c)` left in `gridIdeal` by one
    /// back-projection step: the texels' residuals (`values` minus the grid infilled back in
    /// Float) averaged onto the grid the same way and added at twice their size. A plain
    /// average blurs: each grid weight is pulled toward texels its neighbours also cover, so a
    /// grid much coarser than the footprint in both directions (5 × 5 at 6 × 6) was estimated,
    /// and fitted, worse than it is; the step moves the weights toward the least-squares ones
    /// (×2: the averaging operator's own gain is below 1; ×1.5–2.5 measured alike, ×1 less).
    /// Rounding clamps later. Cost: the infill taps once and one pass over the grid's reach.
    @inline(__always)
    func backProject(_ values: UnsafeMutablePointer<Float>, onto c: Candidate) {
        guard c.reach >= 0 else { return }
        let residual = gridIdeal + 64
        infillResiduals(c, grid: gridIdeal, values: values, into: residual)
        let inverse = inverseCoverage + c.coverage, starts = reachStart + c.reach
        for i in 0..<c.gridCount {
            var sum: Float = 0
            for r in Int(starts[i])..<Int(starts[i + 1]) { sum += reachWeightF[r] * residual[Int(reachTexel[r])] }
            gridIdeal[i] += sum * inverse[i] * 2
        }
    }

    /// The error layout `c`'s weight grid alone leaves for its endpoint kind, from the
    /// per-block cache (``decimateKinds(_:)`` on a grid's first use after ``fillKinds(mixed:)``).
    @inline(__always)
    func gridError(_ c: Candidate) -> Float {
        guard c.slot >= 0 else { return 0 }
        if slotStamp[c.slot] != generation {
            slotError[c.slot] = decimateKinds(c)
            slotStamp[c.slot] = generation
        }
        return slotError[c.slot][c.kind]
    }

    /// Every kind's ideal weights (`screenKinds`) averaged onto layout `c`'s weight grid
    /// through its infill taps; returns per kind the error the grid alone leaves (unquantised
    /// grid weights infilled back, their distance from each texel's ideal weight scaled by
    /// its squared line length), after one back-projection step (``backProject(_:onto:)``).
    /// Cost: a texel's nonzero taps twice (``Candidate/tapCount``), the grid's reach twice, four
    /// kinds a lane each.
    func decimateKinds(_ c: Candidate) -> SIMD4<Float> {
        guard c.taps >= 0 else { return SIMD4() }
        let inverse = inverseCoverage + c.coverage, starts = reachStart + c.reach
        for i in 0..<c.gridCount {
            var sum = SIMD4<Float>()
            for r in Int(starts[i])..<Int(starts[i + 1]) { sum += reachWeightF[r] * screenKinds[Int(reachTexel[r])] }
            gridKinds[i] = sum * inverse[i]
        }
        // One back-projection step (see ``backProject(_:onto:)``), every kind a lane.
        let residualKinds = gridKinds + 64
        infillResiduals(c, grid: gridKinds, values: screenKinds, into: residualKinds)
        for i in 0..<c.gridCount {
            var sum = SIMD4<Float>()
            for r in Int(starts[i])..<Int(starts[i + 1]) { sum += reachWeightF[r] * residualKinds[Int(reachTexel[r])] }
            let g = gridKinds[i] + sum * (inverse[i] * 2)
            gridKinds[i] = g.replacing(with: 0, where: .!(g .>= 0)).replacing(with: 1, where: g .> 1)
        }
        infillResiduals(c, grid: gridKinds, values: screenKinds, into: residualKinds)
        var total = SIMD4<Float>()
        for t in 0..<texelCount {
            let d = residualKinds[t]
            total += d * d * lengthKinds[t]
        }
        return total
    }

    /// `values` less the grid values in `grid` infilled back in Float, per texel into `residual`
    /// (one lane type: a Float per texel for ``backProject(_:onto:)``, every kind a lane for
    /// ``decimateKinds(_:)``): a texel's taps in table order, the zero taps a two-tap grid skips
    /// adding only zeros. Cost: ``Candidate/tapCount`` multiply-adds a texel.
    @inline(__always)
    func infillResiduals<Lane: GridLane>(
        _ c: Candidate, grid: UnsafeMutablePointer<Lane>, values: UnsafeMutablePointer<Lane>,
        into residual: UnsafeMutablePointer<Lane>
    ) {
        let index = tapIndex + c.taps, weight = tapWeightF + c.taps
        if c.tapCount == 2 {
            for t in 0..<texelCount {
                var v = weight[4 * t] * grid[Int(index[4 * t])]
                v += weight[4 * t + 1] * grid[Int(index[4 * t + 1])]
                residual[t] = values[t] - v * (1 / 16)
            }
        } else {
            for t in 0..<texelCount {
                var v = weight[4 * t] * grid[Int(index[4 * t])]
                v += weight[4 * t + 1] * grid[Int(index[4 * t + 1])]
                v += weight[4 * t + 2] * grid[Int(index[4 * t + 2])]
                v += weight[4 * t + 3] * grid[Int(index[4 * t + 3])]
                residual[t] = values[t] - v * (1 / 16)
            }
        }
    }

    /// Estimated squared error layout `c` adds to its grid's (``gridError(_:)``): uniform
    /// rounding of the weights at `c`'s weight level over the squared line lengths, and of
    /// the endpoints at its colour level (interpolated between two independent roundings).
    /// Cost: two table reads.
    @inline(__always)
    func estimate(_ c: Candidate, opaque: Bool) -> Float {
        let level = opaque ? c.rgbLevel : c.rgbaLevel
        return weightRounding[c.weightLevel] * (c.scaled ? lineTotalScaled : c.mixed ? lineTotalMixed : lineTotal)
            + colourRounding[level] * Float(texelCount * (opaque ? 3 : 4))
    }

    /// `values` (0…1 per texel) averaged onto `c`'s grid with one back-projection step,
    /// rounded to scrambled weights in `grid`. Cost: as ``computeWeights(_:partitions:)``'s grid part.
    @inline(__always)
    func quantiseGrid(_ c: Candidate, _ values: UnsafeMutablePointer<Float>, into grid: UnsafeMutablePointer<UInt8>) {
        average(values, onto: c)
        backProject(values, onto: c)
        let table = weightQuant + c.weightLevel * 65
        // `Int(x · 64 + 0.5)` limited to 0…64, the limits taken in Float first (the same
        // result for any x but NaN, which never occurs): min/max instructions where the
        // integer limits after the conversion were branches that the estimate's overshoots
        // (back-projection leaves weights outside 0…1) mispredicted.
        for i in 0..<c.gridCount {
            let f = min(max(gridIdeal[i] * 64 + 0.5, 0), 64)
            grid[i] = table[Int(f)]
        }
    }

    /// Decoded texel weights (0…64) of `grid` through `c`'s infill taps, as the decoder does.
    /// Cost: four taps a texel.
    @inline(__always)
    func infillPlane(_ c: Candidate, from grid: UnsafeMutablePointer<UInt8>, into out: UnsafeMutablePointer<Int32>) {
        let values = weightValue + c.weightLevel * 32
        if c.taps < 0 {
            for t in 0..<texelCount { out[t] = values[Int(grid[t])] }
            return
        }
        let index = tapIndex + c.taps, weight = tapWeight + c.taps
        for t in 0..<texelCount {
            var sum: Int32 = 0
            for k in 0..<4 { sum &+= values[Int(grid[Int(index[4 * t + k])])] &* weight[4 * t + k] }
            out[t] = (sum &+ 8) >> 4
        }
    }

    /// One partition's weights against `decodedEnds`, four texels a lane: ideal projections
    /// (0…1), onto the grid, quantised to `gridQ`, decoded to `texelW` (0…64, also as Float in
    /// `weightChunks`). Cost: one pass over `planes`; a decimated grid adds the infill taps twice.
    @inline(__always)
    func computeWeightsFast(_ c: Candidate, opaque: Bool, decoded: Bool = true) {
        let n = chunkCount
        let r = planes, g = planes + 16, b = planes + 32, a = planes + 48
        let o = decodedEnds[0], d = decodedEnds[1] - o
        let len = (d * d).sum()
        let dd = d * (len > 0 ? 1 / len : 0), offset = (o * dd).sum()
        for k in 0..<n {
            var w: SIMD4<Float> = r[k] * dd[0] + g[k] * dd[1]
            w += b[k] * dd[2] - offset
            if !opaque { w += a[k] * dd[3] }
            weightChunks[k] = w.replacing(with: 0, where: .!(w .>= 0)).replacing(with: 1, where: w .> 1)
        }
        let table = weightQuant + c.weightLevel * 65, values = weightValue + c.weightLevel * 32
        if c.taps < 0 {
            for k in 0..<n {
                let v = roundedInts(weightChunks[k] * 64)
                var decodedW = SIMD4<Int32>()
                for j in 0..<4 {
                    let q = table[Int(v[j])]
                    gridQ[4 * k + j] = q
                    decodedW[j] = values[Int(q)]
                    texelW[4 * k + j] = decodedW[j]
                }
                weightChunks[k] = SIMD4<Float>(decodedW)
            }
            return
        }
        // Average onto the grid, then quantise four grid weights a lane (`gridIdeal` has room
        // for the last group's spare lanes; clamping keeps their table index in 0…64).
        for i in 0..<c.gridCount {
            var sum = SIMD4<Float>()
            for e in Int(fastStart[i])..<Int(fastStart[i + 1]) {
                sum += fastAverage[e] * weightChunks[Int(fastChunk[e])]
            }
            gridIdeal[i] = sum.sum()
        }
        let nearest = nearestWeight + c.weightLevel * 65
        for k in 0..<(c.gridCount + 3) / 4 {
            let w =
                SIMD4<Float>(gridIdeal[4 * k], gridIdeal[4 * k + 1], gridIdeal[4 * k + 2], gridIdeal[4 * k + 3]) * 64
            let v = roundedInts(w.replacing(with: 0, where: .!(w .>= 0)).replacing(with: 64, where: w .> 64))
            for j in 0..<4 {
                gridQ[4 * k + j] = table[Int(v[j])]
                gridValueF[4 * k + j] = nearest[Int(v[j])]
            }
        }
        guard decoded else { return }
        // Infill exactly as the decoder: Σ value × tap weight (integers, exact in Float), + 8, >> 4.
        for k in 0..<n { weightChunks[k] = SIMD4<Float>() }
        for i in 0..<c.gridCount {
            let v = SIMD4<Float>(repeating: gridValueF[i])
            for e in Int(fastStart[i])..<Int(fastStart[i + 1]) { weightChunks[Int(fastChunk[e])] += fastInfill[e] * v }
        }
        for k in 0..<n {
            let w = (roundedInts(weightChunks[k]) &+ 8) &>> 4
            for j in 0..<4 { texelW[4 * k + j] = w[j] }
            weightChunks[k] = SIMD4<Float>(w)
        }
    }

    /// Ideal weights against the decoded endpoints, averaged onto the grid, quantised to
    /// `gridQ`, and infilled back to `texelW` (0…64) exactly as the decoder does.
    /// The projections run four texels a lane from `planes`, each lane adding a texel's
    /// channels in the order `SIMD4.sum()` adds them (red, green, blue, alpha), so the weights
    /// are bit for bit those of `((texel − o) · d).sum()` one texel at a time (the tests compare).
    /// Cost: one pass over `planes`, the grid's reach twice and its taps twice.
    @inline(__always)
    func computeWeights(_ c: Candidate, partitions: Int) {
        let r = planes, g = planes + 16, b = planes + 32, a = planes + 48
        let out = UnsafeMutableRawPointer(ideal)
        if partitions == 1 {
            let o = decodedEnds[0], direction = decodedEnds[1] - o
            let len = (direction * direction).sum()
            let d = direction * (len > 0 ? 1 / len : 0)
            for k in 0..<chunkCount {
                var w: SIMD4<Float> = (r[k] - o[0]) * d[0]
                w += (g[k] - o[1]) * d[1]
                w += (b[k] - o[2]) * d[2]
                w += (a[k] - o[3]) * d[3]
                out.storeBytes(of: clampedWeights(w), toByteOffset: 16 * k, as: SIMD4<Float>.self)
            }
        } else {
            let o0 = decodedEnds[0], d0 = decodedEnds[1] - o0, o1 = decodedEnds[2], d1 = decodedEnds[3] - o1
            let len0 = (d0 * d0).sum(), len1 = (d1 * d1).sum()
            let s0: Float = len0 > 0 ? 1 / len0 : 0, s1: Float = len1 > 0 ? 1 / len1 : 0
            for k in 0..<chunkCount {
                let second =
                    SIMD4<Int32>(
                        Int32(truncatingIfNeeded: partitionOf[4 * k]),
                        Int32(truncatingIfNeeded: partitionOf[4 * k + 1]),
                        Int32(truncatingIfNeeded: partitionOf[4 * k + 2]),
                        Int32(truncatingIfNeeded: partitionOf[4 * k + 3])) .== 1
                func lanes(_ x: Float, _ y: Float) -> SIMD4<Float> {
                    SIMD4(repeating: x).replacing(with: y, where: second)
                }
                var w: SIMD4<Float> = (r[k] - lanes(o0[0], o1[0])) * lanes(d0[0], d1[0])
                w += (g[k] - lanes(o0[1], o1[1])) * lanes(d0[1], d1[1])
                w += (b[k] - lanes(o0[2], o1[2])) * lanes(d0[2], d1[2])
                w += (a[k] - lanes(o0[3], o1[3])) * lanes(d0[3], d1[3])
                out.storeBytes(of: clampedWeights(w * lanes(s0, s1)), toByteOffset: 16 * k, as: SIMD4<Float>.self)
            }
        }
        quantiseGrid(c, ideal, into: gridQ)
        infill(c)
    }

    /// `texelW` from `gridQ` through the grid's infill taps (and `texelSum`, the sums before
    /// rounding, for a decimated grid): the grid's values decoded once, then each texel's
    /// nonzero taps (``Candidate/tapCount``).
    /// Cost: one table read a grid weight, `tapCount` multiply-adds a texel.
    @inline(__always)
    func infill(_ c: Candidate) {
        let values = weightValue + c.weightLevel * 32
        if c.taps < 0 {
            for t in 0..<texelCount { texelW[t] = values[Int(gridQ[t])] }
            return
        }
        let decoded = gridValue
        for i in 0..<c.gridCount { decoded[i] = values[Int(gridQ[i])] }
        let index = tapIndex + c.taps, weight = tapWeight + c.taps
        if c.tapCount == 2 {
            for t in 0..<texelCount {
                let sum =
                    decoded[Int(index[4 * t])] &* weight[4 * t] &+ decoded[Int(index[4 * t + 1])] &* weight[4 * t + 1]
                texelSum[t] = sum
                texelW[t] = (sum &+ 8) >> 4
            }
        } else {
            for t in 0..<texelCount {
                var sum = decoded[Int(index[4 * t])] &* weight[4 * t]
                sum &+= decoded[Int(index[4 * t + 1])] &* weight[4 * t + 1]
                sum &+= decoded[Int(index[4 * t + 2])] &* weight[4 * t + 2]
                sum &+= decoded[Int(index[4 * t + 3])] &* weight[4 * t + 3]
                texelSum[t] = sum
                texelW[t] = (sum &+ 8) >> 4
            }
        }
    }

    /// Exact decoded squared error of the current layout (`partitions` of them, each texel's in
    /// `partitionOf`); leaves each texel's in `texelW + 64` (the second plane's half, which only
    /// ``fitDual(_:channel:refits:)`` uses) for ``refineWeights(_:partitions:error:)``.
    /// The figures are the decoder's integer ones, a texel's `Σ ((base + slope · w) >> 14 − texel)²`
    /// over its partition's channels (the tests compare), computed four texels a lane from `planes` in
    /// Float, where each is an integer under 2^22 and so exact, and ``roundedInts(_:)`` reads it
    /// back exactly: `base + slope · w` is 257 · (q0 · (64 − w) + q1 · w) + 32, at most
    /// 257 · 64 · 255 + 32 (endpoint values q 0…255, weights w 0…64), shifted as the decoder
    /// shifts; a channel's difference is at most 255, so a texel's four squares add to under
    /// 2^18. Why: the texel-at-a-time form multiplies 32-bit integer vectors, which x86-64's
    /// baseline (SSE2) lacks; this pass took 3.7 % of a default build's CPU that way.
    /// Cost: one pass over `planes`, four channels a chunk of four texels.
    func error(partitions: Int) -> Int {
        let weights = UnsafeRawPointer(texelW), each = UnsafeMutableRawPointer(texelW + 64)
        let b0 = SIMD4<Float>(base[0]), s0 = SIMD4<Float>(slope[0])
        // The second partition's figures less the first's, taken where a lane's texel is in it.
        let db = partitions == 2 ? SIMD4<Float>(base[1]) - b0 : SIMD4<Float>()
        let ds = partitions == 2 ? SIMD4<Float>(slope[1]) - s0 : SIMD4<Float>()
        var sum = SIMD4<Int32>()
        for k in 0..<chunkCount {
            let w = SIMD4<Float>(weights.loadUnaligned(fromByteOffset: 16 * k, as: SIMD4<Int32>.self))
            var e = SIMD4<Float>()
            if partitions == 1 {
                for c in 0..<4 {
                    let v = b0[c] + s0[c] * w
                    let d = SIMD4<Float>(roundedInts(v) &>> 14) - planes[16 * c + k]
                    e += d * d
                }
            } else {
                let p = SIMD4<Float>(
                    Float(partitionOf[4 * k]), Float(partitionOf[4 * k + 1]), Float(partitionOf[4 * k + 2]),
                    Float(partitionOf[4 * k + 3]))
                for c in 0..<4 {
                    // p is 0 or 1: each sum is one partition's figure exactly.
                    let v = (b0[c] + db[c] * p) + (s0[c] + ds[c] * p) * w
                    let d = SIMD4<Float>(roundedInts(v) &>> 14) - planes[16 * c + k]
                    e += d * d
                }
            }
            let texelErrors = roundedInts(e)
            each.storeBytes(of: texelErrors, toByteOffset: 16 * k, as: SIMD4<Int32>.self)
            sum &+= texelErrors
        }
        return Int(sum.wrappedSum())
    }

    /// Texel `t`'s squared error at weight `w` in the decoder's arithmetic (as
    /// ``error(partitions:)``), read from `decodedColours` (``refineWeights(_:partitions:error:)``
    /// fills it for the current endpoints).
    @inline(__always)
    func tabledTexelError(_ t: Int, weight w: Int32) -> Int32 {
        let d = decodedColours[65 &* partitionOf[t] &+ Int(w)] &- texelInts[t]
        return (d &* d).wrappedSum()
    }

    /// Moves each grid weight one quantisation step down or up when that lowers the decoded
    /// error of the texels it reaches; returns the new total error. Expects `texelW` (and
    /// `texelSum` for a decimated grid) from `infill(c)` and each texel's error from the
    /// ``error(partitions:)`` pass that gave `total`; keeps those up to date, so a trial decodes only
    /// the stepped weights (recomputing the current ones each trial cost ~7 % of `quality`).
    /// Cost: a table of 65 decoded colours a partition; per grid weight, two trial
    /// re-infills of only the texels its taps reach, in one pass (a table read, no multiply, per
    /// texel and step).
    func refineWeights(_ c: Candidate, partitions: Int, error total: Int) -> Int {
        var total = total
        let values = weightValue + c.weightLevel * 32, steps = weightStep + c.weightLevel * 64
        let now = texelW + 64
        // Each partition's decoded colour at every weight 0…64, by adding the slope (the
        // decoder's `base + slope · w` exactly): a trial's texel error then needs no multiply
        // for the interpolation. Every weight a step reaches is an infill sum of values
        // 0…64 over taps summing to 16, rounded: in 0…64.
        for p in 0..<partitions {
            var v = base[p]
            for w in 0...64 {
                decodedColours[65 * p + w] = v &>> 14
                v &+= slope[p]
            }
        }
        for i in 0..<c.gridCount {
            // Both steps in one pass over the texels the weight reaches, the first taken when it
            // lowers the error, else the second (as trying them one after the other would). A
            // step the range does not allow (the same value) changes nothing: its delta is 0.
            let current = gridQ[i]
            let first = steps[Int(current) * 2], second = steps[Int(current) * 2 + 1]
            if c.reach < 0 {
                let w0 = values[Int(first)], e0 = tabledTexelError(i, weight: w0)
                let w1 = values[Int(second)], e1 = tabledTexelError(i, weight: w1)
                if e0 < now[i] {
                    total += Int(e0) - Int(now[i]); gridQ[i] = first; texelW[i] = w0; now[i] = e0
                } else if e1 < now[i] {
                    total += Int(e1) - Int(now[i]); gridQ[i] = second; texelW[i] = w1; now[i] = e1
                }
                continue
            }
            let change0 = values[Int(first)] &- values[Int(current)]
            let change1 = values[Int(second)] &- values[Int(current)]
            let from = Int(reachStart[c.reach + i]), to = Int(reachStart[c.reach + i + 1])
            var delta0 = 0, delta1 = 0
            for r in from..<to {
                let t = Int(reachTexel[r]), sum = texelSum[t] &+ 8, weight = reachWeight[r], e = Int(now[t])
                delta0 += Int(tabledTexelError(t, weight: (sum &+ change0 &* weight) >> 4)) - e
                delta1 += Int(tabledTexelError(t, weight: (sum &+ change1 &* weight) >> 4)) - e
            }
            let (delta, candidate, change) =
                delta0 < 0 ? (delta0, first, change0) : delta1 < 0 ? (delta1, second, change1) : (0, current, 0)
            guard delta < 0 else { continue }
            total += delta
            gridQ[i] = candidate
            for r in from..<to {
                let t = Int(reachTexel[r])
                texelSum[t] &+= change &* reachWeight[r]
                texelW[t] = (texelSum[t] &+ 8) >> 4
                now[t] = tabledTexelError(t, weight: texelW[t])
            }
        }
        return total
    }
}

/// `w` limited to 0…1 in every lane as `min(max(x, 0), 1)` limits one Float (−0 becomes +0,
/// NaN stays), so lane-wise weights equal the per-texel ones bit for bit.
@inline(__always) func clampedWeights(_ w: SIMD4<Float>) -> SIMD4<Float> {
    w.replacing(with: 0, where: w .<= 0).replacing(with: 1, where: w .> 1)
}

/// What ``ASTCEncoder/infillResiduals(_:grid:values:into:)`` computes with: a Float a texel, or
/// four (one a kind) in a SIMD lane; the operations are IEEE's either way, so each lane's figures
/// are those of its own Float pass.
protocol GridLane {
    static func * (weight: Float, lane: Self) -> Self
    static func * (lane: Self, scale: Float) -> Self
    static func += (lane: inout Self, other: Self)
    static func - (lane: Self, other: Self) -> Self
}

extension Float: GridLane {}
extension SIMD4: GridLane where Scalar == Float {}
