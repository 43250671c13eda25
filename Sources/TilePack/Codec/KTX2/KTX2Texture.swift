import TilePackCore

/// A KTX 2.0 file holding one tile: the header, checked against the format and size the
/// archive says its tiles have, and where its single level lies.
///
/// Parsing proves every offset and length of the file against the blob before any is used
/// (header, level index, Data Format Descriptor, key/value data, level data), so
/// ``unpackLevel(of:into:inflater:)`` may copy or inflate without further checks. What tilepack
/// accepts is narrower than KTX 2.0: one level, one face, no array layers, 2D, `typeSize` 1,
/// supercompression none (0) or zlib (3), no global data, nothing after the level. Everything
/// else is a tile this archive did not write and is refused.
///
/// - Cost: parsing is O(key/value entries), no allocation unless it throws.
public struct KTX2Texture: Sendable, Equatable {
    /// KTX 2.0 supercompression schemes tilepack writes and reads.
    public enum Supercompression: UInt32, Sendable {
        case none = 0
        case zlib = 3
    }

    public let header: KTX2Header
    public let format: KTX2Format
    public let supercompression: Supercompression
    /// Where the level's stored bytes are in the file.
    public let levelRange: Range<Int>
    /// Bytes of the level once inflated: the GPU payload.
    public let levelByteCount: Int

    /// Parses the KTX2 file `bytes`, which must hold one level of `format` at `width` × `height`.
    /// - Throws: ``CodecError``: `malformedKTX2` when the file breaks KTX 2.0's structure (an
    ///   offset or length outside the file, a misaligned section, a broken key/value entry);
    ///   `unexpectedKTX2` when it is well formed but not the archive's format or size.
    public init(parsing bytes: UnsafeRawBufferPointer, format: KTX2Format, width: Int, height: Int) throws {
        let header = try KTX2Header(parsing: bytes)
        guard header.vkFormat == format.vkFormat else {
            let named = KTX2Format(vkFormat: header.vkFormat).map { " (\($0.name))" } ?? ""
            throw CodecError.unexpectedKTX2("vkFormat is \(header.vkFormat)\(named), the archive's tiles are \(format)")
        }
        guard header.typeSize == 1 else {
            throw CodecError.malformedKTX2("typeSize is \(header.typeSize), block-compressed formats need 1")
        }
        guard Int(exactly: header.pixelWidth) == width, Int(exactly: header.pixelHeight) == height else {
            throw CodecError.unexpectedKTX2(
                "is \(header.pixelWidth)×\(header.pixelHeight) pixels, the archive's tiles are \(width)×\(height)")
        }
        guard header.pixelDepth == 0, header.layerCount == 0, header.faceCount == 1, header.levelCount == 1 else {
            throw CodecError.unexpectedKTX2(
                "has pixelDepth \(header.pixelDepth), layerCount \(header.layerCount), faceCount \(header.faceCount), "
                    + "levelCount \(header.levelCount); a tile is 2D with 0, 0, 1, 1")
        }
        guard let supercompression = Supercompression(rawValue: header.supercompressionScheme) else {
            throw CodecError.unexpectedKTX2(
                "supercompressionScheme is \(header.supercompressionScheme), tilepack reads 0 (none) and 3 (zlib)")
        }
        guard header.sgdByteOffset == 0, header.sgdByteLength == 0 else {
            throw CodecError.malformedKTX2(
                "has supercompression global data (offset \(header.sgdByteOffset), length \(header.sgdByteLength)) "
                    + "which scheme \(header.supercompressionScheme) does not use")
        }

        // Level index: one entry right after the header.
        let indexEnd = KTX2Header.byteCount + KTX2Header.levelIndexEntryByteCount
        guard bytes.count >= indexEnd else {
            throw CodecError.malformedKTX2("is \(bytes.count) bytes, too short for its level index (\(indexEnd))")
        }
        let levelOffset = bytes.littleEndianUInt64(at: 80), levelLength = bytes.littleEndianUInt64(at: 88)
        let uncompressed = bytes.littleEndianUInt64(at: 96)

        // Data Format Descriptor: after the level index, 4-aligned, inside the file.
        let dfd = try Self.section(
            "data format descriptor", offset: UInt64(header.dfdByteOffset), length: UInt64(header.dfdByteLength),
            after: indexEnd, alignment: 4, in: bytes)
        guard !dfd.isEmpty else { throw CodecError.malformedKTX2("has no data format descriptor") }
        try KTX2DataFormatDescriptor.check(UnsafeRawBufferPointer(rebasing: bytes[dfd]), format: format)

        // Key/value data: after the descriptor, or absent with offset 0.
        var end = dfd.upperBound
        if header.kvdByteLength == 0 {
            guard header.kvdByteOffset == 0 else {
                throw CodecError.malformedKTX2("kvdByteOffset is \(header.kvdByteOffset) with kvdByteLength 0")
            }
        } else {
            let kvd = try Self.section(
                "key/value data", offset: UInt64(header.kvdByteOffset), length: UInt64(header.kvdByteLength),
                after: end, alignment: 4, in: bytes)
            try Self.checkKeyValueData(UnsafeRawBufferPointer(rebasing: bytes[kvd]))
            end = kvd.upperBound
        }

        // The level: the archive's payload size once inflated, aligned when stored plain, last in the file.
        guard let expected = format.levelByteCount(width: width, height: height) else {
            throw CodecError.unexpectedKTX2("\(format.name) at \(width)×\(height) has no byte count")
        }
        guard uncompressed == expected else {
            throw CodecError.unexpectedKTX2(
                "level uncompressedByteLength is \(uncompressed), \(format.name) at \(width)×\(height) is \(expected)")
        }
        switch supercompression {
        case .none:
            guard levelLength == uncompressed else {
                throw CodecError.malformedKTX2(
                    "level byteLength \(levelLength) differs from uncompressedByteLength \(uncompressed) without supercompression"
                )
            }
        case .zlib:
            guard levelLength > 0 else { throw CodecError.malformedKTX2("zlib level is empty") }
        }
        let level = try Self.section(
            "level", offset: levelOffset, length: levelLength, after: end,
            alignment: supercompression == .none ? format.levelAlignment : 1, in: bytes)
        guard level.upperBound == bytes.count else {
            throw CodecError.malformedKTX2("\(bytes.count - level.upperBound) bytes after the level's end")
        }
        self.header = header
        self.format = format
        self.supercompression = supercompression
        self.levelRange = level
        self.levelByteCount = expected
    }

