import TilePackCore

/// Stored tile bytes → the GPU-ready payload, and payload → RGBA, into buffers the caller
/// owns: the path the tile store takes so that steady-state loads allocate nothing.
///
/// - PVRTC: the stored bytes are the words, or a zlib stream of them when that was smaller
///   (``DeflatedTileDecoder``); the payload is always the raw words, ready for
///   `glCompressedTexImage2D` / Metal. Inflate states and decoders are pooled.
/// - ASTC: the same, with the raw blocks (row-major) as the payload.
/// - PNG: the payload is the PNG as stored; decoding allocates (PNG is the interoperable
///   format, not the one phones keep in memory).
public struct TilePayloadCodec: Sendable {
    public let codec: TileCodecChoice
    /// Tile side in pixels.
    public let tileSize: Int
    /// Raw payload bytes for a fixed-size format (PVRTC, ASTC); nil for PNG.
    public let fixedPayloadByteCount: Int?

    private let inflaters = ScratchPool<Zlib.Inflater?> { try? Zlib.Inflater() }
    private let pvrtcDecoders = ScratchPool { PVRTCDecoder() }
    private let astcDecoders: ScratchPool<ASTCDecoder>?

    /// - Throws: ``CodecError`` when `tileSize` is not a size the codec can hold.
    public init(codec: TileCodecChoice, tileSize: Int) throws {
        self.codec = codec
        self.tileSize = tileSize
        astcDecoders = codec.astcFormat.map { format in ScratchPool { ASTCDecoder(format: format) } }
        switch codec {
        case .png:
            guard (1...4096).contains(tileSize) else {
                throw CodecError.byteCount(what: "png tile side", expected: 256, actual: tileSize)
            }
            fixedPayloadByteCount = nil
        case .pvrtc4, .pvrtc2:
            let format: PVRTCFormat = codec == .pvrtc4 ? .pvrtc4 : .pvrtc2
            try format.validate(width: tileSize, height: tileSize)
            fixedPayloadByteCount = format.byteCount(width: tileSize, height: tileSize)
        case .astc4x4, .astc6x6, .astc8x8:
            let format = codec.astcFormat!
            try format.validate(width: tileSize, height: tileSize)
            fixedPayloadByteCount = format.byteCount(width: tileSize, height: tileSize)
        }
    }

    /// Bytes of one decoded tile (RGBA8).
    public var pixelByteCount: Int { tileSize * tileSize * 4 }

    /// The payload's size for a stored blob of `storedCount` bytes.
    /// - Cost: O(1).
    public func payloadByteCount(storedCount: Int) -> Int { fixedPayloadByteCount ?? storedCount }

    /// Copies (or inflates) `stored` into `payload`, which must be
    /// ``payloadByteCount(storedCount:)`` bytes.
    /// - Throws: ``CodecError`` when the stored bytes are not a whole payload.
    /// - Cost: one copy, or one inflate with a pooled state; no allocation.
    public func unwrap(_ stored: UnsafeRawBufferPointer, into payload: UnsafeMutableRawBufferPointer) throws {
        guard let raw = fixedPayloadByteCount, stored.count != raw else {
            guard payload.count == stored.count else {
                throw CodecError.byteCount(
                    what: "\(codec.rawValue) payload buffer", expected: stored.count, actual: payload.count)
            }
            if let from = stored.baseAddress, let to = payload.baseAddress {
                to.copyMemory(from: from, byteCount: stored.count)
            }
            return
        }
        guard payload.count == raw else {
            throw CodecError.byteCount(what: "\(codec.rawValue) payload buffer", expected: raw, actual: payload.count)
        }
        guard let inflater = inflaters.take() else {
            throw CodecError.byteCount(
                what: "\(codec.rawValue) payload (zlib could not start)", expected: raw, actual: stored.count)
        }
        defer { inflaters.give(inflater) }
        do { try inflater.inflateExactly(stored, into: payload) } catch {
            throw CodecError.byteCount(
                what: "\(codec.rawValue) payload (\(error))", expected: raw, actual: stored.count)
        }
    }

    /// Decodes a payload into `rgba` (``pixelByteCount`` bytes, rows top first).
    /// - Throws: ``CodecError`` or ``PNGError`` for damaged payloads; never partial pixels.
    /// - Cost: PVRTC, ASTC: one decode with a pooled decoder, no allocation. PNG: a full decode.
    public func decode(_ payload: UnsafeRawBufferPointer, into rgba: UnsafeMutableRawBufferPointer) throws {
        switch codec {
        case .pvrtc4, .pvrtc2:
            let decoder = pvrtcDecoders.take()
            defer { pvrtcDecoders.give(decoder) }
            try decoder.decode(
                payload, format: codec == .pvrtc4 ? .pvrtc4 : .pvrtc2,
                width: tileSize, height: tileSize, into: rgba)
        case .astc4x4, .astc6x6, .astc8x8:
            let decoder = astcDecoders!.take()
            defer { astcDecoders!.give(decoder) }
            try decoder.decode(payload, width: tileSize, height: tileSize, into: rgba)
        case .png:
            let pixels = try PNGTileDecoder().decode(Array(payload), width: tileSize, height: tileSize)
            guard rgba.count == pixels.count else {
                throw CodecError.byteCount(what: "RGBA output", expected: pixels.count, actual: rgba.count)
            }
            pixels.withUnsafeBytes { rgba.copyMemory(from: $0) }
        }
    }
}
