import TilePackCore

/// What each decoder fuzz target (Fuzz/, `fuzz-png`, `fuzz-pvrtc`, `fuzz-astc`) does with one
/// input, here so that `FuzzCrashReplayTests` replays saved crashes through the same code.
///
/// Invariant: every input ends in a return or a thrown ``TilePackError``; a trap is a bug.
/// Sizes are taken from the first bytes and bounded (≤ 256 pixels a side) so that a run
/// explores block decoding rather than allocating large images.
public enum CodecFuzzEntry {
    /// The largest image side the targets ask a decoder for.
    public static let maxSide = 256

    /// The whole input as a PNG, decoded with a 1 Mi-pixel cap, after its chunk CRCs are
    /// rewritten to match (``withChunkCRCsFixed(_:)``): a fuzzer cannot forge a CRC-32, so
    /// without this nearly every mutation stops at the first CRC check. The checks themselves
    /// are PNGTests' business.
    /// - Cost: one CRC pass and one decode, O(input + pixels).
    public static func png(_ bytes: [UInt8]) throws {
        _ = try PNGDecoder(maxPixels: 1 << 20).decode(withChunkCRCsFixed(bytes), source: "fuzz.png")
    }

    /// `png` with the CRC of every whole chunk after the 8-byte signature recomputed; a chunk
    /// that runs past the end, and what follows it, is left as it is.
    /// - Cost: O(input).
    public static func withChunkCRCsFixed(_ png: [UInt8]) -> [UInt8] {
        var out = png
        var offset = 8
        while offset + 12 <= out.count {
            let length =
                Int(out[offset]) << 24 | Int(out[offset + 1]) << 16 | Int(out[offset + 2]) << 8 | Int(out[offset + 3])
            // The type and data, then the CRC; `length` < 2^32, so the sum cannot overflow.
            let bodyEnd = offset + 8 + length
            guard bodyEnd + 4 <= out.count else { break }
            let crc = out.withUnsafeBytes { Zlib.crc32(UnsafeRawBufferPointer(rebasing: $0[(offset + 4)..<bodyEnd])) }
            out[bodyEnd] = UInt8(truncatingIfNeeded: crc >> 24)
            out[bodyEnd + 1] = UInt8(truncatingIfNeeded: crc >> 16)
            out[bodyEnd + 2] = UInt8(truncatingIfNeeded: crc >> 8)
            out[bodyEnd + 3] = UInt8(truncatingIfNeeded: crc)
            offset = bodyEnd + 4
        }
        return out
    }

    /// Byte 0 picks PVRTC 2 or 4 bpp, bytes 1 and 2 the width and height (1…256, so the size
    /// checks are fuzzed too: PVRTC1 takes powers of two from 8 or 16); the rest are the words.
    /// - Cost: one decode, O(pixels).
    public static func pvrtc(_ bytes: [UInt8]) throws {
        guard bytes.count >= 3 else { return }
        let format: PVRTCFormat = bytes[0] & 1 == 0 ? .pvrtc4 : .pvrtc2
        _ = try PVRTCDecoder().decode(
            Array(bytes[3...]), format: format,
            width: Int(bytes[1]) + 1, height: Int(bytes[2]) + 1)
    }

    /// Byte 0 picks one of the 14 ASTC block footprints, bytes 1 and 2 the width and height
    /// (1…256); the rest are the 16-byte blocks.
    /// - Cost: one decode, O(pixels).
    public static func astc(_ bytes: [UInt8]) throws {
        guard bytes.count >= 3 else { return }
        let formats = ASTCFormat.allCases
        let format = formats[Int(bytes[0]) % formats.count]
        _ = try ASTCDecoder(format: format).decode(
            Array(bytes[3...]), width: Int(bytes[1]) + 1, height: Int(bytes[2]) + 1)
    }
}
