import Testing
@testable import TilePackCodec
import TilePackCore
import TilePackTestSupport

/// KTX 2.0 tiles: the formats' numbers, the writer's layout, the reader's refusals.
/// checks/test_ktx2_check.py parses built archives' tiles with an independent Python parser.
@Suite struct KTX2Tests {
    static let side = 256
    static let formats: [KTX2Format] = [
        KTX2Format(astc: .astc4x4), KTX2Format(astc: .astc6x6), KTX2Format(astc: .astc8x8),
        KTX2Format(pvrtc: .pvrtc4), KTX2Format(pvrtc: .pvrtc2),
    ]

    /// A payload for `format` at 256²: noise (does not deflate) or a short repeating pattern (does).
    static func payload(_ format: KTX2Format, compressible: Bool, seed: UInt64 = 1) -> [UInt8] {
        let count = format.levelByteCount(width: side, height: side)!
        if compressible { return (0..<count).map { UInt8(truncatingIfNeeded: $0 % 32) } }
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next() >> 40) }
    }

    static func parse(_ file: [UInt8], _ format: KTX2Format, side: Int = side) throws -> KTX2Texture {
        try file.withUnsafeBytes { try KTX2Texture(parsing: $0, format: format, width: side, height: side) }
    }

    static func unpack(_ file: [UInt8], _ format: KTX2Format) throws -> [UInt8] {
        let texture = try parse(file, format)
        var out = [UInt8](repeating: 0, count: texture.levelByteCount)
        let inflater = try Zlib.Inflater()
        try file.withUnsafeBytes { bytes in
            try out.withUnsafeMutableBytes { try texture.unpackLevel(of: bytes, into: $0, inflater: inflater) }
        }
        return out
    }

    @Test func vkFormatNumbersAreVulkans() {
        // Vulkan registry (vk.xml): core ASTC UNORM blocks, VK_IMG_format_pvrtc.
        #expect(KTX2Format(astc: .astc4x4).vkFormat == 157)
        #expect(KTX2Format(astc: .astc6x6).vkFormat == 165)
        #expect(KTX2Format(astc: .astc8x8).vkFormat == 171)
        #expect(KTX2Format(astc: .astc12x12).vkFormat == 183)
        #expect(KTX2Format(pvrtc: .pvrtc2).vkFormat == 1_000_054_000)
        #expect(KTX2Format(pvrtc: .pvrtc4).vkFormat == 1_000_054_001)
        for format in Self.formats { #expect(KTX2Format(vkFormat: format.vkFormat) == format) }
        for astc in ASTCFormat.allCases {
            #expect(KTX2Format(vkFormat: KTX2Format(astc: astc).vkFormat)?.name == astc.rawValue)
        }
        #expect(KTX2Format(vkFormat: 158) == nil)  // ASTC 4x4 SRGB: not a format tilepack writes
        #expect(KTX2Format(pvrtc: .pvrtc4).levelAlignment == 8)
        #expect(KTX2Format(astc: .astc6x6).levelAlignment == 16)
        #expect(TileCodecChoice.png.ktx2Format == nil)
        #expect(TileCodecChoice.astc6x6.ktx2Format == KTX2Format(astc: .astc6x6))
    }

    @Test func headerRoundTrips() throws {
        let header = KTX2Header(
            vkFormat: 165, pixelWidth: 256, pixelHeight: 128, supercompressionScheme: 3, dfdByteOffset: 104,
            dfdByteLength: 44, kvdByteOffset: 148, kvdByteLength: 24, sgdByteOffset: 1 << 40, sgdByteLength: 7)
        var bytes: [UInt8] = []
        header.write(to: &bytes)
        #expect(bytes.count == KTX2Header.byteCount)
        #expect(Array(bytes[0..<12]) == KTX2Header.identifier)
        #expect(try bytes.withUnsafeBytes { try KTX2Header(parsing: $0) } == header)
    }

    @Test(arguments: formats, [KTX2Texture.Supercompression.none, .zlib])
    func writesAndReadsEachFormat(format: KTX2Format, supercompression: KTX2Texture.Supercompression) throws {
        let payload = Self.payload(format, compressible: supercompression == .zlib)
        let stored = supercompression == .zlib ? try Zlib.deflate(payload, level: 6) : payload
        let file = try KTX2Writer.texture(
            stored: stored, supercompression: supercompression, format: format, width: Self.side, height: Self.side)
        let texture = try Self.parse(file, format)
        #expect(texture.header.vkFormat == format.vkFormat)
        #expect(texture.header.typeSize == 1)
        #expect(texture.header.pixelWidth == 256 && texture.header.pixelHeight == 256)
        #expect(texture.header.pixelDepth == 0 && texture.header.layerCount == 0)
        #expect(texture.header.faceCount == 1 && texture.header.levelCount == 1)
        #expect(texture.header.supercompressionScheme == supercompression.rawValue)
        #expect(texture.header.dfdByteOffset == 104 && texture.header.dfdByteLength == 44)
        #expect(texture.header.kvdByteOffset == 148 && texture.header.kvdByteLength == 24)
        #expect(texture.header.sgdByteOffset == 0 && texture.header.sgdByteLength == 0)
        // Level data: aligned to lcm(block bytes, 4) without supercompression, right after the key/values with it.
        #expect(texture.levelRange.lowerBound == (supercompression == .none ? 176 : 172))
        #expect(texture.levelRange.lowerBound % (supercompression == .none ? format.levelAlignment : 1) == 0)
        #expect(texture.levelRange.upperBound == file.count)
        #expect(try Self.unpack(file, format) == payload)
        // The descriptor is the one the reader wants; KTXwriter is the fixed string, no version.
        #expect(Array(file[104..<148]) == KTX2DataFormatDescriptor.bytes(for: format))
        #expect(Array(file[152..<171]) == Array("KTXwriter\0tilepack\0".utf8))
    }

    @Test func writerChoosesZlibOnlyWhenSmaller() throws {
        for format in Self.formats {
            let flat = try KTX2Writer.texture(
                level: Self.payload(format, compressible: true), format: format, width: 256, height: 256)
            #expect(try Self.parse(flat, format).supercompression == .zlib)
            let noise = Self.payload(format, compressible: false)
            let plain = try KTX2Writer.texture(level: noise, format: format, width: 256, height: 256)
            #expect(try Self.parse(plain, format).supercompression == .none)
            #expect(plain.count == noise.count + 176)
            #expect(throws: CodecError.self) {
                try KTX2Writer.texture(level: Array(noise.dropLast()), format: format, width: 256, height: 256)
            }
        }
    }

    @Test func descriptorMatchesTheSpecificationsFields() {
        let dfd = KTX2DataFormatDescriptor.bytes(for: KTX2Format(astc: .astc6x6))
        #expect(dfd.count == 44)
        #expect(Array(dfd[0..<4]) == [44, 0, 0, 0])  // dfdTotalSize
        #expect(Array(dfd[8..<12]) == [2, 0, 40, 0])  // versionNumber 2, descriptorBlockSize 40
        #expect(Array(dfd[12..<16]) == [162, 1, 1, 0])  // KHR_DF_MODEL_ASTC, BT709, LINEAR, straight alpha
        #expect(Array(dfd[16..<20]) == [5, 5, 0, 0])  // 6×6 block
        #expect(dfd[20] == 16)  // bytesPlane0
        #expect(Array(dfd[28..<32]) == [0, 0, 127, 0])  // bitOffset 0, bitLength 127, channel ASTC_DATA
        #expect(Array(dfd[40..<44]) == [255, 255, 255, 255])
        let pvrtc = KTX2DataFormatDescriptor.bytes(for: KTX2Format(pvrtc: .pvrtc2))
        #expect(Array(pvrtc[12..<21]) == [164, 1, 1, 0, 7, 3, 0, 0, 8])  // PVRTC, 8×4 block, 8 bytes
        #expect(Array(pvrtc[28..<32]) == [0, 0, 63, 0])
    }

    /// One named damage to a valid file, and the code it must be refused with.
    struct Damage: CustomStringConvertible, Sendable {
        let name: String
        let code: CodecError.Code
        let apply: @Sendable (inout [UInt8]) -> Void
        var description: String { name }
    }

    static func put32(_ value: UInt32, at offset: Int) -> @Sendable (inout [UInt8]) -> Void {
        { bytes in for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) } }
    }

    static func put64(_ value: UInt64, at offset: Int) -> @Sendable (inout [UInt8]) -> Void {
        { bytes in for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) } }
    }

    static let damages: [Damage] = [
        Damage(name: "identifier", code: .malformedKTX2) { $0[5] = 0x31 },  // "KTX 10"
        Damage(name: "vkFormat of another ASTC footprint", code: .unexpectedKTX2, apply: put32(157, at: 12)),
        Damage(name: "vkFormat unknown", code: .unexpectedKTX2, apply: put32(37, at: 12)),
        Damage(name: "typeSize 4", code: .malformedKTX2, apply: put32(4, at: 16)),
        Damage(name: "pixelWidth 128", code: .unexpectedKTX2, apply: put32(128, at: 20)),
        Damage(name: "pixelHeight 2^32-1", code: .unexpectedKTX2, apply: put32(.max, at: 24)),
        Damage(name: "pixelDepth 1", code: .unexpectedKTX2, apply: put32(1, at: 28)),
        Damage(name: "layerCount 2", code: .unexpectedKTX2, apply: put32(2, at: 32)),
        Damage(name: "faceCount 6", code: .unexpectedKTX2, apply: put32(6, at: 36)),
        Damage(name: "levelCount 0", code: .unexpectedKTX2, apply: put32(0, at: 40)),
        Damage(name: "levelCount 9", code: .unexpectedKTX2, apply: put32(9, at: 40)),
        Damage(name: "supercompression BasisLZ", code: .unexpectedKTX2, apply: put32(1, at: 44)),
        Damage(name: "supercompression Zstandard", code: .unexpectedKTX2, apply: put32(2, at: 44)),
        Damage(name: "dfdByteOffset past the end", code: .malformedKTX2, apply: put32(1 << 30, at: 48)),
        Damage(name: "dfdByteOffset inside the level index", code: .malformedKTX2, apply: put32(80, at: 48)),
        Damage(name: "dfdByteOffset misaligned", code: .malformedKTX2, apply: put32(106, at: 48)),
        Damage(name: "dfdByteLength 0", code: .malformedKTX2, apply: put32(0, at: 52)),
        Damage(name: "dfdByteLength 2^32-1", code: .malformedKTX2, apply: put32(.max, at: 52)),
        Damage(name: "kvdByteOffset without length", code: .malformedKTX2) { bytes in
            put32(0, at: 60)(&bytes)
        },
        Damage(name: "kvdByteOffset inside the DFD", code: .malformedKTX2, apply: put32(144, at: 56)),
        Damage(name: "kvdByteLength past the end", code: .malformedKTX2, apply: put32(1 << 31, at: 60)),
        Damage(name: "sgdByteLength", code: .malformedKTX2, apply: put64(8, at: 72)),
        Damage(name: "sgdByteOffset", code: .malformedKTX2, apply: put64(176, at: 64)),
        Damage(name: "level byteOffset past the end", code: .malformedKTX2, apply: put64(1 << 40, at: 80)),
        Damage(name: "level byteOffset 2^64-1", code: .malformedKTX2, apply: put64(.max, at: 80)),
        Damage(name: "level byteOffset misaligned", code: .malformedKTX2, apply: put64(172, at: 80)),
        Damage(name: "level byteOffset over the key/values", code: .malformedKTX2, apply: put64(160, at: 80)),
        Damage(name: "level byteLength short", code: .malformedKTX2, apply: put64(100, at: 88)),
        Damage(name: "level byteLength 2^64-1", code: .malformedKTX2, apply: put64(.max, at: 88)),
        Damage(name: "level uncompressedByteLength", code: .unexpectedKTX2, apply: put64(16, at: 96)),
        Damage(name: "dfdTotalSize", code: .malformedKTX2, apply: put32(40, at: 104)),
        Damage(name: "DFD vendor", code: .unexpectedKTX2, apply: put32(1, at: 108)),
        Damage(name: "DFD version", code: .malformedKTX2, apply: put32(1 | 40 << 16, at: 112)),
        Damage(name: "DFD colour model", code: .unexpectedKTX2) { $0[116] = 164 },
        Damage(name: "DFD sRGB transfer", code: .unexpectedKTX2) { $0[118] = 2 },
        Damage(name: "DFD premultiplied alpha", code: .unexpectedKTX2) { $0[119] = 1 },
        Damage(name: "DFD texel block", code: .unexpectedKTX2) { $0[120] = 3 },
        Damage(name: "DFD bytesPlane0", code: .unexpectedKTX2) { $0[124] = 8 },
        Damage(name: "DFD HDR sample (float qualifier)", code: .unexpectedKTX2) { $0[135] = 0x80 },
        Damage(name: "DFD sampleUpper", code: .unexpectedKTX2) { $0[147] = 0 },
        Damage(name: "key/value length past the section", code: .malformedKTX2, apply: put32(200, at: 148)),
        Damage(name: "key/value length 1", code: .malformedKTX2, apply: put32(1, at: 148)),
        Damage(name: "key/value without NUL", code: .malformedKTX2) { bytes in
            for i in 152..<171 { bytes[i] = 0x41 }
        },
        Damage(name: "key/value empty key", code: .malformedKTX2) { $0[152] = 0 },
        Damage(name: "a byte after the level", code: .malformedKTX2) { $0.append(0) },
        Damage(name: "truncated level", code: .malformedKTX2) { $0.removeLast() },
        Damage(name: "truncated to the header", code: .malformedKTX2) { $0.removeLast($0.count - 80) },
        Damage(name: "truncated inside the header", code: .malformedKTX2) { $0.removeLast($0.count - 79) },
        Damage(name: "truncated inside the level index", code: .malformedKTX2) { $0.removeLast($0.count - 100) },
    ]

    @Test(arguments: damages)
    func refusesEachDamageWithATypedError(damage: Damage) throws {
        let format = KTX2Format(astc: .astc6x6)
        var file = try KTX2Writer.texture(
            stored: Self.payload(format, compressible: false), supercompression: .none, format: format, width: 256,
            height: 256)
        damage.apply(&file)
        do {
            _ = try Self.parse(file, format)
            Issue.record("\(damage.name): parsed")
        } catch let error as CodecError {
            #expect(error.code == damage.code, "\(damage.name): \(error)")
            #expect(error.subject == "KTX2 tile")
            #expect(!error.description.contains("\n"))
        }
    }

    @Test func refusesDamagedZlibLevels() throws {
        let format = KTX2Format(pvrtc: .pvrtc4)
        let payload = Self.payload(format, compressible: true)
        let packed = try Zlib.deflate(payload, level: 6)
        for (name, stored) in [
            ("truncated stream", Array(packed.dropLast(3))), ("bytes after the stream", packed + [0, 0]),
            ("a stream of one byte less", try Zlib.deflate(Array(payload.dropLast()), level: 6)),
            ("not zlib", [UInt8](repeating: 0x55, count: 40)),
        ] {
            let file = try KTX2Writer.texture(
                stored: stored, supercompression: .zlib, format: format, width: 256, height: 256)
            #expect(throws: CodecError.self, "\(name)") { try Self.unpack(file, format) }
        }
    }

    /// Random damage (seeded): bytes of the header, index, DFD and key/values overwritten; every
    /// outcome is a typed refusal or a payload of the right size, never a crash or a hang.
    @Test func seededFuzzOfTheFrontMatter() throws {
        var random = SplitMix64(seed: 0x4B54_5832)
        for format in Self.formats {
            for supercompression in [KTX2Texture.Supercompression.none, .zlib] {
                let payload = Self.payload(format, compressible: supercompression == .zlib)
                let original = try KTX2Writer.texture(
                    stored: supercompression == .zlib ? try Zlib.deflate(payload, level: 6) : payload,
                    supercompression: supercompression, format: format, width: 256, height: 256)
                var refused = 0
                for _ in 0..<400 {
                    var file = original
                    for _ in 0..<(1 + Int(random.next() % 4)) {
                        let at = Int(random.next() % 180)
                        file[at] = random.next() % 3 == 0 ? 0xFF : UInt8(truncatingIfNeeded: random.next())
                    }
                    if random.next() % 8 == 0 { file.removeLast(Int(random.next() % UInt64(file.count))) }
                    do {
                        let out = try Self.unpack(file, format)
                        #expect(out.count == payload.count)
                    } catch is CodecError {
                        refused += 1
                    }
                }
                #expect(refused > 250)  // the rest changed bytes no reader looks at (the writer value, padding)
            }
        }
    }

    /// The tile store's path: KTX2 (either supercompression) and the older raw and zlib
    /// forms give the same payload; a KTX2 tile of another format or size is refused.
    @Test func storedFormsUnwrapToTheSamePayload() throws {
        for choice in [TileCodecChoice.astc6x6, .pvrtc4] {
            let format = try #require(choice.ktx2Format)
            let codec = try TilePayloadCodec(codec: choice, tileSize: 256)
            for compressible in [false, true] {
                let payload = Self.payload(format, compressible: compressible)
                let forms: [[UInt8]] =
                    [
                        try KTX2Writer.texture(level: payload, format: format, width: 256, height: 256),
                        payload,  // an old archive's raw tile
                    ] + (compressible ? [try Zlib.deflate(payload, level: 6)] : [])  // an old archive's zlib tile
                for stored in forms {
                    var out = [UInt8](repeating: 0, count: payload.count)
                    try stored.withUnsafeBytes { s in try out.withUnsafeMutableBytes { try codec.unwrap(s, into: $0) } }
                    #expect(out == payload)
                    #expect(try choice.decoder().decode(stored, width: 256, height: 256).count == 256 * 256 * 4)
                }
            }
            let other: KTX2Format = choice == .pvrtc4 ? KTX2Format(pvrtc: .pvrtc2) : KTX2Format(astc: .astc4x4)
            let small = Self.payload(format, compressible: true).prefix(format.levelByteCount(width: 128, height: 128)!)
            for wrong in [
                try KTX2Writer.texture(
                    level: Self.payload(other, compressible: true), format: other, width: 256, height: 256),
                try KTX2Writer.texture(level: Array(small), format: format, width: 128, height: 128),
            ] {
                var out = [UInt8](repeating: 0, count: codec.fixedPayloadByteCount!)
                do {
                    try wrong.withUnsafeBytes { s in try out.withUnsafeMutableBytes { try codec.unwrap(s, into: $0) } }
                    Issue.record("\(choice): a tile of another format or size unwrapped")
                } catch let error as CodecError {
                    #expect(error.code == .unexpectedKTX2)
                }
            }
        }
    }
}
