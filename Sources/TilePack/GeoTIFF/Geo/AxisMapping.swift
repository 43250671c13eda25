import TilePackCore

/// How a projected CRS's coordinate system orders and signs the projection's output.
///
/// A ``Projection`` returns (x, y) with x along the east–west axis and y along the
/// north–south one, signed as its EPSG method defines them: most methods give easting and
/// northing, Transverse Mercator (South Orientated) and Krovak give westing and southing. The
/// CRS's coordinate system may name other directions (Cassini on a south/west CS, EPSG:8044)
/// or another order (Krovak EPSG:2065 is southing, westing). The mapping turns the method's
/// output into the CRS's coordinates in the order PROJ's `proj_normalize_for_visualization`
/// ("always_xy") and GDAL's traditional GIS order give them, which is also the order a
/// GeoTIFF's geotransform uses:
/// - a (north, east) CS is swapped to (east, north) — 27700 no, 3006/2193/31467 yes;
/// - any other order is kept: (south, west) stays (southing, westing) — PROJ prints
///   EPSG:2065 that way, and `gdaltransform` agrees;
/// - an axis pointing the other way from the method's output negates it;
/// - polar CSs whose axes run along meridians ("North along 90°E") keep the method's
///   (easting, northing), as PROJ does for 3031 and, after normalising, for UPS 32661.
///
/// Invariant: ``invert(_:)`` is the exact inverse of ``apply(_:)`` (swaps and negations only).
/// Cost: O(1), two compares and at most two negations, no allocation.
public struct AxisMapping: Sendable, Equatable, CustomStringConvertible {
    /// Negate the method's x (east–west) value.
    public var negateX: Bool
    /// Negate the method's y (north–south) value.
    public var negateY: Bool
    /// Output (y, x) instead of (x, y), after the negations.
    public var swap: Bool

    public init(negateX: Bool = false, negateY: Bool = false, swap: Bool = false) {
        self.negateX = negateX
        self.negateY = negateY
        self.swap = swap
    }

    public static let identity = AxisMapping()

    /// Method output (x east–west, y north–south, in the method's signs) → CRS coordinates.
    @inlinable
    public func apply(_ p: (x: Double, y: Double)) -> (x: Double, y: Double) {
        let x = negateX ? -p.x : p.x
        let y = negateY ? -p.y : p.y
        return swap ? (y, x) : (x, y)
    }

    /// CRS coordinates → method input for the inverse projection.
    @inlinable
    public func invert(_ c: (x: Double, y: Double)) -> (x: Double, y: Double) {
        let (x, y) = swap ? (c.y, c.x) : (c.x, c.y)
        return (negateX ? -x : x, negateY ? -y : y)
    }

    /// e.g. "(-y, -x)": which method output each CRS coordinate is.
    public var description: String {
        let x = (negateX ? "-" : "") + "x", y = (negateY ? "-" : "") + "y"
        return swap ? "(\(y), \(x))" : "(\(x), \(y))"
    }
}

/// Where a ``CRS`` came from: tilepack's built-in table, PROJ's EPSG database, or the
/// GeoKeys of the file itself (a user-defined CRS).
public enum CRSSource: Sendable, Equatable, CustomStringConvertible {
    case builtin
    /// proj.db at `path`, holding EPSG dataset `epsgVersion` (e.g. "v10.076").
    case projDB(path: String, epsgVersion: String)
    case geoKeys

    /// `info`'s "crs source:" line, e.g. "proj.db /usr/share/proj/proj.db (EPSG v10.076)".
    public var description: String {
        switch self {
        case .builtin: "built-in table"
        case .projDB(let path, let version): "proj.db \(path) (EPSG \(version))"
        case .geoKeys: "the file's GeoKeys (user-defined)"
        }
    }

    /// The JSON `kind`: "builtin", "proj.db" or "geokeys".
    public var kind: String {
        switch self {
        case .builtin: "builtin"
        case .projDB: "proj.db"
        case .geoKeys: "geokeys"
        }
    }
}
