import TilePackCore
/// Bad input to a tile codec: a size the format cannot hold or a byte count that does not
/// match the size. `subject` names the format or buffer, `detail` the problem; one line.
/// Build one with the factories named after the codes (`CodecError.notPowerOfTwo(…)`).
public struct CodecError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// PVRTC1 sides must be powers of two (the hardware addresses words by bit interleaving).
        public static let notPowerOfTwo = Code("notPowerOfTwo")
        /// Smaller than the format's minimum texture (2 × 2 words) or larger than ``PVRTCFormat/maximumSide``.
        public static let sizeOutOfRange = Code("sizeOutOfRange")
        /// A buffer whose length does not match the size (`subject` says which buffer).
        public static let byteCount = Code("byteCount")
        /// A KTX2 tile that breaks KTX 2.0's structure (an offset outside the file, a bad descriptor).
        public static let malformedKTX2 = Code("malformedKTX2")
        /// A well-formed KTX2 tile of another format or size than its archive's tiles.
        public static let unexpectedKTX2 = Code("unexpectedKTX2")
    }

    public let code: Code
    /// The format (`pvrtc4`) or the buffer (`pvrtc4 words`).
    public let subject: String
    public let detail: String
    public var cause: (any Error)? { nil }

    public init(_ code: Code, subject: String, detail: String) {
        self.code = code
        self.subject = subject
        self.detail = detail
    }

    /// A side that is not a power of two.
    public static func notPowerOfTwo(format: String, width: Int, height: Int) -> CodecError {
        CodecError(
            .notPowerOfTwo, subject: format, detail: "size \(width)x\(height) is not a power of two on each side")
    }

    /// A size outside the format's minimum … maximum.
    public static func sizeOutOfRange(
        format: String, width: Int, height: Int, minimumWidth: Int, minimumHeight: Int, maximum: Int
    ) -> CodecError {
        CodecError(
            .sizeOutOfRange, subject: format,
            detail: "size \(width)x\(height) is outside \(minimumWidth)x\(minimumHeight) … \(maximum)x\(maximum)")
    }

    /// A buffer of the wrong length.
    public static func byteCount(what: String, expected: Int, actual: Int) -> CodecError {
        CodecError(.byteCount, subject: what, detail: "expected \(expected) bytes, got \(actual)")
    }

    /// A KTX2 tile that is not a KTX 2.0 file: `detail` names the field and the problem.
    public static func malformedKTX2(_ detail: String) -> CodecError {
        CodecError(.malformedKTX2, subject: "KTX2 tile", detail: detail)
    }

    /// A KTX2 tile that is not what its archive holds: `detail` says what differs.
    public static func unexpectedKTX2(_ detail: String) -> CodecError {
        CodecError(.unexpectedKTX2, subject: "KTX2 tile", detail: detail)
    }
}
