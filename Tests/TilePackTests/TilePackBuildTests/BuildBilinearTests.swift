import Testing
@testable import TilePackBuild
import TilePackCore

/// The bilinear grid kernel's interior fast path against the general per-pixel kernel it
/// replaces: the same bits everywhere, on random windows with nodata, edges and wild centres.
@Suite struct BuildBilinearTests {
    /// Pixel centres over and around a window at (x0, y0): random positions (a margin of two
    /// pixels outside), exact centres and edges (zero weights), and NaN.
    func centres(
        _ rng: inout SplitMix64, count: Int, x0: Int, y0: Int, width: Int, height: Int
    ) -> ([Double], [Double]) {
        var cols: [Double] = [], rows: [Double] = []
        for i in 0..<count {
            var c = Double(x0) - 2 + rng.unit() * Double(width + 4)
            var r = Double(y0) - 2 + rng.unit() * Double(height + 4)
            switch i % 7 {
            case 0: c = Double(x0 + rng.below(width)) + 0.5  // on a centre column: tx = 0
            case 1: r = Double(y0 + rng.below(height)) + 0.5
            case 2: c = Double(x0 + width) - 0.5  // the last column's centre
            case 3: r = Double(y0) + 0.5 - 1e-12  // just above the first row's centre
            default: break
            }
            if i % 53 == 0 { c = .nan; r = .nan }
            if i % 61 == 0 { c = 1e300 }
            cols.append(c)
            rows.append(r)
        }
        return (cols, rows)
    }

    @Test(arguments: [1, 2, 3, 4, 5])
    func gridKernelMatchesGeneralKernelBitForBit(bands: Int) {
        var rng = SplitMix64(seed: UInt64(bands) &* 7919)
        for trial in 0..<12 {
            let width = 2 + rng.below(30), height = 2 + rng.below(30)
            let x0 = rng.below(100), y0 = rng.below(100)
            // Every third trial has no nodata (the fast path throughout), the others holes.
            let holes = trial % 3 == 0 ? 0 : 1 + rng.below(4)
            var samples = (0..<(width * height * bands)).map { _ in Float(rng.unit() * 300 - 20) }
            if trial % 4 == 1 { samples[rng.below(samples.count)] = .infinity }  // 0 · ∞ must not appear
            let valid = (0..<(width * height)).map { _ in holes > 0 && rng.below(holes + 3) == 0 ? UInt8(0) : 1 }
            let (cols, rows) = centres(&rng, count: 4000, x0: x0, y0: y0, width: width, height: height)
            var fast = [Float](repeating: -1, count: cols.count * bands)
            var fastValid = [UInt8](repeating: 0, count: cols.count)
            var reference = fast
            var referenceValid = fastValid
            samples.withUnsafeBufferPointer { s in
                valid.withUnsafeBufferPointer { v in
                    let window = BilinearWindow(
                        x0: x0, y0: y0, width: width, height: height, bands: bands, samples: s, valid: v)
                    cols.withUnsafeBufferPointer { c in
                        rows.withUnsafeBufferPointer { r in
                            fast.withUnsafeMutableBufferPointer { out in
                                fastValid.withUnsafeMutableBufferPointer { ok in
                                    _ = Resampler.bilinearGrid(window, cols: c, rows: r, into: out, valid: ok)
                                }
                            }
                        }
                    }
                    reference.withUnsafeMutableBufferPointer { out in
                        for k in 0..<cols.count
                        where Resampler.bilinearSample(cols[k], rows[k], window, into: out, at: k) {
                            referenceValid[k] = 1
                        }
                    }
                }
            }
            #expect(fastValid == referenceValid, "bands \(bands) trial \(trial)")
            #expect(fast.map(\.bitPattern) == reference.map(\.bitPattern), "bands \(bands) trial \(trial)")
            // Not vacuous: both valid and invalid pixels occur, and the interior was taken.
            #expect(fastValid.contains(1) && fastValid.contains(0))
        }
    }
}
