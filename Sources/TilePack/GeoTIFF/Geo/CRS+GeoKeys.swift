import TilePackCore
/// Building a CRS from a GeoTIFF key directory (OGC GeoTIFF 1.1, read the way GDAL reads it).
extension CRS {
    /// The CRS the keys describe: a registered code from the built-in table
    /// (ProjectedCSType/GeographicType), or a user-defined (32767) geographic or projected CRS
    /// whose datum, ellipsoid, units, method (ProjCoordTrans) and parameters are in the keys.
    /// GeogTOWGS84 is attached to the datum when present. O(number of keys), no I/O.
    ///
    /// - Throws: ``CRSError`` naming the code, key or method that is missing or unsupported.
    public init(geoKeys keys: GeoKeyDirectory) throws(CRSError) {
        try self.init(geoKeys: keys, registry: .builtin)
    }

    /// As ``init(geoKeys:)``, with ProjectedCSType/GeographicType codes outside the built-in
    /// table resolved through `registry` (proj.db). User-defined keys are read as before.
    /// Cost: O(number of keys) plus, for a code new to the registry, a few indexed queries.
    public init(geoKeys keys: GeoKeyDirectory, registry: CRSRegistry) throws(CRSError) {
        let reader = GeoKeyReader(keys: keys, registry: registry)
        self = try reader.crs()
    }
}

/// GeoTIFF ProjCoordTransGeoKey codes and their spec names (for error messages).
enum CoordinateTransformationCode {
    static func name(_ code: Int) -> String {
        let names = [
            1: "TransverseMercator", 2: "TransvMercator_Modified_Alaska", 3: "ObliqueMercator",
            4: "ObliqueMercator_Laborde", 5: "ObliqueMercator_Rosenmund", 6: "ObliqueMercator_Spherical",
            7: "Mercator", 8: "LambertConfConic_2SP", 9: "LambertConfConic_1SP",
            10: "LambertAzimEqualArea", 11: "AlbersEqualArea", 12: "AzimuthalEquidistant",
            13: "EquidistantConic", 14: "Stereographic", 15: "PolarStereographic",
            16: "ObliqueStereographic", 17: "Equirectangular", 18: "CassiniSoldner",
            19: "Gnomonic", 20: "MillerCylindrical", 21: "Orthographic", 22: "Polyconic",
            23: "Robinson", 24: "Sinusoidal", 25: "VanDerGrinten", 26: "NewZealandMapGrid",
            27: "TransvMercator_SouthOriented", 28: "CylindricalEqualArea",
            9815: "HotineObliqueMercatorAzimuthCenter",
        ]
        return names[code] ?? "code \(code)"
    }
}

/// Reads one key directory; a value type so each step is a small throwing function.
private struct GeoKeyReader {
    let keys: GeoKeyDirectory
    let registry: CRSRegistry
    static let userDefined = 32767

    /// A registered code: the built-in table's CRS, else the registry's, else nil.
    func registered(_ code: Int) throws(CRSError) -> CRS? { try registry.registered(epsg: code) }

    /// The error for a code no source holds.
    func unknown(_ code: Int) -> CRSError {
        if case .projDB(let path, let version) = registry.source {
            return .notInRegistry(code: code, file: path, epsgVersion: version)
        }
        return .unsupportedEPSG(code)
    }

    func code(_ id: UInt16) -> Int? { keys.short(id).map(Int.init) }

    func double(_ id: UInt16) throws(CRSError) -> Double? {
        guard let v = keys.double(id) else { return nil }
        guard v.isFinite else { throw .invalidValue(key: GeoKey.name(id), value: "\(v)") }
        return v
    }

