import TilePackCore
import TilePackSQLite

/// The queries on one open proj.db: each a primary-key lookup on a prepared statement, with
/// the small shared objects (units, ellipsoids, datums, coordinate systems, geographic CRSs)
/// cached, so a lookup costs a handful of indexed queries and a full listing of every CRS
/// costs two per projected CRS.
///
/// Not thread-safe, like its connection: ``CRSRegistry`` keeps it behind a mutex.
final class ProjDBReader {
    let db: SQLiteConnection
    let path: String
    let epsgVersion: String

    /// An object key: authority and code, codes as text (proj.db's INTEGER_OR_TEXT columns
    /// compare equal to the text form of an integer code).
    struct Key: Hashable, Sendable {
        let authority: String
        let code: String
    }

    struct ProjectedRow {
        let name: String
        let deprecated: Bool
        let cs: Key?
        let geodetic: Key?
        let conversion: Key?
    }

    struct ConversionRow {
        let method: Key?
        let methodName: String
        /// (EPSG parameter code, value, unit) for each parameter slot that is filled.
        let parameters: [(code: Key, value: Double, unit: Key?)]
    }

    struct GeodeticRow {
        let name: String
        let type: String
        let cs: Key?
        let datum: Key?
        let deprecated: Bool
    }

    struct AxisRow {
        let orientation: String
        let unit: Key?
    }

    struct CoordinateSystemRow {
        let type: String
        let axes: [AxisRow]
    }

    private let projectedStmt, conversionStmt, geodeticStmt, datumStmt, ellipsoidStmt: SQLiteStatement
    private let meridianStmt, unitStmt, csStmt, axisStmt, otherKindStmt: SQLiteStatement

    var units: [Key: RegistryUnit?] = [:]
    var coordinateSystems: [Key: CoordinateSystemRow?] = [:]
    var datums: [Key: Result<Datum, CRSError>] = [:]
    /// Geographic CRSs by code, as used for a projected CRS's base (angular unit ignored).
    var geodeticRows: [Key: GeodeticRow?] = [:]

    /// Prepares every statement: a table or column a proj.db lacks is reported here, naming the file.
    init(db: SQLiteConnection, path: String, origin: String, epsgVersion: String) throws(CRSRegistryError) {
        self.db = db
        self.path = path
        self.epsgVersion = epsgVersion
        func prepare(_ sql: String) throws(CRSRegistryError) -> SQLiteStatement {
            do { return try db.prepare(sql) } catch {
                throw .badSchema(
                    path: path, origin: origin, problem: "not a proj.db tilepack can read (\(error.message))")
            }
        }
        projectedStmt = try prepare(
            """
            SELECT name, deprecated, coordinate_system_auth_name, coordinate_system_code,
                   geodetic_crs_auth_name, geodetic_crs_code, conversion_auth_name, conversion_code
            FROM projected_crs WHERE auth_name = ? AND code = ?
            """)
        let params = (1...7).map {
            """
            c.param\($0)_auth_name, c.param\($0)_code, c.param\($0)_value, c.param\($0)_uom_auth_name, \
            c.param\($0)_uom_code
            """
        }
        conversionStmt = try prepare(
            """
            SELECT c.method_auth_name, c.method_code, m.name, \(params.joined(separator: ", "))
            FROM conversion_table c LEFT JOIN conversion_method m ON m.auth_name = c.method_auth_name AND m.code = c.method_code
            WHERE c.auth_name = ? AND c.code = ?
            """)
        geodeticStmt = try prepare(
            """
            SELECT name, type, coordinate_system_auth_name, coordinate_system_code, datum_auth_name, datum_code, deprecated
            FROM geodetic_crs WHERE auth_name = ? AND code = ?
            """)
        datumStmt = try prepare(
            """
            SELECT name, ellipsoid_auth_name, ellipsoid_code, prime_meridian_auth_name, prime_meridian_code
            FROM geodetic_datum WHERE auth_name = ? AND code = ?
            """)
        ellipsoidStmt = try prepare(
            """
            SELECT name, semi_major_axis, uom_auth_name, uom_code, inv_flattening, semi_minor_axis
            FROM ellipsoid WHERE auth_name = ? AND code = ?
            """)
        meridianStmt = try prepare(
            "SELECT name, longitude, uom_auth_name, uom_code FROM prime_meridian WHERE auth_name = ? AND code = ?")
        unitStmt = try prepare("SELECT name, type, conv_factor FROM unit_of_measure WHERE auth_name = ? AND code = ?")
        csStmt = try prepare("SELECT type FROM coordinate_system WHERE auth_name = ? AND code = ?")
        axisStmt = try prepare(
            """
            SELECT orientation, uom_auth_name, uom_code FROM axis
            WHERE coordinate_system_auth_name = ? AND coordinate_system_code = ? ORDER BY coordinate_system_order
            """)
        // Only on the error path: what kind of CRS a code we cannot use is.
        otherKindStmt = try prepare("SELECT table_name, name FROM crs_view WHERE auth_name = ? AND code = ? LIMIT 1")
    }

