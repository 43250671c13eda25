import TilePackCore
import TilePackSQLite
import TilePackCodec
/// Elevations of one tile in metres, kept lossless next to the display tiles so a query
/// answers in metres rather than colours.
///
/// `values` are row-major, top (north) row first, `width × height` Float32; NaN means no data.
/// Equality is bit-exact (NaN equals the same NaN), which is what a lossless store promises.
public struct ElevationTile: Sendable, Equatable {
    /// Largest side we store or accept: far above a 256/512 px tile, small enough that a
    /// damaged width × height can never drive a huge allocation (4096² × 4 B = 64 MiB).
    public static let maxSide = 4096

    public let width: Int
    public let height: Int
    public var values: [Float]

    /// - Precondition: `values.count == width * height`, sides in 1...``maxSide``.
    public init(width: Int, height: Int, values: [Float]) {
        precondition(
            width > 0 && height > 0 && width <= Self.maxSide && height <= Self.maxSide,
            "elevation tile side out of range")
        precondition(values.count == width * height, "elevation values do not fill width × height")
        self.width = width
        self.height = height
        self.values = values
    }

    /// The elevation at column `x`, row `y` (top row 0).
    public subscript(x: Int, y: Int) -> Float { values[y * width + x] }

    public static func == (a: ElevationTile, b: ElevationTile) -> Bool {
        a.width == b.width && a.height == b.height
            && a.values.elementsEqual(b.values) { $0.bitPattern == $1.bitPattern }
    }
}

/// How an elevation tile's Float32 grid is packed in the `elevation.data` blob.
/// The two Float32 encodings are lossless at the bit level (NaN payloads included);
/// ``quantizedPlanarDeflate`` is lossless to a step recorded in the blob (format version 2).
public enum ElevationEncoding: String, Sendable, CaseIterable {
    /// Little-endian Float32 rows, zlib-compressed. The plain baseline.
    case float32Deflate = "f32le-deflate"
    /// The TIFF floating-point predictor (predictor 3) before zlib: each row's floats are split
    /// into four byte planes, most significant first, then every byte is replaced by its
    /// difference from the byte before it in the row. Smooth terrain turns into long runs of
    /// small numbers in the high planes; measured 12–25 % smaller than ``float32Deflate`` on
    /// three real DEMs, but 2× larger on a near-constant one (checks/bench/elevation-encoding-bench),
    /// which is why the writer by default tries both and keeps the smaller per tile.
    case float32PredictorDeflate = "f32-fpredict-deflate"
    /// Samples quantised to a step, planar-predicted integers as byte planes, zlib
    /// (``QuantizedElevation``; docs/FORMAT.md): 4–5× smaller than the Float32 encodings on
    /// measured DEMs. Archives holding it say `tilepack:format_version` 2.
    case quantizedPlanarDeflate = "q-planar-deflate"

    /// The archive format version a tile in this encoding needs readers to know.
    public var formatVersion: Int { self == .quantizedPlanarDeflate ? 2 : 1 }

    /// Packs `tile` into the blob stored in `elevation.data`, with the smallest of the
    /// allowed encodings: quantised at `step` when given and the tile allows it (finite samples
    /// within ±2³⁰ steps, one NaN bit pattern), else the smaller of the two Float32 encodings.
    /// - Cost: one quantised encode (level 9) or two Float32 encodes.
    public static func pack(
        _ tile: ElevationTile, step: Double?, level: Int32 = 6
    ) throws -> (ElevationEncoding, [UInt8]) {
        if let step, let blob = try QuantizedElevation.encode(tile, step: step) {
            return (.quantizedPlanarDeflate, blob)
        }
        let predicted = try ElevationEncoding.float32PredictorDeflate.encode(tile, level: level)
        let plain = try ElevationEncoding.float32Deflate.encode(tile, level: level)
        return predicted.count <= plain.count ? (.float32PredictorDeflate, predicted) : (.float32Deflate, plain)
    }

