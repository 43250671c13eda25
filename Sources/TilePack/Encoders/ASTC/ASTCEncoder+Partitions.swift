import TilePackCore
import TilePackCodec

// Partitions: two-partition seeds matched to a 2-means clustering, the texels of each partition, and the principal axis
// of a partition (the endpoint line).
// The encoder's state and search are in ASTCEncoder.swift; docs/ASTC.md tells the algorithm.
extension ASTCEncoder {
    /// Up to three partition seeds (2 partitions) whose texel maps differ least from a
    /// 2-means clustering of the block (either labelling), started from the ends of the
    /// principal line. Cost: three assignment passes, then one vector bit count per eight
    /// distinct maps (of the 1024 seeds) and a scalar scan of the distances.
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
        var seeds = SIMD4<Int>(repeating: -1), distances = SIMD4<Int>(repeating: Int.max)
        for j in 0..<distinctCount {
            let d = Int(seedDistance[j >> 3][j & 7])
            if d < distances[2] {
                let seed = distinctSeeds[j]
                var k = 2
                while k > 0 && distances[k - 1] > d {
                    distances[k] = distances[k - 1]; seeds[k] = seeds[k - 1]; k -= 1
                }
                distances[k] = d; seeds[k] = seed
            }
        }
        return seeds
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
        var axis = hi - lo
        for _ in 0..<4 {
            var next: SIMD4<Float> = c0 * axis[0]
            next += c1 * axis[1]
            next += c2 * axis[2]
            next += c3 * axis[3]
            let magnitude = next.replacing(with: -next, where: next .< 0)
            let m: Float = magnitude.max()
            if m < 1e-6 { break }
            axis = next / m
        }
        return (mean, axis)
    }
}
