import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a coordinate reference system could not be built from an EPSG code or GeoKeys:
/// `subject` names the code or key when the message leads with it (`EPSG:2056`), `detail` the
/// problem; one line. Built with the factories named after the codes (`CRSError.missingKey(_:)`).
public struct CRSError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// An EPSG code outside tilepack's built-in table.
        public static let unsupportedEPSG = Code("unsupportedEPSG")
        /// A projection method (GeoTIFF ProjCoordTransGeoKey code) tilepack does not implement.
        public static let unsupportedMethod = Code("unsupportedMethod")
        /// GTModelTypeGeoKey is geocentric or unknown.
        public static let unsupportedModelType = Code("unsupportedModelType")
        /// Neither a model type nor a CRS code: nothing says what the coordinates mean.
        public static let missingCRS = Code("missingCRS")
        /// A key the CRS needs is absent (e.g. ProjCoordTrans for a user-defined projection).
        public static let missingKey = Code("missingKey")
        /// A unit, datum, ellipsoid or prime meridian code we do not know.
        public static let unsupportedCode = Code("unsupportedCode")
        /// A key's value is impossible (negative axis, NaN, 1/f below 1 …).
        public static let invalidValue = Code("invalidValue")
        /// A code neither proj.db nor the built-in table holds.
        public static let notInRegistry = Code("notInRegistry")
        /// A proj.db CRS whose projection method tilepack does not compute.
        public static let unsupportedRegistryMethod = Code("unsupportedRegistryMethod")
        /// A proj.db CRS tilepack cannot use for another reason (geocentric, compound, an axis
        /// or unit it cannot apply).
        public static let unsupportedRegistryCRS = Code("unsupportedRegistryCRS")
        /// proj.db itself could not be used: `cause` is the ``CRSRegistryError``.
        public static let registry = Code("registry")
    }

    public let code: Code
    /// The code or key the message leads with, or empty when it reads as one sentence.
    public let subject: String
    public let detail: String
    /// The ``CRSRegistryError`` for ``Code/registry``; not compared by `==`.
    public let cause: (any Error)?

    public init(_ code: Code, subject: String, detail: String, cause: (any Error)? = nil) {
        self.code = code
        self.subject = subject
        self.detail = detail
        self.cause = cause
    }

    public var category: TilePackErrorCategory {
        switch code {
        case .missingCRS, .missingKey, .invalidValue: .invalidInput
        case .registry: (cause as? any TilePackError)?.category ?? .invalidInput
        default: .unsupported
        }
    }

    public static func unsupportedEPSG(_ code: Int) -> CRSError {
        CRSError(
            .unsupportedEPSG, subject: "",
            detail:
                """
                EPSG:\(code) is not in tilepack's CRS table (supported: geographic \
                4326/4269/4258/4283/4674/4267/4322/4019/4035/4047, 3857, 3395, UTM, polar stereographic, 3035, \
                3034, 2154)
                """
        )
    }

    public static func unsupportedMethod(code: Int, name: String) -> CRSError {
        CRSError(
            .unsupportedMethod, subject: "",
            detail: "projection method \(name) (ProjCoordTransGeoKey \(code)) is not supported by tilepack")
    }

    public static func unsupportedModelType(_ t: Int) -> CRSError {
        CRSError(
            .unsupportedModelType, subject: "",
            detail: "GTModelTypeGeoKey \(t) is not supported (need 1 projected or 2 geographic)")
    }

    public static let missingCRS = CRSError(
        .missingCRS, subject: "", detail: "GeoKeys name no CRS: no GTModelType, ProjectedCSType or GeographicType")

    public static func missingKey(_ key: String) -> CRSError {
        CRSError(.missingKey, subject: "", detail: "GeoKey \(key) is required for this CRS but missing")
    }

    public static func unsupportedCode(key: String, code: Int) -> CRSError {
        CRSError(.unsupportedCode, subject: "", detail: "\(key) \(code) is not supported")
    }

    public static func invalidValue(key: String, value: String) -> CRSError {
        CRSError(.invalidValue, subject: "", detail: "GeoKey \(key) has an invalid value \(value)")
    }

    public static func notInRegistry(code: Int, file: String, epsgVersion: String) -> CRSError {
        CRSError(
            .notInRegistry, subject: "",
            detail:
                "EPSG:\(code) is neither in proj.db \(file) (EPSG \(epsgVersion)) nor in tilepack's built-in CRS table")
    }

    public static func unsupportedRegistryMethod(
        code: Int, name: String, method: String, methodCode: String, file: String
    ) -> CRSError {
        CRSError(
            .unsupportedRegistryMethod, subject: "EPSG:\(code) (\(ErrorText.quoted(name)))",
            detail:
                """
                projection method \(ErrorText.quoted(method)) (EPSG method \(methodCode)) is not implemented by \
                tilepack (CRS from proj.db \(file))
                """
        )
    }

    public static func unsupportedRegistryCRS(code: Int, name: String, problem: String, file: String) -> CRSError {
        CRSError(
            .unsupportedRegistryCRS, subject: "EPSG:\(code) (\(ErrorText.quoted(name)))",
            detail: "\(ErrorText.oneLine(problem)) (CRS from proj.db \(file))")
    }

    /// proj.db could not be used: the registry error's own line.
    public static func registry(_ error: CRSRegistryError) -> CRSError {
        CRSError(.registry, subject: error.subject, detail: error.detail, cause: error)
    }
}

