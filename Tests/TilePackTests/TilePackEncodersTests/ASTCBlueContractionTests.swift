import Testing
@testable import TilePackCodec
import TilePackCore
@testable import TilePackEncoders

/// Blue-contracted direct endpoints: what the encoder believes a block decodes to is what the
/// decoder reads, and contraction is taken only where it rounds closer.
@Suite struct ASTCBlueContractionTests {
    /// The ASTC rule for direct RGB endpoints (mode 8), written out here from the specification
    /// rather than taken from the encoder: when the second slot's R + G + B is the smaller, the
    /// ends are swapped and each decodes as ((r + b) >> 1, (g + b) >> 1, b).
    static func decode(first: SIMD4<Int32>, second: SIMD4<Int32>) -> (SIMD4<Int32>, SIMD4<Int32>) {
        func sum(_ v: SIMD4<Int32>) -> Int32 { v[0] + v[1] + v[2] }
        guard sum(second) < sum(first) else { return (first, second) }
        func contract(_ v: SIMD4<Int32>) -> SIMD4<Int32> { SIMD4((v[0] + v[2]) >> 1, (v[1] + v[2]) >> 1, v[2], 255) }
        return (contract(second), contract(first))
    }

    @Test func quantisedEndsAreWhatTheDecoderReadsAndNoFartherThanPlainRounding() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        var random = SplitMix64(seed: 41)
        var contracted = 0, trials = 0
        for level in ASTCIntegerSequence.minimumColourLevel...20 {
            let values = encoder.colourValue + level * 256, table = encoder.colourQuant + level * 256
            for kind in 0..<200 {
                // Greyish ends (where contraction pays) and arbitrary ones.
                func end() -> SIMD4<Float> {
                    let grey = Float(random.next() % 256)
                    func channel() -> Float {
                        kind % 2 == 0
                            ? min(max(grey + Float(random.next() % 21) - 10, 0), 255) : Float(random.next() % 256)
                    }
                    return SIMD4(channel(), channel(), channel(), 255)
                }
                encoder.ends[0] = end()
                encoder.ends[1] = end()
                encoder.quantiseEnds(partitions: 0..<1, level: level, opaque: true)
                var first = SIMD4<Int32>(0, 0, 0, 255), second = first
                for ch in 0..<3 {
                    first[ch] = Int32(values[Int(encoder.colourQ[2 * ch])])
                    second[ch] = Int32(values[Int(encoder.colourQ[2 * ch + 1])])
                }
                let (d0, d1) = Self.decode(first: first, second: second)
                #expect(
                    SIMD4<Float>(d0) == encoder.decodedEnds[0] && SIMD4<Float>(d1) == encoder.decodedEnds[1],
                    "level \(level) kind \(kind): decoder \(d0) \(d1), encoder \(encoder.decodedEnds[0]) \(encoder.decodedEnds[1])"
                )
                trials += 1
                let isContracted = second[0] + second[1] + second[2] < first[0] + first[1] + first[2]
                guard isContracted else { continue }
                contracted += 1
                #expect(level < 20, "level \(level): contracted at 256 values, where it cannot round finer")
                // Plain rounding, channel by channel, in either pairing.
                let e0 = encoder.ends[0], e1 = encoder.ends[1]
                func plain(_ e: SIMD4<Float>) -> SIMD4<Float> {
                    var q = SIMD4<Float>(0, 0, 0, 255)
                    for ch in 0..<3 { q[ch] = Float(values[Int(table[Int(e[ch] + 0.5)])]) }
                    return q
                }
                func distance(_ a: SIMD4<Float>, _ b: SIMD4<Float>) -> Float { ((a - b) * (a - b)).sum() }
                let p0 = plain(e0), p1 = plain(e1)
                let plainDistance = min(distance(p0, e0) + distance(p1, e1), distance(p0, e1) + distance(p1, e0))
                let chosen = min(
                    distance(SIMD4(d0), e0) + distance(SIMD4(d1), e1), distance(SIMD4(d0), e1) + distance(SIMD4(d1), e0)
                )
                #expect(
                    chosen < plainDistance, "level \(level) kind \(kind): contracted \(chosen), plain \(plainDistance)")
            }
        }
        // Greyish ends at coarse colour levels: contraction must be taken often.
        #expect(contracted * 10 > trials, "\(contracted) of \(trials) contracted")
    }

    /// The rate-distortion trials read an earlier block's stored colour values back
    /// (`setEnds`): contracted ones must come back as the decoder reads them.
    @Test func storedColourValuesReadBackAsTheDecoderReadsThem() throws {
        let encoder = try ASTCEncoder(format: .astc6x6)
        var random = SplitMix64(seed: 47)
        var contracted = 0
        for c in encoder.candidates where !c.scaled {
            let values = encoder.colourValue + c.rgbLevel * 256
            let count = ASTCIntegerSequence.ranges[c.rgbLevel]
            let colour = UnsafeMutablePointer<UInt8>.allocate(capacity: 6)
            defer { colour.deallocate() }
            for _ in 0..<50 {
                for i in 0..<6 { colour[i] = UInt8(truncatingIfNeeded: random.next() % UInt64(count)) }
                encoder.setEnds(c, colour: colour)
                var first = SIMD4<Int32>(0, 0, 0, 255), second = first
                for ch in 0..<3 {
                    first[ch] = Int32(values[Int(colour[2 * ch])])
                    second[ch] = Int32(values[Int(colour[2 * ch + 1])])
                }
                if second[0] + second[1] + second[2] < first[0] + first[1] + first[2] { contracted += 1 }
                let (d0, d1) = Self.decode(first: first, second: second)
                #expect(
                    SIMD4<Float>(d0) == encoder.decodedEnds[0] && SIMD4<Float>(d1) == encoder.decodedEnds[1],
                    "layout \(c.mode): \(first) \(second) read as \(encoder.decodedEnds[0]) \(encoder.decodedEnds[1])")
            }
        }
        #expect(contracted > 0)
    }

    /// Single-block images of greyish texels, encoded at `quality`: the exact error the search
    /// kept for the block (`searchedError`) is the decoder's, channel by channel.
    @Test(arguments: [ASTCFormat.astc4x4, .astc6x6, .astc8x8])
    func searchedErrorIsTheDecodedBlocksError(format: ASTCFormat) throws {
        let encoder = try ASTCEncoder(format: format)
        let decoder = ASTCDecoder(format: format)
        let w = format.blockWidth, h = format.blockHeight
        var random = SplitMix64(seed: 43)
        var compared = 0
        for kind in 0..<150 {
            let grey = Int(random.next() % 200) + 20, slope = Int(random.next() % 7)
            var rgba = [UInt8](repeating: 255, count: w * h * 4)
            for t in 0..<w * h {
                for ch in 0..<3 {
                    let noise = Int(random.next() % 9) - 4, tilt = ch == 2 ? 0 : (kind % 3 - 1) * 6
                    rgba[4 * t + ch] = UInt8(min(max(grey + slope * (t % w) + noise + tilt, 0), 255))
                }
            }
            let blocks = try encoder.encode(rgba: rgba, width: w, height: h, level: .quality)
            let decoded = try decoder.decode(blocks, width: w, height: h)
            let error = zip(rgba, decoded).reduce(0) { $0 + (Int($1.0) - Int($1.1)) * (Int($1.0) - Int($1.1)) }
            #expect(
                error == encoder.searchedError,
                "\(format) block \(kind): decoded \(error), searched \(encoder.searchedError)")
            compared += 1
        }
        #expect(compared == 150)
    }
}
