import TilePackCore

/// Writes one tile's GPU payload as a KTX 2.0 file: header, one level index entry, the Data
/// Format Descriptor (``KTX2DataFormatDescriptor``), the key/value data `KTXwriter` =
/// `tilepack`, then the level, zlib-supercompressed (scheme 3) when that is smaller.
///
/// The bytes depend only on the payload, the format, the size and the zlib level: no
/// version, date or path goes into a tile, so a rebuild with a newer tilepack stores the same
/// tile bytes (the version is archive metadata, `tilepack:version`).
public enum KTX2Writer {
    /// `KTXwriter`'s value, fixed (see above).
    public static let writerName = "tilepack"

    /// The file for `level` (the raw payload of `format` at `width` × `height`), with the level
    /// deflated at `zlibLevel` when the stream is shorter than the payload, else stored plain.
    /// - Throws: ``CodecError`` when `level` is not the payload's byte count or a side does not
    ///   fit the header's 32 bits; zlib's failure when it cannot deflate.
    /// - Cost: one deflate of the payload and one copy of the smaller form.
    public static func texture(
        level: [UInt8], format: KTX2Format, width: Int, height: Int, zlibLevel: Int32 = 6
    )
        throws -> [UInt8]
    {
        let expected = format.levelByteCount(width: width, height: height)
        guard level.count == expected else {
            throw CodecError.byteCount(
                what: "\(format.name) level for KTX2", expected: expected ?? 0, actual: level.count)
        }
        let packed = try Zlib.deflate(level, level: zlibLevel)
        return packed.count < level.count
            ? try texture(
                stored: packed, supercompression: .zlib, format: format,
                width: width, height: height)
            : try texture(
                stored: level, supercompression: .none, format: format,
                width: width, height: height)
    }

    /// The file with `stored` as the level's bytes under `supercompression` (for tests that
    /// need one form or the other).
    /// - Throws: ``CodecError`` as ``texture(level:format:width:height:zlibLevel:)``.
    /// - Cost: one copy of `stored`.
    public static func texture(
        stored: [UInt8], supercompression: KTX2Texture.Supercompression, format: KTX2Format, width: Int, height: Int
    ) throws -> [UInt8] {
        let expected = format.levelByteCount(width: width, height: height)
        guard supercompression == .zlib || stored.count == expected else {
            throw CodecError.byteCount(
                what: "\(format.name) level for KTX2", expected: expected ?? 0, actual: stored.count)
        }
        var out = try prefix(
            storedByteCount: stored.count, supercompression: supercompression, format: format, width: width,
            height: height)
        out += stored
        return out
    }

    /// Every byte of the file before the level (header, level index, descriptor, key/value
    /// data, padding) for a level of `storedByteCount` bytes: what a server sends ahead of a
    /// raw payload it already holds, without copying the payload into a new file.
    /// - Throws: ``CodecError`` when a side does not fit the header's 32 bits or `format` has
    ///   no byte count at this size.
    /// - Cost: O(1) (about 180 bytes).
    public static func prefix(
        storedByteCount: Int, supercompression: KTX2Texture.Supercompression, format: KTX2Format, width: Int,
        height: Int
    ) throws -> [UInt8] {
        guard let pixelWidth = UInt32(exactly: width), let pixelHeight = UInt32(exactly: height), width > 0,
            height > 0, let uncompressed = format.levelByteCount(width: width, height: height)
        else {
            throw CodecError.sizeOutOfRange(
                format: format.name, width: width, height: height, minimumWidth: 1, minimumHeight: 1,
                maximum: Int(UInt32.max))
        }
        let keyValues = keyValueData()
        let dfdOffset = KTX2Header.byteCount + KTX2Header.levelIndexEntryByteCount
        let kvdOffset = dfdOffset + KTX2DataFormatDescriptor.byteCount
        let end = kvdOffset + keyValues.count
        let alignment = supercompression == .none ? format.levelAlignment : 1
        let levelOffset = (end + alignment - 1) / alignment * alignment
        let header = KTX2Header(
            vkFormat: format.vkFormat, pixelWidth: pixelWidth, pixelHeight: pixelHeight,
            supercompressionScheme: supercompression.rawValue,
            dfdByteOffset: UInt32(dfdOffset), dfdByteLength: UInt32(KTX2DataFormatDescriptor.byteCount),
            kvdByteOffset: UInt32(kvdOffset), kvdByteLength: UInt32(keyValues.count))
        var out: [UInt8] = []
        out.reserveCapacity(levelOffset + storedByteCount)
        header.write(to: &out)
        out.appendLittleEndian(UInt64(levelOffset))
        out.appendLittleEndian(UInt64(storedByteCount))
        out.appendLittleEndian(UInt64(uncompressed))
        out += KTX2DataFormatDescriptor.bytes(for: format)
        out += keyValues
        out += [UInt8](repeating: 0, count: levelOffset - end)  // mipPadding
        return out
    }

    /// `KTXwriter` = `tilepack`: length, key, NUL, value, NUL, padded to 4 bytes.
    static func keyValueData() -> [UInt8] {
        let entry = Array("KTXwriter".utf8) + [0] + Array(writerName.utf8) + [0]
        var out: [UInt8] = []
        out.appendLittleEndian(UInt32(entry.count))
        out += entry
        out += [UInt8](repeating: 0, count: (4 - entry.count % 4) % 4)
        return out
    }
}
