import TilePackCore
import TilePackSQLite

/// The EPSG registry: CRS definitions from PROJ's own database, proj.db, read with
/// tilepack's SQLite layer, with tilepack's built-in table (``CRS/init(epsg:)``) answering
/// the codes it holds and standing in for proj.db when there is none.
///
/// ```swift
/// let registry = try CRSRegistry.locate(explicitPath: nil, environment: env)
/// let bng = try registry.crs(epsg: 27700)       // OSGB36 / British National Grid
/// let (e, n) = bng.project(lon: -2, lat: 54)      // on OSGB36, always_xy order
/// ```
///
/// Resolution order for a code: the built-in table (the CRSs terrain comes in, checked
/// against PROJ, the same answer with or without proj.db), then proj.db. Deprecated EPSG
/// CRSs resolve, as in PROJ (old files carry their codes), with ``CRS/isDeprecated`` set.
///
/// Thread safety: Sendable; one connection behind a mutex, lookups cached by code, so
/// repeated lookups (a mosaic of 1,000 files in one CRS) cost one dictionary hit each.
public final class CRSRegistry: Sendable {
    /// Where codes outside the built-in table come from: `.projDB(path:epsgVersion:)` or `.builtin`.
    public let source: CRSSource
    private let session: Session?
    /// Where horizontal shift grids are looked for: proj.db's folder, then `PROJ_DATA`/`PROJ_LIB`.
    let gridDirectories: [String]

    /// One open proj.db, its reader and the CRSs already resolved.
    private final class Session: Sendable {
        struct State {
            let reader: ProjDBReader
            var cache: [Int: Result<CRS?, CRSError>] = [:]
        }
        let state: Locked<State>
        init(reader: sending ProjDBReader) { state = Locked(State(reader: reader)) }
    }

    /// The built-in table only (no proj.db).
    public static let builtin = CRSRegistry()

    private init() {
        source = .builtin
        session = nil
        gridDirectories = []
    }

    /// The registry from the proj.db at `path`, checked before use (see ``ProjDBFile``).
    /// `origin` names how the path was chosen, for error messages.
    /// Cost: one header read, one metadata query and ten statement preparations (~1 ms).
    /// - Throws: ``CRSRegistryError`` naming the file: missing, not a regular file (a FIFO is
    ///   never opened for reading by SQLite), not SQLite, truncated, another layout version,
    ///   no EPSG.VERSION, or tables the reader needs missing.
    /// `environment` supplies `PROJ_DATA`/`PROJ_LIB` for the grid search path.
    public init(
        projDB path: String, origin: String = "--proj-db", environment: [String: String] = [:]
    ) throws(CRSRegistryError) {
        let (db, version) = try ProjDBFile.openDatabase(path: path, origin: origin)
        let reader = try ProjDBReader(db: db, path: path, origin: origin, epsgVersion: version)
        source = .projDB(path: path, epsgVersion: version)
        session = Session(reader: reader)
        gridDirectories = DatumTransformation.gridDirectories(projDBPath: path, environment: environment)
    }

    /// The registry found the way PROJ finds its database (``ProjDBLocation``): `explicitPath`
    /// (`--proj-db`), `PROJ_DATA`, `PROJ_LIB`, the system path; else ``builtin``.
    /// - Throws: ``CRSRegistryError`` for a path or variable naming a missing or bad proj.db.
    public static func locate(
        explicitPath: String?, environment: [String: String],
        systemPath: String = ProjDBLocation.systemPath
    ) throws(CRSRegistryError) -> CRSRegistry {
        let location = try ProjDBLocation.resolve(
            explicitPath: explicitPath, environment: environment, systemPath: systemPath)
        guard let path = location.path else { return .builtin }
        return try CRSRegistry(projDB: path, origin: location.origin, environment: environment)
    }

