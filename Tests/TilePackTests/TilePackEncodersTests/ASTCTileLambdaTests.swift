import Testing
import TilePackCore
@testable import TilePackEncoders

/// The λ per tile (``ASTCTileLambda``): the build's λ at the reference error, proportional to
/// the tile's mean block error in between, clamped, the same for the same blocks.
@Suite struct ASTCTileLambdaTests {
    static let texels = 36
    static var referenceBlock: Int { Int(ASTCTileLambda.referenceError) * texels }

    @Test func startsAtTheBuildsLambda() {
        #expect(ASTCTileLambda(base: 12, texelCount: Self.texels).lambda == 12)
    }

    @Test func blocksAtTheReferenceErrorKeepIt() {
        var tile = ASTCTileLambda(base: 12, texelCount: Self.texels)
        for _ in 0..<50 { tile.record(error: Self.referenceBlock) }
        #expect(abs(tile.lambda - 12) < 0.01)
    }

    /// 1.5 × the reference error, long enough for the prior to fade: about 1.5 × λ; a fifth of
    /// it, a fifth of λ.
    @Test func followsTheTilesError() {
        var busy = ASTCTileLambda(base: 12, texelCount: Self.texels)
        var smooth = busy
        for _ in 0..<10_000 {
            busy.record(error: 3 * Self.referenceBlock / 2)
            smooth.record(error: Self.referenceBlock / 5)
        }
        #expect(abs(busy.lambda - 18) < 0.05, "\(busy.lambda)")
        #expect(abs(smooth.lambda - 2.4) < 0.05, "\(smooth.lambda)")
    }

    @Test func clampedBothWays() {
        var exact = ASTCTileLambda(base: 12, texelCount: Self.texels)
        var noisy = exact
        for _ in 0..<10_000 {
            exact.record(error: 0)
            noisy.record(error: 1_000 * Self.referenceBlock)
        }
        #expect(exact.lambda == 12 * ASTCTileLambda.least)
        #expect(noisy.lambda == 12 * ASTCTileLambda.most)
        #expect(exact.lambda > 0)
    }

    @Test func withinTheBoundsWhateverTheErrors() {
        var tile = ASTCTileLambda(base: 7, texelCount: 16)
        var random = SplitMix64(seed: 3)
        for _ in 0..<500 {
            // Block errors from 0 to 200 × the reference (4×4 blocks), in bursts.
            let e = Int(random.next() % 200) * Int(ASTCTileLambda.referenceError) * 16
            for _ in 0..<Int(random.next() % 20) { tile.record(error: e) }
            #expect(tile.lambda >= 7 * ASTCTileLambda.least && tile.lambda <= 7 * ASTCTileLambda.most)
        }
    }
}
