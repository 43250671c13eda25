import TilePackCore

/// Stored tile bytes → the GPU-ready payload, and payload → RGBA, into buffers the caller
/// owns: the path the tile store takes so that steady-state loads allocate nothing.
///
/// - PVRTC: the stored bytes are a KTX2 file whose level is the words, zlib-supercompressed
///   when that was smaller (older archives: the words, or a zlib stream of them; see
///   ``GPUTileDecoder``); the payload is always the raw words, ready for
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
    /// The KTX2 format of a GPU codec's tiles; nil for PNG.
    public let ktx2Format: KTX2Format?

    private let inflaters = ScratchPool<Zlib.Inflater?> { try? Zlib.Inflater() }
    private let pvrtcDecoders = ScratchPool { PVRTCDecoder() }
    private let astcDecoders: ScratchPool<ASTCDecoder>?

    /// - Throws: ``CodecError`` when `tileSize` is not a size the codec can hold.
    public init(codec: TileCodecChoice, tileSize: Int) throws {
        self.codec = codec
        self.tileSize = tileSize
        ktx2Format = codec.ktx2Format
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

    /// Copies (or inflates) the payload of `stored` into `payload`, which must be
    /// ``payloadByteCount(storedCount:)`` bytes. A GPU tile is a KTX2 file checked against this
    /// codec and tile size, or the older raw or zlib form.
    /// - Throws: ``CodecError`` when the stored bytes are not a whole payload of this codec
    ///   and size (a KTX2 file of another format or size, a damaged one, a short stream).
    /// - Cost: one copy, or one inflate with a pooled state; no allocation.
    public func unwrap(_ stored: UnsafeRawBufferPointer, into payload: UnsafeMutableRawBufferPointer) throws {
        guard let format = ktx2Format, let raw = fixedPayloadByteCount else {
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
        try StoredGPUTile.unwrap(
            stored, into: payload, format: format, width: tileSize, height: tileSize, inflater: inflater)
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
