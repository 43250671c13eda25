/// A lon/lat rectangle in degrees (WGS 84): the one bounds type of every layer — a source's
/// outline, a tile, an archive's MBTiles `bounds`, a catalog region's box.
///
/// `west ≤ east` always (tilepack refuses regions that cross ±180°). Encodes as the JSON
/// array `[west, south, east, north]`, the order of MBTiles and TileJSON.
///
/// Cost: every operation is O(1).
public struct GeoBounds: Sendable, Hashable, Codable, CustomStringConvertible {
    public var west: Double, south: Double, east: Double, north: Double

    public init(west: Double, south: Double, east: Double, north: Double) {
        self.west = west; self.south = south; self.east = east; self.north = north
    }

    /// The whole web-mercator square: ±180° by ±85.0511°.
    public static let webMercatorWorld = GeoBounds(
        west: -180, south: -WebMercator.maxLatitude,
        east: 180, north: WebMercator.maxLatitude)

    /// Parses MBTiles' "w,s,e,n"; nil unless four finite numbers with w ≤ e and s ≤ n.
    public init?(metadataValue: String) {
        let parts = metadataValue.split(separator: ",").map { Double($0.trimmingWhitespace()) }
        guard parts.count == 4, let w = parts[0], let s = parts[1], let e = parts[2], let n = parts[3] else {
            return nil
        }
        self.init(validating: w, s, e, n)
    }

    /// nil unless four finite numbers with w ≤ e and s ≤ n.
    public init?(validating w: Double, _ s: Double, _ e: Double, _ n: Double) {
        guard w.isFinite, s.isFinite, e.isFinite, n.isFinite, w <= e, s <= n else { return nil }
        self.init(west: w, south: s, east: e, north: n)
    }

    /// MBTiles' "w,s,e,n".
    public var metadataValue: String { "\(west),\(south),\(east),\(north)" }

    public var description: String { metadataValue }

    public var centerLon: Double { (west + east) / 2 }
    public var centerLat: Double { (south + north) / 2 }

    /// The smallest rectangle holding both.
    public func union(_ other: GeoBounds) -> GeoBounds {
        GeoBounds(
            west: min(west, other.west), south: min(south, other.south),
            east: max(east, other.east), north: max(north, other.north))
    }

    /// Whether the point lies inside or on the edge.
    public func contains(lon: Double, lat: Double) -> Bool {
        lon >= west && lon <= east && lat >= south && lat <= north
    }

    /// Whether the two rectangles share more than an edge.
    public func intersects(_ other: GeoBounds) -> Bool {
        west < other.east && other.west < east && south < other.north && other.south < north
    }

    public init(from decoder: any Decoder) throws {
        var c = try decoder.unkeyedContainer()
        let w = try c.decode(Double.self), s = try c.decode(Double.self)
        let e = try c.decode(Double.self), n = try c.decode(Double.self)
        guard c.isAtEnd, let b = GeoBounds(validating: w, s, e, n) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "bounds must be [west, south, east, north], finite, west ≤ east, south ≤ north"))
        }
        self = b
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.unkeyedContainer()
        try c.encode(west); try c.encode(south); try c.encode(east); try c.encode(north)
    }
}