    // MARK: Rows

    /// Runs `stmt` with `binds` and hands each row to `body`; the statement is reset after.
    private func rows(
        _ stmt: SQLiteStatement, _ binds: [String], _ body: (SQLiteStatement) throws(CRSError) -> Void
    ) throws(CRSError) {
        stmt.reset()
        defer { stmt.reset() }
        do {
            for (i, b) in binds.enumerated() { try stmt.bind(b, at: Int32(i + 1)) }
            while try stmt.step() { try body(stmt) }
        } catch let error as SQLiteError {
            throw .registry(.query(error))
        } catch let error as CRSError {
            throw error
        } catch {
            throw .registry(.query(SQLiteError(code: .error, message: "\(error)", sql: stmt.sql, path: path)))
        }
    }

    private func key(_ s: SQLiteStatement, _ authority: Int32, _ code: Int32) -> Key? {
        guard let a = s.string(at: authority), let c = s.string(at: code) else { return nil }
        return Key(authority: a, code: c)
    }

    func projected(_ k: Key) throws(CRSError) -> ProjectedRow? {
        var row: ProjectedRow?
        try rows(projectedStmt, [k.authority, k.code]) { s in
            row = ProjectedRow(
                name: s.string(at: 0) ?? "", deprecated: s.int(at: 1) != 0, cs: key(s, 2, 3),
                geodetic: key(s, 4, 5), conversion: key(s, 6, 7))
        }
        return row
    }

    func conversion(_ k: Key) throws(CRSError) -> ConversionRow? {
        var row: ConversionRow?
        try rows(conversionStmt, [k.authority, k.code]) { s in
            var parameters: [(code: Key, value: Double, unit: Key?)] = []
            for slot in 0..<7 {
                let base = Int32(3 + slot * 5)
                guard let code = key(s, base, base + 1), !s.isNull(at: base + 2) else { continue }
                parameters.append((code, s.double(at: base + 2), key(s, base + 3, base + 4)))
            }
            row = ConversionRow(
                method: key(s, 0, 1), methodName: s.string(at: 2) ?? "unnamed method", parameters: parameters)
        }
        return row
    }

    func geodetic(_ k: Key) throws(CRSError) -> GeodeticRow? {
        if let cached = geodeticRows[k] { return cached }
        var row: GeodeticRow?
        try rows(geodeticStmt, [k.authority, k.code]) { s in
            row = GeodeticRow(
                name: s.string(at: 0) ?? "", type: s.string(at: 1) ?? "", cs: key(s, 2, 3),
                datum: key(s, 4, 5), deprecated: s.int(at: 6) != 0)
        }
        geodeticRows[k] = row
        return row
    }