    /// Packs `tile` into the blob stored in `elevation.data`. ``quantizedPlanarDeflate`` needs a
    /// `step`; without one, or for a tile it cannot hold (see ``pack(_:step:level:)``), this
    /// throws a `Zlib.Failure` with code `Z_DATA_ERROR` naming the reason.
    /// - Cost: O(width × height), one scratch buffer of 4 bytes a sample plus the deflate output.
    public func encode(_ tile: ElevationTile, level: Int32 = 6, step: Double? = nil) throws -> [UInt8] {
        if self == .quantizedPlanarDeflate {
            guard let step, step.isFinite, step > 0 else {
                throw Zlib.Failure(code: -3, message: "q-planar-deflate needs a positive finite step")
            }
            guard let blob = try QuantizedElevation.encode(tile, step: step) else {
                throw Zlib.Failure(code: -3, message: "tile has samples q-planar-deflate cannot hold at step \(step)")
            }
            return blob
        }
        let w = tile.width, h = tile.height
        var bytes = [UInt8](repeating: 0, count: w * h * 4)
        tile.values.withUnsafeBufferPointer { src in
            bytes.withUnsafeMutableBufferPointer { dst in
                for i in 0..<(w * h) {
                    let bits = src[i].bitPattern
                    dst[4 * i] = UInt8(truncatingIfNeeded: bits)
                    dst[4 * i + 1] = UInt8(truncatingIfNeeded: bits >> 8)
                    dst[4 * i + 2] = UInt8(truncatingIfNeeded: bits >> 16)
                    dst[4 * i + 3] = UInt8(truncatingIfNeeded: bits >> 24)
                }
            }
        }
        if self == .float32PredictorDeflate {
            // TIFF's floating-point predictor (the same code GeoTIFFs are written with).
            bytes.withUnsafeMutableBytes {
                TIFFPredictor.applyFloatingPoint($0, width: w, rows: h, samplesPerPixel: 1, bytesPerSample: 4)
            }
        }
        return try Zlib.deflate(bytes, level: level)
    }

    /// Unpacks a blob written by ``encode(_:level:)`` for a `width × height` tile.
    /// Throws when the sides are out of range or the blob does not inflate to exactly
    /// `width × height × 4` bytes; never allocates more than that.
    public func decode(_ blob: [UInt8], width: Int, height: Int, path: String) throws -> ElevationTile {
        guard width > 0, height > 0, width <= ElevationTile.maxSide, height <= ElevationTile.maxSide else {
            throw ArchiveError(
                path: path, code: .badElevation,
                detail: "elevation tile size \(width)×\(height) is outside 1…\(ElevationTile.maxSide)")
        }
        let count = width * height
        if self == .quantizedPlanarDeflate {
            let result: Result<ElevationTile, ArchiveError> = blob.withUnsafeBytes { raw in
                Result { () throws(ArchiveError) in
                    try Self.decodeQuantized(raw, width: width, height: height, path: path)
                }
            }
            return try result.get()
        }
        var bytes = [UInt8](repeating: 0, count: count * 4 + 1)  // one spare byte detects over-long data
        let inflated: Result<Int, any Error> = blob.withUnsafeBytes { src in
            bytes.withUnsafeMutableBytes { dst in
                Result { try Zlib.inflate(src, into: dst) }
            }
        }
        let produced: Int
        switch inflated {
        case .success(let n): produced = n
        case .failure(let error):
            throw ArchiveError(path: path, code: .badElevation, detail: "elevation data does not inflate: \(error)")
        }
        guard produced == count * 4 else {
            throw ArchiveError(
                path: path, code: .badElevation,
                detail: "elevation data holds \(produced) bytes, expected \(count * 4) for \(width)×\(height)")
        }
        if self == .float32PredictorDeflate {
            // Undo TIFF's floating-point predictor with the reader's own code; it writes
            // little-endian samples, as the plain encoding stores them.
            var planes = bytes
            bytes.withUnsafeMutableBufferPointer { out in
                planes.withUnsafeMutableBufferPointer { block in
                    TIFFPredictor.undoFloatingPoint(
                        block, into: out, rows: height, rowSamples: width, stride: 1, sampleBytes: 4)
                }
            }
        }
        var values = [Float](repeating: 0, count: count)
        bytes.withUnsafeBufferPointer { src in
            values.withUnsafeMutableBufferPointer { dst in
                for i in 0..<count {
                    let bits =
                        UInt32(src[4 * i]) | UInt32(src[4 * i + 1]) << 8
                        | UInt32(src[4 * i + 2]) << 16 | UInt32(src[4 * i + 3]) << 24
                    dst[i] = Float(bitPattern: bits)
                }
            }
        }
        return ElevationTile(width: width, height: height, values: values)
    }

