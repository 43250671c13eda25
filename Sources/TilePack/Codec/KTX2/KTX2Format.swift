import TilePackCore

/// A GPU block format as KTX 2.0 names it: the Vulkan `VkFormat` number a KTX2 header
/// records and the texel block its Data Format Descriptor describes.
///
/// Only the formats tilepack's codecs produce: the fourteen ASTC LDR footprints
/// (`VK_FORMAT_ASTC_{w}x{h}_UNORM_BLOCK`, core Vulkan: 157 for 4 × 4, then every second number,
/// 165 for 6 × 6, 171 for 8 × 8) and PVRTC1 from `VK_IMG_format_pvrtc`
/// (`VK_FORMAT_PVRTC1_2BPP_UNORM_BLOCK_IMG` 1000054000, `…_4BPP_…` 1000054001). UNORM, not
/// SRGB: tilepack's colours are encoded and decoded as stored values, with no transfer curve.
public struct KTX2Format: Sendable, Equatable, CustomStringConvertible {
    /// The `VkFormat` enumerant.
    public let vkFormat: UInt32
    /// The codec name archives record (`astc6x6`, `pvrtc4`).
    public let name: String
    /// Pixels one block covers, across and down.
    public let blockWidth: Int
    public let blockHeight: Int
    /// Bytes of one block: 16 for ASTC, 8 for PVRTC1.
    public let bytesPerBlock: Int
    /// The DFD colour model (Khronos Data Format 1.3, `khr_df_model_e`): `KHR_DF_MODEL_ASTC`
    /// 162, `KHR_DF_MODEL_PVRTC` 164.
    public let colorModel: UInt8

    /// The ASTC LDR footprint as `VK_FORMAT_ASTC_*_UNORM_BLOCK`.
    public init(astc format: ASTCFormat) {
        // Vulkan lists the footprints in ASTCFormat's order, UNORM and SRGB alternating.
        let index = ASTCFormat.allCases.firstIndex(of: format) ?? 0
        vkFormat = 157 + 2 * UInt32(index)
        name = format.rawValue
        blockWidth = format.blockWidth
        blockHeight = format.blockHeight
        bytesPerBlock = ASTCFormat.blockByteCount
        colorModel = 162
    }

    /// PVRTC1 as `VK_FORMAT_PVRTC1_{4,2}BPP_UNORM_BLOCK_IMG`. Its words are in the Morton
    /// order the hardware reads, which is what KTX2 stores for this format.
    public init(pvrtc format: PVRTCFormat) {
        vkFormat = format == .pvrtc4 ? 1_000_054_001 : 1_000_054_000
        name = format.rawValue
        blockWidth = format.blockWidth
        blockHeight = 4
        bytesPerBlock = 8
        colorModel = 164
    }

    /// The format a KTX2 header's `vkFormat` names, nil for any tilepack does not store.
    public init?(vkFormat: UInt32) {
        if let astc = ASTCFormat.allCases.first(where: { Self(astc: $0).vkFormat == vkFormat }) {
            self.init(astc: astc)
        } else if let pvrtc = PVRTCFormat.allCases.first(where: { Self(pvrtc: $0).vkFormat == vkFormat }) {
            self.init(pvrtc: pvrtc)
        } else {
            return nil
        }
    }

    /// Bytes of the single level of a `width` × `height` image: whole blocks, edge blocks
    /// covering the remainder (ASTC; PVRTC sizes are powers of two). Nil when the product
    /// overflows, which only a forged header can ask for.
    public func levelByteCount(width: Int, height: Int) -> Int? {
        let wide = (width + blockWidth - 1) / blockWidth, high = (height + blockHeight - 1) / blockHeight
        let blocks = wide.multipliedReportingOverflow(by: high)
        let bytes = blocks.partialValue.multipliedReportingOverflow(by: bytesPerBlock)
        return blocks.overflow || bytes.overflow ? nil : bytes.partialValue
    }

    /// Where an uncompressed level starts: a multiple of lcm(block bytes, 4) (KTX 2.0, "Mip
    /// Level Array"); 16 for ASTC, 8 for PVRTC. A supercompressed level has no alignment.
    public var levelAlignment: Int {
        var (a, b) = (bytesPerBlock, 4)
        while b != 0 { (a, b) = (b, a % b) }
        return bytesPerBlock / a * 4
    }

    public var description: String { "\(name) (vkFormat \(vkFormat))" }
}

extension TileCodecChoice {
    /// The KTX2 format of a GPU codec's tiles, nil for PNG.
    public var ktx2Format: KTX2Format? {
        switch self {
        case .png: nil
        case .pvrtc4: KTX2Format(pvrtc: .pvrtc4)
        case .pvrtc2: KTX2Format(pvrtc: .pvrtc2)
        case .astc4x4, .astc6x6, .astc8x8: astcFormat.map { KTX2Format(astc: $0) }
        }
    }
}