    /// The CRS for an EPSG code: the built-in table's, else proj.db's.
    /// Cost: O(1) for a built-in or already resolved code; else a handful of indexed queries.
    /// - Throws: ``CRSError/unsupportedEPSG(_:)`` (no proj.db) or ``CRSError/notInRegistry(code:file:epsgVersion:)``
    ///   for an unknown code; ``CRSError/unsupportedRegistryMethod(code:name:method:methodCode:file:)``
    ///   for a method tilepack lacks; ``CRSError/unsupportedRegistryCRS(code:name:problem:file:)``
    ///   for a geocentric, compound, vertical … CRS or one whose axes or units it cannot apply.
    public func crs(epsg code: Int) throws(CRSError) -> CRS {
        if let crs = try registered(epsg: code) { return crs }
        if case .projDB(let path, let version) = source {
            throw .notInRegistry(code: code, file: path, epsgVersion: version)
        }
        throw .unsupportedEPSG(code)
    }

    /// The CRS for a code, nil when neither the table nor proj.db has it (GeoKeys that spell
    /// the projection out may still define one).
    func registered(epsg code: Int) throws(CRSError) -> CRS? {
        if let builtin = try? CRS(epsg: code) { return try withProjDBDatumTransformation(builtin, code: code) }
        guard let session else { return nil }
        let result = session.state.withLock { state -> Result<CRS?, CRSError> in
            if let cached = state.cache[code] { return cached }
            let r: Result<CRS?, CRSError>
            do throws(CRSError) {
                r = .success(
                    try state.reader.crs(epsg: code).map { crs throws(CRSError) in
                        try Self.attachDatumTransformation(
                            crs, code: code, db: state.reader.db, gridDirectories: gridDirectories)
                    })
            } catch { r = .failure(error) }
            // An I/O failure may pass; a definition (or its absence) will not change.
            if case .failure(let e) = r, e.code == .registry {} else { state.cache[code] = r }
            return r
        }
        return try result.get()
    }

    /// A built-in CRS on a datum the table gives no shift (NAD27, Tokyo …) with proj.db's
    /// operations to WGS 84, as a proj.db CRS gets them: the same definition, and NAD27 UTM
    /// no longer treated as WGS 84 (up to ~200 m off) when PROJ's database is at hand.
    /// Others, and every CRS without proj.db, come back as they are.
    /// Cost: O(1) after the first lookup of a code (cached with the others).
    private func withProjDBDatumTransformation(_ builtin: CRS, code: Int) throws(CRSError) -> CRS {
        guard let session, builtin.datumTransformation == nil, builtin.datum.toWGS84 == nil,
            !builtin.datum.isWGS84Compatible, builtin.datum.epsg != 6326
        else { return builtin }
        let result = session.state.withLock { state -> Result<CRS?, CRSError> in
            if let cached = state.cache[code] { return cached }
            let r: Result<CRS?, CRSError>
            do throws(CRSError) {
                var crs = builtin
                if crs.kind == .projected {
                    let row = try state.reader.projected(.init(authority: "EPSG", code: String(code)))
                    crs.geodeticCRSCode = row?.geodetic.flatMap { $0.authority == "EPSG" ? Int($0.code) : nil }
                } else {
                    crs.geodeticCRSCode = code
                }
                r = .success(
                    try Self.attachDatumTransformation(
                        crs, code: code, db: state.reader.db, gridDirectories: gridDirectories))
            } catch { r = .failure(error) }
            if case .failure(let e) = r, e.code == .registry {} else { state.cache[code] = r }
            return r
        }
        return try result.get() ?? builtin
    }

    /// `crs` with the best operation proj.db lists from its datum to WGS 84 that tilepack can
    /// apply (``DatumTransformation/best(fromGeodeticCRS:in:gridDirectories:areaOfInterest:)``).
    /// - Throws: ``CRSError/unsupportedRegistryCRS(code:name:problem:file:)`` naming the grid
    ///   or proj.db when a listed grid is corrupt or the lookup fails (never a silent Helmert).
    private static func attachDatumTransformation(
        _ crs: CRS, code: Int, db: SQLiteConnection,
        gridDirectories: [String]
    ) throws(CRSError) -> CRS {
        guard let base = crs.geodeticCRSCode else { return crs }
        do {
            guard let t = try DatumTransformation.best(fromGeodeticCRS: base, in: db, gridDirectories: gridDirectories)
            else {
                return crs
            }
            return crs.with(datumTransformation: t)
        } catch {
            throw .unsupportedRegistryCRS(
                code: code, name: crs.name,
                problem: "its datum transformation cannot be applied: \(error)", file: db.path)
        }
    }

