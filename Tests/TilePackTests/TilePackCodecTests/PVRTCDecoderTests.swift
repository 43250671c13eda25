import Crypto
import Testing
@testable import TilePackCore
@testable import TilePackCodec
import TilePackTestSupport

/// Raw words of /work/shared/testdata/codec, embedded so the test always runs.
enum PVRTCSamples {
    static let punch8: [UInt8] = [
        0xaa, 0xaa, 0xaa, 0xaa, 0x01, 0xfc, 0xe0, 0x83, 0xaa, 0xaa, 0xaa, 0xaa, 0x01, 0xfc, 0xe0, 0x83, 0xaa, 0xaa,
        0xaa, 0xaa, 0x01, 0xfc, 0xe0, 0x83, 0xaa, 0xaa, 0xaa, 0xaa, 0x01, 0xfc, 0xe0, 0x83,
    ]
    static let random16: [UInt8] = [
        0x52, 0xf2, 0x26, 0x65, 0xa6, 0x0c, 0x12, 0xd2, 0x89, 0x18, 0x5d, 0x95, 0x0e, 0xe8, 0x81, 0x36, 0x09, 0x16,
        0x6f, 0x6b, 0x11, 0x3d, 0x17, 0x8d, 0x6c, 0x0f, 0xd3, 0x90, 0x1f, 0xf2, 0x39, 0xa1, 0xa0, 0x95, 0xf2, 0x0f,
        0x93, 0x95, 0x65, 0x0c, 0xf9, 0x38, 0x0b, 0x8e, 0xdb, 0x22, 0x4a, 0x6b, 0x24, 0x8a, 0x1e, 0x92, 0x4e, 0x8f,
        0xd0, 0xae, 0x2e, 0x1a, 0x94, 0x92, 0xa3, 0x30, 0x5f, 0x18, 0x8c, 0xb6, 0x10, 0x90, 0x0f, 0x9e, 0x34, 0x7f,
        0xae, 0x88, 0x6d, 0xc6, 0x50, 0x77, 0x95, 0xec, 0x74, 0x5c, 0x4c, 0x3f, 0xcb, 0x2e, 0xb2, 0xc7, 0x3e, 0x14,
        0x93, 0x4c, 0x86, 0x7e, 0xe0, 0x57, 0xba, 0x72, 0x49, 0x9b, 0xfa, 0x12, 0x1e, 0x83, 0x6b, 0x2a, 0xc1, 0x57,
        0x26, 0xee, 0x7d, 0x6b, 0x0a, 0xf6, 0xab, 0x13, 0xc3, 0x8e, 0x92, 0xca, 0xe0, 0xd1, 0x50, 0x57, 0xb1, 0x59,
        0x98, 0x7f,
    ]
    static let redGreenMod01: [UInt8] = [
        0x55, 0x55, 0x55, 0x55, 0x00, 0xfc, 0xe0, 0x83, 0x55, 0x55, 0x55, 0x55, 0x00, 0xfc, 0xe0, 0x83, 0x55, 0x55,
        0x55, 0x55, 0x00, 0xfc, 0xe0, 0x83, 0x55, 0x55, 0x55, 0x55, 0x00, 0xfc, 0xe0, 0x83,
    ]
    static let redGreenMod0: [UInt8] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0xfc, 0xe0, 0x83, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfc, 0xe0, 0x83, 0x00, 0x00,
        0x00, 0x00, 0x00, 0xfc, 0xe0, 0x83, 0x00, 0x00, 0x00, 0x00, 0x00, 0xfc, 0xe0, 0x83,
    ]
    static let zero8 = [UInt8](repeating: 0, count: 32)
    static let random32x16_2bpp: [UInt8] = [
        0x3a, 0x5e, 0xf6, 0x60, 0x20, 0x31, 0xb4, 0x0b, 0x15, 0x23, 0x3f, 0xcf, 0xff, 0x81, 0x35, 0x66, 0xa4, 0x07,
        0x75, 0x7c, 0x74, 0x63, 0x7e, 0x92, 0x31, 0xe5, 0xd4, 0x67, 0x16, 0x7c, 0x3b, 0xc2, 0x05, 0xb3, 0x44, 0x85,
        0x68, 0x79, 0xe6, 0xe9, 0x61, 0xb9, 0x1d, 0xa9, 0x42, 0x18, 0xfd, 0xd0, 0x10, 0x62, 0x9e, 0xd4, 0x60, 0x1b,
        0xa9, 0x0e, 0x56, 0x3c, 0xb0, 0x16, 0x7f, 0xe7, 0xa6, 0x84, 0xe6, 0x35, 0x94, 0xce, 0x24, 0x9b, 0x10, 0x8a,
        0xf2, 0x09, 0x7d, 0xb3, 0x31, 0x25, 0xf2, 0xdc, 0x94, 0x74, 0xba, 0x95, 0xe1, 0x71, 0x49, 0x8e, 0x5b, 0xda,
        0xe0, 0x6d, 0x22, 0x28, 0xc3, 0x99, 0x18, 0x88, 0xb0, 0x50, 0xb3, 0x5b, 0xf3, 0xa4, 0xd7, 0x7e, 0x80, 0x9f,
        0x32, 0x4f, 0x26, 0x5b, 0x87, 0x48, 0x82, 0xa8, 0x12, 0xce, 0xe7, 0xdb, 0x81, 0xe9, 0xb3, 0x8b, 0x38, 0x58,
        0x3e, 0xe8,
    ]

    /// An 8×8 4bpp texture whose four words all carry `modulation` and `colour`.
    static func uniform(modulation: UInt32, colour: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        for _ in 0..<4 {
            for value in [modulation, colour] {
                for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt32(i)))) }
            }
        }
        return bytes
    }
}

