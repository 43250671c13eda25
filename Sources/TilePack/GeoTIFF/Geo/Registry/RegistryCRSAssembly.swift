import TilePackCore

/// Turning proj.db rows into a ``CRS``: method and parameters (units converted exactly),
/// base geographic CRS, datum, ellipsoid, prime meridian, the coordinate system's unit and
/// axis directions (``AxisMapping``).
extension ProjDBReader {
    /// The CRS for an EPSG code, or nil when proj.db has no CRS with that code.
    /// Cost: for a projected CRS about ten primary-key queries the first time its datum and
    /// coordinate system are seen, two after (they are cached).
    /// - Throws: ``CRSError`` naming the code, the problem and this file.
    func crs(epsg code: Int) throws(CRSError) -> CRS? {
        let key = Key(authority: "EPSG", code: String(code))
        if let row = try projected(key) { return try projectedCRS(code: code, row) }
        if let row = try geodetic(key) { return try geographicCRS(code: code, row) }
        if let other = try otherKind(key) {
            let kind = other.table.hasSuffix("_crs") ? String(other.table.dropLast(4)) : other.table
            throw .unsupportedRegistryCRS(
                code: code, name: other.name,
                problem: "a \(kind) CRS; tilepack places rasters in projected or geographic 2D CRSs only", file: path)
        }
        return nil
    }

    private func unsupported(_ code: Int, _ name: String, _ problem: String) -> CRSError {
        .unsupportedRegistryCRS(code: code, name: name, problem: problem, file: path)
    }

    /// A projected CRS as proj.db defines it, whether or not tilepack computes its method.
    func definition(code: Int, _ row: ProjectedRow) throws(CRSError) -> CRSRegistry.ProjectedDefinition {
        guard let convKey = row.conversion, let conv = try conversion(convKey) else {
            throw unsupported(code, row.name, "defined by a PROJ string or WKT, not an EPSG conversion")
        }
        guard let methodKey = conv.method, methodKey.authority == "EPSG", let methodCode = Int(methodKey.code) else {
            throw .unsupportedRegistryMethod(
                code: code, name: row.name, method: conv.methodName,
                methodCode: conv.method?.code ?? "none", file: path)
        }
        var values: [Int: Double] = [:]
        for p in conv.parameters {
            guard p.code.authority == "EPSG", let pc = Int(p.code.code) else {
                throw unsupported(
                    code, row.name, "parameter \(p.code.authority):\(p.code.code) is not an EPSG parameter")
            }
            guard let uk = p.unit, let u = try self.unit(uk), let v = u.parameterValue(p.value) else {
                throw unsupported(
                    code, row.name,
                    """
                    parameter \(pc) is in unit \(p.unit.map { "\($0.authority):\($0.code)" } ?? "none"), which \
                    tilepack cannot convert
                    """
                )
            }
            values[pc] = v
        }
        guard let csKey = row.cs, let cs = try coordinateSystem(csKey), cs.type == "Cartesian", cs.axes.count >= 2
        else {
            throw unsupported(code, row.name, "its coordinate system is not a 2D Cartesian one")
        }
        let (linear, axes) = try projectedAxes(cs, methodCode: methodCode, code: code, name: row.name)
        return CRSRegistry.ProjectedDefinition(
            code: code, name: row.name, methodCode: methodCode, methodName: conv.methodName,
            parameters: values, linearUnit: linear, axes: axes, deprecated: row.deprecated)
    }

