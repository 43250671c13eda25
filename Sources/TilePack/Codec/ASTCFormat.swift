import TilePackCore
/// The fourteen 2D block footprints of ASTC (LDR profile). Every block is 128 bits whatever
/// its footprint, so the footprint sets the bit rate: 8 bpp at 4 × 4, 3.56 bpp at 6 × 6,
/// 0.89 bpp at 12 × 12.
///
/// Unlike PVRTC, ASTC takes any image size: the block grid covers `ceil(w/bw) × ceil(h/bh)`
/// blocks (a 256-pixel tile at 6 × 6 is 43 blocks a side, the last column and row half
/// used) and the decoder crops. Blocks are stored row by row, left to right, top first —
/// the order `glCompressedTexImage2D`, Metal and Vulkan take.
public enum ASTCFormat: String, Sendable, CaseIterable {
    case astc4x4, astc5x4, astc5x5, astc6x5, astc6x6, astc8x5, astc8x6, astc8x8
    case astc10x5, astc10x6, astc10x8, astc10x10, astc12x10, astc12x12

    /// Largest side accepted: GPU limits are 8192–16384, and the cap keeps a caller-supplied
    /// size from driving an unbounded allocation.
    public static let maximumSide = 16_384

    /// Bytes of one block.
    public static let blockByteCount = 16

    /// Pixels one block covers horizontally.
    @inlinable public var blockWidth: Int {
        switch self {
        case .astc4x4: 4
        case .astc5x4, .astc5x5: 5
        case .astc6x5, .astc6x6: 6
        case .astc8x5, .astc8x6, .astc8x8: 8
        case .astc10x5, .astc10x6, .astc10x8, .astc10x10: 10
        case .astc12x10, .astc12x12: 12
        }
    }

    /// Pixels one block covers vertically.
    @inlinable public var blockHeight: Int {
        switch self {
        case .astc4x4, .astc5x4: 4
        case .astc5x5, .astc6x5, .astc8x5, .astc10x5: 5
        case .astc6x6, .astc8x6, .astc10x6: 6
        case .astc8x8, .astc10x8: 8
        case .astc10x10, .astc12x10: 10
        case .astc12x12: 12
        }
    }

    /// The format with a `width` × `height` footprint, if ASTC has one.
    public init?(blockWidth: Int, blockHeight: Int) {
        guard let match = Self.allCases.first(where: { $0.blockWidth == blockWidth && $0.blockHeight == blockHeight })
        else {
            return nil
        }
        self = match
    }

    /// Bits per pixel of the compressed texture (128 bits over the footprint).
    public var bitsPerPixel: Double { 128 / Double(blockWidth * blockHeight) }

    /// Block grid for a `width` × `height` image: `ceil(width/bw)` × `ceil(height/bh)`.
    public func blockGrid(width: Int, height: Int) -> (wide: Int, high: Int) {
        ((width + blockWidth - 1) / blockWidth, (height + blockHeight - 1) / blockHeight)
    }

    /// Size in bytes of the compressed image: 16 bytes a block.
    public func byteCount(width: Int, height: Int) -> Int {
        let grid = blockGrid(width: width, height: height)
        return grid.wide * grid.high * Self.blockByteCount
    }

    /// Throws unless `width` × `height` is 1 … ``maximumSide`` on each side (any size is an
    /// ASTC size: partial edge blocks are cropped).
    public func validate(width: Int, height: Int) throws { try validateSize(width: width, height: height) }

    /// ``validate(width:height:)`` with its typed error, for the codecs' own typed paths.
    package func validateSize(width: Int, height: Int) throws(CodecError) {
        guard width >= 1, height >= 1, width <= Self.maximumSide, height <= Self.maximumSide else {
            throw CodecError.sizeOutOfRange(
                format: rawValue, width: width, height: height,
                minimumWidth: 1, minimumHeight: 1, maximum: Self.maximumSide)
        }
    }
}
