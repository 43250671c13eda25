import Testing
import TilePackCodec
import TilePackCore
@testable import TilePackEncoders

/// Two-partition seeds: the maps nearest the 2-means clustering, ranked by how well each
/// partition lies on its own line (``ASTCEncoder/clusterSeeds()``).
@Suite struct ASTCPartitionSeedTests {
    /// The line error of texels exactly on a line is only the weight-rounding term, 0.03 λ,
    /// where λ is their summed squared distance from their mean; texels off the line add their
    /// squared distance from it (computed here from the construction, not the covariance).
    @Test func lineErrorIsTheDistanceFromThePrincipalLinePlusTheRoundingTerm() {
        var random = SplitMix64(seed: 53)
        for trial in 0..<50 {
            let origin = SIMD4<Float>(
                Float(random.next() % 100) + 50, Float(random.next() % 100) + 50, Float(random.next() % 100) + 50, 255)
            var direction = SIMD4<Float>(
                Float(random.next() % 21) - 10, Float(random.next() % 21) - 10, Float(random.next() % 21) - 10, 0)
            if direction == SIMD4<Float>() { direction[0] = 1 }
            direction /= (direction * direction).sum().squareRoot()
            // A unit vector across the line, for the off-line texels.
            var across = SIMD4<Float>(direction[1], -direction[0], 0, 0)
            if (across * across).sum() < 1e-6 { across = SIMD4<Float>(0, direction[2], -direction[1], 0) }
            across /= (across * across).sum().squareRoot()
            var moments = ASTCEncoder.PartitionMoments()
            var positions: [Float] = []
            let offLine: Float = trial % 2 == 0 ? 0 : 3
            for _ in 0..<9 {
                let t = Float(Int(random.next() % 61) - 30)
                // Each position on both sides of the line, so the principal line stays the
                // constructed one.
                for side: Float in [1, -1] {
                    positions.append(t)
                    moments.add(origin + direction * t + across * (offLine * side))
                }
            }
            let mean = positions.reduce(0, +) / Float(positions.count)
            let lambda = positions.reduce(0) { $0 + ($1 - mean) * ($1 - mean) }
            let expected = Float(positions.count) * offLine * offLine + 0.03 * lambda
            #expect(
                abs(moments.lineError - expected) <= 0.01 * max(expected, 10),
                "trial \(trial): line error \(moments.lineError), expected \(expected)")
        }
    }

    /// A block whose two partitions (one seed's map) are each a ramp along its own colour
    /// axis: of every seed's map, that map (or its complement) has the least line error, since
    /// any other puts texels of one ramp on the other's line; and the search puts it first.
    @Test func rampsAlongTheirOwnLinesRankTheirOwnMapFirst() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        let all = UInt64.max >> UInt64(64 - 36)
        var random = SplitMix64(seed: 59)
        var tried = 0
        while tried < 40 {
            let seed = Int(random.next() % 1024)
            let mask = encoder.partitionMasks[seed]
            let ones = mask.nonzeroBitCount
            guard ones >= 6 && ones <= 30 else { continue }
            tried += 1
            // Partition 0 ramps in red with position, partition 1 in blue.
            for t in 0..<36 {
                let x = UInt32(t % 6), y = UInt32(t / 6)
                let ramp = 40 + 20 * x + 8 * y
                let (r, g, b): (UInt32, UInt32, UInt32) =
                    (mask >> UInt64(t)) & 1 == 0 ? (ramp, 60, 90) : (20, 200, ramp)
                encoder.words[t] = r | g << 8 | b << 16 | 0xFF00_0000
            }
            encoder.loadPlanes(aos: true)
            var block = ASTCEncoder.PartitionMoments()
            for t in 0..<36 { block.add(encoder.texels[t]) }
            let own = encoder.partitionLineError(mask: mask, block: block)
            for other in 0..<1024 {
                let m = encoder.partitionMasks[other]
                guard m != mask && m != all & ~mask else { continue }
                let e = encoder.partitionLineError(mask: m, block: block)
                #expect(own < e, "seed \(seed): map of seed \(other) has line error \(e), the block's own \(own)")
                if !(own < e) { break }
            }
            encoder.setPartitions(count: 1, mask: 0)
            let first = encoder.clusterSeeds()[0]
            let chosen = first >= 0 ? encoder.partitionMasks[first] : 0
            #expect(
                chosen == mask || chosen == all & ~mask, "seed \(seed): first seed \(first) splits the block otherwise")
        }
    }
}