    func projectedCRS(code: Int, _ row: ProjectedRow) throws(CRSError) -> CRS {
        let def = try definition(code: code, row)
        guard let method = ProjectionMethod(epsgMethodCode: def.methodCode) else {
            throw .unsupportedRegistryMethod(
                code: code, name: row.name, method: def.methodName,
                methodCode: String(def.methodCode), file: path)
        }
        let (values, linear, axes) = (def.parameters, def.linearUnit, def.axes)
        let parameters: ProjectionParameters
        do { parameters = try ProjectionParameters(method: method, epsgParameters: values) } catch {
            throw unsupported(code, row.name, "method \(method.rawValue): \(error.description)")
        }
        guard let baseKey = row.geodetic, let base = try geodetic(baseKey) else {
            throw unsupported(code, row.name, "no base geographic CRS")
        }
        guard base.type == "geographic 2D" || base.type == "geographic 3D", let datumKey = base.datum else {
            throw unsupported(code, row.name, "its base CRS \(baseKey.code) is \(base.type), not geographic")
        }
        let datum = try self.datum(datumKey, crs: code, name: row.name)
        var crs = CRS(projected: row.name, epsg: code, datum: datum, parameters: parameters, linearUnit: linear)
        crs.axes = axes
        crs.source = .projDB(path: path, epsgVersion: epsgVersion)
        crs.geodeticCRSCode = baseKey.authority == "EPSG" ? Int(baseKey.code) : nil
        crs.isDeprecated = row.deprecated
        return crs
    }

    func geographicCRS(code: Int, _ row: GeodeticRow) throws(CRSError) -> CRS {
        guard row.type == "geographic 2D" else {
            throw unsupported(code, row.name, "a \(row.type) CRS; tilepack reads geographic 2D (lon/lat) rasters only")
        }
        guard let datumKey = row.datum else {
            throw unsupported(code, row.name, "no datum (defined by a PROJ string or WKT)")
        }
        let datum = try self.datum(datumKey, crs: code, name: row.name)
        guard let csKey = row.cs, let cs = try coordinateSystem(csKey), cs.type == "ellipsoidal", cs.axes.count == 2
        else {
            throw unsupported(code, row.name, "its coordinate system is not a 2D ellipsoidal one")
        }
        let directions = Set(cs.axes.map { $0.orientation.lowercased() })
        guard directions == ["north", "east"] else {
            throw unsupported(
                code, row.name,
                """
                axes \(cs.axes.map(\.orientation).joined(separator: "/")); tilepack reads latitude north, \
                longitude east
                """
            )
        }
        guard let uk = cs.axes[0].unit, cs.axes[1].unit == uk, let u = try self.unit(uk), let angular = u.angular,
            angular.radians != nil
        else {
            throw unsupported(
                code, row.name, "its axes' unit \(cs.axes[0].unit?.code ?? "none") is not an angle tilepack can scale")
        }
        // Always (longitude, latitude) whatever the CS order: PROJ's always_xy, GDAL's GIS order.
        var crs = CRS(geographic: row.name, epsg: code, datum: datum, angularUnit: angular)
        crs.source = .projDB(path: path, epsgVersion: epsgVersion)
        crs.geodeticCRSCode = code
        crs.isDeprecated = row.deprecated
        return crs
    }

    /// Datum with its ellipsoid (in metres) and prime meridian (in Greenwich degrees); cached.
    func datum(_ key: Key, crs code: Int, name: String) throws(CRSError) -> Datum {
        if let cached = datums[key] { return try cached.get() }
        let result: Result<Datum, CRSError>
        do { result = .success(try buildDatum(key, crs: code, name: name)) } catch { result = .failure(error) }
        datums[key] = result
        return try result.get()
    }

