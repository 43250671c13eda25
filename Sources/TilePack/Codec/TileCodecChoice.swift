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

    /// The decoder for tiles an archive stores under this name (PVRTC payloads may be
    /// zlib-wrapped, see ``DeflatedTileDecoder``). Encoders: `codec(level:)` in TilePackEncoders.
    public func decoder() -> any TileDecoder {
        switch self {
        case .png: PNGTileDecoder()
        case .pvrtc4: DeflatedTileDecoder(PVRTCTileDecoder(format: .pvrtc4))
        case .pvrtc2: DeflatedTileDecoder(PVRTCTileDecoder(format: .pvrtc2))
        }
    }

    /// What `tilepack:payload_compression` records for this codec.
    public var payloadCompression: String { self == .png ? "none" : DeflatedTileDecoder<PVRTCTileDecoder>.compressionName }
}
