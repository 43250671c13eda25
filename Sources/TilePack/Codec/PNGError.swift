import TilePackCore
/// Why PNG bytes could not be decoded (or pixels encoded).
///
/// `subject` names the source (a file, or "PNG data" / a tile id), `detail` the problem, which
/// starts with "PNG": `"tile 3/4/2: PNG chunk IDAT has a bad CRC (stored 0x…, computed 0x…)"`.
public struct PNGError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// The 8-byte PNG signature is missing.
        public static let notPNG = Code("notPNG")
        /// A chunk's length runs past the data, a required chunk is missing or out of order.
        public static let malformed = Code("malformed")
        /// A chunk's CRC-32 does not match its bytes.
        public static let badCRC = Code("badCRC")
        /// IHDR values are invalid (zero size, bad bit depth for the colour type, …).
        public static let badHeader = Code("badHeader")
        /// The data ends early: no IEND, or IDAT inflates to fewer bytes than the image needs.
        public static let truncated = Code("truncated")
        /// The zlib stream or a row filter byte is invalid.
        public static let corruptData = Code("corruptData")
        /// A valid PNG feature we do not decode (interlacing, an unknown critical chunk).
        public static let unsupported = Code("unsupported")
        /// The image is larger than the decoder's pixel limit or the caller's expected size.
        public static let tooLarge = Code("tooLarge")
        /// The decoded size differs from what the caller expected.
        public static let sizeMismatch = Code("sizeMismatch")
        /// Pixels handed to the encoder do not match width × height × 4.
        public static let invalidArgument = Code("invalidArgument")
    }

    public let code: Code
    /// The file, "PNG data" or a tile id.
    public let subject: String
    /// "PNG " and the problem.
    public let detail: String
    public var cause: (any Error)? { nil }

    /// `detail` is the problem after "PNG " (`"chunk IDAT has a bad CRC"`).
    public init(_ code: Code, source: String, detail: String) {
        self.code = code
        self.subject = source
        self.detail = "PNG \(detail)"
    }
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