    /// Copies or inflates the level of `bytes` (the file this texture was parsed from) into
    /// `payload`, which must be ``levelByteCount`` bytes.
    /// - Throws: ``CodecError`` when `payload` is the wrong size or the zlib stream does not
    ///   inflate to exactly the level (truncated, too long, bytes after its end).
    /// - Cost: one copy or one inflate; no allocation.
    public func unpackLevel(
        of bytes: UnsafeRawBufferPointer, into payload: UnsafeMutableRawBufferPointer, inflater: Zlib.Inflater
    ) throws {
        guard payload.count == levelByteCount, bytes.count >= levelRange.upperBound else {
            throw CodecError.byteCount(
                what: "\(format.name) payload buffer", expected: levelByteCount, actual: payload.count)
        }
        let level = UnsafeRawBufferPointer(rebasing: bytes[levelRange])
        switch supercompression {
        case .none:
            payload.copyMemory(from: level)
        case .zlib:
            do { try inflater.inflateExactly(level, into: payload) } catch {
                throw CodecError.malformedKTX2("zlib level does not inflate to \(levelByteCount) bytes (\(error))")
            }
        }
    }

    /// The range `offset ..< offset + length`, proved to start at or after `after`, on an
    /// `alignment` boundary, and to end inside `bytes`.
    private static func section(
        _ name: String, offset: UInt64, length: UInt64, after: Int, alignment: Int, in bytes: UnsafeRawBufferPointer
    ) throws -> Range<Int> {
        guard let start = Int(exactly: offset), let count = Int(exactly: length),
            case let (end, overflow) = start.addingReportingOverflow(count), !overflow, end <= bytes.count
        else {
            throw CodecError.malformedKTX2(
                "\(name) (offset \(offset), length \(length)) ends past the file's \(bytes.count) bytes")
        }
        guard start >= after else {
            throw CodecError.malformedKTX2(
                "\(name) starts at \(start), inside the sections before it (which end at \(after))")
        }
        guard start % alignment == 0 else {
            throw CodecError.malformedKTX2("\(name) starts at \(start), not a multiple of \(alignment)")
        }
        return start..<end
    }

    /// Walks the key/value entries: each a 4-byte length, that many bytes holding a
    /// NUL-terminated key (and its value), padded to 4 bytes; the last padding ends the section.
    private static func checkKeyValueData(_ kvd: UnsafeRawBufferPointer) throws {
        var at = 0
        while at < kvd.count {
            guard kvd.count - at >= 4 else {
                throw CodecError.malformedKTX2("key/value entry at \(at) has no room for its length")
            }
            let length = Int(kvd.littleEndianUInt32(at: at))
            let start = at + 4
            guard length >= 2, length <= kvd.count - start else {
                throw CodecError.malformedKTX2("key/value entry at \(at) claims \(length) bytes")
            }
            guard UnsafeRawBufferPointer(rebasing: kvd[start..<(start + length)]).contains(0), kvd[start] != 0 else {
                throw CodecError.malformedKTX2("key/value entry at \(at) has no NUL-terminated key")
            }
            let padded = (length + 3) & ~3
            guard padded <= kvd.count - start else {
                throw CodecError.malformedKTX2("key/value entry at \(at) has no room for its padding")
            }
            at = start + padded
        }
    }
}
