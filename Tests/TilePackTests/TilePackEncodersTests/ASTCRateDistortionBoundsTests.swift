import Testing
@testable import TilePackCodec
import TilePackCore
@testable import TilePackEncoders

/// The figures RDO's shortcuts are computed from, four texels or four entries a lane, against
/// their definitions computed texel by texel in Double, on seeded random opaque blocks.
@Suite struct ASTCRateDistortionBoundsTests {
    /// An opaque block of `format`'s footprint loaded into `encoder`: smooth, noisy or a
    /// few levels, by `kind`; returns its texels (RGB, 0…255).
    static func load(_ encoder: ASTCEncoder, kind: UInt64, random: inout SplitMix64) -> [SIMD3<Double>] {
        let base = SIMD3<Double>(
            Double(random.next() % 256), Double(random.next() % 256), Double(random.next() % 256))
        var texels: [SIMD3<Double>] = []
        for t in 0..<encoder.texelCount {
            var v: SIMD3<Double>
            switch kind % 3 {
            case 0: v = base + SIMD3(repeating: Double(t) * 3) + SIMD3(Double(random.next() % 5), 0, 0)
            case 1: v = SIMD3(Double(random.next() % 256), Double(random.next() % 256), Double(random.next() % 256))
            default: v = random.next() % 2 == 0 ? base : base * 0.5
            }
            v = v.clamped(lowerBound: .zero, upperBound: SIMD3(repeating: 255)).rounded(.down)
            texels.append(v)
            encoder.words[t] = UInt32(v.x) | UInt32(v.y) << 8 | UInt32(v.z) << 16 | 0xFF00_0000
        }
        encoder.loadPlanes(aos: true)
        return texels
    }

