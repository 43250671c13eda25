import TilePackCore
/// A rectangle of pixels in image coordinates (x to the right, y down, origin top-left).
public struct PixelWindow: Sendable, Hashable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// True when the window is non-empty and lies inside a `width` × `height` image.
    public func fits(width imageWidth: Int, height imageHeight: Int) -> Bool {
        x >= 0 && y >= 0 && width > 0 && height > 0
            && x <= imageWidth - width && y <= imageHeight - height
    }

    public var description: String { "\(width)x\(height)+\(x)+\(y)" }
}

/// Decoded samples of one window: pixel-interleaved (row, column, band), each sample in the
/// in-memory type (24-bit widened to 32) and little-endian, raw values as stored.
public struct RasterWindow: Sendable {
    public let window: PixelWindow
    public let bands: Int
    public let sampleType: SampleType
    /// `window.height × window.width × bands × sampleType.byteWidth` bytes.
    public var bytes: [UInt8]

    public init(window: PixelWindow, bands: Int, sampleType: SampleType, bytes: [UInt8]) {
        precondition(
            bytes.count == window.width * window.height * bands * sampleType.byteWidth,
            "raster window byte count does not match its shape")
        self.window = window
        self.bands = bands
        self.sampleType = sampleType
        self.bytes = bytes
    }

    /// One sample as a Double (64-bit integers beyond 2^53 lose precision).
    /// `x`, `y` are relative to the window.
    public func sample(x: Int, y: Int, band: Int) -> Double {
        precondition(
            x >= 0 && x < window.width && y >= 0 && y < window.height && band >= 0 && band < bands,
            "sample outside the window")
        let index = (y * window.width + x) * bands + band
        return bytes.withUnsafeBytes { Self.value(sampleType, $0, index) }
    }

    /// All samples converted to Float, in the same (row, column, band) order.
    /// - Cost: one pass, one allocation of `count × 4` bytes.
    public func floats() -> [Float] {
        let n = window.width * window.height * bands
        return bytes.withUnsafeBytes { raw in
            [Float](unsafeUninitializedCapacity: n) { out, count in
                switch sampleType {
                case .uint8: for i in 0..<n { out[i] = Float(raw[i]) }
                case .float32:
                    for i in 0..<n {
                        out[i] = Float(
                            bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)))
                    }
                default: for i in 0..<n { out[i] = Float(Self.value(sampleType, raw, i)) }
                }
                count = n
            }
        }
    }

    @inline(__always)
    static func value(_ type: SampleType, _ raw: UnsafeRawBufferPointer, _ i: Int) -> Double {
        switch type {
        case .uint8: Double(raw[i])
        case .int8: Double(Int8(bitPattern: raw[i]))
        case .uint16: Double(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: i * 2, as: UInt16.self)))
        case .int16: Double(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: i * 2, as: Int16.self)))
        case .uint32: Double(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)))
        case .int32: Double(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: Int32.self)))
        case .uint64: Double(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)))
        case .int64: Double(Int64(littleEndian: raw.loadUnaligned(fromByteOffset: i * 8, as: Int64.self)))
        case .float32:
            Double(Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))))
        case .float64:
            Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)))
        }
    }
}
