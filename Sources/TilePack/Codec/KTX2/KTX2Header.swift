import TilePackCore

/// The fixed 80 bytes at the start of a KTX 2.0 file: the identifier, what the texture is
/// (format, size, layers, faces, levels, supercompression) and the index of the sections that
/// follow (Data Format Descriptor, key/value data, supercompression global data). All fields
/// little-endian (KTX 2.0 section 3).
///
/// Parsing checks only that 80 bytes start with the identifier; what the numbers may be is
/// ``KTX2Texture``'s business, which knows the blob they index.
public struct KTX2Header: Sendable, Equatable {
    /// `«KTX 20»\r\n\x1A\n`: the bytes every KTX2 file starts with.
    public static let identifier: [UInt8] = [0xAB, 0x4B, 0x54, 0x58, 0x20, 0x32, 0x30, 0xBB, 0x0D, 0x0A, 0x1A, 0x0A]
    /// Bytes of the header with its index; the level index follows at this offset.
    public static let byteCount = 80
    /// Bytes of one level index entry (byteOffset, byteLength, uncompressedByteLength).
    public static let levelIndexEntryByteCount = 24

    public var vkFormat: UInt32
    public var typeSize: UInt32
    public var pixelWidth: UInt32
    public var pixelHeight: UInt32
    public var pixelDepth: UInt32
    public var layerCount: UInt32
    public var faceCount: UInt32
    public var levelCount: UInt32
    public var supercompressionScheme: UInt32
    public var dfdByteOffset: UInt32
    public var dfdByteLength: UInt32
    public var kvdByteOffset: UInt32
    public var kvdByteLength: UInt32
    public var sgdByteOffset: UInt64
    public var sgdByteLength: UInt64

    public init(
        vkFormat: UInt32, typeSize: UInt32 = 1, pixelWidth: UInt32, pixelHeight: UInt32, pixelDepth: UInt32 = 0,
        layerCount: UInt32 = 0, faceCount: UInt32 = 1, levelCount: UInt32 = 1, supercompressionScheme: UInt32 = 0,
        dfdByteOffset: UInt32 = 0, dfdByteLength: UInt32 = 0, kvdByteOffset: UInt32 = 0, kvdByteLength: UInt32 = 0,
        sgdByteOffset: UInt64 = 0, sgdByteLength: UInt64 = 0
    ) {
        self.vkFormat = vkFormat
        self.typeSize = typeSize
        self.pixelWidth = pixelWidth
        self.pixelHeight = pixelHeight
        self.pixelDepth = pixelDepth
        self.layerCount = layerCount
        self.faceCount = faceCount
        self.levelCount = levelCount
        self.supercompressionScheme = supercompressionScheme
        self.dfdByteOffset = dfdByteOffset
        self.dfdByteLength = dfdByteLength
        self.kvdByteOffset = kvdByteOffset
        self.kvdByteLength = kvdByteLength
        self.sgdByteOffset = sgdByteOffset
        self.sgdByteLength = sgdByteLength
    }

    /// True when `bytes` starts with the KTX2 identifier: how a reader tells a KTX2 tile from
    /// the raw or zlib payloads of older archives.
    /// - Cost: O(1), no allocation.
    public static func starts(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= identifier.count else { return false }
        for (index, byte) in identifier.enumerated() where bytes[index] != byte { return false }
        return true
    }

    /// Reads the header at the start of `bytes`.
    /// - Throws: ``CodecError`` (`malformedKTX2`) when `bytes` is shorter than 80 bytes or
    ///   does not start with the identifier.
    /// - Cost: O(1), no allocation.
    public init(parsing bytes: UnsafeRawBufferPointer) throws {
        guard bytes.count >= Self.byteCount else {
            throw CodecError.malformedKTX2("is \(bytes.count) bytes, shorter than the 80-byte header")
        }
        guard Self.starts(bytes) else { throw CodecError.malformedKTX2("does not start with the KTX2 identifier") }
        let u32 = { (offset: Int) in bytes.littleEndianUInt32(at: offset) }
        self.init(
            vkFormat: u32(12), typeSize: u32(16), pixelWidth: u32(20), pixelHeight: u32(24), pixelDepth: u32(28),
            layerCount: u32(32), faceCount: u32(36), levelCount: u32(40), supercompressionScheme: u32(44),
            dfdByteOffset: u32(48), dfdByteLength: u32(52), kvdByteOffset: u32(56), kvdByteLength: u32(60),
            sgdByteOffset: bytes.littleEndianUInt64(at: 64), sgdByteLength: bytes.littleEndianUInt64(at: 72))
    }

    /// Appends the 80 header bytes to `out`.
    /// - Cost: O(1) appended bytes.
    public func write(to out: inout [UInt8]) {
        out += Self.identifier
        for field in [
            vkFormat, typeSize, pixelWidth, pixelHeight, pixelDepth, layerCount, faceCount, levelCount,
            supercompressionScheme, dfdByteOffset, dfdByteLength, kvdByteOffset, kvdByteLength,
        ] {
            out.appendLittleEndian(field)
        }
        out.appendLittleEndian(sgdByteOffset)
        out.appendLittleEndian(sgdByteLength)
    }
}

extension UnsafeRawBufferPointer {
    /// The little-endian UInt32 at `offset`; the caller has checked `offset + 4 <= count`.
    func littleEndianUInt32(at offset: Int) -> UInt32 {
        UInt32(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// The little-endian UInt64 at `offset`; the caller has checked `offset + 8 <= count`.
    func littleEndianUInt64(at offset: Int) -> UInt64 {
        UInt64(littleEndian: loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
}

extension Array where Element == UInt8 {
    /// Appends `value`'s bytes, least significant first.
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }
}
