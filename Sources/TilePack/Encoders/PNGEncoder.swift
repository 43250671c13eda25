import TilePackCore
import TilePackCodec
/// Writes 8-bit, non-interlaced PNGs from RGBA8 pixels, for exporting tiles and for the
/// `png` tile codec.
///
/// The colour type shrinks to what the pixels need: gray (1 byte a pixel) when every pixel is
/// opaque and r = g = b, gray+alpha when only r = g = b, RGB when only opaque, else RGBA.
/// Each row gets the filter (None, Sub, Up, Average, Paeth) whose output has the smallest sum
/// of absolute values taken as signed bytes, the heuristic libpng and the PNG spec recommend.
///
/// - Cost: one pass to choose the colour type, five filter trials a row (O(5 × bytes)), then
///   zlib at ``level``; allocations: the filtered image and the output.
public struct PNGEncoder: Sendable {
    /// zlib level, 0 (store) … 9 (smallest); 6 balances size and speed.
    public var level: Int32
    /// Whether to drop alpha and colour channels that carry no information.
    public var reducesColorType: Bool
    /// zlib strategy: `.default` for exports; the `png` tile codec uses `.rle` (~6× faster
    /// deflate, ~10 % larger tiles).
    public var strategy: Zlib.Strategy

    public init(level: Int32 = 6, reducesColorType: Bool = true, strategy: Zlib.Strategy = .default) {
        precondition((0...9).contains(level), "zlib level must be 0…9")
        self.level = level
        self.reducesColorType = reducesColorType
        self.strategy = strategy
    }

    /// Encodes `rgba` (width × height × 4 bytes, top row first) as a PNG file.
    public func encode(rgba: [UInt8], width: Int, height: Int) throws(PNGError) -> [UInt8] {
        guard width > 0, height > 0, width <= Int(Int32.max), height <= Int(Int32.max),
            rgba.count % 4 == 0, width.multipliedReportingOverflow(by: height) == (rgba.count / 4, false)
        else {
            throw PNGError(
                .invalidArgument, source: "PNG encoder",
                detail: "pixels (\(rgba.count) bytes) do not fill \(width)×\(height) RGBA")
        }
        let colorType = reducesColorType ? Self.smallestColorType(rgba) : .rgba
        let channels = colorType.channels
        let rowBytes = width * channels
        var filtered = [UInt8](repeating: 0, count: height * (rowBytes + 1))
        var packed = [UInt8](repeating: 0, count: 2 * rowBytes)  // this row and the previous one
        var trial = [UInt8](repeating: 0, count: rowBytes)
        rgba.withUnsafeBufferPointer { src in
            filtered.withUnsafeMutableBufferPointer { out in
                packed.withUnsafeMutableBufferPointer { rows in
                    trial.withUnsafeMutableBufferPointer { scratch in
                        for y in 0..<height {
                            let cur = UnsafeMutableBufferPointer(
                                rebasing: rows[(y & 1) * rowBytes..<(y & 1) * rowBytes + rowBytes])
                            let prev = UnsafeMutableBufferPointer(
                                rebasing: rows[(1 - (y & 1)) * rowBytes..<(1 - (y & 1)) * rowBytes + rowBytes])
                            Self.pack(src, row: y, width: width, colorType: colorType, into: cur)
                            let target = UnsafeMutableBufferPointer(
                                rebasing: out[y * (rowBytes + 1)..<(y + 1) * (rowBytes + 1)])
                            Self.filterRow(
                                cur, previous: prev, bpp: channels,
                                into: target, scratch: scratch)
                        }
                    }
                }
            }
        }
        let compressed: [UInt8]
        do {
            compressed = try Zlib.deflate(filtered, level: level, strategy: strategy)
        } catch {
            preconditionFailure("deflate of an in-memory buffer failed: \(error)")
        }
        var png = PNG.signature
        png.reserveCapacity(compressed.count + 64)
        var header = [UInt8]()
        Self.appendBE32(UInt32(width), to: &header)
        Self.appendBE32(UInt32(height), to: &header)
        header += [8, colorType.rawValue, 0, 0, 0]  // depth 8, deflate, adaptive filtering, no interlace
        Self.appendChunk("IHDR", header, to: &png)
        // Chunks hold at most 2^31 − 1 bytes; split a (huge) stream over several IDATs.
        var offset = 0
        repeat {
            let end = min(compressed.count, offset + (1 << 30))
            Self.appendChunk("IDAT", compressed[offset..<end], to: &png)
            offset = end
        } while offset < compressed.count
        Self.appendChunk("IEND", [], to: &png)
        return png
    }

    // MARK: - Internals

    static func smallestColorType(_ rgba: [UInt8]) -> PNG.ColorType {
        var opaque = true, gray = true
        rgba.withUnsafeBufferPointer { p in
            var i = 0
            while i < p.count && (opaque || gray) {
                if p[i + 3] != 255 { opaque = false }
                if p[i] != p[i + 1] || p[i] != p[i + 2] { gray = false }
                i += 4
            }
        }
        switch (gray, opaque) {
        case (true, true): return .gray
        case (true, false): return .grayAlpha
        case (false, true): return .rgb
        case (false, false): return .rgba
        }
    }