    /// Decodes a blob in place (e.g. SQLite's own buffer); see ``decode(_:width:height:path:)``.
    /// For ``quantizedPlanarDeflate`` the returned grid is the only allocation (scratch is pooled).
    public func decode(
        _ blob: UnsafeRawBufferPointer, width: Int, height: Int, path: String
    ) throws -> ElevationTile {
        guard self == .quantizedPlanarDeflate else {
            return try decode(Array(blob), width: width, height: height, path: path)
        }
        return try Self.decodeQuantized(blob, width: width, height: height, path: path)
    }

    private static func decodeQuantized(
        _ blob: UnsafeRawBufferPointer, width: Int, height: Int,
        path: String
    ) throws(ArchiveError) -> ElevationTile {
        guard width > 0, height > 0, width <= ElevationTile.maxSide, height <= ElevationTile.maxSide else {
            throw ArchiveError(
                path: path, code: .badElevation,
                detail: "elevation tile size \(width)×\(height) is outside 1…\(ElevationTile.maxSide)")
        }
        var failure: ArchiveError?
        let values = [Float](unsafeUninitializedCapacity: width * height) { buffer, initialized in
            // Filled before decoding so a throw leaves no uninitialised memory behind.
            buffer.initialize(repeating: 0)
            initialized = width * height
            do throws(ArchiveError) {
                try QuantizedElevation.decode(blob, width: width, height: height, into: buffer, path: path)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return ElevationTile(width: width, height: height, values: values)
    }
}

/// How a writer packs elevation tiles: a value, so the build's workers pack tiles in parallel
/// and the writer's thread only stores them (``MBTilesWriter/Options/elevationPacker``).
public struct ElevationPacker: Sendable, Equatable {
    /// A fixed encoding, or nil: quantised at ``step`` when set, else the smaller Float32 one
    /// (``ElevationEncoding/pack(_:step:level:)``).
    public var encoding: ElevationEncoding?
    public var step: Double?
    /// zlib level of the Float32 encodings (the quantised one deflates at 9).
    public var level: Int32

    public init(encoding: ElevationEncoding?, step: Double?, level: Int32) {
        self.encoding = encoding
        self.step = step
        self.level = level
    }

    /// `tile` packed as the writer would store it.
    /// - Cost: as ``ElevationEncoding/pack(_:step:level:)`` or one fixed encode.
    public func pack(_ tile: ElevationTile) throws -> PackedElevation {
        let encoding: ElevationEncoding, blob: [UInt8]
        if let fixed = self.encoding, fixed != .quantizedPlanarDeflate {
            (encoding, blob) = (fixed, try fixed.encode(tile, level: level))
        } else {
            (encoding, blob) = try ElevationEncoding.pack(tile, step: step, level: level)
        }
        return PackedElevation(encoding: encoding, width: tile.width, height: tile.height, blob: blob)
    }
}

/// One tile's elevation as the `elevation` table will store it, packed by this tilepack (so its
/// encoding is known; a row read back from an archive, whose encoding name may be anything, is
/// a ``StoredElevation``).
public struct PackedElevation: Sendable, Equatable {
    public let encoding: ElevationEncoding
    public let width: Int
    public let height: Int
    public let blob: [UInt8]

    public init(encoding: ElevationEncoding, width: Int, height: Int, blob: [UInt8]) {
        self.encoding = encoding
        self.width = width
        self.height = height
        self.blob = blob
    }
}

/// An elevation row as an archive stores it, before decoding: the encoding's name (as
/// recorded, possibly one this tilepack does not know), the grid size and the encoded bytes.
public struct StoredElevation: Sendable, Equatable {
    public var encoding: String
    public var width: Int
    public var height: Int
    public var data: [UInt8]

    public init(encoding: String, width: Int, height: Int, data: [UInt8]) {
        self.encoding = encoding; self.width = width; self.height = height; self.data = data
    }
}