    /// `searchedPastFast`, which keeps the choice's weight-reuse trials to blocks the search
    /// settled at `fast`'s block: never set at `fast`; at `quality` unset only for a block whose
    /// search stopped within the error limit; set for every noisy block, unset for some smooth one.
    @Test func searchedPastFastMarksTheBlocksSearchedFurther() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        var random = SplitMix64(seed: 17)
        var (settledAtFast, noisy) = (0, 0)
        for kind in 0..<60 as Range<UInt64> {
            _ = Self.load(encoder, kind: kind, random: &random)
            _ = encoder.encodeBlock(opaque: true, level: .fast)
            #expect(!encoder.searchedPastFast, "\(kind) at fast")
            _ = encoder.encodeBlock(opaque: true, level: .quality)
            if !encoder.searchedPastFast {
                #expect(encoder.searchedError <= encoder.errorLimit, "\(kind): \(encoder.searchedError)")
                settledAtFast += 1
            }
            if kind % 3 == 1 {
                #expect(encoder.searchedPastFast, "noisy block \(kind)")
                noisy += 1
            }
        }
        #expect(settledAtFast > 0 && noisy == 20)
    }

    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func offSegmentErrorIsItsDefinition(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        var random = SplitMix64(seed: 11)
        for kind in 0..<60 as Range<UInt64> {
            let texels = Self.load(encoder, kind: kind, random: &random)
            let ends = (0..<2).map { _ in
                SIMD3<Double>(Double(random.next() % 256), Double(random.next() % 256), Double(random.next() % 256))
            }
            encoder.decodedEnds[0] = SIMD4(SIMD3<Float>(ends[0]), 255)
            encoder.decodedEnds[1] = SIMD4(SIMD3<Float>(ends[1]), 255)
            let d = ends[1] - ends[0], len = (d * d).sum()
            var expected = 0.0
            for x in texels {
                let w = len > 0 ? min(max(((x - ends[0]) * d).sum() / len, 0), 1) : 0
                let r = x - (ends[0] + d * w)
                expected += max((r * r).sum() - 3, 0)
            }
            let got = Double(encoder.offSegmentError())
            #expect(abs(got - expected) <= 1e-4 * expected + 0.5, "\(format) \(kind): \(got) vs \(expected)")
        }
    }

    /// The early stop changes no decision: for limits below, at and above the whole sum, the
    /// stopped pass's `sum + extra < limit` is the whole pass's, and a pass that is not stopped
    /// returns the whole sum.
    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func offSegmentErrorStopsOnlyWhereTheWholeSumFails(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        var random = SplitMix64(seed: 13)
        var stopped = 0
        for kind in 0..<60 as Range<UInt64> {
            _ = Self.load(encoder, kind: kind, random: &random)
            for e in 0..<2 {
                encoder.decodedEnds[e] = SIMD4(
                    Float(random.next() % 256), Float(random.next() % 256), Float(random.next() % 256), 255)
            }
            let whole = encoder.offSegmentError(), extra = Float(random.next() % 200)
            for limit in [whole * 0.25, whole * 0.5, whole + extra, whole + extra + 1, whole * 2 + extra + 1] {
                let got = encoder.offSegmentError(plus: extra, stoppingAt: limit)
                #expect((got + extra < limit) == (whole + extra < limit), "\(format) \(kind): limit \(limit)")
                if got != whole {
                    stopped += 1
                    #expect(got < whole && got + extra >= limit)
                }
            }
        }
        #expect(stopped > 0, "\(format): no limit stopped the pass early")
    }

    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func leastSquaresErrorIsTheResidualOfTheBestLine(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        var random = SplitMix64(seed: 12)
        for kind in 0..<60 as Range<UInt64> {
            let texels = Self.load(encoder, kind: kind, random: &random)
            let weights = (0..<encoder.texelCount).map { _ in Int32(random.next() % 65) }
            for (t, w) in weights.enumerated() { encoder.texelW[t] = w }
            // Least squares e0·(1 − w) + e1·w in Double, its residual.
            var a = (0.0, 0.0, 0.0), b0 = SIMD3<Double>(), b1 = SIMD3<Double>(), squares = 0.0
            for (x, wi) in zip(texels, weights) {
                let w = Double(wi) / 64, v = 1 - w
                a = (a.0 + v * v, a.1 + v * w, a.2 + w * w)
                b0 += x * v
                b1 += x * w
                squares += (x * x).sum()
            }
            let det = a.0 * a.2 - a.1 * a.1
            var expected = 0.0
            if det > 1e-2 {
                let e0 = (b0 * a.2 - b1 * a.1) / det, e1 = (b1 * a.0 - b0 * a.1) / det
                var residual = 0.0
                for (x, wi) in zip(texels, weights) {
                    let w = Double(wi) / 64, r = x - (e0 * (1 - w) + e1 * w)
                    residual += (r * r).sum()
                }
                expected = max(residual - 3 * Double(encoder.texelCount), 0)
            }
            let moments = ASTCBlockMoments(encoder.texelInts, count: encoder.texelCount)
            #expect(Double(moments.squares) == squares)
            let got = Double(encoder.leastSquaresError(squares: moments.squares))
            guard det > 1e-2 else { continue }
            // Float's cancellation in Σ|x|² − fitted: a few units on sums of millions.
            #expect(abs(got - expected) <= 1e-5 * squares + 1, "\(format) \(kind): \(got) vs \(expected)")
        }
    }

    @Test func momentsAreTheirDefinitions() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        var random = SplitMix64(seed: 13)
        for kind in 0..<30 as Range<UInt64> {
            _ = Self.load(encoder, kind: kind, random: &random)
            let n = encoder.texelCount
            let texels = (0..<n).map { SIMD4<Double>(encoder.texelInts[$0]) }
            let sum = texels.reduce(SIMD4<Double>(), +), mean = sum / Double(n)
            let moments = ASTCBlockMoments(encoder.texelInts, count: n)
            #expect(SIMD4<Double>(moments.sum) == sum)
            let rounded = (sum / Double(n)).rounded(.toNearestOrAwayFromZero)
            #expect(SIMD4<Double>(moments.mean) == rounded)
            #expect(Double(moments.flatError) == texels.map { (($0 - rounded) * ($0 - rounded)).sum() }.reduce(0, +))
            let spread = texels.map { ($0 - mean) * ($0 - mean) }.reduce(SIMD4<Double>(), +).squareRoot()
            #expect(((SIMD4<Double>(moments.spread) - spread) * (SIMD4<Double>(moments.spread) - spread)).max() < 1e-6)
        }
    }

    /// The bounds of a copy of each recent block, four entries a lane, are the per-entry formula.
    @Test func copyBoundsAreThePerEntryFormula() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        let recent = encoder.recentBlocks(blockCount: 64, columns: 8)
        var random = SplitMix64(seed: 14)
        let n = encoder.texelCount
        for block in 0..<40 {
            _ = Self.load(encoder, kind: UInt64(block), random: &random)
            let moments = encoder.moments(in: recent)
            let bounds = recent.copyBounds(sum: SIMD4<Float>(moments.sum), spread: moments.spread)
            for e in recent.order {
                let (sum, squares) = ASTCBlockMoments.channelSums(recent.decoded + e * n, count: n)
                let gap = SIMD4<Float>(moments.sum) - SIMD4<Float>(sum)
                let apart = moments.spread - ASTCBlockMoments.spread(sum: sum, squares: squares, count: n)
                let expected = ((gap * gap).sum() / Float(n) + (apart * apart).sum()) * 0.99
                #expect(abs(bounds[e / 4][e % 4] - expected) <= 1e-5 * max(expected, 1), "entry \(e)")
            }
            // Record the block as written: a random distinct block with these texels.
            recent.chosenTexels.update(from: encoder.texelInts, count: n)
            recent.append(ASTCBits(lo: random.next(), hi: random.next()), layout: -1)
        }
        #expect(recent.order.count == ASTCRecentBlocks.capacity)
    }
}
