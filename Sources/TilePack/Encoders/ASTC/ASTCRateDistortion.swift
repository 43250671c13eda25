import TilePackCore

/// How much ASTC encoding trades error for deflate-compressed size: each block is chosen to
/// minimise `D + λ·R`, D its summed squared error over the texels' channels (0…255 each), R
/// the bits deflate is estimated to spend on it after the tile's earlier blocks
/// (``ASTCRateModel``). `lambda` is the λ of a tile whose blocks err by the reference amount
/// (a mean squared error of 10 a channel); each tile's λ is it scaled by the tile's own error
/// so far, between 1/16 and 2 times (``ASTCTileLambda``). λ = 0 is off: the encoder's
/// best-error block, byte for byte.
/// The candidates and the default's measurement: docs/ASTC.md, "Rate-distortion optimisation".
public struct ASTCRateDistortion: Sendable, Equatable, CustomStringConvertible {
    /// λ: squared error accepted per bit saved, at the reference error (``ASTCTileLambda``).
    public let lambda: Float

    /// No rate-distortion trade: the best-error blocks.
    public static let off = ASTCRateDistortion(checked: 0)
    /// What a default build uses (chosen on the five benchmark sources, docs/ASTC.md).
    public static let standard = ASTCRateDistortion(checked: 32)

    private init(checked lambda: Float) { self.lambda = lambda }

    /// λ from a person (`--rdo`): finite, 0 or more, at most ``maximumLambda``.
    /// - Throws: ``ASTCRateDistortionError`` naming `argument` for NaN, a negative or a too large value.
    /// - Cost: constant.
    public init(lambda: Double, argument: String = "--rdo") throws(ASTCRateDistortionError) {
        guard lambda.isFinite, lambda >= 0, lambda <= Double(Self.maximumLambda) else {
            throw ASTCRateDistortionError(
                argument: argument, value: lambda,
                detail: "must be a number from 0 (off) to \(Int(Self.maximumLambda))")
        }
        self.lambda = Float(lambda)
    }

    /// Beyond this every block is a copy or a constant whatever its error: no use.
    public static let maximumLambda: Float = 1000

    public var isOff: Bool { lambda == 0 }

    /// λ as recorded in build options and shown by `info` (`2`, `0.5`).
    public var description: String {
        lambda == lambda.rounded() ? String(Int(lambda)) : String(lambda)
    }
}
