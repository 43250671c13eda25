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
    /// The codec, with GPU payloads (PVRTC, ASTC) written as KTX2 files (see
    /// ``KTX2TileCodec``, zlib at the level's ``PVRTCEncoder/Level/ktx2ZlibLevel``). `level`
    /// applies to PVRTC and ASTC, `rdo` to ASTC only (others ignore it: ``rateDistortion(_:level:argument:)``
    /// says which take it).
    public func codec(level: PVRTCEncoder.Level = .quality, rdo: ASTCRateDistortion = .off) -> any TileCodec {
        let zlib = level.ktx2ZlibLevel
        return switch self {
        case .png: PNGCodec()
        case .pvrtc4: KTX2TileCodec(PVRTCCodec(format: .pvrtc4, level: level), level: zlib)
        case .pvrtc2: KTX2TileCodec(PVRTCCodec(format: .pvrtc2, level: level), level: zlib)
        case .astc4x4: KTX2TileCodec(ASTCCodec(format: .astc4x4, level: level, rdo: rdo), level: zlib)
        case .astc6x6: KTX2TileCodec(ASTCCodec(format: .astc6x6, level: level, rdo: rdo), level: zlib)
        case .astc8x8: KTX2TileCodec(ASTCCodec(format: .astc8x8, level: level, rdo: rdo), level: zlib)
        }
    }

    /// The rate-distortion λ this codec builds with at `level`: `requested` (a person's `--rdo`)
    /// for ASTC; when none was given, ``ASTCRateDistortion/standard`` at `quality` and off at
    /// `fast` (asked for speed: the choice costs about as much again as `quality`'s encode);
    /// nil for PNG and PVRTC.
    /// - Throws: ``ASTCRateDistortionError`` (`notASTC`) when `requested` is given for PNG or PVRTC.
    /// - Cost: constant.
    public func rateDistortion(
        _ requested: ASTCRateDistortion?, level: PVRTCEncoder.Level = .quality, argument: String = "--rdo"
    ) throws(ASTCRateDistortionError) -> ASTCRateDistortion? {
        guard astcFormat != nil else {
            if requested != nil { throw ASTCRateDistortionError(argument: argument, codec: rawValue) }
            return nil
        }
        return requested ?? (level == .quality ? .standard : .off)
    }
}

extension PVRTCEncoder.Level {
    /// The zlib level of the KTX2 payloads built at this encoder level: 6 for `quality`; 4 for
    /// `fast`, whose build spends more time in deflate than in the encoder. On the 1,243
    /// ASTC 6×6 `fast` tiles of the 4096² benchmark source level 4 deflates in 0.64× level
    /// 6's time for 1.7 % more bytes (level 1: 0.51× for 4.6 % more); BENCHMARKS.md "Build
    /// speed and memory against peers".
    public var ktx2ZlibLevel: Int32 {
        switch self {
        case .quality: 6
        case .fast: 4
        }
    }
}

/// Writes a GPU codec's payload as a KTX2 file (``KTX2Writer``), its level zlib-supercompressed
/// when that makes it smaller: most map tiles have runs of flat colour (water, snow, nodata)
/// whose blocks repeat. The payload inside is the base codec's output unchanged; decoding is
/// ``GPUTileDecoder``'s, which also reads the raw and zlib tiles of older archives.
public struct KTX2TileCodec<Base: TileCodec & FixedSizeTileDecoder>: TileCodec, FixedSizeTileDecoder {
    public let base: Base
    /// zlib level: 6 is zlib's balance; PVRTC words gain little from 9.
    public let level: Int32

    public init(_ base: Base, level: Int32 = 6) {
        self.base = base
        self.level = level
    }

    public var name: String { base.name }
    public var ktx2Format: KTX2Format { base.ktx2Format }
    public var encodeTimeFollowsDetail: Bool { base.encodeTimeFollowsDetail }

    public func payloadByteCount(width: Int, height: Int) throws -> Int {
        try base.payloadByteCount(width: width, height: height)
    }

    /// Cost: the base codec's encode plus one deflate of its output and one copy.
    public func encode(rgba: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        let raw = try base.encode(rgba: rgba, width: width, height: height)
        return try KTX2Writer.texture(
            level: raw, format: base.ktx2Format, width: width, height: height, zlibLevel: level)
    }

    public func decode(_ data: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try GPUTileDecoder(base).decode(data, width: width, height: height)
    }
}
