import TilePackCore
import TilePackCodec

// Partitions: two-partition seeds matched to a 2-means clustering, the texels of each partition, and the principal axis
// of a partition (the endpoint line).
// The encoder's state and search are in ASTCEncoder.swift; docs/ASTC.md tells the algorithm.
extension ASTCEncoder {
    /// Up to three partition seeds (2 partitions): of the ``seedCandidates`` maps that differ
    /// least from a 2-means clustering of the block (either labelling; 2-means started from the
    /// ends of the principal line), the three whose partitions lie best on their own lines
    /// (``partitionLineError(mask:)``), as astcenc orders its candidate partitionings. The
    /// nearest three maps by count alone miss many good ones: a map one texel further from the
    /// clustering can split along the edge the lines need. Measured on terrain1024 6 × 6
    /// `quality` (one thread, same run): the nearest three 35.50 dB; the best three of the nearest
    /// 8 / 10 / 12 / 16 35.62 / 35.66 / 35.66 / 35.67 dB, astronaut512 36.35 → 36.49 dB at 10,
    /// for 5–8 % of the encoder's time at 10 (docs/ASTC.md).
    /// Cost: three assignment passes, one vector bit count per eight distinct maps (of the 1024
    /// seeds) and a scalar scan of the distances, then per candidate one pass over the texels of
    /// one partition and two 4 × 4 power iterations.
    func clusterSeeds() -> SIMD4<Int> {
        var centre0 = axisEnds[0], centre1 = axisEnds[1]
        var split: UInt64 = 0
        for _ in 0..<3 {
            split = 0
            var sum0 = SIMD4<Float>(), sum1 = SIMD4<Float>(), n0: Float = 0, n1: Float = 0
            for t in 0..<texelCount {
                let a = texels[t] - centre0, b = texels[t] - centre1
                if (b * b).sum() < (a * a).sum() {
                    split |= 1 << UInt64(t); sum1 += texels[t]; n1 += 1
                } else {
                    sum0 += texels[t]; n0 += 1
                }
            }
            if n0 == 0 || n1 == 0 { break }
            centre0 = sum0 / n0; centre1 = sum1 / n1
        }
        // Differing texels per map, eight maps a lane (bit counts by the halving sums:
        // per byte, then the two halves' bytes added, then the bytes folded).
        let splitLo = SIMD8<UInt32>(repeating: UInt32(truncatingIfNeeded: split))
        let splitHi = SIMD8<UInt32>(repeating: UInt32(truncatingIfNeeded: split >> 32))
        let n = SIMD8<UInt32>(repeating: UInt32(texelCount))
        @inline(__always) func byteCounts(_ x: SIMD8<UInt32>) -> SIMD8<UInt32> {
            var v = x &- ((x &>> 1) & 0x5555_5555)
            v = (v & 0x3333_3333) &+ ((v &>> 2) & 0x3333_3333)
            return (v &+ (v &>> 4)) & 0x0F0F_0F0F
        }
        for k in 0..<(distinctCount + 7) / 8 {
            var v = byteCounts(distinctHalves[2 * k] ^ splitLo) &+ byteCounts(distinctHalves[2 * k + 1] ^ splitHi)
            v = v &+ (v &>> 8)
            v = (v &+ (v &>> 16)) & 0x7F
            seedDistance[k] = pointwiseMin(v, n &- v)
        }
        let last = Self.seedCandidates - 1
        var nearest = SIMD16<Int>(repeating: -1), distances = SIMD16<Int>(repeating: Int.max)
        for j in 0..<distinctCount {
            let d = Int(seedDistance[j >> 3][j & 7])
            if d < distances[last] {
                let seed = distinctSeeds[j]
                var k = last
                while k > 0 && distances[k - 1] > d {
                    distances[k] = distances[k - 1]; nearest[k] = nearest[k - 1]; k -= 1
                }
                distances[k] = d; nearest[k] = seed
            }
        }
        // The nearest maps ranked by their partitions' line errors (ties keep the nearer map).
        var block = PartitionMoments()
        for t in 0..<texelCount { block.add(texels[t]) }
        var seeds = SIMD4<Int>(repeating: -1), errors = SIMD4<Float>(repeating: .infinity)
        for j in 0...last where nearest[j] >= 0 {
            let e = partitionLineError(mask: partitionMasks[nearest[j]], block: block)
            guard e < errors[2] else { continue }
            var k = 2
            while k > 0 && errors[k - 1] > e { errors[k] = errors[k - 1]; seeds[k] = seeds[k - 1]; k -= 1 }
            errors[k] = e; seeds[k] = nearest[j]
        }
        return seeds
    }

