import TilePackCore

/// What the single data band of a region holds, as the build decided it (``MBTilesMetadata/Key/valueKind``,
/// `tilepack:value_kind`): it tells `query` whether the stored grid is metres or something else.
///
/// - `elevation`: heights in metres (a DEM).
/// - `depth`: depths as NEGATIVE metres (a depth raster with positive depths is negated when built).
/// - `percent`: a percentage, 0…100.
/// - `class`: categories (land cover, soil type); the value is the class code, never interpolated.
/// - `value`: any other measurement (temperature, an index, a grey image's level).
///
/// The raw values are exactly these names; archives may only be read with them.
public enum ValueKind: String, Sendable, CaseIterable, Codable {
    case elevation, depth, percent
    case `class`
    case value

    /// Heights or depths in metres: what `elevation_m` reports.
    public var isMetres: Bool { self == .elevation || self == .depth }

    /// The kind an archive's metadata rows state. `tilepack:value_kind` when present (an
    /// unknown name counts as `value`: the file is not trusted to make a number metres);
    /// otherwise archives that store elevation are elevation (written before the key existed),
    /// and others have no kind.
    /// - Cost: two dictionary lookups.
    public init?(metadata rows: [String: String], hasElevationTable: Bool) {
        if let name = rows[MBTilesMetadata.Key.valueKind] {
            self = ValueKind(rawValue: name) ?? .value
            return
        }
        switch rows[MBTilesMetadata.Key.elevation] {
        case "true": self = .elevation
        case nil where hasElevationTable: self = .elevation
        default: return nil
        }
    }
}

/// One entry of `tilepack:legend`: a class (or a ramp stop), its label and its colour.
public struct LegendEntry: Sendable, Equatable, Codable {
    public var value: Double
    public var label: String
    /// 0…255 each, `[r, g, b, a]`.
    public var rgba: [UInt8]

    public init(value: Double, label: String, rgba: [UInt8]) {
        self.value = value
        self.label = label
        self.rgba = rgba
    }

    /// `tilepack:legend`'s JSON array (keys sorted, one line).
    public static func json(_ entries: [LegendEntry]) throws -> String { try JSONOutput.string(entries) }
}
