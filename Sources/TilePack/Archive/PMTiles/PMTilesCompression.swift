/// How a PMTiles v3 archive compresses its directories and metadata (`internal_compression`)
/// or its tiles (`tile_compression`): the header's byte, as the spec numbers it.
public enum PMTilesCompression: UInt8, Sendable, Codable {
    case unknown = 0
    case none = 1
    case gzip = 2
    case brotli = 3
    case zstd = 4

    /// The spec's lower-case name (`gzip`), or `compression N` for a byte it does not define.
    public static func name(of byte: UInt8) -> String {
        guard let known = PMTilesCompression(rawValue: byte) else { return "compression \(byte)" }
        return switch known {
        case .unknown: "unknown"
        case .none: "none"
        case .gzip: "gzip"
        case .brotli: "brotli"
        case .zstd: "zstd"
        }
    }
}
