import TilePackCore
import TilePackCodec

/// PNG as a ``TileCodec`` (name "png"): lossless tiles any map client can show, for exports
/// and for archives where GPU compression is not wanted. Decoding is ``PNGTileDecoder``'s.
///
/// Deflate runs with zlib's run-length strategy by default: in a PNG build, deflate at level 6
/// was two thirds of the time; RLE makes it ~6× faster for ~10 % larger tiles (BENCHMARKS.md,
/// "Builds that scale"). `strategy: .default` gives level-6 sizes.
public struct PNGCodec: TileCodec {
    public var encoder: PNGEncoder

    public init(level: Int32 = 6, strategy: Zlib.Strategy = .rle) {
        encoder = PNGEncoder(level: level, strategy: strategy)
    }

    public var name: String { "png" }

    public func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try encoder.encode(rgba: rgba, width: width, height: height)
    }

    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try PNGTileDecoder().decode(data, width: width, height: height)
    }
}
