import TilePackCore
import TilePackCodec

/// ASTC as a ``TileCodec``: `encode` returns the raw blocks, row-major (what
/// `glCompressedTexImage2D`, Metal and Vulkan take unchanged), `decode` turns them back
/// into RGBA8. Encoders are pooled like ``PVRTCCodec``'s; decoding is ``ASTCTileDecoder``'s.
public struct ASTCCodec: TileCodec, FixedSizeTileDecoder {
    public let format: ASTCFormat
    public let level: ASTCEncoder.Level
    /// Error traded for deflated size (``ASTCRateDistortion``); `.off` keeps the best-error blocks.
    public let rdo: ASTCRateDistortion
    private let encoders: ScratchPool<ASTCEncoder?>
    private let decoder: ASTCTileDecoder

    public var name: String { format.rawValue }
    public var ktx2Format: KTX2Format { decoder.ktx2Format }
    /// `quality` keeps `fast`'s block where it is under the error limit (flat, upsampled
    /// blocks) and searches layouts elsewhere: its time follows detail. `fast` does not.
    public var encodeTimeFollowsDetail: Bool { level == .quality }

    /// `format` must be one of ``ASTCEncoder/supportedFormats`` for `encode` to work.
    public init(
        format: ASTCFormat = .astc6x6, level: ASTCEncoder.Level = .quality, rdo: ASTCRateDistortion = .off
    ) {
        self.format = format
        self.level = level
        self.rdo = rdo
        encoders = ScratchPool { try? ASTCEncoder(format: format) }
        decoder = ASTCTileDecoder(format: format)
    }

    public func payloadByteCount(width: Int, height: Int) throws -> Int {
        try decoder.payloadByteCount(width: width, height: height)
    }

    /// Encodes one RGBA8 image; throws ``CodecError`` for a footprint the encoder does not
    /// produce, a size out of range or a wrong byte count.
    public func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        guard let encoder = encoders.take() else { _ = try ASTCEncoder(format: format); return [] }
        defer { encoders.give(encoder) }
        return try encoder.encode(rgba: rgba, width: width, height: height, level: level, rdo: rdo)
    }

    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try decoder.decode(data, width: width, height: height)
    }
}