@Suite struct PVRTCDecoderTests {
    let decoder = PVRTCDecoder()

    func firstPixel(_ words: [UInt8]) throws -> [UInt8] {
        Array(try decoder.decode(words, format: .pvrtc4, width: 8, height: 8).prefix(4))
    }

    @Test func vectorsFromTheSpecNotes() throws {
        #expect(try firstPixel(PVRTCSamples.zero8) == [0, 0, 0, 0])
        #expect(try firstPixel(PVRTCSamples.redGreenMod0) == [255, 0, 0, 255])
        #expect(try firstPixel(PVRTCSamples.redGreenMod01) == [159, 95, 0, 255])
        #expect(try firstPixel(PVRTCSamples.punch8) == [127, 127, 0, 0])
        let colourA: UInt32 = 0x8000 | 31 << 10 | 16 << 5 | 4 << 1
        #expect(try firstPixel(PVRTCSamples.uniform(modulation: 0, colour: colourA)) == [255, 132, 66, 255])
    }

    @Test(arguments: [
        (
            "punch_8x8.pvr4", PVRTCFormat.pvrtc4, 8, 8,
            "3a63cee4b6d395e61c535e90377e740e14b297ea7b3501d8567036502e558980"
        ),
        ("random_16x16.pvr4", .pvrtc4, 16, 16, "961d3d96ee66d87bfae77f3430b4da21d7c11a5367dea483d9a81dee1b7523b7"),
        ("random_32x16.pvr2", .pvrtc2, 32, 16, "970060b9b6110b1259c19b15c45cbf3328d31bfee109f9afdf960a345ce4a900"),
        ("redgreen_mod01_8x8.pvr4", .pvrtc4, 8, 8, "b740e014b2ab7973d13d2796aef96485a0aefda7b4e0a5180714f9c272637435"),
        ("redgreen_mod0_8x8.pvr4", .pvrtc4, 8, 8, "0d1b5807a072040df4aab5871837e4296ddafc56a83226a1d098e6e86961c001"),
        ("zero_8x8.pvr4", .pvrtc4, 8, 8, "5341e6b2646979a70e57653007a1f310169421ec9bdd9f1a5648f75ade005af1"),
    ])
    func decodedPixelsMatchReferenceHashes(
        name: String, format: PVRTCFormat, width: Int, height: Int, sha: String
    ) throws {
        let words: [UInt8]
        switch name {
        case "punch_8x8.pvr4": words = PVRTCSamples.punch8
        case "random_16x16.pvr4": words = PVRTCSamples.random16
        case "random_32x16.pvr2": words = PVRTCSamples.random32x16_2bpp
        case "redgreen_mod01_8x8.pvr4": words = PVRTCSamples.redGreenMod01
        case "redgreen_mod0_8x8.pvr4": words = PVRTCSamples.redGreenMod0
        default: words = PVRTCSamples.zero8
        }
        let pixels = try decoder.decode(words, format: format, width: width, height: height)
        #expect(sha256Hex(pixels) == sha, "\(name)")
    }

