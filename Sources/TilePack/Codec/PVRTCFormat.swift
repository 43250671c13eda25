import TilePackCore
/// The two PVRTC1 variants: 4 bits a pixel (one 64-bit word per 4 × 4 pixels) and
/// 2 bits a pixel (one word per 8 × 4 pixels).
///
/// Sizes follow the hardware rules: both sides powers of two, at least 2 × 2 words
/// (8 × 8 pixels at 4bpp, 16 × 8 at 2bpp); we cap sides at ``maximumSide`` so that no
/// caller-supplied size can drive an unbounded allocation.
public enum PVRTCFormat: String, Sendable, CaseIterable {
    case pvrtc4
    case pvrtc2

    /// Largest side accepted (Metal and GLES limits are 8192–16384).
    public static let maximumSide = 16_384

    /// Pixels one word covers horizontally (vertically always 4).
    @inlinable public var blockWidth: Int { self == .pvrtc4 ? 4 : 8 }

    /// Bits per pixel of the compressed texture.
    public var bitsPerPixel: Int { self == .pvrtc4 ? 4 : 2 }

    /// Word grid for a `width` × `height` texture (call ``validate(width:height:)`` first).
    public func wordGrid(width: Int, height: Int) -> (wide: Int, high: Int) {
        (width / blockWidth, height / 4)
    }

    /// Size in bytes of the compressed texture: 8 bytes a word.
    public func byteCount(width: Int, height: Int) -> Int {
        let grid = wordGrid(width: width, height: height)
        return grid.wide * grid.high * 8
    }

    /// Throws unless `width` × `height` is a size this codec encodes and decodes.
    public func validate(width: Int, height: Int) throws { try validateSize(width: width, height: height) }

    /// ``validate(width:height:)`` with its typed error, for the codecs' own typed paths.
    package func validateSize(width: Int, height: Int) throws(CodecError) {
        let minW = 2 * blockWidth, minH = 8
        guard width >= minW, height >= minH, width <= Self.maximumSide, height <= Self.maximumSide else {
            throw CodecError.sizeOutOfRange(
                format: rawValue, width: width, height: height,
                minimumWidth: minW, minimumHeight: minH, maximum: Self.maximumSide)
        }
        guard width & (width - 1) == 0, height & (height - 1) == 0 else {
            throw CodecError.notPowerOfTwo(format: rawValue, width: width, height: height)
        }
    }
}
