import TilePackCore
import TilePackSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension DatumTransformation {
    /// The best transformation proj.db lists from the geodetic CRS `code` (EPSG) to WGS 84
    /// that tilepack can apply, or nil when the CRS's datum is WGS 84 or a frame EPSG
    /// relates to it by a null transformation (ETRS89, NZGD2000, RGF93, GDA94, NAD83 …),
    /// or when proj.db lists nothing tilepack can apply (the CRS then keeps its GeoKeys
    /// TOWGS84 or ``Datum/note``).
    ///
    /// Candidates: non-deprecated EPSG Helmert transformations (geocentric translations,
    /// position vector, coordinate frame, Molodensky-Badekas; not the time-dependent ones,
    /// which need an observation epoch a raster lacks) and horizontal grid shifts (NTv2 and
    /// every method proj.db maps to PROJ's `hgridshift`), in either direction (an operation
    /// listed towards the CRS is used inverted), ending on WGS 84 or on a frame with a null
    /// transformation to it. A CRS with a non-Greenwich prime meridian (NTF (Paris)) also
    /// takes the operations of the CRS its longitude rotation leads to (NTF): tilepack
    /// applies the prime meridian itself.
    ///
    /// Operations EPSG records as superseded by another candidate tilepack can apply are
    /// dropped, as PROJ drops them (CH1903 to WGS 84 (1) and (2) give way to the CHENyx06
    /// grid when it is installed).
    ///
    /// Ranking, as PROJ sorts for an area of interest: operations whose area of use
    /// contains `areaOfInterest` (default: the CRS's own area of use) before those that
    /// only intersect it (those that miss it are dropped), and of those the larger overlap
    /// with it (EPSG:1133 over Europe before ED50 to WGS 84 (36) off Germany); then the better accuracy to
    /// WGS 84 (the operation's plus the null step's; unknown last); then a grid before a
    /// Helmert; then one ending on WGS 84 itself; then, as PROJ, the greater name ("… (5)"
    /// before "… (1)") of two to the same frame, else the lower code. The best applicable one is the main operation,
    /// the other applicable
    /// ones follow in that order as its ``DatumTransformation/alternatives`` (each point
    /// then goes through the one PROJ would pick for it); when a better one needs a grid
    /// that is not in `gridDirectories`, ``note`` says so.
    ///
    /// Grids are looked up by PROJ's name (`proj_grid_name`, e.g. de_adv_BETA2007.tif), then
    /// by its older name (`old_proj_grid_name`, BETA2007.gsb), then by EPSG's, in each
    /// directory in turn, matching file names without regard to case (Debian ships
    /// CHENYX06_etrs.gsb for PROJ's CHENyx06_ETRS.gsb); only `.gsb` and `.tif` are read.
    ///
    /// - Throws: ``DatumGridError`` when the chosen grid exists but is corrupt (never a
    ///   silent Helmert instead), or a proj.db row is unusable; `SQLiteError` when proj.db
    ///   cannot be queried.
    /// - Cost: a few indexed queries and one directory listing per grid directory; reads
    ///   the chosen grid once per process (``ShiftGridCache``).
    package static func best(
        fromGeodeticCRS code: Int, in db: SQLiteConnection, gridDirectories: [String],
        areaOfInterest: GeoBounds? = nil
    ) throws -> DatumTransformation? {
        try ProjDBDatumSelector(db: db, gridDirectories: gridDirectories).best(
            code: code, areaOfInterest: areaOfInterest)
    }

    /// Where PROJ looks for grids, in order: the directory of proj.db, then each entry of
    /// PROJ_DATA, else of PROJ_LIB (':'-separated), without duplicates.
    public static func gridDirectories(projDBPath: String, environment: [String: String]) -> [String] {
        var dirs: [String] = []
        let parent = projDBPath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(
            separator: "/")
        dirs.append(parent.isEmpty ? (projDBPath.hasPrefix("/") ? "/" : ".") : parent)
        let list = environment["PROJ_DATA"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["PROJ_LIB"] ?? ""
        for d in list.split(separator: ":") where !d.isEmpty && !dirs.contains(String(d)) { dirs.append(String(d)) }
        return dirs
    }
}

/// The proj.db queries behind ``DatumTransformation/best(fromGeodeticCRS:in:gridDirectories:areaOfInterest:)``.
struct ProjDBDatumSelector {
    let db: SQLiteConnection
    let gridDirectories: [String]

    typealias Box = DatumTransformation.AreaOfUse

    /// One operation proj.db lists, turned towards WGS 84.
    struct Candidate {
        var name: String
        var code: Int
        var accuracy: Double?
        var target: DatumTransformation.Target
        var extents: [Box]
        var kind: Kind
        /// The longitude rotation taken first ("NTF (Paris) to NTF (1)"), if any.
        var via: String?
        enum Kind {
            case helmert(DatumTransformation.Step)
            /// Grid names to try, in order; `inverse` when the PROJ file runs the other way.
            case grid(names: [String], inverse: Bool, listed: String)
        }
        var isGrid: Bool { if case .grid = kind { true } else { false } }
        var effectiveAccuracy: Double {
            guard let a = accuracy, let t = target.accuracyToWGS84 else { return .infinity }
            return a + t
        }
    }

    func best(code: Int, areaOfInterest: GeoBounds?) throws -> DatumTransformation? {
        guard let source = try geodeticCRS(code) else {
            throw DatumGridError(
                path: db.path, code: .badOperation, detail: "EPSG:\(code) is not a geodetic CRS in proj.db")
        }
        let targets = try wgs84Frames()
        if code == 4326 || source.datum == 6326 || targets[code] != nil { return nil }

        // The CRS itself, and the Greenwich CRS its longitude rotation leads to.
        var sources: [(code: Int, via: String?)] = [(code, nil)]
        for hop in try longitudeRotations(from: code) { sources.append((hop.target, hop.name)) }

        let aoi: [Box] =
            if let a = areaOfInterest {
                [Box(west: a.west, south: a.south, east: a.east, north: a.north)]
            } else {
                try extents(table: "geodetic_crs", code: code)
            }

        var candidates: [Candidate] = []
        for s in sources {
            candidates += try helmertCandidates(source: s.code, targets: targets).map {
                var c = $0; c.via = s.via; return c
            }
            candidates += try gridCandidates(source: s.code, targets: targets).map {
                var c = $0; c.via = s.via; return c
            }
        }
        // Drop those whose area of use misses the area of interest, and, as PROJ does, those
        // EPSG says are superseded by another candidate tilepack can apply.
        candidates = candidates.filter { c in
            c.extents.isEmpty || aoi.isEmpty || aoi.contains { a in c.extents.contains { $0.intersects(a) } }
        }
        let listing = GridDirectoryListing(directories: gridDirectories)
        let applicable = Set(
            candidates.filter { c in
                if case let .grid(names, _, _) = c.kind { return listing.find(names) != nil }
                return true
            }.map(\.code))
        let replacements = try supersessions(of: candidates.map(\.code))
        candidates = candidates.filter { c in !(replacements[c.code] ?? []).contains { applicable.contains($0) } }
        func covers(_ c: Candidate) -> Bool {
            c.extents.isEmpty || aoi.allSatisfy { a in c.extents.contains { $0.contains(a) } }
        }
        // Of those that only intersect the area, PROJ puts the larger overlap first.
        func overlap(_ c: Candidate) -> Double {
            guard !c.extents.isEmpty else { return .infinity }
            return aoi.reduce(0) { sum, a in sum + c.extents.reduce(0) { $0 + ($1.intersection(a)?.pseudoArea ?? 0) } }
        }
        let overlaps = Dictionary(candidates.map { ("\($0.code) \($0.via ?? "")", overlap($0)) }, uniquingKeysWith: max)
        candidates.sort { a, b in
            let ca = covers(a), cb = covers(b)
            if ca != cb { return ca }
            if !ca, let oa = overlaps["\(a.code) \(a.via ?? "")"], let ob = overlaps["\(b.code) \(b.via ?? "")"],
                oa != ob
            {
                return oa > ob
            }
            if a.effectiveAccuracy != b.effectiveAccuracy { return a.effectiveAccuracy < b.effectiveAccuracy }
            if a.isGrid != b.isGrid { return a.isGrid }
            if a.target.isWGS84 != b.target.isWGS84 { return a.target.isWGS84 }
            // PROJ's last criterion between operations to the same frame: the greater name
            // first ("… (5)" before "… (1)"); between frames, the lower code.
            if a.target == b.target && a.name != b.name { return a.name > b.name }
            return a.code < b.code
        }
        guard let top = candidates.first else { return nil }
        // PROJ's list: the candidates it can apply (grids found), in rank order.
        var listed: [(candidate: Candidate, steps: [DatumTransformation.Step])] = []
        for c in candidates {
            switch c.kind {
            case let .helmert(step): listed.append((c, [step]))
            case let .grid(names, inverse, _):
                guard let path = listing.find(names) else { continue }
                listed.append((c, [.gridShift(try ShiftGridCache.grid(path: path), inverse: inverse)]))
            }
        }
        guard let (chosen, steps) = listed.first else { return nil }
        let alternatives = listed.dropFirst().map { c, steps in
            DatumTransformation.Alternative(
                name: displayName(c), code: "EPSG:\(c.code)", accuracy: c.accuracy, steps: steps,
                target: c.target, areas: c.extents)
        }
        return DatumTransformation(
            name: displayName(chosen), code: "EPSG:\(chosen.code)", accuracy: chosen.accuracy, steps: steps,
            target: chosen.target, areas: chosen.extents, alternatives: alternatives,
            note: note(chosen: chosen, top: top, listing: listing))
    }

    private func displayName(_ c: Candidate) -> String {
        c.via.map { "\($0) + \(c.name)" } ?? c.name
    }

    /// Why the chosen operation is not the best listed: the better one's grid is missing.
    private func note(chosen: Candidate, top: Candidate, listing: GridDirectoryListing) -> String? {
        guard top.code != chosen.code || top.via != chosen.via, case let .grid(_, _, listed) = top.kind else {
            return nil
        }
        func m(_ v: Double) -> String { v.isFinite ? "\(DatumTransformation.metres(v)) m" : "unknown" }
        let what = chosen.isGrid ? "grid operation" : "Helmert"
        return
            """
            grid \(listed) not found: \(what) EPSG:\(chosen.code) used (accuracy \(m(chosen.effectiveAccuracy)) \
            instead of \(m(top.effectiveAccuracy)))
            """
    }

    // MARK: Queries

    struct GeodeticCRS { var name: String; var datum: Int?; var ellipsoid: Ellipsoid; var primeMeridianCode: Int? }

    func geodeticCRS(_ code: Int) throws -> GeodeticCRS? {
        let st = try db.prepare(
            """
            SELECT c.name, d.code, e.name, e.semi_major_axis, e.inv_flattening, e.semi_minor_axis, u.conv_factor, d.prime_meridian_code
            FROM geodetic_crs c JOIN geodetic_datum d ON d.auth_name = c.datum_auth_name AND d.code = c.datum_code
            JOIN ellipsoid e ON e.auth_name = d.ellipsoid_auth_name AND e.code = d.ellipsoid_code
            JOIN unit_of_measure u ON u.auth_name = e.uom_auth_name AND u.code = e.uom_code
            WHERE c.auth_name = 'EPSG' AND c.code = ?1
            """)
        try st.bind(String(code), at: 1)
        guard try st.step() else { return nil }
        let name = st.string(at: 0) ?? "EPSG:\(code)"
        let factor = st.isNull(at: 6) ? 1 : st.double(at: 6)
        let a = st.double(at: 3) * factor
        let ellipsoidName = st.string(at: 2) ?? "ellipsoid"
        let ellipsoid: Ellipsoid
        if !st.isNull(at: 4), st.double(at: 4) > 0 {
            ellipsoid = Ellipsoid(name: ellipsoidName, semiMajorAxis: a, inverseFlattening: st.double(at: 4))
        } else if !st.isNull(at: 5) {
            ellipsoid = Ellipsoid(name: ellipsoidName, semiMajorAxis: a, semiMinorAxis: st.double(at: 5) * factor)
        } else {
            ellipsoid = .sphere(name: ellipsoidName, radius: a)
        }
        guard a.isFinite, a > 1e6, a < 1e7 else {
            throw DatumGridError(
                path: db.path, code: .badOperation,
                detail: "EPSG:\(code) ellipsoid \(ellipsoidName) has semi-major axis \(a) m")
        }
        return GeodeticCRS(
            name: name, datum: st.string(at: 1).flatMap { Int($0) }, ellipsoid: ellipsoid,
            primeMeridianCode: st.string(at: 7).flatMap { Int($0) })
    }

    /// WGS 84 and the geodetic CRSs with an EPSG null transformation to it (all parameters
    /// zero), with that step's accuracy.
    func wgs84Frames() throws -> [Int: DatumTransformation.Target] {
        let st = try db.prepare(
            """
            SELECT h.source_crs_code, c.name, MIN(h.accuracy) FROM helmert_transformation_table h
            JOIN geodetic_crs c ON c.auth_name = h.source_crs_auth_name AND c.code = h.source_crs_code
            WHERE h.auth_name = 'EPSG' AND h.deprecated = 0 AND h.source_crs_auth_name = 'EPSG'
              AND h.target_crs_auth_name = 'EPSG' AND h.target_crs_code = '4326'
              AND h.tx = 0 AND h.ty = 0 AND h.tz = 0 AND IFNULL(h.rx, 0) = 0 AND IFNULL(h.ry, 0) = 0
              AND IFNULL(h.rz, 0) = 0 AND IFNULL(h.scale_difference, 0) = 0 AND h.rate_tx IS NULL
            GROUP BY h.source_crs_code
            """)
        var out: [Int: DatumTransformation.Target] = [4326: .wgs84]
        while try st.step() {
            guard let c = st.string(at: 0).flatMap({ Int($0) }) else { continue }
            out[c] = .init(
                name: st.string(at: 1) ?? "EPSG:\(c)", epsg: c,
                accuracyToWGS84: st.isNull(at: 2) ? nil : st.double(at: 2))
        }
        return out
    }

    /// Non-deprecated EPSG longitude rotations (method 9601) from `code` to a CRS on the
    /// same ellipsoid with the Greenwich meridian.
    func longitudeRotations(from code: Int) throws -> [(target: Int, name: String)] {
        let st = try db.prepare(
            """
            SELECT o.target_crs_code, o.name FROM other_transformation o
            JOIN geodetic_crs s ON s.auth_name = 'EPSG' AND s.code = o.source_crs_code
            JOIN geodetic_datum sd ON sd.auth_name = s.datum_auth_name AND sd.code = s.datum_code
            JOIN geodetic_crs t ON t.auth_name = 'EPSG' AND t.code = o.target_crs_code
            JOIN geodetic_datum td ON td.auth_name = t.datum_auth_name AND td.code = t.datum_code
            WHERE o.auth_name = 'EPSG' AND o.deprecated = 0 AND o.method_auth_name = 'EPSG' AND o.method_code = '9601'
              AND o.source_crs_auth_name = 'EPSG' AND o.source_crs_code = ?1 AND o.target_crs_auth_name = 'EPSG'
              AND td.prime_meridian_code = '8901' AND sd.prime_meridian_code != '8901'
              AND td.ellipsoid_code = sd.ellipsoid_code
            ORDER BY o.code
            """)
        try st.bind(String(code), at: 1)
        var out: [(Int, String)] = []
        while try st.step() {
            if let t = st.string(at: 0).flatMap({ Int($0) }) {
                out.append((t, st.string(at: 1) ?? "longitude rotation"))
            }
        }
        return out.prefix(1).map { $0 }  // several list the same rotation; one suffices
    }

    /// EPSG's supersession records among `codes`: superseded code → its replacements.
    func supersessions(of codes: [Int]) throws -> [Int: [Int]] {
        guard !codes.isEmpty else { return [:] }
        // The codes are integers we parsed: safe to spell into the statement.
        let list = Set(codes).map { "'\($0)'" }.joined(separator: ",")
        let st = try db.prepare(
            """
            SELECT superseded_code, replacement_code FROM supersession
            WHERE superseded_auth_name = 'EPSG' AND replacement_auth_name = 'EPSG'
              AND superseded_table_name IN ('helmert_transformation', 'grid_transformation')
              AND superseded_code IN (\(list))
            """)
        var out: [Int: [Int]] = [:]
        while try st.step() {
            if let a = st.string(at: 0).flatMap({ Int($0) }), let b = st.string(at: 1).flatMap({ Int($0) }) {
                out[a, default: []].append(b)
            }
        }
        return out
    }

    func extents(table: String, code: Int) throws -> [Box] {
        let st = try db.prepare(
            """
            SELECT e.west_lon, e.south_lat, e.east_lon, e.north_lat, e.description FROM usage u
            JOIN extent e ON e.auth_name = u.extent_auth_name AND e.code = u.extent_code
            WHERE u.object_table_name = ?1 AND u.object_auth_name = 'EPSG' AND u.object_code = ?2
            """)
        try st.bind(table, at: 1)
        try st.bind(String(code), at: 2)
        var out: [Box] = []
        while try st.step() {
            guard (0..<4).allSatisfy({ !st.isNull(at: Int32($0)) }) else { continue }
            let b = Box(
                west: st.double(at: 0), south: st.double(at: 1), east: st.double(at: 2), north: st.double(at: 3),
                offshore: st.string(at: 4)?.contains("- offshore") == true)
            if [b.west, b.south, b.east, b.north].allSatisfy(\.isFinite) { out.append(b) }
        }
        return out
    }

    /// Helmert operations between `source` and a WGS 84 frame, either way round.
    func helmertCandidates(source: Int, targets: [Int: DatumTransformation.Target]) throws -> [Candidate] {
        let st = try db.prepare(
            """
            SELECT h.code, h.name, h.method_code, h.source_crs_code, h.target_crs_code, h.accuracy,
                   h.tx, h.ty, h.tz, tu.conv_factor, h.rx, h.ry, h.rz, ru.conv_factor, h.scale_difference, su.conv_factor,
                   h.px, h.py, h.pz, pu.conv_factor
            FROM helmert_transformation_table h
            JOIN unit_of_measure tu ON tu.auth_name = h.translation_uom_auth_name AND tu.code = h.translation_uom_code
            LEFT JOIN unit_of_measure ru ON ru.auth_name = h.rotation_uom_auth_name AND ru.code = h.rotation_uom_code
            LEFT JOIN unit_of_measure su ON su.auth_name = h.scale_difference_uom_auth_name AND su.code = h.scale_difference_uom_code
            LEFT JOIN unit_of_measure pu ON pu.auth_name = h.pivot_uom_auth_name AND pu.code = h.pivot_uom_code
            WHERE h.auth_name = 'EPSG' AND h.deprecated = 0 AND h.rate_tx IS NULL AND h.method_auth_name = 'EPSG'
              AND h.source_crs_auth_name = 'EPSG' AND h.target_crs_auth_name = 'EPSG'
              AND (h.source_crs_code = ?1 OR h.target_crs_code = ?1)
            """)
        try st.bind(String(source), at: 1)
        var out: [Candidate] = []
        while try st.step() {
            guard let code = st.string(at: 0).flatMap({ Int($0) }), let method = st.string(at: 2).flatMap({ Int($0) }),
                let from = st.string(at: 3).flatMap({ Int($0) }), let to = st.string(at: 4).flatMap({ Int($0) })
            else { continue }
            let reversed = to == source
            guard let target = targets[reversed ? from : to], (reversed ? to : from) == source else { continue }
            // Position vector (1), coordinate frame (-1) rotations; translations only (0).
            let convention: Double, pivot: Bool
            switch method {
            case 9603, 1031, 1035: (convention, pivot) = (0, false)
            case 9606, 1033, 1037, 1065: (convention, pivot) = (1, false)
            case 9607, 1032, 1038, 1066: (convention, pivot) = (-1, false)
            case 1061, 1062, 1063: (convention, pivot) = (1, true)
            case 9636, 1034, 1039: (convention, pivot) = (-1, true)
            default: continue  // time-dependent or a method tilepack does not apply
            }
            let name = st.string(at: 1) ?? "EPSG:\(code)"
            let t = st.isNull(at: 9) ? 1 : st.double(at: 9)
            let radians = st.isNull(at: 13) ? 0 : st.double(at: 13)
            let unity = st.isNull(at: 15) ? 0 : st.double(at: 15)
            let arcsec = radians / (.pi / 648_000)
            var v = [st.double(at: 6) * t, st.double(at: 7) * t, st.double(at: 8) * t]
            if convention != 0 {
                v += [st.double(at: 10), st.double(at: 11), st.double(at: 12)].map { $0 * arcsec * convention }
                v.append(st.double(at: 14) * unity * 1e6)
            }
            guard var h = Helmert(v) else {
                throw DatumGridError(
                    path: db.path, code: .badOperation, detail: "EPSG:\(code) \(name) has unusable Helmert parameters")
            }
            if pivot {
                // Molodensky-Badekas: X' = T + (1 + s)·R·(X − P) + P, the Helmert whose
                // translation is T + P − (1 + s)·R·P.
                let pu = st.isNull(at: 19) ? 1 : st.double(at: 19)
                let p = (x: st.double(at: 16) * pu, y: st.double(at: 17) * pu, z: st.double(at: 18) * pu)
                let rp = Helmert([0, 0, 0, h.rx, h.ry, h.rz, h.ppm]).map { $0.apply(p) } ?? p
                guard
                    let moved = Helmert([
                        h.tx + p.x - rp.x, h.ty + p.y - rp.y, h.tz + p.z - rp.z, h.rx, h.ry, h.rz, h.ppm,
                    ])
                else {
                    throw DatumGridError(
                        path: db.path, code: .badOperation, detail: "EPSG:\(code) \(name) has an unusable pivot")
                }
                h = moved
            }
            guard let s = try geodeticCRS(source), let e = try geodeticCRS(target.epsg) else { continue }
            let step: DatumTransformation.Step =
                reversed
                ? .inverseHelmert(h, source: s.ellipsoid, target: e.ellipsoid)
                : .helmert(h, source: s.ellipsoid, target: e.ellipsoid)
            out.append(
                Candidate(
                    name: reversed ? "Inverse of \(name)" : name, code: code,
                    accuracy: st.isNull(at: 5) ? nil : st.double(at: 5), target: target,
                    extents: try extents(table: "helmert_transformation", code: code), kind: .helmert(step)))
        }
        return out
    }

    /// Horizontal grid shifts between `source` and a WGS 84 frame, either way round.
    func gridCandidates(source: Int, targets: [Int: DatumTransformation.Target]) throws -> [Candidate] {
        let st = try db.prepare(
            """
            SELECT g.code, g.name, g.source_crs_code, g.target_crs_code, g.accuracy, g.grid_name,
                   a.proj_grid_name, a.old_proj_grid_name, a.proj_method, a.inverse_direction
            FROM grid_transformation g LEFT JOIN grid_alternatives a ON a.original_grid_name = g.grid_name
            WHERE g.auth_name = 'EPSG' AND g.deprecated = 0 AND g.source_crs_auth_name = 'EPSG'
              AND g.target_crs_auth_name = 'EPSG' AND (g.source_crs_code = ?1 OR g.target_crs_code = ?1)
            """)
        try st.bind(String(source), at: 1)
        var out: [Candidate] = []
        while try st.step() {
            guard let code = st.string(at: 0).flatMap({ Int($0) }), let from = st.string(at: 2).flatMap({ Int($0) }),
                let to = st.string(at: 3).flatMap({ Int($0) }), let gridName = st.string(at: 5)
            else { continue }
            let reversed = to == source
            guard let target = targets[reversed ? from : to], (reversed ? to : from) == source else { continue }
            var names: [String]
            var fileInverse = false
            if let projName = st.string(at: 6) {
                // Only PROJ's horizontal shifts are ours (not geoid models, geocentric grids, NADCON5…).
                guard st.string(at: 8) == "hgridshift" else { continue }
                names = [projName] + (st.string(at: 7).map { [$0] } ?? []) + [gridName]
                fileInverse = st.int(at: 9) != 0
            } else {
                // Without an alternatives row only NTv2 files named by EPSG are readable.
                guard gridName.lowercased().hasSuffix(".gsb") else { continue }
                names = [gridName]
            }
            names = names.filter { n in
                let l = n.lowercased()
                return l.hasSuffix(".gsb") || l.hasSuffix(".tif") || l.hasSuffix(".tiff")
            }
            guard !names.isEmpty else { continue }
            let name = st.string(at: 1) ?? "EPSG:\(code)"
            out.append(
                Candidate(
                    name: reversed ? "Inverse of \(name)" : name, code: code,
                    accuracy: st.isNull(at: 4) ? nil : st.double(at: 4), target: target,
                    extents: try extents(table: "grid_transformation", code: code),
                    kind: .grid(names: names, inverse: fileInverse != reversed, listed: names.last ?? gridName)))
        }
        return out
    }
}

/// File names in the grid directories, read once per selection, matched without regard
/// to case; only regular files count.
struct GridDirectoryListing {
    /// Per directory: lower-cased name → the spellings present.
    private var entries: [(dir: String, names: [String: [String]])] = []

    init(directories: [String]) {
        for dir in directories {
            guard let d = opendir(dir) else { continue }
            defer { closedir(d) }
            var names: [String: [String]] = [:]
            while let e = readdir(d) {
                let name = withUnsafeBytes(of: e.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                let l = name.lowercased()
                guard l.hasSuffix(".gsb") || l.hasSuffix(".tif") || l.hasSuffix(".tiff") else { continue }
                names[l, default: []].append(name)
            }
            entries.append((dir, names))
        }
    }

    /// The first of `names` found, directory by directory: the path, or nil.
    func find(_ candidates: [String]) -> String? {
        for (dir, names) in entries {
            for c in candidates {
                // The exact spelling wins over another case of it.
                guard let spellings = names[c.lowercased()], let actual = spellings.contains(c) ? c : spellings.min()
                else { continue }
                let path = dir.hasSuffix("/") ? dir + actual : dir + "/" + actual
                var st = stat()
                if stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG { return path }
            }
        }
        return nil
    }
}
