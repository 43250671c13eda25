import TilePackCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#endif

/// The read side of a tile format: stored bytes back to RGBA8 rows (top row first, 4 bytes a
/// pixel). What an app that shows tiles links: decoders only, no encoder.
///
/// The seam that lets PVRTC and PNG (and later ASTC) share the store: the archive hands back
/// whatever bytes the build stored, and the decoder named by the archive's metadata turns
/// them into pixels. Encoders (module TilePackEncoders) refine this into ``TileCodec``.
public protocol TileDecoder: Sendable {
    /// The name recorded in archive metadata (`format` / `tilepack:codec`), e.g. "png", "pvrtc4".
    var name: String { get }

    /// Decodes a stored payload to `width × height × 4` bytes of RGBA8.
    /// Throws for damaged data rather than returning partial pixels.
    func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8]
}

/// A format whose payload size depends only on the image size (GPU block formats).
public protocol FixedSizeTileDecoder: TileDecoder {
    /// Bytes of one encoded image; throws for a size the format cannot hold.
    func payloadByteCount(width: Int, height: Int) throws -> Int
    /// The format as a KTX2 tile names it (`vkFormat`, block, descriptor).
    var ktx2Format: KTX2Format { get }
}

/// PVRTC1 words (Morton order, as `glCompressedTexImage2D` and Metal take them) → RGBA8.
///
/// Decoders own scratch buffers, so this keeps a small pool of them: after warm-up, callers
/// on a fixed set of threads allocate only the returned arrays.
public struct PVRTCTileDecoder: FixedSizeTileDecoder {
    public let format: PVRTCFormat
    private let decoders = ScratchPool { PVRTCDecoder() }

    public init(format: PVRTCFormat = .pvrtc4) { self.format = format }

    public var name: String { format.rawValue }
    public var ktx2Format: KTX2Format { KTX2Format(pvrtc: format) }

    public func payloadByteCount(width: Int, height: Int) throws -> Int {
        try format.validate(width: width, height: height)
        return format.byteCount(width: width, height: height)
    }

    /// Throws ``CodecError`` when `data` is not exactly the size's byte count.
    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let decoder = decoders.take()
        defer { decoders.give(decoder) }
        return try decoder.decode(data, format: format, width: width, height: height)
    }
}

/// ASTC blocks (row-major, as `glCompressedTexImage2D`, Metal and Vulkan take them) → RGBA8.
/// Decoders are pooled as for PVRTC.
public struct ASTCTileDecoder: FixedSizeTileDecoder {
    public let format: ASTCFormat
    private let decoders: ScratchPool<ASTCDecoder>

    public init(format: ASTCFormat = .astc6x6) {
        self.format = format
        decoders = ScratchPool { ASTCDecoder(format: format) }
    }

    public var name: String { format.rawValue }
    public var ktx2Format: KTX2Format { KTX2Format(astc: format) }

    public func payloadByteCount(width: Int, height: Int) throws -> Int {
        try format.validate(width: width, height: height)
        return format.byteCount(width: width, height: height)
    }

    /// Throws ``CodecError`` when `data` is not exactly the size's byte count.
    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let decoder = decoders.take()
        defer { decoders.give(decoder) }
        return try decoder.decode(data, width: width, height: height)
    }
}

/// PNG tiles → RGBA8, refusing a PNG of another size than the tile's.
public struct PNGTileDecoder: TileDecoder {
    public init() {}

    public var name: String { "png" }

    /// A PNG of another size is a ``PNGError`` (sizeMismatch); the decoder never allocates
    /// beyond `width × height` pixels.
    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        guard width > 0, height > 0, width <= 1 << 15, height <= 1 << 15 else {
            throw PNGError(
                .sizeMismatch, source: "PNG tile",
                detail: "tile size \(width)×\(height) is not 1…32768 on each side")
        }
        let image = try PNGDecoder(maxPixels: width * height).decode(data, source: "PNG tile")
        guard image.width == width, image.height == height else {
            throw PNGError(
                .sizeMismatch, source: "PNG tile",
                detail: "is \(image.width)×\(image.height), expected \(width)×\(height)")
        }
        return image.pixels
    }
}

/// A GPU format's tile as the archive stores it: a KTX2 file (checked against the base
/// format and the tile size), or in archives written before KTX2 the raw payload or a zlib
/// stream of it (a blob of exactly the raw byte count is raw; anything else must inflate to
/// exactly that count). See ``StoredGPUTile``.
public struct GPUTileDecoder<Base: FixedSizeTileDecoder>: TileDecoder {
    /// `tilepack:payload_compression` of archives whose tiles are KTX2 files (zlib or no
    /// supercompression, each tile's header says which).
    /// (Older archives say `zlib-when-smaller`: raw, or zlib when smaller.)
    public static var ktx2CompressionName: String { "ktx2" }

    public let base: Base

    public init(_ base: Base) { self.base = base }

    public var name: String { base.name }

    /// Cost: at most one inflate (bounded by the raw byte count) plus the base decode.
    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try base.decode(payload(data, width: width, height: height), width: width, height: height)
    }

    /// The raw payload of a stored tile.
    /// - Throws: ``CodecError`` for a blob that is not a whole payload of this format and size.
    /// - Cost: one copy or one inflate, and one zlib state.
    public func payload(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let rawCount = try base.payloadByteCount(width: width, height: height)
        let inflater = try Zlib.Inflater()
        var raw = [UInt8](repeating: 0, count: rawCount)
        try data.withUnsafeBytes { stored in
            try raw.withUnsafeMutableBytes { out in
                try StoredGPUTile.unwrap(
                    stored, into: out, format: base.ktx2Format, width: width, height: height, inflater: inflater)
            }
        }
        return raw
    }
}

/// A few reusable non-thread-safe workers handed out one caller at a time.
/// Sendable because every access to `idle` happens under `lock`, and a worker is owned
/// by exactly one caller between `take` and `give`.
package final class ScratchPool<Worker>: @unchecked Sendable {
    private let lock = Locked(())
    private var idle: [Worker] = []
    private let make: @Sendable () -> Worker
    private let limit = 8

    package init(make: @escaping @Sendable () -> Worker) { self.make = make }

    package func take() -> Worker {
        let worker: Worker? = lock.withLock { _ in idle.popLast() }
        return worker ?? make()
    }

    package func give(_ worker: Worker) {
        lock.withLock { _ in if idle.count < limit { idle.append(worker) } }
    }
}
