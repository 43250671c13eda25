/// What a PMTiles v3 archive's tiles are (`tile_type`), as the spec numbers them.
public enum PMTilesTileType: UInt8, Sendable, Codable {
    /// Anything else: tilepack's GPU tiles (the codec is in the metadata's `tilepack:codec`).
    case unknown = 0
    case mvt = 1
    case png = 2
    case jpeg = 3
    case webp = 4
    case avif = 5

    /// The spec's lower-case name (`png`, `mvt`, `unknown`), or `tile type N` for a byte it
    /// does not define: what `info` prints of a header.
    public static func name(of byte: UInt8) -> String {
        guard let known = PMTilesTileType(rawValue: byte) else { return "tile type \(byte)" }
        return switch known {
        case .unknown: "unknown"
        case .mvt: "mvt"
        case .png: "png"
        case .jpeg: "jpeg"
        case .webp: "webp"
        case .avif: "avif"
        }
    }

    /// The MBTiles `format` of the same tiles (`png`, `jpg`, `pbf`), nil for unknown.
    public var mbtilesFormat: String? {
        switch self {
        case .unknown: nil
        case .mvt: "pbf"
        case .png: "png"
        case .jpeg: "jpg"
        case .webp: "webp"
        case .avif: "avif"
        }
    }

    /// The tile type of MBTiles `format` (unknown for anything the spec does not name).
    public init(mbtilesFormat format: String) {
        switch format.lowercased() {
        case "pbf", "mvt": self = .mvt
        case "png": self = .png
        case "jpg", "jpeg": self = .jpeg
        case "webp": self = .webp
        case "avif": self = .avif
        default: self = .unknown
        }
    }
}
