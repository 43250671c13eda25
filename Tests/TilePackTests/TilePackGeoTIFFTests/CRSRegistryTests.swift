import Testing
#if canImport(FoundationEssentials)
import FoundationEssentials
#endif
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackGeoTIFF
import TilePackTestSupport

/// Debian's proj.db (proj-data): CI installs it, so the real-registry tests run there; on a
/// machine without it the built-in fallback and the error paths (on files made here) still run.
let systemProjDB = "/usr/share/proj/proj.db"
let hasSystemProjDB = access(systemProjDB, R_OK) == 0

/// The EPSG registry read from proj.db: locating it, refusing bad files, CRS assembly (units,
/// prime meridians, axes), and points against PROJ 9.1.1 (proj-data EPSG v10.076), whose
/// values are from `proj_normalize_for_visualization` of the base geographic CRS → CRS
/// conversion (always_xy order, the order `tilepack project` prints).
@Suite("CRS registry (proj.db)")
struct CRSRegistryTests {
    // MARK: Locating

    @Test func locationOrderFollowsPROJ() throws {
        let dir = TemporaryDirectory()
        for sub in ["explicit", "data1", "data2", "lib"] {
            mkdir(dir.file(sub), 0o755)
            writeFile(dir.file("\(sub)/proj.db"), [0])
        }
        mkdir(dir.file("empty"), 0o755)
        let env = [
            "PROJ_DATA": "\(dir.file("empty")):\(dir.file("data2")):\(dir.file("data1"))", "PROJ_LIB": dir.file("lib"),
        ]
        let none = dir.file("no-system/proj.db")
        #expect(
            try ProjDBLocation.resolve(explicitPath: dir.file("explicit/proj.db"), environment: env, systemPath: none)
                == ProjDBLocation(path: dir.file("explicit/proj.db"), origin: "--proj-db"))
        // The first directory of the list holding proj.db wins; PROJ_DATA before PROJ_LIB.
        #expect(
            try ProjDBLocation.resolve(explicitPath: nil, environment: env, systemPath: none).path
                == dir.file("data2/proj.db"))
        #expect(
            try ProjDBLocation.resolve(
                explicitPath: nil, environment: ["PROJ_DATA": "", "PROJ_LIB": dir.file("lib") + "/"],
                systemPath: none) == ProjDBLocation(path: dir.file("lib/proj.db"), origin: "PROJ_LIB"))
        #expect(
            try ProjDBLocation.resolve(explicitPath: nil, environment: [:], systemPath: dir.file("data1/proj.db"))
                .origin == "default path")
        #expect(try ProjDBLocation.resolve(explicitPath: nil, environment: [:], systemPath: none).path == nil)
        // A variable that is set must lead to a proj.db: no silent fall back.
        #expect(throws: CRSRegistryError.notFoundInEnvironment(variable: "PROJ_DATA", value: dir.file("empty"))) {
            try ProjDBLocation.resolve(
                explicitPath: nil, environment: ["PROJ_DATA": dir.file("empty")], systemPath: none)
        }
        let registry = try CRSRegistry.locate(explicitPath: nil, environment: [:], systemPath: none)
        #expect(registry.source == .builtin)
    }

    @Test func builtinRegistryIsTodaysTable() throws {
        let r = CRSRegistry.builtin
        #expect(try r.crs(epsg: 32633) == (try CRS(epsg: 32633)))
        #expect(try r.crs(epsg: 32633).geodeticCRSCode == 4326)
        #expect(throws: CRSError.unsupportedEPSG(27700)) { try r.crs(epsg: 27700) }
        let codes = try r.acceptedCodes()
        #expect(codes.map(\.code) == CRS.supportedEPSGCodes)
        #expect(codes.allSatisfy { $0.source == "builtin" })
        #expect(codes.first { $0.code == 3035 }?.method == "Lambert Azimuthal Equal Area")
        #expect(codes.first { $0.code == 4326 }?.method == nil)
        #expect(try r.projectedDefinition(epsg: 27700) == nil)
    }

    // MARK: Bad files: one line naming the file and the problem

    @Test func missingFile() {
        let path = "/tmp/registry-test-absent-\(getpid())/proj.db"
        #expect(throws: CRSRegistryError.missing(path: path, origin: "--proj-db")) { try CRSRegistry(projDB: path) }
        #expect(
            CRSRegistryError.missing(path: path, origin: "--proj-db").description
                == "proj.db \(path) (--proj-db): no such file")
        // An explicit path is never replaced by the built-in table.
        #expect(throws: CRSRegistryError.self) { try CRSRegistry.locate(explicitPath: path, environment: [:]) }
    }

    @Test func fifoIsRefusedWithoutBlocking() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("proj.db")
        #expect(mkfifo(path, 0o600) == 0)
        let start = ContinuousClock.now
        #expect(throws: CRSRegistryError.notRegularFile(path: path, origin: "PROJ_DATA", kind: "a FIFO")) {
            try CRSRegistry.locate(explicitPath: nil, environment: ["PROJ_DATA": dir.path])
        }
        #expect(ContinuousClock.now - start < .seconds(2))
        #expect(
            CRSRegistryError.notRegularFile(path: path, origin: "PROJ_DATA", kind: "a FIFO").description
                == "proj.db \(path) (PROJ_DATA): is a FIFO, not a regular file")
        mkdir(dir.file("d"), 0o755)
        #expect(throws: CRSRegistryError.notRegularFile(path: dir.file("d"), origin: "--proj-db", kind: "a directory"))
        { try CRSRegistry(projDB: dir.file("d")) }
    }

    @Test func notSQLite() throws {
        let dir = TemporaryDirectory()
        let path = try dir.write("proj.db", Array(String(repeating: "not a database\n", count: 20).utf8))
        #expect(throws: CRSRegistryError.notSQLite(path: path, origin: "--proj-db")) { try CRSRegistry(projDB: path) }
        #expect(
            CRSRegistryError.notSQLite(path: path, origin: "--proj-db").description
                == "proj.db \(path) (--proj-db): not a SQLite database (no \"SQLite format 3\" header)")
        let empty = try dir.write("empty.db", [])
        #expect(throws: CRSRegistryError.notSQLite(path: empty, origin: "--proj-db")) { try CRSRegistry(projDB: empty) }
    }

    /// A SQLite file with a proj.db-like metadata table.
    func makeDatabase(_ path: String, major: String?, epsg: String?, rows: Int = 0) throws {
        let db = try SQLiteConnection(path: path, mode: .readWriteCreate)
        try db.execute("PRAGMA journal_mode = DELETE")
        try db.execute("CREATE TABLE metadata (key TEXT NOT NULL PRIMARY KEY, value TEXT NOT NULL)")
        if let major {
            try db.execute(
                """
                INSERT INTO metadata VALUES ('DATABASE.LAYOUT.VERSION.MAJOR', '\(major)'), \
                ('DATABASE.LAYOUT.VERSION.MINOR', '0')
                """
            )
        }
        if let epsg { try db.execute("INSERT INTO metadata VALUES ('EPSG.VERSION', '\(epsg)')") }
        if rows > 0 {
            try db.execute("CREATE TABLE filler (x TEXT)")
            let insert = try db.prepare("INSERT INTO filler VALUES (?)")
            for i in 0..<rows {
                insert.reset()
                try insert.bind(String(repeating: "\(i)", count: 200), at: 1)
                try insert.run()
            }
        }
    }

    @Test func otherLayoutVersionAndMissingMetadata() throws {
        let dir = TemporaryDirectory()
        let v2 = dir.file("v2.db")
        try makeDatabase(v2, major: "2", epsg: "v12.000")
        #expect(
            throws: CRSRegistryError.badSchema(
                path: v2, origin: "--proj-db",
                problem: "database layout version 2.0; tilepack reads layout 1.x (PROJ 8.1 to 9.x)")
        ) {
            try CRSRegistry(projDB: v2)
        }
        #expect(
            CRSRegistryError.badSchema(
                path: v2, origin: "--proj-db",
                problem: "database layout version 2.0; tilepack reads layout 1.x (PROJ 8.1 to 9.x)"
            ).description
                == "proj.db \(v2) (--proj-db): database layout version 2.0; tilepack reads layout 1.x (PROJ 8.1 to 9.x)"
        )
        let noEPSG = dir.file("noepsg.db")
        try makeDatabase(noEPSG, major: "1", epsg: nil)
        #expect(
            throws: CRSRegistryError.badSchema(
                path: noEPSG, origin: "--proj-db", problem: "metadata has no EPSG.VERSION: no EPSG dataset in it")
        ) {
            try CRSRegistry(projDB: noEPSG)
        }
        let other = dir.file("other.db")
        let db = try SQLiteConnection(path: other, mode: .readWriteCreate)
        try db.execute("PRAGMA journal_mode = DELETE; CREATE TABLE t (x)")
        do {
            _ = try CRSRegistry(projDB: other)
            Issue.record("a SQLite file without metadata opened as proj.db")
        } catch {
            guard error.code == .badSchema else { Issue.record("\(error)"); return }
            #expect(
                error.subject == "proj.db \(other) (--proj-db)"
                    && error.detail.hasPrefix("not a proj.db: cannot read its metadata table"))
        }
        // Layout 1 with metadata but none of the CRS tables: refused when opened, not at the first lookup.
        let bare = dir.file("bare.db")
        try makeDatabase(bare, major: "1", epsg: "v10.076")
        do {
            _ = try CRSRegistry(projDB: bare)
            Issue.record("a proj.db without CRS tables opened")
        } catch {
            guard error.code == .badSchema else { Issue.record("\(error)"); return }
            #expect(error.detail.hasPrefix("not a proj.db tilepack can read (no such table: projected_crs"))
        }
    }

    @Test func truncatedCopy() throws {
        let dir = TemporaryDirectory()
        let whole = dir.file("whole.db")
        try makeDatabase(whole, major: "1", epsg: "v10.076", rows: 200)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: hasSystemProjDB ? systemProjDB : whole)))
        #expect(bytes.count > 8192)
        let cut = try dir.write("proj.db", Array(bytes[0..<(bytes.count / 2)]))
        do {
            _ = try CRSRegistry(projDB: cut)
            Issue.record("a truncated proj.db opened")
        } catch {
            guard error.code == .badSchema else { Issue.record("\(error)"); return }
            #expect(
                error.subject == "proj.db \(cut) (--proj-db)"
                    && error.detail.hasPrefix("truncated: \(bytes.count / 2) bytes"))
            #expect(!error.description.contains("\n"))
        }
    }

    // MARK: Axes

    @Test func axisMappingMatchesPROJAlwaysXY() throws {
        func m(_ a: String, _ b: String, ws: Bool = false) -> AxisMapping? {
            AxisMapping(orientations: (a, b), native: ws ? (false, false) : (true, true))
        }
        #expect(m("east", "north") == .identity)
        #expect(m("north", "east") == .identity)  // 3006, 2193, 31467: shown E, N
        #expect(m("west", "south", ws: true) == .identity)  // 2046 TM south orientated
        #expect(m("south", "west", ws: true) == AxisMapping(swap: true))  // 2065 Krovak: southing, westing
        #expect(m("south", "west") == AxisMapping(negateX: true, negateY: true, swap: true))  // 8044 Cassini (-N, -E)
        #expect(m("North along 90°E", "North along 0°E") == .identity)  // 3031
        #expect(m("South along 180°E", "South along 90°E") == .identity)  // UPS North 32661
        #expect(m("east", "up") == nil)
        #expect(m("north", "North along 0°E") == nil)
        let krovak = try #require(m("south", "west", ws: true))
        let p = krovak.apply((703_105.689937, 1_058_219.600826))  // the method's westing, southing
        #expect(p.x == 1_058_219.600826 && p.y == 703_105.689937)
        #expect(krovak.invert(p) == (703_105.689937, 1_058_219.600826))
    }

    // MARK: Real proj.db

    static func registry() throws -> CRSRegistry { try CRSRegistry(projDB: systemProjDB, origin: "default path") }

    @Test(.enabled(if: hasSystemProjDB)) func projectedPointsMatchPROJ() throws {
        let r = try Self.registry()
        #expect(r.source == .projDB(path: systemProjDB, epsgVersion: "v10.076"))
        // (code, lon, lat on the base geographic CRS, x, y from PROJ 9.1.1, always_xy)
        let cases: [(Int, Double, Double, Double, Double)] = [
            (27700, -2, 54, 400_000.000000, 456_017.698851),
            (31467, 9, 50.5, 3_500_000.000000, 5_595_890.158971),
            (2193, 174, -41, 1_684_102.134446, 5_460_761.410741),
            (2263, -74, 40.7, 984_250.000000, 194_305.338941),
            (3006, 15, 60, 500_000.000000, 6_651_411.190240),
            (3067, 25, 62, 395_257.320144, 6_875_794.504846),
            (2180, 19, 52, 500_000.000000, 459_309.209402),
            (2157, -7.5, 53.3, 633_329.348630, 727_861.850253),
            (27572, 3, 47, 650_403.590257, 2_222_443.505609),  // Paris meridian in grads; lon here Greenwich
            (3031, 30, -75, 819_391.619204, 1_419_227.915757),
        ]
        for (code, lon, lat, x, y) in cases {
            let crs = try r.crs(epsg: code)
            let p = crs.project(lon: lon, lat: lat)
            #expect(abs(p.x - x) < 0.001 && abs(p.y - y) < 0.001, "EPSG:\(code): \(p) vs PROJ \(x), \(y)")
            let g = crs.unproject(x: x, y: y)
            #expect(abs(g.lon - lon) < 1e-8 && abs(g.lat - lat) < 1e-8, "EPSG:\(code) inverse: \(g)")
        }
        let bng = try r.crs(epsg: 27700)
        #expect(bng.source == .projDB(path: systemProjDB, epsgVersion: "v10.076"))
        #expect(
            bng.datum.ellipsoid.semiMajorAxis == 6_377_563.396 && bng.datum.ellipsoid.inverseFlattening == 299.3249646)
        #expect(
            bng.projectionParameters
                == ProjectionParameters(
                    method: .transverseMercator, latitudeOfOrigin: 49, centralMeridian: -2,
                    scale: 0.9996012717, falseEasting: 400_000, falseNorthing: -100_000))
        #expect(bng.geodeticCRSCode == 4277 && bng.datum.epsg == 6277)
        let ny = try r.crs(epsg: 2263)
        // 984250 ftUS, exactly
        #expect(ny.linearUnit == .usSurveyFoot && ny.projectionParameters?.falseEasting == 300_000)
        let paris = try r.crs(epsg: 27572)
        #expect(abs(paris.datum.primeMeridian - 2.33722917) < 1e-12)
        #expect(paris.projectionParameters?.latitudeOfOrigin == 46.8)  // 52 grad
        // Built-in codes still come from the built-in table (same answer with or without proj.db).
        #expect(try r.crs(epsg: 32633).source == .builtin)
    }

    @Test(.enabled(if: hasSystemProjDB)) func geographicAndDeprecated() throws {
        let r = try Self.registry()
        let gda2020 = try r.crs(epsg: 7844)
        #expect(gda2020.kind == .geographic && gda2020.name == "GDA2020" && gda2020.datum.epsg == 1168)
        let p = gda2020.project(lon: 134, lat: -25)
        #expect(p.x == 134 && p.y == -25)  // always lon, lat although the EPSG axis order is lat, lon
        let ntfParis = try r.crs(epsg: 4807)
        #expect(ntfParis.angularUnit.epsg == 9105)
        let g = ntfParis.project(lon: 3, lat: 47)
        #expect(abs(g.x - 0.736412) < 1e-6 && abs(g.y - 52.222222) < 1e-6)  // grads east of Paris
        let old = try r.crs(epsg: 2037)
        #expect(old.isDeprecated && old.name == "NAD83(CSRS98) / UTM zone 19N")
        #expect("\(old)".hasSuffix("deprecated in the EPSG dataset"))
    }

    /// A built-in code on a datum the table gives no shift takes proj.db's operations: NAD27
    /// UTM 11N is no longer treated as WGS 84 (~100 m off in California) when proj.db is there.
    @Test(.enabled(if: hasSystemProjDB)) func builtinCodesTakeProjDBDatumOperations() throws {
        let r = try Self.registry()
        let nad27 = try r.crs(epsg: 26711)
        let table = try CRS(epsg: 26711)
        #expect(table.datumTransformation == nil && table.datumNote?.contains("treated as WGS 84") == true)
        #expect(nad27.projection == table.projection && nad27.name == table.name)
        #expect(nad27.datumTransformation?.code == "EPSG:1172" && nad27.geodeticCRSCode == 4267)
        // PROJ 9.1: cs2cs EPSG:4267 EPSG:4326 at 34.05°N 118.2°W (NAD27 to WGS 84 (6) there).
        let p = try #require(nad27.datumTransformation).toWGS84(lon: -118.2, lat: 34.05)
        #expect(metresApart(p, (-118.2008901301, 34.0500078596)) < 0.001)
        // Datums the table shifts, or WGS 84, stay as the table has them.
        #expect(try r.crs(epsg: 32633) == (try CRS(epsg: 32633)))
        #expect(try CRSRegistry.builtin.crs(epsg: 26711) == table)
    }

    /// Methods other helpers add: the registry's definition now, points after the merge.
    @Test(.enabled(if: hasSystemProjDB)) func definitionsOfOtherMethods() throws {
        let r = try Self.registry()
        func def(_ code: Int) throws -> CRSRegistry.ProjectedDefinition {
            try #require(try r.projectedDefinition(epsg: code))
        }
        func near(_ a: Double?, _ b: Double) -> Bool { a.map { abs($0 - b) < 1e-12 } ?? false }
        let lv95 = try def(2056)
        #expect(lv95.methodCode == 9815 && lv95.methodName == "Hotine Oblique Mercator (variant B)")
        #expect(
            near(lv95.parameters[8811], 46 + 57.0 / 60 + 8.66 / 3600)
                && near(lv95.parameters[8812], 7 + 26.0 / 60 + 22.5 / 3600))
        #expect(lv95.parameters[8813] == 90 && lv95.parameters[8814] == 90 && lv95.parameters[8815] == 1)
        #expect(lv95.parameters[8816] == 2_600_000 && lv95.parameters[8817] == 1_200_000 && lv95.axes == .identity)
        let lv03 = try def(21781)
        #expect(lv03.methodCode == 9815 && lv03.parameters[8816] == 600_000 && lv03.parameters[8817] == 200_000)
        #expect(lv03.axes == .identity)  // CS (Y east, X north): shown east, north
        let rd = try def(28992)
        #expect(rd.methodCode == 9809 && near(rd.parameters[8801], 52 + 9.0 / 60 + 22.178 / 3600))
        #expect(near(rd.parameters[8802], 5 + 23.0 / 60 + 15.5 / 3600) && rd.parameters[8805] == 0.9999079)
        let conus = try def(5070)
        #expect(conus.methodCode == 9822 && near(conus.parameters[8823], 29.5) && near(conus.parameters[8824], 45.5))
        #expect(conus.parameters[8821] == 23 && conus.parameters[8822] == -96)
        let aus = try def(3577)
        #expect(
            aus.methodCode == 9822 && aus.parameters[8823] == -18 && aus.parameters[8824] == -36
                && aus.parameters[8822] == 132)
        let ease = try def(6933)
        #expect(ease.methodCode == 9835 && ease.parameters[8823] == 30 && ease.parameters.count == 4)
        let krovak = try def(2065)
        #expect(krovak.methodCode == 9819 && near(krovak.parameters[8811], 49.5) && near(krovak.parameters[8833], 42.5))
        #expect(near(krovak.parameters[1036], 30 + 17.0 / 60 + 17.30311 / 3600) && near(krovak.parameters[8818], 78.5))
        // Krovak computes PROJ krovak's east/north-growing numbers; 2065's south/west axes negate
        // both and PROJ prints southing first.
        #expect(krovak.axes == AxisMapping(negateX: true, negateY: true, swap: true))
        let lo15 = try def(2046)
        #expect(lo15.methodCode == 9808 && lo15.parameters[8802] == 15 && lo15.axes == .identity)  // westing, southing
        let legal = try def(29371)  // German legal metre
        #expect(legal.linearUnit.metres == 1.0000135965)
    }

    @Test(.enabled(if: hasSystemProjDB)) func refusalsNameCodeMethodAndFile() throws {
        let r = try Self.registry()
        #expect(
            throws: CRSError.unsupportedRegistryMethod(
                code: 22300, name: "Carthage (Paris) / Tunisia Mining Grid", method: "Tunisia Mining Grid",
                methodCode: "9816", file: systemProjDB)
        ) { try r.crs(epsg: 22300) }
        #expect(
            CRSError.unsupportedRegistryMethod(
                code: 22300, name: "Carthage (Paris) / Tunisia Mining Grid", method: "Tunisia Mining Grid",
                methodCode: "9816", file: systemProjDB
            ).description
                == """
                EPSG:22300 (\"Carthage (Paris) / Tunisia Mining Grid\"): projection method \"Tunisia Mining \
                Grid\" (EPSG method 9816) is not implemented by tilepack (CRS from proj.db \(systemProjDB))
                """
        )
        #expect(throws: CRSError.notInRegistry(code: 99_999, file: systemProjDB, epsgVersion: "v10.076")) {
            try r.crs(epsg: 99_999)
        }
        for code in [7405, 4978, 4979, 5701] {  // compound, geocentric, geographic 3D, vertical
            do {
                _ = try r.crs(epsg: code)
                Issue.record("EPSG:\(code) resolved")
            } catch {
                guard error.code == .unsupportedRegistryCRS else {
                    Issue.record("\(error)"); continue
                }
                #expect(
                    error.subject.hasPrefix("EPSG:\(code) (")
                        && error.detail.hasSuffix("(CRS from proj.db \(systemProjDB))")
                        && !error.description.contains("\n"))
            }
        }
    }

    @Test(.enabled(if: hasSystemProjDB)) func geoKeysResolveThroughTheRegistry() throws {
        let keys = GeoKeyDirectory(
            version: [1, 1, 0],
            entries: [(GeoKey.gtModelType, .shorts([1])), (GeoKey.projectedCSType, .shorts([27700]))])
        #expect(throws: CRSError.unsupportedEPSG(27700)) { try CRS(geoKeys: keys) }
        let r = try Self.registry()
        let crs = try CRS(geoKeys: keys, registry: r)
        #expect(crs == (try r.crs(epsg: 27700)))
        let poly = GeoKeyDirectory(
            version: [1, 1, 0],
            entries: [(GeoKey.gtModelType, .shorts([1])), (GeoKey.projectedCSType, .shorts([22300]))])
        #expect(
            throws: CRSError.unsupportedRegistryMethod(
                code: 22300, name: "Carthage (Paris) / Tunisia Mining Grid", method: "Tunisia Mining Grid",
                methodCode: "9816", file: systemProjDB)
        ) { try CRS(geoKeys: poly, registry: r) }
        let geo = GeoKeyDirectory(
            version: [1, 1, 0], entries: [(GeoKey.gtModelType, .shorts([2])), (GeoKey.geographicType, .shorts([7844]))])
        let g = try CRS(geoKeys: geo, registry: r)
        #expect(g.epsg == 7844 && g.kind == .geographic && g.source == r.source)
    }

    @Test(.enabled(if: hasSystemProjDB)) func listingIsEveryAcceptedCodeInOnePass() throws {
        let r = try Self.registry()
        let start = ContinuousClock.now
        let entries = try r.acceptedCodes()
        let elapsed = ContinuousClock.now - start
        #expect(elapsed < .seconds(5), "listing took \(elapsed)")  // debug build; ~0.2 s in release
        let codes = Set(entries.map(\.code))
        #expect(entries.count > 4_500 && codes.count == entries.count)
        for c in [27700, 31467, 2193, 2263, 3006, 3067, 2180, 2157, 7844, 4326, 32633, 900913] {
            #expect(codes.contains(c), "\(c)")
        }
        #expect(!codes.contains(22300) && !codes.contains(4978))
        #expect(
            entries.first { $0.code == 27700 }
                == CRSRegistry.Entry(
                    code: 27700, name: "OSGB36 / British National Grid",
                    method: "Transverse Mercator", source: "proj.db", deprecated: false))
        #expect(entries.first { $0.code == 32633 }?.source == "builtin")
        // Every listed code resolves.
        for e in entries where e.code % 97 == 0 { _ = try r.crs(epsg: e.code) }
    }
}
