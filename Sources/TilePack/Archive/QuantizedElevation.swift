import TilePackCore
import TilePackCodec

/// The compact elevation codec behind ``ElevationEncoding/quantizedPlanarDeflate``
/// (`q-planar-deflate`, docs/FORMAT.md "Quantised elevation"): samples quantised to a step,
/// stored as integers after a planar 2-D predictor, as byte planes, zlib-deflated.
///
/// Layout of a blob (little-endian):
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 1 | layout version, 1 |
/// | 1 | 1 | predictor, 1 = planar (left + up − up-left) |
/// | 2 | 1 | residual bytes per sample `B`: 0 (every residual 0), 1, 2 or 4 |
/// | 3 | 1 | flags: bit 0 a NaN mask follows, bit 1 every sample is NaN; other bits 0 |
/// | 4 | 8 | step, Float64, positive and finite |
/// | 12 | 4 | base, Int32: the integer of the first sample (the prediction of sample 0) |
/// | 16 | 4 | NaN bit pattern, UInt32: every NaN sample decodes to this Float32 |
/// | 20 | … | zlib stream (absent when there is nothing to inflate) |
///
/// The stream inflates to exactly: the NaN mask when flagged (⌈w·h/8⌉ bytes, sample i is bit
/// i % 8 of byte i / 8, 1 = NaN), then `B` planes of `w·h` bytes: plane k holds byte k (least
/// significant first) of every sample's zigzag-coded residual. Integers are `q = round(v /
/// step)`; a sample decodes to `Float(Double(q) · step)`. Prediction of sample (x, y): `base`
/// at (0, 0), left on row 0, up on column 0, otherwise left + up − up-left; all integer
/// arithmetic wraps modulo 2³² (the encoder keeps |q| ≤ 2³⁰, so wrapping never changes a
/// valid tile's values). A NaN sample's integer is its prediction (residual 0), so NaN areas
/// cost next to nothing and neighbours predict across them.
///
/// Measured alternatives on three DEM builds (`checks/bench/elevation-encoding-bench --quantized`,
/// docs/history/BENCHMARKS-history.md "Issue 25: elevation"): zigzag LEB128 varints before deflate are 0.1–0.9 %
/// smaller than byte planes (planes kept: fixed width, a simpler and faster decode); MED/LOCO-I
/// is 4–35 % and left-only 23–36 % larger than planar; LERC-style 8×8 blocks of bit-packed
/// residuals are 49–147 % larger; deflate level 9 with `Z_FILTERED` is 4–8 % smaller than level 6.
package enum QuantizedElevation {
    /// Bytes before the zlib stream.
    public static let headerSize = 20
    /// Largest |integer| the encoder writes: residuals then fit a wrapping 32-bit zigzag code.
    public static let maxMagnitude: Int64 = 1 << 30

    /// The fields of a blob's header.
    public struct Header: Sendable, Equatable {
        public var residualBytes: Int
        public var hasMask: Bool
        public var allNaN: Bool
        public var step: Double
        public var base: Int32
        public var nanBits: UInt32

        /// Parses and checks the 20 header bytes of `blob`; throws for a short blob, an
        /// unknown version, predictor or flag, a residual width other than 0/1/2/4, or a step
        /// that is not positive and finite.
        public init(_ blob: UnsafeRawBufferPointer, path: String) throws(ArchiveError) {
            guard blob.count >= QuantizedElevation.headerSize else {
                throw ArchiveError(
                    path: path, code: .badElevation,
                    detail:
                        """
                        quantised elevation blob of \(blob.count) bytes is shorter than its \
                        \(QuantizedElevation.headerSize)-byte header
                        """
                )
            }
            guard blob[0] == 1, blob[1] == 1 else {
                throw ArchiveError(
                    path: path, code: .badElevation,
                    detail: "quantised elevation has layout \(blob[0]) and predictor \(blob[1]), expected 1 and 1")
            }
            let b = Int(blob[2])
            guard b == 0 || b == 1 || b == 2 || b == 4 else {
                throw ArchiveError(
                    path: path, code: .badElevation,
                    detail: "quantised elevation has \(b) residual bytes a sample, expected 0, 1, 2 or 4")
            }
            guard blob[3] & ~0b11 == 0 else {
                throw ArchiveError(
                    path: path, code: .badElevation, detail: "quantised elevation has unknown flags \(blob[3])")
            }
            var stepBits: UInt64 = 0
            for k in 0..<8 { stepBits |= UInt64(blob[4 + k]) << (8 * k) }
            let step = Double(bitPattern: stepBits)
            guard step.isFinite, step > 0 else {
                throw ArchiveError(
                    path: path, code: .badElevation,
                    detail: "quantised elevation step \(step) is not positive and finite")
            }
            residualBytes = b
            hasMask = blob[3] & 1 != 0
            allNaN = blob[3] & 2 != 0
            self.step = step
            base = Int32(
                bitPattern: UInt32(blob[12]) | UInt32(blob[13]) << 8 | UInt32(blob[14]) << 16 | UInt32(blob[15]) << 24)
            nanBits = UInt32(blob[16]) | UInt32(blob[17]) << 8 | UInt32(blob[18]) << 16 | UInt32(blob[19]) << 24
        }
    }

    /// The step recorded in `blob`'s header (what a re-encoding of the decoded grid keeps).
    public static func step(of blob: [UInt8], path: String) throws(ArchiveError) -> Double {
        let result: Result<Header, ArchiveError> = blob.withUnsafeBytes { raw in
            Result { () throws(ArchiveError) in try Header(raw, path: path) }
        }
        return try result.get().step
    }

    /// The integer `v` quantises to at `step`, or nil when it is not finite or beyond
    /// ``maxMagnitude``.
    @inline(__always)
    static func integer(_ v: Float, step: Double) -> Int32? {
        let q = (Double(v) / step).rounded()
        guard q.isFinite, q.magnitude <= Double(maxMagnitude) else { return nil }
        return Int32(q)
    }

    /// Encodes `tile` at `step`, or returns nil when the tile cannot be stored this way: a
    /// sample infinite or beyond ±2³⁰ steps, or NaNs with different bit patterns (the caller
    /// then stores it losslessly as Float32).
    /// - Precondition: `step` positive and finite.
    /// - Cost: O(w·h): one pass to quantise and predict into a `B·w·h`(+mask) byte buffer, one deflate.
    public static func encode(_ tile: ElevationTile, step: Double, level: Int32 = 9) throws(Zlib.Failure) -> [UInt8]? {
        precondition(step.isFinite && step > 0, "quantisation step must be positive and finite")
        let w = tile.width, h = tile.height, n = w * h
        var nanBits: UInt32?
        var nanCount = 0
        var base: Int32?
        var residuals = [UInt32](repeating: 0, count: n)
        var mask = [UInt8](repeating: 0, count: (n + 7) / 8)
        var maxCode: UInt32 = 0
        let ok: Bool = tile.values.withUnsafeBufferPointer { v in
            // The integers as the decoder will see them (a NaN sample holds its prediction).
            var q = [Int32](repeating: 0, count: n)
            return q.withUnsafeMutableBufferPointer { q in
                residuals.withUnsafeMutableBufferPointer { r in
                    for i in 0..<n where !v[i].isNaN {
                        guard let k = integer(v[i], step: step) else { return false }
                        if base == nil { base = k }
                        q[i] = k
                    }
                    let b = base ?? 0
                    for y in 0..<h {
                        for x in 0..<w {
                            let i = y * w + x
                            let p: Int32
                            if y == 0 {
                                p = x == 0 ? b : q[i - 1]
                            } else if x == 0 {
                                p = q[i - w]
                            } else {
                                p = q[i - 1] &+ q[i - w] &- q[i - w - 1]
                            }
                            if v[i].isNaN {
                                let bits = v[i].bitPattern
                                if let seen = nanBits, seen != bits { return false }
                                nanBits = bits
                                nanCount += 1
                                mask[i >> 3] |= 1 << UInt8(i & 7)
                                q[i] = p
                            } else {
                                let d = q[i] &- p
                                let z = UInt32(bitPattern: (d << 1) ^ (d >> 31))
                                r[i] = z
                                maxCode = max(maxCode, z)
                            }
                        }
                    }
                    return true
                }
            }
        }
        guard ok else { return nil }
        let allNaN = nanCount == n
        let hasMask = nanCount > 0 && !allNaN
        let width = allNaN || maxCode == 0 ? 0 : maxCode < 0x100 ? 1 : maxCode < 0x1_0000 ? 2 : 4
        var out = [UInt8](repeating: 0, count: headerSize)
        out[0] = 1
        out[1] = 1
        out[2] = UInt8(width)
        out[3] = (hasMask ? 1 : 0) | (allNaN ? 2 : 0)
        let stepBits = step.bitPattern
        for k in 0..<8 { out[4 + k] = UInt8(truncatingIfNeeded: stepBits >> (8 * k)) }
        let b = UInt32(bitPattern: base ?? 0)
        let nb = nanBits ?? Float.nan.bitPattern
        for k in 0..<4 {
            out[12 + k] = UInt8(truncatingIfNeeded: b >> (8 * k))
            out[16 + k] = UInt8(truncatingIfNeeded: nb >> (8 * k))
        }
        guard hasMask || width > 0 else { return out }
        var payload = [UInt8]()
        payload.reserveCapacity((hasMask ? mask.count : 0) + width * n)
        if hasMask { payload += mask }
        let start = payload.count
        payload += repeatElement(0, count: width * n)
        payload.withUnsafeMutableBufferPointer { p in
            residuals.withUnsafeBufferPointer { r in
                for k in 0..<width {
                    let plane = start + k * n, shift = UInt32(8 * k)
                    for i in 0..<n { p[plane + i] = UInt8(truncatingIfNeeded: r[i] >> shift) }
                }
            }
        }
        out += try Zlib.Failure.typed({ try Zlib.deflate(payload, level: level, strategy: .filtered) }) {
            Zlib.Failure(code: -2, message: "\($0)")  // Z_STREAM_ERROR: deflate throws Zlib.Failure alone
        }
        return out
    }

    /// Reusable decode state: an inflater and a byte buffer that grows to the largest tile
    /// seen. Not thread-safe; ``pool`` hands one to each decode.
    public final class Scratch {
        let inflater: Zlib.Inflater?
        var bytes: UnsafeMutableRawBufferPointer

        public init() {
            inflater = try? Zlib.Inflater()
            bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        }

        deinit { bytes.deallocate() }

        /// Scratch above this many bytes is freed after its decode rather than kept: a 512²
        /// tile needs 1.1 MB, while a damaged row may claim a 4096² grid (68 MB), which a
        /// pool of 8 must not hold on to.
        static let keptBytes = 2 << 20

        /// Frees an oversized buffer (see ``keptBytes``).
        func trim() {
            guard bytes.count > Self.keptBytes else { return }
            bytes.deallocate()
            bytes = UnsafeMutableRawBufferPointer(start: nil, count: 0)
        }

        /// At least `count` bytes (the old contents are not kept).
        func reserve(_ count: Int) -> UnsafeMutableRawBufferPointer {
            if bytes.count < count {
                bytes.deallocate()
                bytes = .allocate(byteCount: count, alignment: 8)
            }
            return UnsafeMutableRawBufferPointer(rebasing: bytes[0..<count])
        }
    }

    /// Scratch shared by every decode: in steady state a decode allocates nothing but its
    /// output (at most 8 idle scratches of ≤ 2 MiB each are kept; tiles up to 512² fit).
    package static let pool = ScratchPool { Scratch() }

    /// Decodes `blob` into `out` (`width × height` samples, row-major).
    /// Throws ``ArchiveError`` (`badElevation`) for a damaged header, a stream that does not
    /// inflate to exactly the size the header and grid imply, or bytes after it.
    /// - Cost: O(w·h): one inflate into pooled scratch, one predictor pass; no allocation in
    ///   steady state.
    public static func decode(
        _ blob: UnsafeRawBufferPointer, width: Int, height: Int,
        into out: UnsafeMutableBufferPointer<Float>, path: String
    ) throws(ArchiveError) {
        precondition(out.count == width * height, "output must hold width × height samples")
        let header = try Header(blob, path: path)
        let n = width * height
        let nanValue = Float(bitPattern: header.nanBits)
        if header.allNaN {
            guard blob.count == headerSize, header.residualBytes == 0, !header.hasMask else {
                throw ArchiveError(
                    path: path, code: .badElevation, detail: "an all-NaN quantised elevation tile carries data")
            }
            out.update(repeating: nanValue)
            return
        }
        let maskBytes = header.hasMask ? (n + 7) / 8 : 0
        let expected = maskBytes + header.residualBytes * n
        let stream = UnsafeRawBufferPointer(rebasing: blob[headerSize...])
        let scratch = pool.take()
        defer {
            scratch.trim()
            pool.give(scratch)
        }
        let bytes = scratch.reserve(expected)
        if expected == 0 {
            guard stream.isEmpty else {
                throw ArchiveError(
                    path: path, code: .badElevation,
                    detail: "a constant quantised elevation tile carries \(stream.count) bytes of data")
            }
        } else {
            guard let inflater = scratch.inflater else {
                throw ArchiveError(path: path, code: .badElevation, detail: "zlib could not start an inflater")
            }
            do { try inflater.inflateExactly(stream, into: bytes) } catch {
                throw ArchiveError(
                    path: path, code: .badElevation,
                    detail:
                        """
                        quantised elevation data does not inflate to \(expected) bytes for \(width)×\(height): \
                        \(error)
                        """
                )
            }
        }
        let step = header.step, base = header.base, b = header.residualBytes
        let src = bytes.bindMemory(to: UInt8.self)
        // The integers are kept in the output itself, as bit patterns, until the last pass
        // turns them into metres: no second buffer.
        out.withMemoryRebound(to: Int32.self) { q in
            for y in 0..<height {
                let row = y * width
                for x in 0..<width {
                    let i = row + x
                    var z: UInt32 = 0
                    if b >= 1 { z = UInt32(src[maskBytes + i]) }
                    if b >= 2 { z |= UInt32(src[maskBytes + n + i]) << 8 }
                    if b == 4 {
                        z |= UInt32(src[maskBytes + 2 * n + i]) << 16 | UInt32(src[maskBytes + 3 * n + i]) << 24
                    }
                    let d = Int32(bitPattern: (z >> 1) ^ (0 &- (z & 1)))
                    let p: Int32
                    if y == 0 {
                        p = x == 0 ? base : q[i - 1]
                    } else if x == 0 {
                        p = q[i - width]
                    } else {
                        p = q[i - 1] &+ q[i - width] &- q[i - width - 1]
                    }
                    q[i] = p &+ d
                }
            }
        }
        for i in 0..<n {
            let k = Int32(bitPattern: out[i].bitPattern)
            out[i] = Float(Double(k) * step)
        }
        if header.hasMask {
            for i in 0..<n where src[i >> 3] & (1 << UInt8(i & 7)) != 0 { out[i] = nanValue }
        }
    }
}