    func unit(_ k: Key) throws(CRSError) -> RegistryUnit? {
        if let cached = units[k] { return cached }
        var unit: RegistryUnit?
        try rows(unitStmt, [k.authority, k.code]) { s in
            unit = RegistryUnit(
                authority: k.authority, code: k.code, name: s.string(at: 0) ?? "unit \(k.code)",
                type: s.string(at: 1) ?? "", factor: s.isNull(at: 2) ? nil : s.double(at: 2))
        }
        units[k] = unit
        return unit
    }

    func coordinateSystem(_ k: Key) throws(CRSError) -> CoordinateSystemRow? {
        if let cached = coordinateSystems[k] { return cached }
        var type: String?
        try rows(csStmt, [k.authority, k.code]) { s in type = s.string(at: 0) }
        var axes: [AxisRow] = []
        try rows(axisStmt, [k.authority, k.code]) { s in
            axes.append(AxisRow(orientation: s.string(at: 0) ?? "", unit: key(s, 1, 2)))
        }
        let row = type.map { CoordinateSystemRow(type: $0, axes: axes) }
        coordinateSystems[k] = row
        return row
    }

    /// (name, ellipsoid, prime meridian) keys of a datum row.
    func datumRow(_ k: Key) throws(CRSError) -> (name: String, ellipsoid: Key?, meridian: Key?)? {
        var row: (String, Key?, Key?)?
        try rows(datumStmt, [k.authority, k.code]) { s in row = (s.string(at: 0) ?? "", key(s, 1, 2), key(s, 3, 4)) }
        return row
    }

    func ellipsoidRow(_ k: Key) throws(CRSError) -> (name: String, a: Double, unit: Key?, rf: Double?, b: Double?)? {
        var row: (String, Double, Key?, Double?, Double?)?
        try rows(ellipsoidStmt, [k.authority, k.code]) { s in
            row = (
                s.string(at: 0) ?? "", s.double(at: 1), key(s, 2, 3),
                s.isNull(at: 4) ? nil : s.double(at: 4), s.isNull(at: 5) ? nil : s.double(at: 5)
            )
        }
        return row
    }

    func meridianRow(_ k: Key) throws(CRSError) -> (name: String, longitude: Double, unit: Key?)? {
        var row: (String, Double, Key?)?
        try rows(meridianStmt, [k.authority, k.code]) { s in
            row = (s.string(at: 0) ?? "", s.double(at: 1), key(s, 2, 3))
        }
        return row
    }

    /// The crs_view table and name of a code that is neither projected nor geodetic.
    func otherKind(_ k: Key) throws(CRSError) -> (table: String, name: String)? {
        var row: (String, String)?
        try rows(otherKindStmt, [k.authority, k.code]) { s in row = (s.string(at: 0) ?? "", s.string(at: 1) ?? "") }
        return row
    }

    // MARK: Listing

    /// Every EPSG projected CRS code with its method code (one query).
    func projectedCodes() throws(CRSError) -> [Int] {
        var out: [Int] = []
        let stmt: SQLiteStatement
        do { stmt = try db.prepare("SELECT code FROM projected_crs WHERE auth_name = 'EPSG' ORDER BY code") } catch {
            throw .registry(.query(error))
        }
        try rows(stmt, []) { s in if let c = Int(exactly: s.int(at: 0)), c > 0 { out.append(c) } }
        return out
    }

    /// Every EPSG geographic 2D CRS code (one query).
    func geographicCodes() throws(CRSError) -> [Int] {
        var out: [Int] = []
        let stmt: SQLiteStatement
        do {
            stmt = try db.prepare(
                "SELECT code FROM geodetic_crs WHERE auth_name = 'EPSG' AND type = 'geographic 2D' ORDER BY code")
        } catch {
            throw .registry(.query(error))
        }
        try rows(stmt, []) { s in if let c = Int(exactly: s.int(at: 0)), c > 0 { out.append(c) } }
        return out
    }
}
