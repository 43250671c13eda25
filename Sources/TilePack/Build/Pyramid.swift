import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
import Synchronization

/// Counts tile buffers alive at once: the pipeline's memory bound, measured, not assumed.
final class LiveTileCounter: Sendable {
    private let live = Atomic<Int>(0)
    private let peakValue = Atomic<Int>(0)

    func acquire() {
        let n = live.add(1, ordering: .relaxed).newValue
        peakValue.max(n, ordering: .relaxed)
    }

    func release() { live.subtract(1, ordering: .relaxed) }

    var current: Int { live.load(ordering: .relaxed) }
    var peak: Int { peakValue.load(ordering: .relaxed) }
}

/// One finished, non-empty tile kept for its parent: RGBA8 (256·256·4) and, for elevation
/// sources, metres (256·256, NaN for nodata). Immutable once made; counted while alive.
final class TileBuffer: Sendable {
    let rgba: [UInt8]
    let metres: [Float]?
    private let counter: LiveTileCounter

    init(rgba: [UInt8], metres: [Float]?, counter: LiveTileCounter) {
        self.rgba = rgba
        self.metres = metres
        self.counter = counter
        counter.acquire()
    }

    deinit { counter.release() }
}

/// Parents from their four children (top-left, top-right, bottom-left, bottom-right), never
/// rereading the source: each parent pixel is the 2×2 average of the child pixels under it.
enum Pyramid {
    /// Alpha-weighted 2×2 average: colour = Σ(c·a)/Σa (rounded), alpha = Σa/4 (rounded);
    /// a missing child counts as transparent. `size` is the tile side. O(size²).
    static func downsampleRGBA(_ children: [[UInt8]?], size: Int) -> [UInt8] {
        precondition(children.count == 4)
        var out = [UInt8](repeating: 0, count: size * size * 4)
        let half = size / 2
        for (q, child) in children.enumerated() {
            guard let child else { continue }
            precondition(child.count == size * size * 4)
            let ox = (q & 1) * half, oy = (q >> 1) * half
            child.withUnsafeBufferPointer { c in
                out.withUnsafeMutableBufferPointer { out in
                    for j in 0..<half {
                        for i in 0..<half {
                            let p0 = ((2 * j) * size + 2 * i) * 4, p1 = p0 + 4
                            let p2 = p0 + size * 4, p3 = p2 + 4
                            let a0 = Int(c[p0 + 3]), a1 = Int(c[p1 + 3]), a2 = Int(c[p2 + 3]), a3 = Int(c[p3 + 3])
                            let sa = a0 + a1 + a2 + a3
                            guard sa > 0 else { continue }
                            let o = ((oy + j) * size + ox + i) * 4
                            if sa == 4 * 255 {
                                // Opaque (the common case): a plain mean, same rounding.
                                for ch in 0..<3 {
                                    let s = Int(c[p0 + ch]) + Int(c[p1 + ch]) + Int(c[p2 + ch]) + Int(c[p3 + ch])
                                    out[o + ch] = UInt8((s + 2) / 4)
                                }
                                out[o + 3] = 255
                                continue
                            }
                            for ch in 0..<3 {
                                let s =
                                    Int(c[p0 + ch]) * a0 + Int(c[p1 + ch]) * a1 + Int(c[p2 + ch]) * a2 + Int(c[p3 + ch])
                                    * a3
                                out[o + ch] = UInt8((s + sa / 2) / sa)
                            }
                            out[o + 3] = UInt8((sa + 2) / 4)
                        }
                    }
                }
            }
        }
        return out
    }

    /// Mean of the valid (non-NaN) samples of each 2×2 block; NaN where none. O(size²).
    static func downsampleElevation(_ children: [[Float]?], size: Int) -> [Float] {
        precondition(children.count == 4)
        var out = [Float](repeating: .nan, count: size * size)
        let half = size / 2
        for (q, child) in children.enumerated() {
            guard let child else { continue }
            precondition(child.count == size * size)
            let ox = (q & 1) * half, oy = (q >> 1) * half
            for j in 0..<half {
                for i in 0..<half {
                    let p = (2 * j) * size + 2 * i
                    var sum: Float = 0, n: Float = 0
                    @inline(__always) func add(_ v: Float) { if !v.isNaN { sum += v; n += 1 } }
                    add(child[p]); add(child[p + 1]); add(child[p + size]); add(child[p + size + 1])
                    if n > 0 { out[(oy + j) * size + ox + i] = sum / n }
                }
            }
        }
        return out
    }

    /// Class codes: per 2×2 block the most frequent valid (non-NaN) child sample, ties to the
    /// first in reading order (top-left, top-right, bottom-left, bottom-right); NaN where none.
    /// Never a mean: a parent holds only codes its children hold. The parent's colour is the
    /// picked pixel's (transparent where none). O(size²).
    static func downsampleClasses(
        _ children: [[Float]?], colours: [[UInt8]?], size: Int
    ) -> (values: [Float], rgba: [UInt8]) {
        precondition(children.count == 4 && colours.count == 4)
        var out = [Float](repeating: .nan, count: size * size)
        var rgba = [UInt8](repeating: 0, count: size * size * 4)
        let half = size / 2
        for (q, child) in children.enumerated() {
            guard let child else { continue }
            precondition(child.count == size * size)
            let colour = colours[q]
            let ox = (q & 1) * half, oy = (q >> 1) * half
            for j in 0..<half {
                for i in 0..<half {
                    let p = (2 * j) * size + 2 * i
                    let taps = (p, p + 1, p + size, p + size + 1)
                    var best = -1, bestCount = 0
                    for a in [taps.0, taps.1, taps.2, taps.3] where !child[a].isNaN {
                        let v = child[a]
                        let count =
                            (child[taps.0] == v ? 1 : 0) + (child[taps.1] == v ? 1 : 0)
                            + (child[taps.2] == v ? 1 : 0) + (child[taps.3] == v ? 1 : 0)
                        if count > bestCount { best = a; bestCount = count }
                    }
                    guard best >= 0 else { continue }
                    let o = (oy + j) * size + ox + i
                    out[o] = child[best]
                    if let colour, colour.count == size * size * 4 {
                        for ch in 0..<4 { rgba[o * 4 + ch] = colour[best * 4 + ch] }
                    }
                }
            }
        }
        return (out, rgba)
    }

    /// True when no pixel has alpha above 0.
    static func isTransparent(_ rgba: [UInt8]) -> Bool {
        rgba.withUnsafeBufferPointer { p in
            var i = 3
            while i < p.count {
                if p[i] != 0 { return false }
                i += 4
            }
            return true
        }
    }
}
