import TilePackCore
/// The type of one raster sample, as TIFF's BitsPerSample + SampleFormat describe it.
///
/// Names follow numpy/GDAL (`uint8`, `int16`, `float32`) because those are the names the
/// manifest, `info --json` and users speak. 24-bit integer samples are widened to 32 bits on
/// read (as GDAL does), so they report `uint32`/`int32`.
public enum SampleType: String, Sendable, CaseIterable, Equatable {
    case uint8, int8, uint16, int16, uint32, int32, uint64, int64, float32, float64

    /// Bytes one sample occupies in memory (after widening).
    @inlinable
    public var byteWidth: Int {
        switch self {
        case .uint8, .int8: 1
        case .uint16, .int16: 2
        case .uint32, .int32, .float32: 4
        case .uint64, .int64, .float64: 8
        }
    }

    /// True for IEEE floating point types.
    @inlinable
    public var isFloat: Bool { self == .float32 || self == .float64 }

    /// True for two's complement signed integers.
    @inlinable
    public var isSignedInteger: Bool {
        self == .int8 || self == .int16 || self == .int32 || self == .int64
    }

    /// The range a value must lie in to be representable (GDAL ignores a GDAL_NODATA value
    /// outside it). Float types admit every value, including NaN.
    public func canRepresent(_ value: Double) -> Bool {
        if value.isNaN { return isFloat }
        switch self {
        case .uint8: return value >= 0 && value <= 255 && value.rounded() == value
        case .int8: return value >= -128 && value <= 127 && value.rounded() == value
        case .uint16: return value >= 0 && value <= 65535 && value.rounded() == value
        case .int16: return value >= -32768 && value <= 32767 && value.rounded() == value
        case .uint32: return value >= 0 && value <= 4_294_967_295 && value.rounded() == value
        case .int32: return value >= -2_147_483_648 && value <= 2_147_483_647 && value.rounded() == value
        case .uint64: return value >= 0 && value < 18_446_744_073_709_551_616 && value.rounded() == value
        case .int64:
            return value >= -9_223_372_036_854_775_808 && value < 9_223_372_036_854_775_808 && value.rounded() == value
        case .float32: return value.isInfinite || abs(value) <= Double(Float.greatestFiniteMagnitude)
        case .float64: return true
        }
    }
}