    /// A projected CRS as proj.db defines it, whether or not tilepack computes its method:
    /// what a check compares, and what `--describe` cannot show for a method tilepack lacks.
    public struct ProjectedDefinition: Sendable, Equatable {
        public let code: Int
        public let name: String
        public let methodCode: Int
        public let methodName: String
        /// EPSG parameter code → value in degrees, metres or unity (units converted exactly).
        public let parameters: [Int: Double]
        /// The coordinate system's unit.
        public let linearUnit: LinearUnit
        /// From the method's output to PROJ's always_xy order and signs.
        public let axes: AxisMapping
        public let deprecated: Bool
    }

    /// proj.db's definition of projected CRS `code`; nil with no proj.db or no such projected CRS.
    /// Cost: a handful of indexed queries.
    public func projectedDefinition(epsg code: Int) throws(CRSError) -> ProjectedDefinition? {
        guard let session else { return nil }
        return try session.state.withLock { state throws(CRSError) -> ProjectedDefinition? in
            let key = ProjDBReader.Key(authority: "EPSG", code: String(code))
            guard let row = try state.reader.projected(key) else { return nil }
            return try state.reader.definition(code: code, row)
        }
    }

    /// Runs `body` on the open proj.db connection (for datum transformation lookups); nil
    /// for the built-in registry. The connection must not escape `body`.
    package func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T? {
        guard let session else { return nil }
        return try session.state.withLock { state throws -> T in try body(state.reader.db) }
    }

    /// One code `tilepack project --list-codes` prints.
    public struct Entry: Sendable, Equatable, Encodable {
        public let code: Int
        public let name: String
        /// The EPSG method name; nil for a geographic CRS.
        public let method: String?
        /// "builtin" or "proj.db".
        public let source: String
        public let deprecated: Bool

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(code, forKey: .code)
            try c.encode(name, forKey: .name)
            if let method { try c.encode(method, forKey: .method) } else { try c.encodeNil(forKey: .method) }
            try c.encode(source, forKey: .source)
            try c.encode(deprecated, forKey: .deprecated)
        }

        enum CodingKeys: String, CodingKey { case code, name, method, source, deprecated }
    }

    /// Every code ``crs(epsg:)`` accepts, ascending: the built-in table's, then proj.db's
    /// projected CRSs whose method tilepack computes and whose axes and units it applies,
    /// and its geographic 2D CRSs (deprecated ones included, flagged). Each is resolved
    /// exactly as a lookup would, so the list cannot promise a code a lookup refuses.
    /// Cost: one pass over proj.db on one connection (two queries per projected CRS, shared
    /// datums and coordinate systems cached); the resolved CRSs are not kept.
    /// - Throws: ``CRSError/registry(_:)`` when proj.db fails mid-way (never a partial list).
    public func acceptedCodes() throws(CRSError) -> [Entry] {
        var entries: [Int: Entry] = [:]
        for code in CRS.supportedEPSGCodes {
            guard let crs = try? CRS(epsg: code) else { continue }
            entries[code] = Entry(
                code: code, name: crs.name, method: crs.projectionParameters?.method.rawValue,
                source: CRSSource.builtin.kind, deprecated: false)
        }
        if let session {
            let found = try session.state.withLock { state throws(CRSError) -> [Entry] in
                var out: [Entry] = []
                let reader = state.reader
                for code in try reader.projectedCodes() + reader.geographicCodes() where entries[code] == nil {
                    let crs: CRS?
                    do throws(CRSError) { crs = try reader.crs(epsg: code) } catch {
                        if error.code == .registry { throw error }
                        continue
                    }
                    guard let crs else { continue }
                    out.append(
                        Entry(
                            code: code, name: crs.name, method: crs.projectionParameters?.method.rawValue,
                            source: crs.source.kind, deprecated: crs.isDeprecated))
                }
                return out
            }
            for e in found { entries[e.code] = e }
        }
        return entries.values.sorted { $0.code < $1.code }
    }
}
