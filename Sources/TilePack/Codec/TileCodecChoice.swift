import TilePackCore
/// The tile codecs an archive can hold, by the name an archive records, and how a payload is
/// wrapped. Build picks one from the command line; readers (query, the tile store) rebuild the
/// same codec from an archive's metadata (see `TileCodecChoice(metadata:)` in Archive), so the
/// two sides cannot disagree.
public enum TileCodecChoice: String, Sendable, CaseIterable {
    /// PNG (our own writer on zlib): opens in GDAL, QGIS and every MBTiles viewer.
    case png
    /// PVRTC1 4 bits per pixel: 32 KiB per 256 × 256 tile, uploaded to the GPU as is.
    case pvrtc4
    /// PVRTC1 2 bits per pixel: 16 KiB per tile, lower quality.
    case pvrtc2
    /// ASTC LDR 4 × 4 blocks, 8 bits per pixel: 64 KiB per 256 × 256 tile.
    case astc4x4
    /// ASTC LDR 6 × 6 blocks, 3.56 bits per pixel: 43 × 43 blocks (29,584 bytes) per 256 × 256
    /// tile, the last block column and row cropped by the GPU.
    case astc6x6
    /// ASTC LDR 8 × 8 blocks, 2 bits per pixel: 16 KiB per tile.
    case astc8x8

    /// The ASTC footprint of an ASTC choice, nil otherwise.
    public var astcFormat: ASTCFormat? {
        switch self {
        case .astc4x4: .astc4x4
        case .astc6x6: .astc6x6
        case .astc8x8: .astc8x8
        case .png, .pvrtc4, .pvrtc2: nil
        }
    }

    /// The decoder for tiles an archive stores under this name (PVRTC and ASTC payloads may be
    /// KTX2 files or, in older archives, raw or zlib-wrapped; see ``GPUTileDecoder``). Encoders:
    /// `codec(level:)` in TilePackEncoders.
    public func decoder() -> any TileDecoder {
        switch self {
        case .png: PNGTileDecoder()
        case .pvrtc4: GPUTileDecoder(PVRTCTileDecoder(format: .pvrtc4))
        case .pvrtc2: GPUTileDecoder(PVRTCTileDecoder(format: .pvrtc2))
        case .astc4x4: GPUTileDecoder(ASTCTileDecoder(format: .astc4x4))
        case .astc6x6: GPUTileDecoder(ASTCTileDecoder(format: .astc6x6))
        case .astc8x8: GPUTileDecoder(ASTCTileDecoder(format: .astc8x8))
        }
    }

    /// What `tilepack:payload_compression` records for this codec's new archives.
    public var payloadCompression: String {
        self == .png ? "none" : GPUTileDecoder<PVRTCTileDecoder>.ktx2CompressionName
    }

    /// MBTiles `format` for this codec's archives: `png`, or for GPU tiles the IETF media
    /// type of their container, `image/ktx2` (MBTiles 1.3 allows a media type there; the codec
    /// itself is `tilepack:codec`).
    public var mbtilesFormat: String { self == .png ? "png" : Self.ktx2MediaType }

    /// The media type of a KTX 2.0 file (RFC registered by Khronos).
    public static let ktx2MediaType = "image/ktx2"
}
