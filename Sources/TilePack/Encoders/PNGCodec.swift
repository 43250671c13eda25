import TilePackCore
import TilePackCodec

/// PNG as a ``TileCodec`` (name "png"): lossless tiles any map client can show, for exports
/// and for archives where GPU compression is not wanted. Decoding is ``PNGTileDecoder``'s.
public struct PNGCodec: TileCodec {
    public var encoder: PNGEncoder

    public init(level: Int32 = 6) {
        encoder = PNGEncoder(level: level)
    }

    public var name: String { "png" }

    public func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try encoder.encode(rgba: rgba, width: width, height: height)
    }

    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try PNGTileDecoder().decode(data, width: width, height: height)
    }
}