/// A coordinate reference system: geographic (lon/lat on a datum) or projected (a map
/// projection of one), with the conversions to and from WGS 84 longitude/latitude.
///
/// ```swift
/// let utm = try CRS(epsg: 32618)
/// let (x, y) = utm.coordinate(lon: -75, lat: 40)   // WGS 84 → UTM 18N metres
/// let (lon, lat) = utm.lonLat(x: x, y: y)
/// ```
/// Construction is O(1) (projection constants precomputed); each conversion is O(1) and
/// allocation-free, so a tiler may call it per output pixel. A point with no image (the
/// pole in mercator) comes back non-finite.
public struct CRS: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable { case geographic, projected }

    public let name: String
    /// The EPSG code when the CRS is a registered one (or built from one).
    public let epsg: Int?
    public let datum: Datum
    /// Unit of geographic coordinates (and of angular GeoKey parameters).
    public let angularUnit: AngularUnit
    /// Unit of projected coordinates.
    public let linearUnit: LinearUnit
    /// Method and parameters (degrees, metres); nil for a geographic CRS.
    public let projectionParameters: ProjectionParameters?
    let projection: Projection?
    /// How the coordinate system orders and signs the projection's output (westing/southing,
    /// a south-west CS); identity for every built-in CRS. See ``AxisMapping``.
    public internal(set) var axes: AxisMapping = .identity
    /// Which source defined the CRS: the built-in table, proj.db, or the file's own GeoKeys.
    public internal(set) var source: CRSSource = .builtin
    /// Code of the geographic CRS this one is based on (itself when geographic), when known:
    /// what a datum transformation is looked up by.
    public internal(set) var geodeticCRSCode: Int? = nil
    /// The EPSG dataset marks the CRS deprecated (it still resolves, as in PROJ; `info` says so).
    public internal(set) var isDeprecated = false
    /// The operation from ``datum`` to WGS 84 chosen from proj.db (see
    /// ``DatumTransformation/best(fromGeodeticCRS:in:gridDirectories:areaOfInterest:)``);
    /// when nil, the datum's GeoKeys TOWGS84 (or none). Set with ``with(datumTransformation:)``.
    public internal(set) var datumTransformation: DatumTransformation?

    public var kind: Kind { projection == nil ? .geographic : .projected }
    /// Set when lon/lat may be off: the datum is treated as WGS 84 (see ``Datum/note``), or
    /// the datum transformation lost accuracy (see ``DatumTransformation/note``).
    public var datumNote: String? {
        if let datumTransformation { return datumTransformation.note }
        return datum.note
    }

    /// A geographic CRS: x is longitude, y latitude, in `angularUnit`.
    public init(geographic name: String, epsg: Int? = nil, datum: Datum, angularUnit: AngularUnit = .degree) {
        self.name = name
        self.epsg = epsg
        self.datum = datum
        self.angularUnit = angularUnit
        self.linearUnit = .metre
        self.projectionParameters = nil
        self.projection = nil
    }

    /// A projected CRS. `parameters` are in degrees and metres whatever `linearUnit` is.
    public init(
        projected name: String, epsg: Int? = nil, datum: Datum, parameters: ProjectionParameters,
        linearUnit: LinearUnit = .metre, angularUnit: AngularUnit = .degree
    ) {
        self.name = name
        self.epsg = epsg
        self.datum = datum
        self.angularUnit = angularUnit
        self.linearUnit = linearUnit
        self.projectionParameters = parameters
        self.projection = Projection(parameters, ellipsoid: datum.ellipsoid)
    }

    // MARK: Between CRS coordinates and the CRS's own geodetic lon/lat (no datum shift)

    /// CRS coordinates → geodetic lon/lat in degrees on this CRS's datum, Greenwich-based.
    public func unproject(x: Double, y: Double) -> (lon: Double, lat: Double) {
        guard let projection else {
            return (angularUnit.degrees(x) + datum.primeMeridian, angularUnit.degrees(y))
        }
        let u = linearUnit.metres
        let n = axes.invert((x * u, y * u))
        let g = projection.inverse(x: n.x, y: n.y)
        return (g.lon * 180 / .pi + datum.primeMeridian, g.lat * 180 / .pi)
    }

    /// Geodetic lon/lat in degrees on this CRS's datum (Greenwich-based) → CRS coordinates.
    public func project(lon: Double, lat: Double) -> (x: Double, y: Double) {
        guard let projection else {
            let r = angularUnit.degrees(1)  // degrees per unit (exactly 1 for degrees)
            return ((lon - datum.primeMeridian) / r, lat / r)
        }
        let p = axes.apply(projection.forward(lon: (lon - datum.primeMeridian) * .pi / 180, lat: lat * .pi / 180))
        let u = linearUnit.metres
        return (p.x / u, p.y / u)
    }

    // MARK: Between CRS coordinates and WGS 84

    /// CRS coordinates → WGS 84 lon/lat degrees (the datum transformation applied, else
    /// TOWGS84 when the datum has one).
    public func lonLat(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let g = unproject(x: x, y: y)
        if let datumTransformation { return datumTransformation.toWGS84(lon: g.lon, lat: g.lat) }
        guard let shift = datum.toWGS84 else { return g }
        let p = Geocentric.fromGeodetic(lon: g.lon * .pi / 180, lat: g.lat * .pi / 180, on: datum.ellipsoid)
        let w = Geocentric.toGeodetic(shift.apply(p), on: .wgs84)
        return (w.lon * 180 / .pi, w.lat * 180 / .pi)
    }

    /// WGS 84 lon/lat degrees → CRS coordinates (the inverse of ``lonLat(x:y:)``).
    public func coordinate(lon: Double, lat: Double) -> (x: Double, y: Double) {
        if let datumTransformation {
            let g = datumTransformation.fromWGS84(lon: lon, lat: lat)
            return project(lon: g.lon, lat: g.lat)
        }
        guard let shift = datum.toWGS84 else { return project(lon: lon, lat: lat) }
        let p = Geocentric.fromGeodetic(lon: lon * .pi / 180, lat: lat * .pi / 180, on: .wgs84)
        let g = Geocentric.toGeodetic(shift.invert(p), on: datum.ellipsoid)
        return project(lon: g.lon * 180 / .pi, lat: g.lat * 180 / .pi)
    }

    /// Metres per CRS unit along the axes at a geodetic latitude (degrees): the linear unit
    /// for projected CRSs; for geographic ones the ellipsoid's meridian and parallel arc per
    /// angular unit (x, y).
    public func metresPerUnit(atLatitude lat: Double) -> (x: Double, y: Double) {
        guard projection == nil else { return (linearUnit.metres, linearUnit.metres) }
        let phi = lat * .pi / 180
        let r = angularUnit.radians ?? .pi / 180
        let el = datum.ellipsoid
        return (
            el.primeVerticalRadius(latitudeRadians: phi) * cos(phi) * r, el.meridionalRadius(latitudeRadians: phi) * r
        )
    }

    /// This CRS on another datum (GeogTOWGS84 or GeographicType keys attached to a registered
    /// projected code); every other property kept, the datum transformation unless `datum`
    /// carries its own TOWGS84. O(1).
    public func replacingDatum(_ datum: Datum) -> CRS {
        var c =
            projectionParameters.map {
                CRS(
                    projected: name, epsg: epsg, datum: datum, parameters: $0, linearUnit: linearUnit,
                    angularUnit: angularUnit)
            } ?? CRS(geographic: name, epsg: epsg, datum: datum, angularUnit: angularUnit)
        c.axes = axes
        c.source = source
        c.geodeticCRSCode = geodeticCRSCode
        c.isDeprecated = isDeprecated
        // A TOWGS84 the file states replaces the registry's operation; without one the
        // registry's operation still applies (dropping it would draw the map metres off).
        c.datumTransformation = datum.toWGS84 == nil ? datumTransformation : nil
        return c
    }

    /// One line for `info`: name, code, method and parameters, datum, ellipsoid, unit.
    public var description: String {
        var s = name
        if let epsg { s += " (EPSG:\(epsg))" }
        if let p = projectionParameters { s += "; \(p)" }
        s += "; datum \(datum.name), ellipsoid \(datum.ellipsoid)"
        if datum.primeMeridian != 0 { s += ", prime meridian \(datum.primeMeridian)°" }
        if let h = datum.toWGS84 {
            s += ", TOWGS84 [\(h.tx), \(h.ty), \(h.tz), \(h.rx), \(h.ry), \(h.rz), \(h.ppm)]"
        }
        if let t = datumTransformation { s += "; datum transformation \(t)" }
        s += "; unit \(projection == nil ? angularUnit.name : linearUnit.name)"
        if axes != .identity { s += "; axes \(axes)" }
        if isDeprecated { s += "; deprecated in the EPSG dataset" }
        return s
    }
}
