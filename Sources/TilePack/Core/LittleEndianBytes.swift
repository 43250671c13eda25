/// A growable byte buffer that appends integers and floats in little-endian order, whatever
/// the host, for writing TIFF headers and IFDs ("II" files) by hand.
///
/// Cost: amortised O(1) per appended byte; one `[UInt8]` allocation that grows geometrically.
package struct LittleEndianBytes: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    /// Number of bytes written so far.
    @inlinable public var count: Int { bytes.count }

    public mutating func append(_ value: UInt8) { bytes.append(value) }

    public mutating func append(_ value: UInt16) { appendInteger(value) }

    public mutating func append(_ value: UInt32) { appendInteger(value) }

    public mutating func append(_ value: UInt64) { appendInteger(value) }

    /// Appends the IEEE 754 binary64 bit pattern of `value`.
    public mutating func append(_ value: Double) { appendInteger(value.bitPattern) }

    public mutating func append(contentsOf other: [UInt8]) { bytes.append(contentsOf: other) }

    /// Appends zero bytes until ``count`` is a multiple of `alignment` (TIFF wants IFDs and
    /// out-of-line values on word boundaries).
    public mutating func pad(toMultipleOf alignment: Int) {
        precondition(alignment > 0)
        while bytes.count % alignment != 0 { bytes.append(0) }
    }

    /// Overwrites bytes at `offset` with `value` in little-endian order (for patching a
    /// field whose value is known only later).
    public mutating func set<T: FixedWidthInteger>(_ value: T, at offset: Int) {
        precondition(offset >= 0 && offset + MemoryLayout<T>.size <= bytes.count)
        var v = value.littleEndian
        withUnsafeBytes(of: &v) { raw in
            for i in 0..<raw.count { bytes[offset + i] = raw[i] }
        }
    }

    private mutating func appendInteger<T: FixedWidthInteger>(_ value: T) {
        var v = value.littleEndian
        withUnsafeBytes(of: &v) { bytes.append(contentsOf: $0) }
    }
}
