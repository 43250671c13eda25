import TilePackCore

/// A rate-distortion λ that cannot be used: `subject` names the argument (`--rdo`) and the
/// value as given, `detail` the range.
public struct ASTCRateDistortionError: TilePackError, Equatable {
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// NaN, negative, or above ``ASTCRateDistortion/maximumLambda``.
        public static let outOfRange = Code("outOfRange")
        /// A λ given with a codec it means nothing to (PNG, PVRTC).
        public static let notASTC = Code("notASTC")
    }

    public let code: Code
    public let subject: String
    public let detail: String
    public var cause: (any Error)? { nil }
    public var category: TilePackErrorCategory { .invalidArgument }

    public init(argument: String, value: Double, detail: String) {
        code = .outOfRange
        subject = "\(argument) \(value)"
        self.detail = detail
    }

    /// `argument` given with `codec`, which has no rate-distortion choice.
    public init(argument: String, codec: String) {
        code = .notASTC
        subject = argument
        detail = "applies to ASTC codecs only, not \(codec)"
    }
}