    @inline(__always)
    static func pack(
        _ src: UnsafeBufferPointer<UInt8>, row y: Int, width: Int, colorType: PNG.ColorType,
        into dst: UnsafeMutableBufferPointer<UInt8>
    ) {
        let base = y * width * 4
        switch colorType {
        case .rgba:
            for i in 0..<(width * 4) { dst[i] = src[base + i] }
        case .rgb:
            for x in 0..<width {
                dst[3 * x] = src[base + 4 * x]
                dst[3 * x + 1] = src[base + 4 * x + 1]
                dst[3 * x + 2] = src[base + 4 * x + 2]
            }
        case .grayAlpha:
            for x in 0..<width {
                dst[2 * x] = src[base + 4 * x]
                dst[2 * x + 1] = src[base + 4 * x + 3]
            }
        case .gray:
            for x in 0..<width { dst[x] = src[base + 4 * x] }
        case .palette:
            preconditionFailure("the encoder does not write palettes")
        }
    }

    /// Writes the filter byte and the filtered row with the least sum of |signed byte|
    /// (libpng's heuristic). `previous` is the row above, all zeros for the first row (as the
    /// spec defines it).
    ///
    /// Cost: five passes over the row. Each filter has a loop of its own with the first pixel
    /// (no left neighbour) peeled off, so no pass branches per byte on the filter or the edge,
    /// and nothing in them is generic: the per-byte `switch` and generic `abs` this replaced
    /// were most of what `serve` spent drawing PNGs in a debug build (perf, BENCHMARKS.md
    /// "CI time").
    static func filterRow(
        _ cur: UnsafeMutableBufferPointer<UInt8>, previous: UnsafeMutableBufferPointer<UInt8>,
        bpp: Int, into out: UnsafeMutableBufferPointer<UInt8>,
        scratch: UnsafeMutableBufferPointer<UInt8>
    ) {
        let n = cur.count
        precondition(bpp >= 1 && previous.count >= n && scratch.count >= n && out.count >= n + 1)
        guard n > 0, let x = cur.baseAddress, let up = previous.baseAddress, let s = scratch.baseAddress,
            let o = out.baseAddress
        else {
            if !out.isEmpty { out[0] = 0 }
            return
        }
        // The cost of a filtered byte v is |v| read as signed: `v < 128 ? v : 256 - v`, written
        // out in each loop (a helper function stays a call in a debug build).
        let first = min(bpp, n)
        var bestCost = Int.max
        var filter: UInt8 = 0
        while filter <= 4 {
            var cost = 0, i = 0
            switch filter {
            case 0:
                while i < n { let v = x[i]; s[i] = v; cost += v < 128 ? Int(v) : 256 - Int(v); i += 1 }
            case 1:
                while i < first { let v = x[i]; s[i] = v; cost += v < 128 ? Int(v) : 256 - Int(v); i += 1 }
                while i < n { let v = x[i] &- x[i - bpp]; s[i] = v; cost += v < 128 ? Int(v) : 256 - Int(v); i += 1 }
            case 2:
                while i < n { let v = x[i] &- up[i]; s[i] = v; cost += v < 128 ? Int(v) : 256 - Int(v); i += 1 }
            case 3:
                while i < first {
                    let v = x[i] &- (up[i] >> 1); s[i] = v; cost += v < 128 ? Int(v) : 256 - Int(v); i += 1
                }
                while i < n {
                    let v = x[i] &- UInt8(truncatingIfNeeded: (Int(x[i - bpp]) + Int(up[i])) >> 1)
                    s[i] = v; cost += v < 128 ? Int(v) : 256 - Int(v); i += 1
                }
            default:
                // Paeth with no left neighbour (left = up-left = 0) predicts `up`.
                while i < first { let v = x[i] &- up[i]; s[i] = v; cost += v < 128 ? Int(v) : 256 - Int(v); i += 1 }
                while i < n {
                    let v = x[i] &- PNG.paeth(x[i - bpp], up[i], up[i - bpp])
                    s[i] = v; cost += v < 128 ? Int(v) : 256 - Int(v); i += 1
                }
            }
            if cost < bestCost {
                bestCost = cost
                o[0] = filter
                (o + 1).update(from: s, count: n)
            }
            filter += 1
        }
    }

    static func appendBE32(_ v: UInt32, to out: inout [UInt8]) {
        out += [
            UInt8(v >> 24), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 8),
            UInt8(truncatingIfNeeded: v),
        ]
    }

    static func appendChunk<C: Collection<UInt8>>(_ type: String, _ data: C, to out: inout [UInt8]) {
        appendBE32(UInt32(data.count), to: &out)
        let start = out.count
        out += Array(type.utf8)
        out += data
        let crc = out[start...].withUnsafeBytes { Zlib.crc32($0) }
        appendBE32(crc, to: &out)
    }
}
