import TilePackCore
/// The GeoTIFF key directory (tag 34735) with its double (34736) and ASCII (34737)
/// parameters resolved, as the file states them: no interpretation of CRSs here (that is
/// Geo's job), so that `info` can show raw keys and Geo can build a CRS from them.
public struct GeoKeyDirectory: Sendable, Equatable {
    /// One key's value, typed by where the GeoTIFF spec stores it.
    public enum Value: Sendable, Equatable {
        /// Values stored inline in the directory (TIFFTagLocation 0) or in the directory tag.
        case shorts([UInt16])
        /// Values from GeoDoubleParamsTag.
        case doubles([Double])
        /// A string from GeoAsciiParamsTag, with the trailing '|' removed.
        case ascii(String)
    }

    /// KeyDirectoryVersion, KeyRevision, MinorRevision (normally 1, 1, 0 or 1, 1, 1).
    public var version: (UInt16, UInt16, UInt16) { (versionParts[0], versionParts[1], versionParts[2]) }
    /// Storage for ``version`` (tuples are not Equatable).
    public var versionParts: [UInt16]
    /// Keys in the order the file lists them.
    public var entries: [(id: UInt16, value: Value)] { keys.compactMap { id in values[id].map { (id, $0) } } }

    private var keys: [UInt16]
    private var values: [UInt16: Value]

    public init(version: [UInt16] = [1, 1, 0], entries: [(UInt16, Value)] = []) {
        self.versionParts = version.count == 3 ? version : [1, 1, 0]
        self.keys = []
        self.values = [:]
        for (id, value) in entries { self[id] = value }
    }

    /// The value of a key, or nil. Setting appends a new key or replaces an existing one.
    public subscript(id: UInt16) -> Value? {
        get { values[id] }
        set {
            if let newValue {
                if values.updateValue(newValue, forKey: id) == nil { keys.append(id) }
            } else if values.removeValue(forKey: id) != nil {
                keys.removeAll { $0 == id }
            }
        }
    }

    /// A SHORT key's single value (most keys: model type, EPSG codes, units).
    public func short(_ id: UInt16) -> UInt16? {
        if case .shorts(let v)? = values[id], let first = v.first { return first }
        return nil
    }

    /// A DOUBLE key's first value (projection parameters, ellipsoid axes).
    public func double(_ id: UInt16) -> Double? {
        if case .doubles(let v)? = values[id], let first = v.first { return first }
        return nil
    }

    /// An ASCII key's text (citations).
    public func ascii(_ id: UInt16) -> String? {
        if case .ascii(let s)? = values[id] { return s }
        return nil
    }

    public static func == (a: GeoKeyDirectory, b: GeoKeyDirectory) -> Bool {
        a.versionParts == b.versionParts && a.keys == b.keys && a.values == b.values
    }
}

/// GeoKey ids from the GeoTIFF 1.1 specification (OGC 19-008r4), named as the spec names
/// them so `info` can print them the way GDAL's listgeo does.
public enum GeoKey {
    public static let gtModelType: UInt16 = 1024
    public static let gtRasterType: UInt16 = 1025
    public static let gtCitation: UInt16 = 1026
    public static let geographicType: UInt16 = 2048
    public static let geogCitation: UInt16 = 2049
    public static let geogGeodeticDatum: UInt16 = 2050
    public static let geogPrimeMeridian: UInt16 = 2051
    public static let geogLinearUnits: UInt16 = 2052
    public static let geogLinearUnitSize: UInt16 = 2053
    public static let geogAngularUnits: UInt16 = 2054
    public static let geogAngularUnitSize: UInt16 = 2055
    public static let geogEllipsoid: UInt16 = 2056
    public static let geogSemiMajorAxis: UInt16 = 2057
    public static let geogSemiMinorAxis: UInt16 = 2058
    public static let geogInvFlattening: UInt16 = 2059
    public static let geogAzimuthUnits: UInt16 = 2060
    public static let geogPrimeMeridianLong: UInt16 = 2061
    public static let geogTOWGS84: UInt16 = 2062
    public static let projectedCSType: UInt16 = 3072
    public static let pcsCitation: UInt16 = 3073
    public static let projection: UInt16 = 3074
    public static let projCoordTrans: UInt16 = 3075
    public static let projLinearUnits: UInt16 = 3076
    public static let projLinearUnitSize: UInt16 = 3077
    public static let projStdParallel1: UInt16 = 3078
    public static let projStdParallel2: UInt16 = 3079
    public static let projNatOriginLong: UInt16 = 3080
    public static let projNatOriginLat: UInt16 = 3081
    public static let projFalseEasting: UInt16 = 3082
    public static let projFalseNorthing: UInt16 = 3083
    public static let projFalseOriginLong: UInt16 = 3084
    public static let projFalseOriginLat: UInt16 = 3085
    public static let projFalseOriginEasting: UInt16 = 3086
    public static let projFalseOriginNorthing: UInt16 = 3087
    public static let projCenterLong: UInt16 = 3088
    public static let projCenterLat: UInt16 = 3089
    public static let projCenterEasting: UInt16 = 3090
    public static let projCenterNorthing: UInt16 = 3091
    public static let projScaleAtNatOrigin: UInt16 = 3092
    public static let projScaleAtCenter: UInt16 = 3093
    public static let projAzimuthAngle: UInt16 = 3094
    public static let projStraightVertPoleLong: UInt16 = 3095
    public static let projRectifiedGridAngle: UInt16 = 3096
    public static let verticalCSType: UInt16 = 4096
    public static let verticalCitation: UInt16 = 4097
    public static let verticalDatum: UInt16 = 4098
    public static let verticalUnits: UInt16 = 4099

