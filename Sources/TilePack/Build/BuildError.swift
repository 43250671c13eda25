import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// Why a tile build refused its input or options: `subject` is the value the message leads
/// with (`zooms 3–2`, `colour mode rgb`) or empty, `detail` the problem; one line. Built with
/// the factories named after the codes (`BuildError.invalidOption(_:)`).
public struct BuildError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// Bounds that are not finite, empty, or outside the web-mercator world.
        public static let invalidBounds = Code("invalidBounds")
        /// The source crosses ±180° (west ≥ east, or a longitude beyond ±180).
        public static let crossesAntimeridian = Code("crossesAntimeridian")
        /// A native resolution that is not a positive finite number of metres.
        public static let invalidResolution = Code("invalidResolution")
        /// Zoom options that do not make a plan.
        public static let invalidZooms = Code("invalidZooms")
        /// More tiles than the limit; almost always a max zoom set far too high.
        public static let planTooLarge = Code("planTooLarge")
        /// One max-zoom tile would need a source window larger than the per-tile read limit.
        public static let windowTooLarge = Code("windowTooLarge")
        /// The colour mode cannot render this source.
        public static let colorModeUnsupported = Code("colorModeUnsupported")
        /// The source returned a window of the wrong size.
        public static let sourceReadMismatch = Code("sourceReadMismatch")
        /// Any other option out of range.
        public static let invalidOption = Code("invalidOption")
        /// The source needs more than `--memory` even with one worker.
        public static let sourceExceedsBudget = Code("sourceExceedsBudget")
        /// An output that exists, without `--force` (`convert`), or that is the input itself.
        public static let outputExists = Code("outputExists")
    }

    public let code: Code
    /// The value or file the message leads with, or empty when the message names it itself.
    public let subject: String
    public let detail: String
    public var cause: (any Error)? { nil }

    public init(_ code: Code, subject: String = "", detail: String) {
        self.code = code
        self.subject = subject
        self.detail = detail
    }

    public var category: TilePackErrorCategory {
        switch code {
        case .invalidZooms, .planTooLarge, .invalidOption, .outputExists: .invalidArgument
        case .crossesAntimeridian, .colorModeUnsupported: .unsupported
        default: .invalidInput
        }
    }

    public static func invalidBounds(_ b: GeoBounds) -> BuildError {
        BuildError(
            .invalidBounds,
            detail:
                """
                source bounds west \(b.west) south \(b.south) east \(b.east) north \(b.north) are empty, not \
                finite, or outside the web-mercator world
                """
        )
    }

    public static func crossesAntimeridian(west w: Double, east e: Double) -> BuildError {
        BuildError(
            .crossesAntimeridian,
            detail: "source crosses the antimeridian (west \(w), east \(e)); split it at ±180° and build each half")
    }

    public static func invalidResolution(_ r: Double) -> BuildError {
        BuildError(.invalidResolution, detail: "source native resolution \(r) m is not a positive finite number")
    }

    public static func invalidZooms(minZoom: Int, maxZoom: Int, reason: String) -> BuildError {
        BuildError(.invalidZooms, subject: "zooms \(minZoom)–\(maxZoom)", detail: reason)
    }

    public static func planTooLarge(tiles: Int, limit: Int, minZoom: Int, maxZoom: Int) -> BuildError {
        BuildError(
            .planTooLarge,
            detail:
                """
                plan for zooms \(minZoom)–\(maxZoom) has \(tiles) tiles, more than the limit \(limit); lower the \
                max zoom
                """
        )
    }

    public static func windowTooLarge(tile: TileID, width: Int, height: Int) -> BuildError {
        BuildError(
            .windowTooLarge,
            detail:
                """
                tile \(tile) needs a \(width)×\(height) source window, over the per-tile read limit; raise the \
                max zoom towards the source resolution
                """
        )
    }

    public static func colorModeUnsupported(mode: ColorMode, reason: String) -> BuildError {
        BuildError(.colorModeUnsupported, subject: "colour mode \(mode.rawValue)", detail: reason)
    }

    public static func sourceReadMismatch(expected: Int, got: Int) -> BuildError {
        BuildError(.sourceReadMismatch, detail: "source returned \(got) samples for a window of \(expected)")
    }

    /// Any other option out of range: `message` is the whole line.
    public static func invalidOption(_ message: String) -> BuildError {
        BuildError(.invalidOption, detail: message)
    }

    /// `needed` is the smallest budget that builds the source.
    public static func sourceExceedsBudget(needed: Int, budget: Int, source: String) -> BuildError {
        BuildError(
            .sourceExceedsBudget,
            detail: "\(source) need \(ByteSize.format(needed)) to build, more than --memory \(ByteSize.format(budget))")
    }
}
