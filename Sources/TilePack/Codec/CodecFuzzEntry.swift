/// What each decoder fuzz target (Fuzz/, `fuzz-png`, `fuzz-pvrtc`, `fuzz-astc`) does with one
/// input, here so that `FuzzCrashReplayTests` replays saved crashes through the same code.
///
/// Invariant: every input ends in a return or a thrown ``TilePackError``; a trap is a bug.
/// Sizes are taken from the first bytes and bounded (≤ 256 pixels a side) so that a run
/// explores block decoding rather than allocating large images.
public enum CodecFuzzEntry {
    /// The largest image side the targets ask a decoder for.
    public static let maxSide = 256

    /// The whole input as a PNG, decoded with a 1 Mi-pixel cap.
    /// - Cost: one decode, O(input + pixels).
    public static func png(_ bytes: [UInt8]) throws {
        _ = try PNGDecoder(maxPixels: 1 << 20).decode(bytes, source: "fuzz.png")
    }

    /// Byte 0 picks PVRTC 2 or 4 bpp, bytes 1 and 2 the width and height (1…256, so the size
    /// checks are fuzzed too: PVRTC1 takes powers of two from 8 or 16); the rest are the words.
    /// - Cost: one decode, O(pixels).
    public static func pvrtc(_ bytes: [UInt8]) throws {
        guard bytes.count >= 3 else { return }
        let format: PVRTCFormat = bytes[0] & 1 == 0 ? .pvrtc4 : .pvrtc2
        _ = try PVRTCDecoder().decode(Array(bytes[3...]), format: format,
                                      width: Int(bytes[1]) + 1, height: Int(bytes[2]) + 1)
    }

    /// Byte 0 picks one of the 14 ASTC block footprints, bytes 1 and 2 the width and height
    /// (1…256); the rest are the 16-byte blocks.
    /// - Cost: one decode, O(pixels).
    public static func astc(_ bytes: [UInt8]) throws {
        guard bytes.count >= 3 else { return }
        let formats = ASTCFormat.allCases
        let format = formats[Int(bytes[0]) % formats.count]
        _ = try ASTCDecoder(format: format).decode(Array(bytes[3...]), width: Int(bytes[1]) + 1, height: Int(bytes[2]) + 1)
    }
}
