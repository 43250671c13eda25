/// One tile of the web-mercator XYZ pyramid (the scheme of OSM, Google and MBTiles' `tiles`
/// view after the row flip): x grows east, y grows SOUTH from the top-left at zoom z.
///
/// TMS rows (y growing north) exist only at the MBTiles boundary: see ``tmsY``.
public struct TileID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Highest zoom we accept: 2^24 tiles a side still fits comfortably in Int and is far
    /// finer (~2 cm/px) than any terrain source.
    public static let maxZoom = 24

    public let z: Int
    public let x: Int
    public let y: Int

    /// Creates a tile id, or nil when the zoom or x/y is outside the pyramid.
    /// Input is checked where it enters, as PMTiles' `zxy_to_tileid` does.
    public init?(z: Int, x: Int, y: Int) {
        guard z >= 0, z <= Self.maxZoom else { return nil }
        let n = 1 << z
        guard x >= 0, x < n, y >= 0, y < n else { return nil }
        self.z = z
        self.x = x
        self.y = y
    }

    /// Trusted construction for arithmetic that is valid by construction (children, parents).
    @usableFromInline
    package init(unchecked z: Int, _ x: Int, _ y: Int) {
        assert(z >= 0 && z <= Self.maxZoom && x >= 0 && y >= 0 && x < (1 << z) && y < (1 << z))
        self.z = z
        self.x = x
        self.y = y
    }

    /// The TMS row MBTiles stores: `2^z − 1 − y`.
    @inlinable
    public var tmsY: Int { (1 << z) - 1 - y }

    /// The tile from an MBTiles (TMS) row.
    public init?(z: Int, x: Int, tmsY: Int) {
        // Checked before the subtraction: rows come from archives, and a crafted huge or
        // negative row must not overflow.
        guard z >= 0, z <= Self.maxZoom, tmsY >= 0, tmsY < (1 << z) else { return nil }
        self.init(z: z, x: x, y: (1 << z) - 1 - tmsY)
    }

    /// The tile one zoom up that contains this one, or nil at zoom 0.
    public var parent: TileID? {
        z == 0 ? nil : TileID(unchecked: z - 1, x >> 1, y >> 1)
    }

    /// The four tiles one zoom down, in order top-left, top-right, bottom-left, bottom-right.
    public var children: [TileID] {
        precondition(z < Self.maxZoom, "no children below the maximum zoom")
        let z1 = z + 1, x0 = x << 1, y0 = y << 1
        return [
            TileID(unchecked: z1, x0, y0), TileID(unchecked: z1, x0 + 1, y0),
            TileID(unchecked: z1, x0, y0 + 1), TileID(unchecked: z1, x0 + 1, y0 + 1),
        ]
    }

    /// Order: by zoom, then row, then column (the order a build writes tiles in).
    public static func < (a: TileID, b: TileID) -> Bool {
        (a.z, a.y, a.x) < (b.z, b.y, b.x)
    }

    public var description: String { "\(z)/\(x)/\(y)" }
}

/// JSON form `{"x", "y", "z"}` (XYZ scheme, y growing south), as `query --json` prints `tile`.
extension TileID: Encodable {
    enum CodingKeys: String, CodingKey { case z, x, y }
}
