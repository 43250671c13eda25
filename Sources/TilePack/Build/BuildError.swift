import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// Why a tile build refused its input or options. Each description is one line naming the
/// value and the problem.
public enum BuildError: TilePackError, Equatable {
    /// Bounds that are not finite, empty, or outside the web-mercator world.
    case invalidBounds(GeoBounds)
    /// The source crosses ±180° (west ≥ east, or a longitude beyond ±180).
    case crossesAntimeridian(west: Double, east: Double)
    /// A native resolution that is not a positive finite number of metres.
    case invalidResolution(Double)
    /// Zoom options that do not make a plan.
    case invalidZooms(minZoom: Int, maxZoom: Int, reason: String)
    /// More tiles than the limit; almost always a max zoom set far too high.
    case planTooLarge(tiles: Int, limit: Int, minZoom: Int, maxZoom: Int)
    /// One max-zoom tile would need a source window larger than the per-tile read limit.
    case windowTooLarge(tile: TileID, width: Int, height: Int)
    /// The colour mode cannot render this source.
    case colorModeUnsupported(mode: ColorMode, reason: String)
    /// The source returned a window of the wrong size.
    case sourceReadMismatch(expected: Int, got: Int)
    /// Any other option out of range.
    case invalidOption(String)
    /// The source needs more than `--memory` even with one worker (its bands × sample size):
    /// `needed` is the smallest budget that builds it.
    case sourceExceedsBudget(needed: Int, budget: Int, source: String)

    public var category: TilePackErrorCategory {
        switch self {
        case .invalidZooms, .planTooLarge, .invalidOption: .invalidArgument
        case .crossesAntimeridian, .colorModeUnsupported: .unsupported
        case .invalidBounds, .invalidResolution, .windowTooLarge, .sourceReadMismatch, .sourceExceedsBudget:
            .invalidInput
        }
    }

    public var description: String {
        switch self {
        case let .invalidBounds(b):
            return
                "source bounds west \(b.west) south \(b.south) east \(b.east) north \(b.north) are empty, not finite, or outside the web-mercator world"
        case let .crossesAntimeridian(w, e):
            return "source crosses the antimeridian (west \(w), east \(e)); split it at ±180° and build each half"
        case let .invalidResolution(r):
            return "source native resolution \(r) m is not a positive finite number"
        case let .invalidZooms(minZoom, maxZoom, reason):
            return "zooms \(minZoom)–\(maxZoom): \(reason)"
        case let .planTooLarge(tiles, limit, minZoom, maxZoom):
            return
                "plan for zooms \(minZoom)–\(maxZoom) has \(tiles) tiles, more than the limit \(limit); lower the max zoom"
        case let .windowTooLarge(tile, width, height):
            return
                "tile \(tile) needs a \(width)×\(height) source window, over the per-tile read limit; raise the max zoom towards the source resolution"
        case let .colorModeUnsupported(mode, reason):
            return "colour mode \(mode.rawValue): \(reason)"
        case let .sourceReadMismatch(expected, got):
            return "source returned \(got) samples for a window of \(expected)"
        case let .invalidOption(message):
            return message
        case let .sourceExceedsBudget(needed, budget, source):
            return "\(source) need \(ByteSize.format(needed)) to build, more than --memory \(ByteSize.format(budget))"
        }
    }
}
