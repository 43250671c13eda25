import TilePackCore
/// A GPU or interchange format for one square RGBA tile.
///
/// The seam that lets PVRTC, PNG (and later ASTC or ETC2) share the build pipeline and the
/// store: Tiling hands a codec straight RGBA8 rows (top row first, 4 bytes a pixel) and the
/// archive stores whatever bytes come back; the store and `query` decode them again.
public protocol TileCodec: Sendable {
    /// The name recorded in archive metadata (`format` / `tilepack_codec`), e.g. "png", "pvrtc4".
    var name: String { get }

    /// Encodes `rgba` (width × height × 4 bytes, rows top first).
    func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8]

    /// Decodes bytes produced by ``encode(rgba:width:height:)`` back to RGBA8 rows.
    /// Throws for damaged data rather than returning partial pixels.
    func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8]
}
