import Testing
@testable import TilePackCore
@testable import TilePackCodec
@testable import TilePackEncoders
import TilePackTestSupport

/// The GPU payload path on its own (issue 11, must-show 5): every block codec's stored tiles,
/// raw and zlib-wrapped, mutated, truncated, extended and replaced by random bytes, through
/// both decoder entries a reader uses, ``TilePayloadCodec`` (unwrap, then decode into caller
/// buffers) and ``TileCodecChoice/decoder()``. Each must give whole pixels or a one-line
/// ``CodecError``, and where both decode they must agree; a payload of exactly the raw size always
/// decodes (every PVRTC word is valid, a reserved ASTC encoding is the error colour).
extension FuzzTests {
    static let blockCodecs: [TileCodecChoice] = [.pvrtc4, .pvrtc2, .astc4x4, .astc6x6, .astc8x8]

    @Test(arguments: blockCodecs) func payloadDecodersSurviveMutations(choice: TileCodecChoice) throws {
        // 32 for every codec; 30 as well for ASTC: not a multiple of 4, 6 or 8 (partial blocks).
        let sides = choice.astcFormat == nil ? [32] : [32, 30]
        var rng = SplitMix64(seed: Self.seed ^ UInt64(choice.rawValue.utf8.reduce(0) { $0 &* 31 &+ Int($1) }))
        var succeeded = 0, declined = 0
        for side in sides {
            var pixels = [UInt8](repeating: 255, count: side * side * 4)
            for i in pixels.indices where i % 4 != 3 {
                pixels[i] = UInt8(truncatingIfNeeded: (i / 4 % side) * 7 + i / (4 * side) * 3 + i % 4 * 50)
            }
            let stored = try choice.codec(level: .fast).encode(rgba: pixels, width: side, height: side)
            let payloadCodec = try TilePayloadCodec(codec: choice, tileSize: side)
            let raw = try #require(payloadCodec.fixedPayloadByteCount)
            let words = try choice.decoder().decode(stored, width: side, height: side)
            #expect(words.count == side * side * 4)
            let rawPayload: [UInt8]
            if stored.count == raw {
                rawPayload = stored
            } else {
                var inflated = [UInt8](repeating: 0, count: raw)
                try stored.withUnsafeBytes { s in
                    try inflated.withUnsafeMutableBytes { try payloadCodec.unwrap(s, into: $0) }
                }
                rawPayload = inflated
            }
            let wrapped = try Zlib.deflate(rawPayload)
            var random = [UInt8](repeating: 0, count: raw)
            for _ in 0..<200 {
                let input: [UInt8]
                switch rng.below(6) {
                case 0: input = Mutator.mutate(rawPayload, rng: &rng)
                case 1: input = Mutator.mutate(wrapped, rng: &rng)
                case 2: input = Array(rawPayload.prefix(rng.below(raw)))  // truncated
                case 3:  // oversize
                    let extra = [UInt8](repeating: UInt8(truncatingIfNeeded: rng.next()), count: 1 + rng.below(64))
                    input = rawPayload + extra
                case 4:
                    for i in random.indices { random[i] = UInt8(truncatingIfNeeded: rng.next()) }
                    input = random  // random blocks: reserved encodings, void extents, any mode
                default: input = try Zlib.deflate(Array(rawPayload.prefix(rng.below(raw))))  // inflates short
                }
                let viaChoice: [UInt8]?
                do {
                    viaChoice = try choice.decoder().decode(input, width: side, height: side)
                } catch let error as CodecError {
                    #expect(!error.description.contains("\n") && !error.description.isEmpty)
                    viaChoice = nil
                }
                let viaPayload: [UInt8]?
                do {
                    var payload = [UInt8](repeating: 0, count: payloadCodec.payloadByteCount(storedCount: input.count))
                    var out = [UInt8](repeating: 0, count: payloadCodec.pixelByteCount)
                    try input.withUnsafeBytes { s in
                        try payload.withUnsafeMutableBytes { try payloadCodec.unwrap(s, into: $0) }
                    }
                    try payload.withUnsafeBytes { p in
                        try out.withUnsafeMutableBytes { try payloadCodec.decode(p, into: $0) }
                    }
                    viaPayload = out
                } catch let error as CodecError {
                    #expect(!error.description.contains("\n") && !error.description.isEmpty)
                    viaPayload = nil
                }
                // Both entries accept exactly the same payloads (a zlib stream must end with
                // the raw size and no bytes after it) and decode them to the same pixels, so
                // the tile store never serves a tile that `query` would refuse.
                #expect(
                    (viaChoice == nil) == (viaPayload == nil),
                    "\(choice.rawValue) \(side): one decoder entry accepts \(input.count) bytes, the other refuses them"
                )
                if let viaChoice, let viaPayload {
                    #expect(
                        viaChoice == viaPayload,
                        "\(choice.rawValue) \(side): the two decoder entries disagree on \(input.count) bytes")
                }
                if input.count == raw {
                    #expect(viaChoice != nil, "\(choice.rawValue): a raw-size payload must decode")
                }
                if viaChoice == nil { declined += 1 } else { succeeded += 1 }
            }
        }
        print("fuzz payload \(choice.rawValue): \(succeeded) decoded, \(declined) typed errors, 0 crashes")
        #expect(succeeded > 0 && declined > 0)
    }

    /// Sizes the block formats cannot hold are typed errors at the decoder entry, not traps.
    @Test func payloadCodecRejectsSizesItCannotHold() throws {
        for side in [0, -4, 250, 100_000] {
            #expect(throws: CodecError.self) { try TilePayloadCodec(codec: .pvrtc4, tileSize: side) }
            #expect(throws: CodecError.self) {
                try TileCodecChoice.pvrtc2.decoder().decode([0, 0, 0, 0], width: side, height: side)
            }
        }
        for side in [0, -6, 100_000] {
            #expect(throws: CodecError.self) { try TilePayloadCodec(codec: .astc6x6, tileSize: side) }
            #expect(throws: CodecError.self) {
                try TileCodecChoice.astc8x8.decoder().decode([0, 0, 0, 0], width: side, height: side)
            }
        }
        // 250 is not a multiple of 6: partial blocks, 42 × 42 of them.
        let codec = try TilePayloadCodec(codec: .astc6x6, tileSize: 250)
        #expect(codec.fixedPayloadByteCount == 42 * 42 * 16)
    }
}
