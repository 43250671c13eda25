import TilePackCore
/// Why PNG bytes could not be decoded (or pixels encoded).
///
/// `description` is one line naming the source (a file, or "PNG data" / a tile id) and the
/// problem, e.g. `"tile 3/4/2: PNG chunk IDAT has a bad CRC (stored 0x…, computed 0x…)"`.
public struct PNGError: TilePackError, Equatable {
    public enum Problem: Sendable, Equatable {
        /// The 8-byte PNG signature is missing.
        case notPNG
        /// A chunk's length runs past the data, a required chunk is missing or out of order.
        case malformed
        /// A chunk's CRC-32 does not match its bytes.
        case badCRC
        /// IHDR values are invalid (zero size, bad bit depth for the colour type, …).
        case badHeader
        /// The data ends early: no IEND, or IDAT inflates to fewer bytes than the image needs.
        case truncated
        /// The zlib stream or a row filter byte is invalid.
        case corruptData
        /// A valid PNG feature we do not decode (interlacing, an unknown critical chunk).
        case unsupported
        /// The image is larger than the decoder's pixel limit or the caller's expected size.
        case tooLarge
        /// The decoded size differs from what the caller expected.
        case sizeMismatch
        /// Pixels handed to the encoder do not match width × height × 4.
        case invalidArgument
    }

    public var source: String
    public var problem: Problem
    public var detail: String

    public init(source: String, problem: Problem, detail: String) {
        self.source = source
        self.problem = problem
        self.detail = detail
    }

    public var description: String { "\(source): PNG \(detail)" }
}

/// Shared PNG constants and the colour types of IHDR.
package enum PNG {
    package static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// IHDR colour type codes (PNG spec §11.2.2).
    package enum ColorType: UInt8 {
        case gray = 0, rgb = 2, palette = 3, grayAlpha = 4, rgba = 6

        package var channels: Int {
            switch self {
            case .gray, .palette: 1
            case .grayAlpha: 2
            case .rgb: 3
            case .rgba: 4
            }
        }

        /// Bit depths the spec allows for this colour type.
        var allowedDepths: [Int] {
            switch self {
            case .gray: [1, 2, 4, 8, 16]
            case .palette: [1, 2, 4, 8]
            case .rgb, .grayAlpha, .rgba: [8, 16]
            }
        }
    }

    /// The Paeth predictor (PNG spec §9.4): whichever of left, up, up-left is nearest to
    /// left + up − up-left, ties in that order.
    /// With p = a + b − c: p − a = b − c, p − b = a − c and p − c is their sum. Signs are tested
    /// by hand because generic `abs` is a call per use in a debug build.
    @inline(__always)
    package static func paeth(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> UInt8 {
        let bc = Int(b) - Int(c), ac = Int(a) - Int(c), sum = bc + ac
        let pa = bc < 0 ? -bc : bc, pb = ac < 0 ? -ac : ac, pc = sum < 0 ? -sum : sum
        if pa <= pb && pa <= pc { return a }
        return pb <= pc ? b : c
    }
}