    func crs() throws(CRSError) -> CRS {
        let pcs = code(GeoKey.projectedCSType)
        let gcs = code(GeoKey.geographicType)
        let projected: Bool
        switch code(GeoKey.gtModelType) {
        case 1?: projected = true
        case 2?: projected = false
        case let t?: throw .unsupportedModelType(t)
        case nil:
            if pcs != nil || code(GeoKey.projCoordTrans) != nil || code(GeoKey.projection) != nil {
                projected = true
            } else if gcs != nil || code(GeoKey.geogGeodeticDatum) != nil || code(GeoKey.geogEllipsoid) != nil
                || keys.double(GeoKey.geogSemiMajorAxis) != nil
            {
                projected = false
            } else {
                throw .missingCRS
            }
        }
        // An unknown registered code with nothing spelled out: name the code, not a missing key.
        // A code the registry holds but cannot use (its method, its axes) says so, unless
        // the keys spell the projection out.
        let spelledOut = code(GeoKey.projCoordTrans) != nil || utmFromProjectionCode() != nil
        var registeredProjected: CRS?
        if projected, let pcs, pcs != Self.userDefined, pcs != 0 {
            do { registeredProjected = try registered(pcs) } catch { if !spelledOut { throw error } }
            if registeredProjected == nil && !spelledOut { throw unknown(pcs) }
        }
        let angular = try angularUnit()
        let datum = try geodeticDatum(angularUnit: angular)
        guard projected else {
            if let gcs, gcs != Self.userDefined, gcs != 0, let known = try registered(gcs), known.kind == .geographic {
                // The keys' angular unit, when given, wins over the registry's.
                var crs = CRS(
                    geographic: known.name, epsg: gcs, datum: datum,
                    angularUnit: code(GeoKey.geogAngularUnits) != nil ? angular : known.angularUnit)
                crs.source = known.source
                crs.geodeticCRSCode = gcs
                crs.isDeprecated = known.isDeprecated
                return crs
            }
            guard angular.radians != nil else {
                throw .unsupportedCode(key: "GeogAngularUnitsGeoKey for geographic coordinates", code: 9110)
            }
            var crs = CRS(
                geographic: keys.ascii(GeoKey.geogCitation) ?? keys.ascii(GeoKey.gtCitation) ?? datum.name,
                datum: datum, angularUnit: angular)
            crs.source = .geoKeys
            return crs
        }
        let linear = try linearUnit()
        if let pcs, pcs != Self.userDefined, pcs != 0 {
            if let known = registeredProjected, known.kind == .projected {
                return known.replacingDatum(known.datum.with(toWGS84: datum.toWGS84))
            }
            // An unknown code still works when the keys spell the projection out (some writers
            // give both); otherwise the code is all we have.
            if !spelledOut { throw unknown(pcs) }
        }
        let parameters = try projectionParameters(angular: angular, linear: linear)
        let name =
            keys.ascii(GeoKey.pcsCitation) ?? keys.ascii(GeoKey.gtCitation)
            ?? "\(datum.name) / user-defined \(parameters.method.rawValue)"
        var crs = CRS(projected: name, datum: datum, parameters: parameters, linearUnit: linear, angularUnit: angular)
        crs.source = .geoKeys
        return crs
    }

    func angularUnit() throws(CRSError) -> AngularUnit {
        guard let c = code(GeoKey.geogAngularUnits) else { return .degree }
        if c == Self.userDefined {
            guard let size = try double(GeoKey.geogAngularUnitSize) else {
                throw .missingKey("GeogAngularUnitSizeGeoKey")
            }
            guard size > 0 else { throw .invalidValue(key: "GeogAngularUnitSizeGeoKey", value: "\(size)") }
            return AngularUnit(name: "user-defined angle (\(size) rad)", radians: size)
        }
        guard let u = AngularUnit.epsg(c) else { throw .unsupportedCode(key: "GeogAngularUnitsGeoKey", code: c) }
        return u
    }