    /// The spec's name for a key id, or "Key<id>" for unknown ids.
    public static func name(_ id: UInt16) -> String {
        names[id] ?? "Key\(id)"
    }

    private static let names: [UInt16: String] = [
        1024: "GTModelType", 1025: "GTRasterType", 1026: "GTCitation",
        2048: "GeographicType", 2049: "GeogCitation", 2050: "GeogGeodeticDatum",
        2051: "GeogPrimeMeridian", 2052: "GeogLinearUnits", 2053: "GeogLinearUnitSize",
        2054: "GeogAngularUnits", 2055: "GeogAngularUnitSize", 2056: "GeogEllipsoid",
        2057: "GeogSemiMajorAxis", 2058: "GeogSemiMinorAxis", 2059: "GeogInvFlattening",
        2060: "GeogAzimuthUnits", 2061: "GeogPrimeMeridianLong", 2062: "GeogTOWGS84",
        3072: "ProjectedCSType", 3073: "PCSCitation", 3074: "Projection",
        3075: "ProjCoordTrans", 3076: "ProjLinearUnits", 3077: "ProjLinearUnitSize",
        3078: "ProjStdParallel1", 3079: "ProjStdParallel2", 3080: "ProjNatOriginLong",
        3081: "ProjNatOriginLat", 3082: "ProjFalseEasting", 3083: "ProjFalseNorthing",
        3084: "ProjFalseOriginLong", 3085: "ProjFalseOriginLat", 3086: "ProjFalseOriginEasting",
        3087: "ProjFalseOriginNorthing", 3088: "ProjCenterLong", 3089: "ProjCenterLat",
        3090: "ProjCenterEasting", 3091: "ProjCenterNorthing", 3092: "ProjScaleAtNatOrigin",
        3093: "ProjScaleAtCenter", 3094: "ProjAzimuthAngle", 3095: "ProjStraightVertPoleLong",
        3096: "ProjRectifiedGridAngle",
        4096: "VerticalCSType", 4097: "VerticalCitation", 4098: "VerticalDatum", 4099: "VerticalUnits",
    ]
}

/// GTRasterTypeGeoKey: whether a pixel's georeferenced coordinate is its corner (area) or
/// its centre (point). GDAL shifts PixelIsPoint geotransforms by half a pixel.
public enum RasterType: String, Sendable, Equatable {
    case pixelIsArea = "Area"
    case pixelIsPoint = "Point"
}

/// An affine pixel → model transform in GDAL's order:
/// `X = c0 + col*c1 + row*c2`, `Y = c3 + col*c4 + row*c5`, for the pixel CORNER convention
/// (PixelIsPoint files are already shifted by half a pixel, as GDAL does by default).
public struct GeoTransform: Sendable, Equatable {
    public var coefficients: [Double]

    public init(_ coefficients: [Double]) {
        precondition(coefficients.count == 6, "a geotransform has 6 coefficients")
        self.coefficients = coefficients
    }

    /// Model coordinates of a (fractional) pixel position.
    @inlinable
    public func apply(col: Double, row: Double) -> (x: Double, y: Double) {
        let c = coefficients
        return (c[0] + col * c[1] + row * c[2], c[3] + col * c[4] + row * c[5])
    }

    /// The inverse transform, or nil when the matrix is singular.
    public func inverted() -> GeoTransform? {
        let c = coefficients
        let det = c[1] * c[5] - c[2] * c[4]
        guard det != 0, det.isFinite else { return nil }
        let i1 = c[5] / det, i2 = -c[2] / det, i4 = -c[4] / det, i5 = c[1] / det
        return GeoTransform([-(i1 * c[0] + i2 * c[3]), i1, i2, -(i4 * c[0] + i5 * c[3]), i4, i5])
    }
}