    @Test func refusesWrongByteCountsAndSizes() {
        #expect(throws: CodecError.byteCount(what: "pvrtc4 words", expected: 32, actual: 31)) {
            try decoder.decode(Array(PVRTCSamples.zero8.dropLast()), format: .pvrtc4, width: 8, height: 8)
        }
        #expect(throws: CodecError.notPowerOfTwo(format: "pvrtc4", width: 24, height: 8)) {
            try decoder.decode([UInt8](repeating: 0, count: 48), format: .pvrtc4, width: 24, height: 8)
        }
        #expect(throws: CodecError.self) {
            try decoder.decode(PVRTCSamples.zero8, format: .pvrtc2, width: 8, height: 8)
        }
        #expect(throws: CodecError.self) { try decoder.decode([], format: .pvrtc4, width: 1 << 20, height: 1 << 20) }
    }

    @Test func byteCountFormula() {
        #expect(PVRTCFormat.pvrtc4.byteCount(width: 256, height: 256) == 32_768)
        #expect(PVRTCFormat.pvrtc2.byteCount(width: 256, height: 256) == 16_384)
        #expect(PVRTCFormat.pvrtc4.byteCount(width: 64, height: 16) == 64 * 16 / 2)
    }
}

@Suite struct PVRTCMortonTests {
    @Test func handCheckedIndices() {
        // Square 4×4 words: Y takes bit 0, X bit 1.
        #expect(PVRTCMorton.offset(x: 1, y: 0, wordsWide: 4, wordsHigh: 4) == 2)
        #expect(PVRTCMorton.offset(x: 0, y: 1, wordsWide: 4, wordsHigh: 4) == 1)
        #expect(PVRTCMorton.offset(x: 3, y: 3, wordsWide: 4, wordsHigh: 4) == 15)
        #expect(PVRTCMorton.offset(x: 2, y: 1, wordsWide: 4, wordsHigh: 4) == 9)
        // 8×2 words: one interleaved bit pair, then X's high bits above.
        #expect(PVRTCMorton.offset(x: 1, y: 1, wordsWide: 8, wordsHigh: 2) == 3)
        #expect(PVRTCMorton.offset(x: 2, y: 0, wordsWide: 8, wordsHigh: 2) == 4)
        #expect(PVRTCMorton.offset(x: 7, y: 1, wordsWide: 8, wordsHigh: 2) == 15)
        // 2×8 words: Y's high bits above.
        #expect(PVRTCMorton.offset(x: 1, y: 2, wordsWide: 2, wordsHigh: 8) == 6)
    }

    @Test func isABijectionMatchingTheFormulaForEverySize() {
        for logW in 1...8 {
            for logH in 1...8 {
                let (w, h) = (1 << logW, 1 << logH)
                let morton = PVRTCMorton(wordsWide: w, wordsHigh: h)
                var seen = [Bool](repeating: false, count: w * h)
                var ok = true
                for y in 0..<h {
                    for x in 0..<w {
                        let o = morton.offset(x: x, y: y)
                        if o < 0 || o >= w * h || seen[o]
                            || o != PVRTCMorton.offset(x: x, y: y, wordsWide: w, wordsHigh: h)
                        {
                            ok = false
                        } else {
                            seen[o] = true
                        }
                    }
                }
                #expect(ok && !seen.contains(false), "\(w)x\(h) words")
            }
        }
    }
}
