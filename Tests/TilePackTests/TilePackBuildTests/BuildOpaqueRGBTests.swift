import Testing
@testable import TilePackBuild
import TilePackCore

/// The plain-RGB colouring loop against ``Colorizer/byte(_:)``, sample by sample.
@Suite struct BuildOpaqueRGBTests {
    @Test func opaqueRGBMatchesBytePerSample() {
        var rng = SplitMix64(seed: 42)
        // Halves, their neighbours, the clamp edges, NaN and infinities, then random values.
        var special: [Float] = [.nan, .infinity, -.infinity, -0.0, 0, 255, 255.5, 256, -0.5, 1e-40, 0.49999997]
        for i in 0..<256 {
            let h = Float(i) + 0.5
            special += [h, h.nextDown, h.nextUp]
        }
        let count = 5000
        var samples = special
        while samples.count < count * 3 { samples.append(Float(rng.unit() * 300 - 20)) }
        let valid = (0..<count).map { $0 % 11 == 5 ? UInt8(0) : 1 }
        var out = [UInt8](repeating: 7, count: count * 4)
        samples.withUnsafeBufferPointer { s in
            valid.withUnsafeBufferPointer { v in
                out.withUnsafeMutableBufferPointer { o in Colorizer.opaqueRGB(s, valid: v, count: count, into: o) }
            }
        }
        var expected: [UInt8] = []
        for k in 0..<count {
            let s = samples[(3 * k)..<(3 * k + 3)].map(Colorizer.byte)
            expected += valid[k] == 0 ? [0, 0, 0, 0] : s + [255]
        }
        #expect(out == expected)
    }
}