    func linearUnit() throws(CRSError) -> LinearUnit {
        guard let c = code(GeoKey.projLinearUnits) else { return .metre }
        if c == Self.userDefined {
            guard let size = try double(GeoKey.projLinearUnitSize) else {
                throw .missingKey("ProjLinearUnitSizeGeoKey")
            }
            guard size > 0 else { throw .invalidValue(key: "ProjLinearUnitSizeGeoKey", value: "\(size)") }
            return LinearUnit(name: "user-defined length (\(size) m)", metres: size)
        }
        guard let u = LinearUnit.epsg(c) else { throw .unsupportedCode(key: "ProjLinearUnitsGeoKey", code: c) }
        return u
    }

    /// Datum from GeographicType, or from datum/ellipsoid/prime-meridian keys; TOWGS84 attached.
    func geodeticDatum(angularUnit: AngularUnit) throws(CRSError) -> Datum {
        var shift: Helmert?
        if let value = keys[GeoKey.geogTOWGS84] {
            guard case .doubles(let v) = value, let h = Helmert(v) else {
                throw .invalidValue(key: "GeogTOWGS84GeoKey", value: "\(value) (need 3 or 7 numbers)")
            }
            shift = h
        }
        if let gcs = code(GeoKey.geographicType), gcs != Self.userDefined, gcs != 0 {
            guard let known = try registered(gcs), known.kind == .geographic else { throw unknown(gcs) }
            return known.datum.with(toWGS84: shift)
        }
        var base: Datum?
        if let d = code(GeoKey.geogGeodeticDatum), d != Self.userDefined, d != 0 {
            guard let known = Datum.epsg(d) else { throw .unsupportedCode(key: "GeogGeodeticDatumGeoKey", code: d) }
            base = known
        }
        let ellipsoid = try explicitEllipsoid() ?? base?.ellipsoid
        guard let ellipsoid else {
            // A projected CRS with a registered code needs no datum keys; the table has its datum.
            if let pcs = code(GeoKey.projectedCSType), pcs != Self.userDefined, pcs != 0,
                let known = try? registered(pcs)
            {
                return known.datum.with(toWGS84: shift)
            }
            throw .missingKey("GeogEllipsoidGeoKey or GeogSemiMajorAxisGeoKey")
        }
        let pm = try primeMeridian(angularUnit: angularUnit)
        let name = base?.name ?? keys.ascii(GeoKey.geogCitation) ?? "unknown datum on \(ellipsoid.name)"
        return Datum(
            name: name, epsg: base?.epsg, ellipsoid: ellipsoid, primeMeridian: pm,
            toWGS84: shift, isWGS84Compatible: base?.isWGS84Compatible ?? false)
    }

    func explicitEllipsoid() throws(CRSError) -> Ellipsoid? {
        if let c = code(GeoKey.geogEllipsoid), c != Self.userDefined, c != 0 {
            guard let e = Ellipsoid.epsg(c) else { throw .unsupportedCode(key: "GeogEllipsoidGeoKey", code: c) }
            return e
        }
        guard var a = try double(GeoKey.geogSemiMajorAxis) else { return nil }
        // Axes are in GeogLinearUnits (metre unless stated).
        var unit = 1.0
        if let c = code(GeoKey.geogLinearUnits) {
            if c == Self.userDefined {
                unit = try double(GeoKey.geogLinearUnitSize) ?? 1
            } else if let u = LinearUnit.epsg(c) {
                unit = u.metres
            } else {
                throw .unsupportedCode(key: "GeogLinearUnitsGeoKey", code: c)
            }
        }
        a *= unit
        guard a > 0 else { throw .invalidValue(key: "GeogSemiMajorAxisGeoKey", value: "\(a)") }
        let citation = keys.ascii(GeoKey.geogCitation) ?? "user-defined ellipsoid"
        if let rf = try double(GeoKey.geogInvFlattening) {
            guard rf == 0 || rf > 1 else { throw .invalidValue(key: "GeogInvFlatteningGeoKey", value: "\(rf)") }
            return Ellipsoid(name: citation, semiMajorAxis: a, inverseFlattening: rf)
        }
        if let b0 = try double(GeoKey.geogSemiMinorAxis) {
            let b = b0 * unit
            guard b > 0, b <= a else { throw .invalidValue(key: "GeogSemiMinorAxisGeoKey", value: "\(b0)") }
            return Ellipsoid(name: citation, semiMajorAxis: a, semiMinorAxis: b)
        }
        return .sphere(name: citation, radius: a)
    }

