import TilePackCore
import TilePackCodec

/// A tile format with both directions: RGBA8 rows → stored bytes → RGBA8 rows.
///
/// The seam that lets PVRTC and PNG (and later ASTC) share the build pipeline: Build hands a
/// codec straight RGBA8 rows (top row first, 4 bytes a pixel) and the archive stores whatever
/// bytes come back; the store decodes them with the matching ``TileDecoder``.
public protocol TileCodec: TileDecoder {
    /// Encodes `rgba` (width × height × 4 bytes, rows top first).
    func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8]
    /// True when encode time follows the detail in a tile rather than its size (a search
    /// that stops early on flat blocks): shard builds then weigh their split by the source's
    /// detail instead of by tile counts. Defaults to false: PNG and PVRTC shards measured
    /// CPU time in proportion to their tiles, whatever the content.
    var encodeTimeFollowsDetail: Bool { get }
}

extension TileCodec {
    public var encodeTimeFollowsDetail: Bool { false }
}

extension TileCodecChoice {
    /// The codec, with PVRTC payloads deflated when that saves bytes
    /// (see ``DeflatedTileCodec``). `level` applies to PVRTC and ASTC.
    public func codec(level: PVRTCEncoder.Level = .quality) -> any TileCodec {
        switch self {
        case .png: PNGCodec()
        case .pvrtc4: DeflatedTileCodec(PVRTCCodec(format: .pvrtc4, level: level))
        case .pvrtc2: DeflatedTileCodec(PVRTCCodec(format: .pvrtc2, level: level))
        case .astc4x4: DeflatedTileCodec(ASTCCodec(format: .astc4x4, level: level))
        case .astc6x6: DeflatedTileCodec(ASTCCodec(format: .astc6x6, level: level))
        case .astc8x8: DeflatedTileCodec(ASTCCodec(format: .astc8x8, level: level))
        }
    }
}

/// Wraps a GPU codec's fixed-size payload in zlib when that makes it smaller, the way the
/// archive stores PVRTC: most map tiles have runs of flat colour (water, snow, nodata) whose
/// words repeat. Decoding is ``DeflatedTileDecoder``'s.
public struct DeflatedTileCodec<Base: TileCodec & FixedSizeTileDecoder>: TileCodec, FixedSizeTileDecoder {
    public let base: Base
    /// zlib level: 6 is zlib's balance; PVRTC words gain little from 9.
    public let level: Int32

    public init(_ base: Base, level: Int32 = 6) {
        self.base = base
        self.level = level
    }

    public var name: String { base.name }
    public var encodeTimeFollowsDetail: Bool { base.encodeTimeFollowsDetail }

    public func payloadByteCount(width: Int, height: Int) throws -> Int {
        try base.payloadByteCount(width: width, height: height)
    }

    /// Cost: the base codec's encode plus one deflate of its output.
    public func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let raw = try base.encode(rgba: rgba, width: width, height: height)
        let packed = try Zlib.deflate(raw, level: level)
        return packed.count < raw.count ? packed : raw
    }

    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try DeflatedTileDecoder(base).decode(data, width: width, height: height)
    }
}