    private func buildDatum(_ key: Key, crs code: Int, name: String) throws(CRSError) -> Datum {
        guard let d = try datumRow(key) else { throw unsupported(code, name, "datum \(key.code) is missing") }
        guard let ek = d.ellipsoid, let e = try ellipsoidRow(ek) else {
            throw unsupported(code, name, "datum \(ErrorText.quoted(d.name)) has no ellipsoid")
        }
        guard let uk = e.unit, let u = try self.unit(uk), let metres = u.linear?.metres else {
            throw unsupported(code, name, "ellipsoid \(ErrorText.quoted(e.name)) has no length unit")
        }
        let a = e.a * metres
        let ellipsoidCode = ek.authority == "EPSG" ? Int(ek.code) : nil
        let ellipsoid: Ellipsoid
        if let rf = e.rf, rf == 0 || rf > 1, a > 0, a.isFinite {
            ellipsoid = Ellipsoid(name: e.name, epsg: ellipsoidCode, semiMajorAxis: a, inverseFlattening: rf)
        } else if let b0 = e.b, a > 0, a.isFinite, b0 * metres > 0, b0 * metres <= a {
            ellipsoid = Ellipsoid(name: e.name, epsg: ellipsoidCode, semiMajorAxis: a, semiMinorAxis: b0 * metres)
        } else {
            throw unsupported(code, name, "ellipsoid \(ErrorText.quoted(e.name)) has impossible axes")
        }
        var pm = 0.0
        if let mk = d.meridian, let m = try meridianRow(mk) {
            guard let muk = m.unit, let u = try self.unit(muk), let angular = u.angular else {
                throw unsupported(code, name, "prime meridian \(ErrorText.quoted(m.name)) has no angle unit")
            }
            pm = angular.degrees(m.longitude)
        }
        let datumCode = key.authority == "EPSG" ? Int(key.code) : nil
        // Datums the built-in table calls WGS 84-compatible (≲ 2 m) keep that; any other is
        // noted as treated as WGS 84 until a datum transformation is attached.
        let compatible = datumCode.flatMap { Datum.epsg($0)?.isWGS84Compatible } ?? false
        return Datum(
            name: d.name, epsg: datumCode, ellipsoid: ellipsoid, primeMeridian: pm, isWGS84Compatible: compatible)
    }

    /// The CS's linear unit and the ``AxisMapping`` from the method's output to PROJ's
    /// always_xy order and signs.
    func projectedAxes(
        _ cs: CoordinateSystemRow, methodCode: Int, code: Int, name: String
    ) throws(CRSError) -> (LinearUnit, AxisMapping) {
        let a0 = cs.axes[0], a1 = cs.axes[1]
        guard let uk = a0.unit, a1.unit == uk, let u = try self.unit(uk), let linear = u.linear else {
            throw unsupported(
                code, name, "its axes' unit \(a0.unit?.code ?? "none") is not one length tilepack can scale")
        }
        guard
            let axes = AxisMapping(
                orientations: (a0.orientation, a1.orientation),
                native: ProjectionMethod(epsgMethodCode: methodCode)?.forwardAxes ?? (true, true))
        else {
            throw unsupported(
                code, name,
                "axes \(ErrorText.quoted(a0.orientation))/\(ErrorText.quoted(a1.orientation)) tilepack cannot orient")
        }
        return (linear, axes)
    }
}

extension AxisMapping {
    /// The mapping for a projected CS whose two axes point `orientations` (proj.db's
    /// `axis.orientation`), given which way the method's output grows
    /// (``ProjectionMethod/forwardAxes``); nil for axes that
    /// are not one east–west and one north–south axis (or two polar ones).
    init?(orientations: (String, String), native: (xEast: Bool, yNorth: Bool)) {
        enum Direction { case east, west, north, south, alongMeridian }
        func direction(_ s: String) -> Direction? {
            switch s.lowercased() {
            case "east": .east
            case "west": .west
            case "north": .north
            case "south": .south
            case let o where o.hasPrefix("north along ") || o.hasPrefix("south along "): .alongMeridian
            default: nil
            }
        }
        guard let d0 = direction(orientations.0), let d1 = direction(orientations.1) else { return nil }
        // Polar CSs ("North along 90°E"): PROJ keeps the method's easting, northing.
        if d0 == .alongMeridian || d1 == .alongMeridian {
            guard d0 == d1 else { return nil }
            self = .identity
            return
        }
        let eastWest: Set<Direction> = [.east, .west], northSouth: Set<Direction> = [.north, .south]
        let first: Direction, second: Direction, swap: Bool
        if eastWest.contains(d0) && northSouth.contains(d1) {
            (first, second, swap) = (d0, d1, false)
        } else if northSouth.contains(d0) && eastWest.contains(d1) {
            // (north, east) is shown as (east, north); any other order as the CS states it.
            (first, second, swap) = d0 == .north && d1 == .east ? (d1, d0, false) : (d1, d0, true)
        } else {
            return nil
        }
        // `first` is the CS's east–west axis, `second` its north–south one.
        let nativeX: Direction = native.xEast ? .east : .west
        let nativeY: Direction = native.yNorth ? .north : .south
        self.init(negateX: first != nativeX, negateY: second != nativeY, swap: swap)
    }
}
