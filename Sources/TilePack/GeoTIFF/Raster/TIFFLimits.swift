import TilePackCore
/// The largest sizes the TIFF reader accepts from a file's header, each checked before
/// anything of that size is allocated. A TIFF header is a few hundred bytes that may claim
/// anything (65,535 bands, a billion tiles); these bounds keep what the claims can make the
/// reader (and the build after it) allocate proportional to real images, not to the claims.
/// docs/limits.md ("Input limits") lists them for users.
public enum TIFFLimits {
    /// Most samples per pixel (bands) read: 4,096. Hyperspectral sensors store a few hundred
    /// bands (AVIRIS 224, EnMAP 242, PRISMA 239); the build holds about 1.5 MiB per 8-bit band and
    /// worker (``BuildMemoryPlan``), so even this many need a budget in GiB. SamplesPerPixel is
    /// a SHORT: without the cap a 542-byte header claims 65,535 bands (16 GiB of build buffers).
    public static let maxBands = 4096

    /// Largest decoded block (tile or strip) in bytes: 256 MiB. Real tiles are ≤ 32 MiB;
    /// only single-strip uncompressed giants exceed this, and are declined.
    public static let maxBlockBytes = 256 << 20

    /// Most tiles or strips one image may have (all planes): 4,194,304, so the offset and
    /// byte-count arrays stay under 64 MiB. A 500,000-pixel-square image in 256² tiles has
    /// 3.8 million; one-row strips of a 4-million-row image would be the other extreme.
    public static let maxBlocks = 1 << 22

    /// Most values one tag may hold: as many as ``maxBlocks`` (the block offsets are the
    /// largest arrays a real file has), so decoding a tag allocates at most 32 MiB.
    public static let maxTagValues = maxBlocks

    /// Longest text tag read in bytes (GDAL_METADATA, GeoAsciiParams, ImageDescription):
    /// 1 MiB. GDAL's metadata of a few hundred bands is tens of KiB; a longer GDAL_METADATA is
    /// treated as absent (it only carries hints), a longer required tag is an error.
    public static let maxTextBytes = 1 << 20

    /// Most GeoKeys resolved from one key directory: 1,024 (the GeoTIFF 1.1 spec defines 50).
    /// Values resolved over all keys are capped by ``maxGeoKeyValues``: keys may point into
    /// the same parameter range, so without it N keys would copy N × the tag.
    public static let maxGeoKeys = 1024
    /// Most values (shorts, doubles, ASCII bytes) all GeoKeys together resolve to: 65,536.
    public static let maxGeoKeyValues = 1 << 16
}