    func primeMeridian(angularUnit: AngularUnit) throws(CRSError) -> Double {
        switch code(GeoKey.geogPrimeMeridian) {
        case nil, 8901?, 0?:
            if let lon = try double(GeoKey.geogPrimeMeridianLong) { return angularUnit.degrees(lon) }
            return 0
        case 8903?: return 2.33722917  // Paris, 2.5969213 grad
        case 8909?: return -17.666666666666668  // Ferro
        case Self.userDefined?:
            guard let lon = try double(GeoKey.geogPrimeMeridianLong) else {
                throw .missingKey("GeogPrimeMeridianLongGeoKey")
            }
            return angularUnit.degrees(lon)
        case let c?:
            throw .unsupportedCode(key: "GeogPrimeMeridianGeoKey", code: c)
        }
    }

    /// ProjectionGeoKey 16001–16060 / 16101–16160: the EPSG "UTM zone nN/S" conversions.
    func utmFromProjectionCode() -> ProjectionParameters? {
        guard let p = code(GeoKey.projection) else { return nil }
        switch p {
        case 16001...16060: return .utm(zone: p - 16000, north: true)
        case 16101...16160: return .utm(zone: p - 16100, north: false)
        default: return nil
        }
    }

    func projectionParameters(angular: AngularUnit, linear: LinearUnit) throws(CRSError) -> ProjectionParameters {
        if let utm = utmFromProjectionCode(), code(GeoKey.projCoordTrans) == nil { return utm }
        guard let ct = code(GeoKey.projCoordTrans) else {
            if let p = code(GeoKey.projection), p != Self.userDefined {
                throw .unsupportedCode(key: "ProjectionGeoKey", code: p)
            }
            throw .missingKey("ProjCoordTransGeoKey")
        }
        // First present key wins, as in GDAL (writers disagree on which origin keys to use).
        func angle(_ ids: [UInt16], default d: Double? = 0) throws(CRSError) -> Double {
            for id in ids { if let v = try double(id) { return angular.degrees(v) } }
            guard let d else { throw .missingKey(GeoKey.name(ids[0]) + "GeoKey") }
            return d
        }
        func length(_ ids: [UInt16]) throws(CRSError) -> Double {
            for id in ids { if let v = try double(id) { return v * linear.metres } }
            return 0
        }
        func scale(_ ids: [UInt16]) throws(CRSError) -> Double {
            for id in ids {
                if let v = try double(id) {
                    guard v > 0 else { throw .invalidValue(key: GeoKey.name(id) + "GeoKey", value: "\(v)") }
                    return v
                }
            }
            return 1
        }
        let k = GeoKey.self
        let natLat = [k.projNatOriginLat, k.projFalseOriginLat, k.projCenterLat]
        let natLon = [k.projNatOriginLong, k.projFalseOriginLong, k.projCenterLong]
        let fe = [k.projFalseEasting, k.projFalseOriginEasting, k.projCenterEasting]
        let fn = [k.projFalseNorthing, k.projFalseOriginNorthing, k.projCenterNorthing]
        let k0 = [k.projScaleAtNatOrigin, k.projScaleAtCenter]
        switch ct {
        case 1:
            return ProjectionParameters(
                method: .transverseMercator, latitudeOfOrigin: try angle(natLat),
                centralMeridian: try angle(natLon), scale: try scale(k0),
                falseEasting: try length(fe), falseNorthing: try length(fn))
        case 7:
            let lonO = try angle(natLon), e0 = try length(fe), n0 = try length(fn)
            if let sp = try double(k.projStdParallel1), sp != 0 {
                return ProjectionParameters(
                    method: .mercator2SP, centralMeridian: lonO, falseEasting: e0,
                    falseNorthing: n0, standardParallel1: angular.degrees(sp))
            }
            return ProjectionParameters(
                method: .mercator1SP, centralMeridian: lonO, scale: try scale(k0),
                falseEasting: e0, falseNorthing: n0)
        case 8:
            let sp1 = try angle([k.projStdParallel1], default: nil)
            let sp2 = try angle([k.projStdParallel2], default: sp1)
            // Parallels symmetric about the equator make a cylinder, not a cone.
            guard sp1 + sp2 != 0, abs(sp1) < 90, abs(sp2) < 90 else {
                throw .invalidValue(key: "ProjStdParallel1GeoKey/ProjStdParallel2GeoKey", value: "\(sp1), \(sp2)")
            }
            return ProjectionParameters(
                method: .lambertConicConformal2SP,
                latitudeOfOrigin: try angle([k.projFalseOriginLat, k.projNatOriginLat, k.projCenterLat]),
                centralMeridian: try angle([k.projFalseOriginLong, k.projNatOriginLong, k.projCenterLong]),
                falseEasting: try length([k.projFalseOriginEasting, k.projFalseEasting, k.projCenterEasting]),
                falseNorthing: try length([k.projFalseOriginNorthing, k.projFalseNorthing, k.projCenterNorthing]),
                standardParallel1: sp1,
                standardParallel2: sp2)
        case 9:
            let lat0 = try angle(natLat, default: nil)
            // The cone constant is sin(lat0): an equatorial origin has no cone.
            guard lat0 != 0, abs(lat0) < 90 else {
                throw .invalidValue(key: "ProjNatOriginLatGeoKey", value: "\(lat0)")
            }
            return ProjectionParameters(
                method: .lambertConicConformal1SP, latitudeOfOrigin: lat0,
                centralMeridian: try angle(natLon), scale: try scale(k0),
                falseEasting: try length(fe), falseNorthing: try length(fn))
        case 10:
            return ProjectionParameters(
                method: .lambertAzimuthalEqualArea,
                latitudeOfOrigin: try angle([k.projCenterLat, k.projNatOriginLat, k.projFalseOriginLat]),
                centralMeridian: try angle([k.projCenterLong, k.projNatOriginLong, k.projFalseOriginLong]),
                falseEasting: try length([k.projFalseEasting, k.projCenterEasting, k.projFalseOriginEasting]),
                falseNorthing: try length([k.projFalseNorthing, k.projCenterNorthing, k.projFalseOriginNorthing]))
        case 15:
            // GDAL's rule (OGRSpatialReference::SetPS): a pole origin, or a scale other than 1,
            // is variant A; otherwise the latitude is variant B's standard parallel.
            let lat = try angle([k.projNatOriginLat, k.projCenterLat], default: nil)
            let lon0 = try angle([k.projStraightVertPoleLong, k.projNatOriginLong, k.projCenterLong])
            let k0v = try scale(k0)
            guard abs(lat) <= 90, lat != 0 else { throw .invalidValue(key: "ProjNatOriginLatGeoKey", value: "\(lat)") }
            if abs(abs(lat) - 90) < 1e-8 || k0v != 1 {
                return ProjectionParameters(
                    method: .polarStereographicA, latitudeOfOrigin: lat > 0 ? 90 : -90,
                    centralMeridian: lon0, scale: k0v,
                    falseEasting: try length(fe), falseNorthing: try length(fn))
            }
            return ProjectionParameters(
                method: .polarStereographicB, latitudeOfOrigin: lat > 0 ? 90 : -90,
                centralMeridian: lon0, falseEasting: try length(fe),
                falseNorthing: try length(fn), standardParallel1: lat)
        case 3, 9815:
            // CT_ObliqueMercator is variant A and libgeotiff's CT_HotineObliqueMercatorAzimuthCenter
            // (9815) variant B, as GDAL reads them; the rectified grid angle defaults to 90°
            // (libgeotiff's GTIFGetDefn), the azimuth to 0.
            let lat = try angle(natLat)
            guard abs(lat) < 90 else { throw .invalidValue(key: "ProjCenterLatGeoKey", value: "\(lat)") }
            return ProjectionParameters(
                method: ct == 3 ? .hotineObliqueMercatorA : .hotineObliqueMercatorB,
                latitudeOfOrigin: lat, centralMeridian: try angle(natLon),
                scale: try scale(k0), falseEasting: try length(fe), falseNorthing: try length(fn),
                azimuth: try angle([k.projAzimuthAngle]),
                rectifiedGridAngle: try angle([k.projRectifiedGridAngle], default: 90))
        case 11:
            let sp1 = try angle([k.projStdParallel1], default: nil)
            let sp2 = try angle([k.projStdParallel2], default: sp1)
            // Parallels symmetric about the equator make a cylinder (n = 0), not a cone.
            guard sp1 + sp2 != 0, abs(sp1) <= 90, abs(sp2) <= 90 else {
                throw .invalidValue(key: "ProjStdParallel1GeoKey/ProjStdParallel2GeoKey", value: "\(sp1), \(sp2)")
            }
            return ProjectionParameters(
                method: .albersEqualArea, latitudeOfOrigin: try angle(natLat),
                centralMeridian: try angle(natLon), falseEasting: try length(fe),
                falseNorthing: try length(fn), standardParallel1: sp1, standardParallel2: sp2)
        case 16:
            return ProjectionParameters(
                method: .obliqueStereographic, latitudeOfOrigin: try angle(natLat),
                centralMeridian: try angle(natLon), scale: try scale(k0),
                falseEasting: try length(fe), falseNorthing: try length(fn))
        case 18, 22:
            return ProjectionParameters(
                method: ct == 18 ? .cassiniSoldner : .americanPolyconic,
                latitudeOfOrigin: try angle(natLat), centralMeridian: try angle(natLon),
                falseEasting: try length(fe), falseNorthing: try length(fn))
        case 17:
            // GDAL: SetEquirectangular2(origin lat, lon, StdParallel1, FE, FN); EPSG's method has
            // no latitude of origin, so only the equatorial origin is that method.
            let lat0 = try angle([k.projCenterLat, k.projNatOriginLat])
            guard lat0 == 0 else { throw .invalidValue(key: "ProjCenterLatGeoKey (Equirectangular)", value: "\(lat0)") }
            return ProjectionParameters(
                method: .equidistantCylindrical, centralMeridian: try angle([k.projCenterLong, k.projNatOriginLong]),
                falseEasting: try length(fe), falseNorthing: try length(fn),
                standardParallel1: try angle([k.projStdParallel1]))
        case 26:
            return ProjectionParameters(
                method: .newZealandMapGrid, latitudeOfOrigin: try angle(natLat, default: nil),
                centralMeridian: try angle(natLon, default: nil),
                falseEasting: try length(fe), falseNorthing: try length(fn))
        case 27:
            return ProjectionParameters(
                method: .transverseMercatorSouthOrientated, latitudeOfOrigin: try angle(natLat),
                centralMeridian: try angle(natLon), scale: try scale(k0),
                falseEasting: try length(fe), falseNorthing: try length(fn))
        case 28:
            return ProjectionParameters(
                method: .lambertCylindricalEqualArea, centralMeridian: try angle(natLon),
                falseEasting: try length(fe), falseNorthing: try length(fn),
                standardParallel1: try angle([k.projStdParallel1]))
        default:
            throw .unsupportedMethod(code: ct, name: CoordinateTransformationCode.name(ct))
        }
    }
}
