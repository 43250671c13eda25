import TilePackCore
/// PNG as a ``TileCodec`` (name "png"): lossless tiles any map client can show, for exports
/// and for archives where GPU compression is not wanted.
public struct PNGCodec: TileCodec {
    public var encoder: PNGEncoder

    public init(level: Int32 = 6) {
        encoder = PNGEncoder(level: level)
    }

    public var name: String { "png" }

    public func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try encoder.encode(rgba: rgba, width: width, height: height)
    }

    /// Decodes and checks the size: a PNG of another size is a ``PNGError`` (sizeMismatch),
    /// and the decoder never allocates beyond `width × height` pixels.
    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        precondition(width > 0 && height > 0, "tile size must be positive")
        let image = try PNGDecoder(maxPixels: width * height).decode(data, source: "PNG tile")
        guard image.width == width, image.height == height else {
            throw PNGError(source: "PNG tile", problem: .sizeMismatch,
                           detail: "is \(image.width)×\(image.height), expected \(width)×\(height)")
        }
        return image.rgba
    }
}
