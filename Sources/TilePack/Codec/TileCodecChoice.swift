import TilePackCore
/// The tile codecs an archive can hold, by the name an archive records, and how a payload is
/// wrapped. Build picks one from the command line; readers (query, the tile store) rebuild the
/// same codec from an archive's metadata (see `TileCodecChoice(metadata:)` in Archive), so the
/// two sides cannot disagree.
public enum TileCodecChoice: String, Sendable, CaseIterable {
    /// PNG (our own writer on zlib): opens in GDAL, QGIS and every MBTiles viewer.
    case png
    /// PVRTC1 4 bits per pixel: 32 KiB per 256 × 256 tile, uploaded to the GPU as is.
    case pvrtc4
    /// PVRTC1 2 bits per pixel: 16 KiB per tile, lower quality.
    case pvrtc2

    /// The codec, with PVRTC payloads deflated when that saves bytes
    /// (see ``DeflatedTileCodec``). `level` applies to PVRTC only.
    public func codec(level: PVRTCEncoder.Level = .quality) -> any TileCodec {
        switch self {
        case .png: PNGCodec()
        case .pvrtc4: DeflatedTileCodec(PVRTCCodec(format: .pvrtc4, level: level))
        case .pvrtc2: DeflatedTileCodec(PVRTCCodec(format: .pvrtc2, level: level))
        }
    }

    /// What `tilepack:payload_compression` records for this codec.
    public var payloadCompression: String { self == .png ? "none" : DeflatedTileCodec<PVRTCCodec>.compressionName }
}

/// Wraps a GPU codec's fixed-size payload in zlib when that makes it smaller, the way the
/// archive stores PVRTC: most map tiles have runs of flat colour (water, snow, nodata) whose
/// words repeat. Unambiguous without a flag byte: a payload of exactly the raw byte count is
/// raw; anything shorter is a zlib stream that must inflate to exactly that count.
public struct DeflatedTileCodec<Base: FixedSizeTileCodec>: TileCodec {
    /// `tilepack:payload_compression` for archives written with this wrapper.
    public static var compressionName: String { "zlib-when-smaller" }

    public let base: Base
    /// zlib level: 6 is zlib's balance; PVRTC words gain little from 9.
    public let level: Int32

    public init(_ base: Base, level: Int32 = 6) {
        self.base = base
        self.level = level
    }

    public var name: String { base.name }

    /// Cost: the base codec's encode plus one deflate of its output.
    public func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let raw = try base.encode(rgba: rgba, width: width, height: height)
        let packed = try Zlib.deflate(raw, level: level)
        return packed.count < raw.count ? packed : raw
    }

    /// Cost: at most one inflate (bounded by the raw byte count) plus the base decode.
    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let rawCount = try base.payloadByteCount(width: width, height: height)
        if data.count == rawCount { return try base.decode(data, width: width, height: height) }
        let raw: [UInt8]
        do { raw = try Zlib.inflate(data, limit: rawCount) } catch {
            throw CodecError.byteCount(what: "\(base.name) payload (\(error.description))", expected: rawCount, actual: data.count)
        }
        guard raw.count == rawCount else {
            throw CodecError.byteCount(what: "inflated \(base.name) payload", expected: rawCount, actual: raw.count)
        }
        return try base.decode(raw, width: width, height: height)
    }
}

/// A codec whose payload size depends only on the image size (GPU block formats).
public protocol FixedSizeTileCodec: TileCodec {
    /// Bytes of one encoded image; throws for a size the format cannot hold.
    func payloadByteCount(width: Int, height: Int) throws -> Int
}

extension PVRTCCodec: FixedSizeTileCodec {
    public func payloadByteCount(width: Int, height: Int) throws -> Int {
        try format.validate(width: width, height: height)
        return format.byteCount(width: width, height: height)
    }
}
