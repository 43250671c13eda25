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

    /// A random source window for `trial`: its size, place, samples and validity. Every third
    /// trial has no nodata (the fast paths throughout), the others holes; every fourth an
    /// infinite sample (0 · ∞ must not appear), every sixth a −0.
    func window(
        _ rng: inout SplitMix64, trial: Int, bands: Int
    ) -> (width: Int, height: Int, x0: Int, y0: Int, samples: [Float], valid: [UInt8]) {
        let width = 2 + rng.below(30), height = 2 + rng.below(30)
        let x0 = rng.below(100), y0 = rng.below(100)
        let holes = trial % 3 == 0 ? 0 : 1 + rng.below(4)
        var samples = (0..<(width * height * bands)).map { _ in Float(rng.unit() * 300 - 20) }
        if trial % 4 == 1 { samples[rng.below(samples.count)] = .infinity }
        if trial % 6 == 3 { samples[rng.below(samples.count)] = -0.0 }
        let valid = (0..<(width * height)).map { _ in holes > 0 && rng.below(holes + 3) == 0 ? UInt8(0) : 1 }
        return (width, height, x0, y0, samples, valid)
    }

    @Test(arguments: [1, 2, 3, 4, 5])
    func gridKernelMatchesGeneralKernelBitForBit(bands: Int) {
        var rng = SplitMix64(seed: UInt64(bands) &* 7919)
        for trial in 0..<12 {
            let (width, height, x0, y0, samples, valid) = window(&rng, trial: trial, bands: bands)
            let (cols, rows) = centres(&rng, count: 4000, x0: x0, y0: y0, width: width, height: height)
            var fast = [Float](repeating: -1, count: cols.count * bands)
            var fastValid = [UInt8](repeating: 0, count: cols.count)
            var reference = fast
            var referenceValid = fastValid
            samples.withUnsafeBufferPointer { s in
                valid.withUnsafeBufferPointer { v in
                    let window = BilinearWindow(
                        x0: x0, y0: y0, width: width, height: height, bands: bands, samples: s, valid: v,
                        plain: BilinearWindow.isPlain(samples: s, valid: v, count: width * height, bands: bands))
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

    /// Source columns for `count` grid columns (or rows) over and around a window from `start`
    /// spanning `extent` pixels: increasing steps of a random size, as a mapping gives, with
    /// exact centres and a stretch outside the window at each end.
    func axis(_ rng: inout SplitMix64, count: Int, start: Int, extent: Int) -> [Double] {
        let first = Double(start) - 1.5 + rng.unit(), step = (Double(extent) + 3) / Double(count)
        return (0..<count).map { i in
            i % 9 == 4 ? Double(start + rng.below(extent)) + 0.5 : first + step * (Double(i) + rng.unit() * 0.3)
        }
    }

    /// The separable kernel (a column's and a row's share worked out once) against the
    /// general per-pixel kernel on the expanded grid: the same bits, in plain windows (the
    /// no-test interior) and in windows with holes and infinities.
    @Test(arguments: [1, 2, 3, 4, 5])
    func separableKernelMatchesGeneralKernelBitForBit(bands: Int) {
        var rng = SplitMix64(seed: UInt64(bands) &* 104_729)
        var plainTrials = 0, interior = 0
        for trial in 0..<12 {
            let (width, height, x0, y0, samples, valid) = window(&rng, trial: trial, bands: bands)
            let columns = axis(&rng, count: 20 + rng.below(40), start: x0, extent: width)
            let rows = axis(&rng, count: 20 + rng.below(40), start: y0, extent: height)
            let n = columns.count * rows.count
            var fast = [Float](repeating: -1, count: n * bands), fastValid = [UInt8](repeating: 0, count: n)
            var reference = fast, referenceValid = fastValid
            var plain = false
            samples.withUnsafeBufferPointer { s in
                valid.withUnsafeBufferPointer { v in
                    plain = BilinearWindow.isPlain(samples: s, valid: v, count: width * height, bands: bands)
                    let window = BilinearWindow(
                        x0: x0, y0: y0, width: width, height: height, bands: bands, samples: s, valid: v, plain: plain)
                    columns.withUnsafeBufferPointer { c in
                        rows.withUnsafeBufferPointer { r in
                            fast.withUnsafeMutableBufferPointer { out in
                                fastValid.withUnsafeMutableBufferPointer { ok in
                                    _ = Resampler.bilinearSeparable(window, columns: c, rows: r, into: out, valid: ok)
                                }
                            }
                        }
                    }
                    reference.withUnsafeMutableBufferPointer { out in
                        for j in 0..<rows.count {
                            for i in 0..<columns.count
                            where Resampler.bilinearSample(
                                columns[i], rows[j], window, into: out, at: j * columns.count + i)
                            {
                                referenceValid[j * columns.count + i] = 1
                            }
                        }
                    }
                }
            }
            // Counted, not compared whole: a failure names the first pixel, not thousands of floats.
            let differ = fast.indices.filter { fast[$0].bitPattern != reference[$0].bitPattern }
            #expect(fastValid == referenceValid, "bands \(bands) trial \(trial)")
            #expect(
                differ.isEmpty,
                "bands \(bands) trial \(trial): \(differ.count) samples differ, first at \(differ.first ?? -1)")
            #expect(fastValid.contains(1) && fastValid.contains(0))
            if plain { plainTrials += 1 }
            interior +=
                columns.indices.filter { columns[$0] - 0.5 >= Double(x0) && columns[$0] - 0.5 < Double(x0 + width - 1) }
                .count
        }
        // Not vacuous: plain windows (the no-test path) and interior columns occurred.
        #expect(plainTrials >= 2 && interior > 100)
    }
}
