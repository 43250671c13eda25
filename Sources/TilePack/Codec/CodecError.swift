import TilePackCore
/// Bad input to a tile codec: a size the format cannot hold or a byte count that does not
/// match the size. One line names the value and the problem (house rule for ``TilePackError``).
public enum CodecError: TilePackError, Equatable {
    /// PVRTC1 sides must be powers of two (the hardware addresses words by bit interleaving).
    case notPowerOfTwo(format: String, width: Int, height: Int)
    /// Smaller than the format's minimum texture (2 × 2 words) or larger than ``PVRTCFormat/maximumSide``.
    case sizeOutOfRange(format: String, width: Int, height: Int, minimumWidth: Int, minimumHeight: Int, maximum: Int)
    /// A buffer whose length does not match the size (`what` says which buffer).
    case byteCount(what: String, expected: Int, actual: Int)

    public var description: String {
        switch self {
        case let .notPowerOfTwo(format, width, height):
            return "\(format): size \(width)x\(height) is not a power of two on each side"
        case let .sizeOutOfRange(format, width, height, minW, minH, maximum):
            return "\(format): size \(width)x\(height) is outside \(minW)x\(minH) … \(maximum)x\(maximum)"
        case let .byteCount(what, expected, actual):
            return "\(what): expected \(expected) bytes, got \(actual)"
        }
    }
}
