import TilePackCore
import TilePackCodec

/// PVRTC1 as a ``TileCodec``: `encode` returns the raw words in Morton order (what
/// `glCompressedTexImage2D` and Metal take unchanged), `decode` turns them back into RGBA8.
///
/// Encoders own large scratch buffers, so the codec keeps a small pool of them: after
/// warm-up, a pipeline calling it from a fixed set of threads does not allocate scratch
/// (only the returned arrays). Decoding is ``PVRTCTileDecoder``'s.
public struct PVRTCCodec: TileCodec, FixedSizeTileDecoder {
    public let format: PVRTCFormat
    public let level: PVRTCEncoder.Level
    private let encoders = ScratchPool { PVRTCEncoder() }
    private let decoder: PVRTCTileDecoder

    public var name: String { format.rawValue }
    public var ktx2Format: KTX2Format { decoder.ktx2Format }

    public init(format: PVRTCFormat = .pvrtc4, level: PVRTCEncoder.Level = .quality) {
        self.format = format
        self.level = level
        decoder = PVRTCTileDecoder(format: format)
    }

    public func payloadByteCount(width: Int, height: Int) throws -> Int {
        try decoder.payloadByteCount(width: width, height: height)
    }

    /// Encodes one RGBA8 image; throws ``CodecError`` for a size PVRTC cannot hold or a wrong byte count.
    public func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let encoder = encoders.take()
        defer { encoders.give(encoder) }
        return try encoder.encode(rgba: rgba, width: width, height: height, format: format, level: level)
    }

    /// Decodes words; throws ``CodecError`` when `data` is not exactly the size's byte count.
    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try decoder.decode(data, width: width, height: height)
    }
}
