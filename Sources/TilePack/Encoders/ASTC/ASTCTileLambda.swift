/// The λ each block of a tile is chosen with: the build's λ (`--rdo L`) scaled by the tile's
/// own error so far, clamped. Why: what a tile's quality is judged by (its PSNR, the mean
/// over tiles in `checks/bench/bench-rdo`) is a logarithm of its mean squared error, and the
/// Lagrangian optimum for a sum of per-tile log-MSE against bytes has each tile's λ
/// proportional to its own error. A flat tile (sea, snow, shadow) loses many dB for the few
/// bytes a global λ saves on it; a busy tile loses little for many. The perceptual argument
/// points the same way (error on smooth areas shows; basisu's RDO weights it up). Measured
/// (docs/ASTC.md): at the same bytes it keeps about 0.1 dB on world.rgb and montblanc-color
/// and moves rasterio RGB.byte's busy tiles far along; montblanc-dem's frontier stays where
/// it was (its busy tiles lose dB faster than the proportion assumes).
///
/// The tile's error is estimated causally, from the blocks already encoded: the search's
/// best-error block for each searched block (its error before any rate-distortion trade, so λ
/// does not feed on the error it causes), the chosen repeat's for blocks the repeats-first
/// shortcut settles, 0 for opaque constant blocks (exact); transparent constant blocks (the
/// outside of edge tiles, which no one sees) do not count. A prior of ``priorBlocks`` blocks
/// at ``referenceError`` starts the tile at λ = L. Deterministic per tile content: the state
/// lives for one tile's encode and only reads that tile's blocks in order.
struct ASTCTileLambda {
    /// Summed squared RGB error per texel at which λ is the build's own: 30 (a mean squared
    /// error of 10 a channel, 38.1 dB), about astcenc `fastest`'s error limit, under which the
    /// `quality` search stops.
    static let referenceError: Float = 30
    /// The scale's bounds. Below: a tile of exact blocks still takes repeats that cost it
    /// nothing (1/4 instead of 1/16 changed no byte of the five benchmark sources). Above:
    /// measured with checks/bench/bench-rdo at λ 20, 4 × took rasterio RGB.byte (busy tiles)
    /// to −38.5 % / −0.55 dB, 2 × to −33.6 % / −0.24 dB, the others within 0.05 dB and 0.6 %.
    static let least: Float = 1.0 / 16
    static let most: Float = 2
    /// Weight of the starting guess (λ = L, the reference error), in blocks: a tile's first
    /// blocks are a poor sample of it. Measured at λ 20 (bound 4 ×): 32 blocks gave world.rgb
    /// −25.3 % / −0.43 dB, 4 blocks −24.7 % / −0.40 dB (about 0.03 dB better at the same
    /// bytes); 16 is taken between them.
    static let priorBlocks: Float = 16

    /// The build's λ (`--rdo L`).
    let base: Float
    /// ``referenceError`` for a whole block.
    let referenceBlockError: Float
    private var errorSum: Float
    private var blocks: Float
    /// The λ for the next block.
    private(set) var lambda: Float

    /// - Cost: constant.
    init(base: Float, texelCount: Int) {
        self.base = base
        referenceBlockError = Self.referenceError * Float(texelCount)
        errorSum = Self.priorBlocks * referenceBlockError
        blocks = Self.priorBlocks
        lambda = base
    }

    /// Counts one block's error (summed squared error over its texels' channels) toward the
    /// tile's estimate and sets ``lambda`` for the next block.
    /// - Cost: constant.
    mutating func record(error: Int) {
        errorSum += Float(error)
        blocks += 1
        let scale = errorSum / (blocks * referenceBlockError)
        lambda = base * min(max(scale, Self.least), Self.most)
    }
}