    /// How many of the maps nearest the 2-means clustering ``clusterSeeds()`` ranks by line
    /// error (at most 16): astcenc's `fastest` preset ranks 10 the same way.
    static let seedCandidates = 10

    /// Sums of a set of texels (count, values, products) from which its covariance follows.
    struct PartitionMoments {
        var count: Float = 0
        var sum = SIMD4<Float>()
        /// Rows of Σ x xᵀ.
        var r0 = SIMD4<Float>(), r1 = SIMD4<Float>(), r2 = SIMD4<Float>(), r3 = SIMD4<Float>()

        @inline(__always) mutating func add(_ x: SIMD4<Float>) {
            count += 1; sum += x
            r0 += x * x[0]; r1 += x * x[1]; r2 += x * x[2]; r3 += x * x[3]
        }

        static func - (a: Self, b: Self) -> Self {
            Self(
                count: a.count - b.count, sum: a.sum - b.sum, r0: a.r0 - b.r0, r1: a.r1 - b.r1, r2: a.r2 - b.r2,
                r3: a.r3 - b.r3)
        }

        /// The squared distance of the texels from their principal line (trace of the
        /// covariance minus its largest eigenvalue λ), plus 0.03 λ: the weight rounding an
        /// endpoint line of that length costs (astcenc's estimate for ~36 texels, 0.05 of the
        /// line's length a texel, with the length of a uniform spread, √(12 λ / n)).
        /// Cost: a 4 × 4 covariance, four power-iteration steps.
        var lineError: Float {
            guard count > 0 else { return 0 }
            let mean = sum / count
            let c0 = r0 - sum * mean[0], c1 = r1 - sum * mean[1], c2 = r2 - sum * mean[2], c3 = r3 - sum * mean[3]
            let trace = c0[0] + c1[1] + c2[2] + c3[3]
            let axis = ASTCEncoder.dominantAxis(c0, c1, c2, c3, from: SIMD4(c0[0], c1[1], c2[2], c3[3]))
            var image: SIMD4<Float> = c0 * axis[0]
            image += c1 * axis[1]
            image += c2 * axis[2]
            image += c3 * axis[3]
            let length2 = (axis * axis).sum()
            let lambda = length2 > 0 ? (axis * image).sum() / length2 : 0
            return max(trace - lambda, 0) + 0.03 * lambda
        }
    }

    /// ``PartitionMoments/lineError`` of both partitions of the map `mask` (bit t: texel t in
    /// partition 1), the block's moments in `block`. Cost: one pass over partition 1's texels.
    @inline(__always)
    func partitionLineError(mask: UInt64, block: PartitionMoments) -> Float {
        var second = PartitionMoments()
        var bits = mask
        while bits != 0 {
            second.add(texels[bits.trailingZeroBitCount])
            bits &= bits &- 1
        }
        return second.lineError + (block - second).lineError
    }

    struct Best {
        var candidate: Candidate
        var partitions: Int
        var seed: Int
        var error: Int
        /// For a mixed layout, the partition with colour-scaled endpoints.
        var mixedScaled = 0
        /// For a dual-plane layout, the channel on the second plane.
        var plane2 = 0
        /// Direct RGB layout with base + offset endpoints (mode 9) in every partition.
        var offset = false
    }

