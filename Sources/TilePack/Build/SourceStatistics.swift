import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// Percentiles of a source's samples from a decimated pass: up to 16×16 windows of 64×64
/// pixels spread evenly over the raster (along an axis of at most 1024 pixels, all of it). Memory is bounded by 1 Mi
/// samples per band whatever the source size; each window
/// touches at most four TIFF blocks, so the pass stays cheap on tiled sources.
enum SourceStatistics {
    static let windowSize = 64
    static let windowsPerSide = 16

    /// The valid samples (not NaN, not all-bands nodata) of one band from the decimated
    /// pass, sorted, so that several percentiles and the range come from one pass.
    struct SortedSample: Sendable {
        let values: [Float]

        /// The p-th percentile (0–100, nearest rank); nil when there are no samples.
        func percentile(_ p: Double) -> Float? {
            guard !values.isEmpty else { return nil }
            let rank = (min(max(p, 0), 100) / 100 * Double(values.count - 1)).rounded()
            return values[Int(rank)]
        }

        /// The distinct values, ascending, when there are at most `limit` of them and all are
        /// integers; else nil. O(samples).
        func distinctIntegers(limit: Int) -> [Float]? {
            var out: [Float] = []
            for v in values where out.last != v {
                guard v.rounded() == v, out.count < limit else { return nil }
                out.append(v)
            }
            return out
        }

        /// Smallest and largest valid sample; nil when there are none.
        var range: ClosedRange<Float>? {
            guard let lo = values.first, let hi = values.last else { return nil }
            return lo...hi
        }
    }

    /// For each band in `bands`, the requested percentiles (0–100) of its valid samples
    /// (not NaN, not all-bands nodata). nil for a band with no valid samples.
    static func percentiles(of source: any RasterSource, bands wanted: [Int], _ ps: [Double]) throws -> [[Float]?] {
        try samples(of: source, bands: wanted).map { s in
            s.values.isEmpty ? nil : ps.map { s.percentile($0) ?? 0 }
        }
    }

    /// For each band in `bands`, its valid samples from the decimated pass, sorted.
    static func samples(of source: any RasterSource, bands wanted: [Int]) throws -> [SortedSample] {
        let bands = source.bands
        let nodata: Float? = source.nodata.map { Float($0) }
        var samples = [[Float]](repeating: [], count: wanted.count)
        /// Window (start, span) along one axis: tiling the axis when 16 windows cover it,
        /// else 16 windows spread evenly (no window counted twice either way).
        func windows(_ size: Int) -> [(start: Int, span: Int)] {
            if size <= windowSize * windowsPerSide {
                return stride(from: 0, to: size, by: windowSize).map { ($0, min(windowSize, size - $0)) }
            }
            return (0..<windowsPerSide).map { k in ((size - windowSize) * k / (windowsPerSide - 1), windowSize) }
        }
        guard source.width > 0, source.height > 0 else { return wanted.map { _ in SortedSample(values: []) } }
        for (y, h) in windows(source.height) {
            for (x, w) in windows(source.width) {
                let win = try source.readFloats(x: x, y: y, width: w, height: h)
                let n = w * h
                guard win.count == n * bands else {
                    throw BuildError.sourceReadMismatch(expected: n * bands, got: win.count)
                }
                for p in 0..<n {
                    var allNodata = nodata != nil, hasNaN = false
                    for b in 0..<bands {
                        let v = win[p * bands + b]
                        if v.isNaN { hasNaN = true }
                        if b != source.alphaBand, let nd = nodata, v != nd { allNodata = false }
                    }
                    if hasNaN || allNodata { continue }
                    for (slot, b) in wanted.enumerated() { samples[slot].append(win[p * bands + b]) }
                }
            }
        }
        return samples.map { SortedSample(values: $0.sorted()) }
    }
}
