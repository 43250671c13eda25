import TilePackCore

/// The Data Format Descriptor of a KTX2 tile: one Khronos basic descriptor block (Khronos
/// Data Format 1.3, section 5) with one sample, the form KTX 2.0 requires for a block-compressed
/// `vkFormat` (and that `VK_FORMAT` → DFD tables produce):
///
/// - the block header: vendor 0 (Khronos), type 0 (basic), version 2, block size 40;
/// - colour model ASTC (162) or PVRTC (164), primaries BT.709 (1), transfer linear (1, the
///   formats are UNORM), flags 0 (straight alpha);
/// - texel block dimensions (width − 1, height − 1, 0, 0) and bytesPlane0 the block's bytes;
/// - one sample covering the whole block: bit offset 0, bit length 8 × block bytes − 1,
///   channel 0 (ASTC data / PVRTC colour) without qualifiers, position 0, lower 0, upper 2³² − 1.
///
/// Readers accept exactly that for the format the archive says, so a tile whose descriptor
/// describes another format, sRGB data, premultiplied alpha or HDR ASTC is refused.
public enum KTX2DataFormatDescriptor {
    /// Bytes of the whole descriptor: dfdTotalSize (4) + block header and fields (24) + one sample (16).
    public static let byteCount = 44

    static let bt709Primaries: UInt8 = 1
    static let linearTransfer: UInt8 = 1

    /// The descriptor for `format`, ``byteCount`` bytes.
    /// - Cost: O(1).
    public static func bytes(for format: KTX2Format) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(byteCount)
        for offset in stride(from: 0, to: byteCount, by: 4) { out.appendLittleEndian(word(at: offset, for: format)) }
        return out
    }

    /// The descriptor's 32-bit word at byte `offset` (a multiple of 4 below ``byteCount``): the one
    /// place the layout is written down, for the writer and the reader alike.
    static func word(at offset: Int, for format: KTX2Format) -> UInt32 {
        switch offset {
        case 0: UInt32(byteCount)  // dfdTotalSize
        case 4: 0  // vendorId 0 (17 bits), descriptorType 0 (15 bits)
        case 8: 2 | UInt32(byteCount - 4) << 16  // versionNumber 2, descriptorBlockSize 40
        case 12: UInt32(format.colorModel) | UInt32(bt709Primaries) << 8 | UInt32(linearTransfer) << 16  // flags 0
        case 16: UInt32(format.blockWidth - 1) | UInt32(format.blockHeight - 1) << 8  // texelBlockDimension0…3
        case 20: UInt32(format.bytesPerBlock)  // bytesPlane0…3
        case 24: 0  // bytesPlane4…7
        case 28: UInt32(format.bytesPerBlock * 8 - 1) << 16  // bitOffset 0, bitLength − 1, channelType 0
        case 32: 0  // samplePosition0…3
        case 36: 0  // sampleLower
        default: UInt32.max  // sampleUpper
        }
    }

    /// The words a reader compares after the block header, with the fields each holds.
    static let fieldWords: [(offset: Int, fields: String)] = [
        (12, "colorModel, colorPrimaries, transferFunction, flags"), (16, "texelBlockDimension0…3"),
        (20, "bytesPlane0…3"), (24, "bytesPlane4…7"), (28, "sample bitOffset, bitLength, channelType"),
        (32, "samplePosition0…3"), (36, "sampleLower"), (40, "sampleUpper"),
    ]

    /// Checks that `dfd` (the `dfdByteLength` bytes at `dfdByteOffset`) is the descriptor
    /// ``bytes(for:)`` describes, word by word, so the error names the fields that differ.
    /// - Throws: ``CodecError`` (`malformedKTX2` for a broken structure, `unexpectedKTX2` for a
    ///   well-formed descriptor of something else).
    /// - Cost: O(1), no allocation unless it throws.
    public static func check(_ dfd: UnsafeRawBufferPointer, format: KTX2Format) throws {
        guard dfd.count >= 4 else { throw CodecError.malformedKTX2("data format descriptor is \(dfd.count) bytes") }
        let total = dfd.littleEndianUInt32(at: 0)
        guard total == dfd.count else {
            throw CodecError.malformedKTX2("dfdTotalSize \(total) differs from dfdByteLength \(dfd.count)")
        }
        guard dfd.count == byteCount else {
            throw CodecError.unexpectedKTX2(
                "data format descriptor is \(dfd.count) bytes, expected \(byteCount) (one basic block, one sample)")
        }
        let blockHeader = dfd.littleEndianUInt32(at: 4)
        guard blockHeader == 0 else {
            throw CodecError.unexpectedKTX2(
                "descriptor block vendor \(blockHeader & 0x1_FFFF), type \(blockHeader >> 17), expected Khronos basic (0, 0)"
            )
        }
        let version = dfd.littleEndianUInt32(at: 8)
        guard version == word(at: 8, for: format) else {
            throw CodecError.malformedKTX2(
                "descriptor block version \(version & 0xFFFF), size \(version >> 16), expected version 2, size 40")
        }
        for (offset, fields) in fieldWords {
            let found = dfd.littleEndianUInt32(at: offset), wanted = word(at: offset, for: format)
            guard found == wanted else {
                throw CodecError.unexpectedKTX2(
                    "descriptor \(fields) are 0x\(String(found, radix: 16)), \(format.name) needs 0x\(String(wanted, radix: 16))"
                )
            }
        }
    }
}