    /// The channel (0…2) whose texels correlate least with the other two, for a dual-plane
    /// layout's second plane, and that channel's largest absolute correlation with another
    /// (1 when the channel is flat: a second plane would not help it).
    /// Cost: one pass over the texels, a 3 × 3 covariance.
    func leastCorrelatedChannel() -> (channel: Int, correlation: Float) {
        var sum = SIMD4<Float>(), sq = SIMD4<Float>(), cross = SIMD4<Float>()
        for t in 0..<texelCount {
            let x = texels[t]
            sum += x; sq += x * x
            cross += x * SIMD4(x[1], x[2], x[0], 0)  // RG, GB, BR
        }
        let n = Float(texelCount)
        let variance = sq - sum * sum / n
        let covariance = cross - sum * SIMD4(sum[1], sum[2], sum[0], 0) / n
        func r(_ i: Int, _ j: Int, _ k: Int) -> Float {
            let v = variance[i] * variance[j]
            return v > 1e-3 ? abs(covariance[k]) / v.squareRoot() : 1
        }
        let rg = r(0, 1, 0), gb = r(1, 2, 1), br = r(2, 0, 2)
        let worst = SIMD3<Float>(max(rg, br), max(rg, gb), max(gb, br))
        var channel = 0
        for c in 1..<3 where worst[c] < worst[channel] { channel = c }
        return (channel, worst[channel])
    }

    /// Sets each texel's partition (bit t of `mask`) and the principal-axis endpoints of
    /// each partition in `axisEnds`.
    func setPartitions(count: Int, mask: UInt64) {
        let all = UInt64.max >> UInt64(64 - texelCount)
        for t in 0..<texelCount { partitionOf[t] = count == 1 ? 0 : Int((mask >> UInt64(t)) & 1) }
        for p in 0..<count {
            let m = count == 1 ? all : (p == 0 ? all & ~mask : mask)
            let (mean, axis) = principalAxis(mask: m)
            let len2 = (axis * axis).sum()
            var tmin: Float = 0, tmax: Float = 0
            if len2 > 0 {
                tmin = .greatestFiniteMagnitude; tmax = -.greatestFiniteMagnitude
                for t in 0..<texelCount where m >> UInt64(t) & 1 == 1 {
                    let s = ((texels[t] - mean) * axis).sum() / len2
                    tmin = min(tmin, s); tmax = max(tmax, s)
                }
            }
            axisEnds[2 * p] = mean + axis * tmin
            axisEnds[2 * p + 1] = mean + axis * tmax
        }
    }

    /// Mean and principal axis (power iteration on the covariance) of the texels in `mask`.
    @inline(__always)
    func principalAxis(mask: UInt64) -> (SIMD4<Float>, SIMD4<Float>) {
        var sum = SIMD4<Float>(), count: Float = 0
        var lo = SIMD4<Float>(repeating: 255), hi = SIMD4<Float>(repeating: 0)
        for t in 0..<texelCount where mask >> UInt64(t) & 1 == 1 {
            sum += texels[t]; count += 1
            let x = texels[t]
            lo = lo.replacing(with: x, where: x .< lo); hi = hi.replacing(with: x, where: x .> hi)
        }
        let mean = sum / max(count, 1)
        // Covariance rows.
        var c0 = SIMD4<Float>(), c1 = SIMD4<Float>(), c2 = SIMD4<Float>(), c3 = SIMD4<Float>()
        for t in 0..<texelCount where mask >> UInt64(t) & 1 == 1 {
            let d = texels[t] - mean
            c0 += d * d[0]; c1 += d * d[1]; c2 += d * d[2]; c3 += d * d[3]
        }
        return (mean, Self.dominantAxis(c0, c1, c2, c3, from: hi - lo))
    }

    /// The dominant eigenvector of the symmetric 4 × 4 matrix with rows `c0`…`c3` (a
    /// covariance), by four power-iteration steps from `start`, scaled so its largest component
    /// is ±1; `start` itself when the matrix maps it to (nearly) zero.
    /// Cost: four matrix-vector products.
    @inline(__always)
    static func dominantAxis(
        _ c0: SIMD4<Float>, _ c1: SIMD4<Float>, _ c2: SIMD4<Float>, _ c3: SIMD4<Float>, from start: SIMD4<Float>
    ) -> SIMD4<Float> {
        var axis = start
        for _ in 0..<4 {
            var next: SIMD4<Float> = c0 * axis[0]
            next += c1 * axis[1]
            next += c2 * axis[2]
            next += c3 * axis[3]
            let magnitude = next.replacing(with: -next, where: next .< 0)
            let m: Float = magnitude.max()
            if !(m >= 1e-6) { break }
            axis = next / m
        }
        return axis
    }
}
