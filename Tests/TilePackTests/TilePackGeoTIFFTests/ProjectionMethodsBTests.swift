import Testing
import Foundation
@testable import TilePackGeoTIFF
import TilePackTestSupport

/// The projection methods added for issue 26 (part B): per method, PROJ 9.1.1's answer for
/// two or three points (libproj.so.25 through `proj_create_crs_to_crs` + always-xy on the same
/// proj.db, or the stated PROJ string where PROJ 9.1 lacks or mis-maps the method) and the
/// IOGP GN 7-2 worked example where it exists: forward within 1 mm, inverse within 1e-9°,
/// round trips, and non-finite answers for points with no image.
@Suite("Projection methods B: against PROJ and GN 7-2")
struct ProjectionMethodsBTests {
    static func dms(_ d: Double, _ m: Double = 0, _ s: Double = 0) -> Double {
        d < 0 ? d - m / 60 - s / 3600 : d + m / 60 + s / 3600
    }

    static let intl = Ellipsoid.international1924
    static let clarke1866 = Ellipsoid.clarke1866
    static let bessel = Ellipsoid.bessel1841

    /// The registry path: EPSG parameter codes → ``ProjectionParameters`` → ``Projection``.
    func projection(
        _ method: ProjectionMethod, _ ellipsoid: Ellipsoid, _ parameters: [Int: Double]
    ) throws -> Projection {
        Projection(try ProjectionParameters(method: method, epsgParameters: parameters), ellipsoid: ellipsoid)
    }

    /// `inverseTolerance` is loosened only for GN 7-2 figures, which are rounded to 1 cm (~1e-7°).
    func check(
        _ p: Projection, lon: Double, lat: Double, x: Double, y: Double, tolerance: Double = 0.001,
        inverseTolerance: Double = 1e-9, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let f = p.forward(lon: lon * .pi / 180, lat: lat * .pi / 180)
        #expect(
            abs(f.x - x) < tolerance && abs(f.y - y) < tolerance,
            "forward (\(f.x), \(f.y)) vs (\(x), \(y))", sourceLocation: sourceLocation)
        let g = p.inverse(x: x, y: y)
        let dLon = remainder(g.lon * 180 / .pi - lon, 360)
        #expect(
            abs(dLon) < inverseTolerance && abs(g.lat * 180 / .pi - lat) < inverseTolerance,
            "inverse (\(g.lon * 180 / .pi), \(g.lat * 180 / .pi)) vs (\(lon), \(lat))", sourceLocation: sourceLocation)
        let back = p.inverse(x: f.x, y: f.y)
        #expect(
            abs(remainder(back.lon * 180 / .pi - lon, 360)) < 1e-11 && abs(back.lat * 180 / .pi - lat) < 1e-11,
            "round trip \(back)", sourceLocation: sourceLocation)
    }

    @Test func transverseMercatorSouthOrientated() throws {
        // Hartebeesthoek94 / Lo29 (EPSG:2053); GN 7-2: 25°43′55.302″S 28°16′57.479″E → W 71984.49, S 2847342.74.
        let lo29 = try projection(
            .transverseMercatorSouthOrientated, .wgs84, [8801: 0, 8802: 29, 8805: 1, 8806: 0, 8807: 0])
        check(lo29, lon: 28.282632833, lat: -25.732028333, x: 71_984.502067, y: 2_847_342.735294)
        check(
            lo29, lon: Self.dms(28, 16, 57.479), lat: Self.dms(-25, 43, 55.302), x: 71_984.49, y: 2_847_342.74,
            tolerance: 0.02, inverseTolerance: 2e-7)
        // Lo15 (EPSG:2046): a point east of the central meridian has a negative westing.
        let lo15 = try projection(
            .transverseMercatorSouthOrientated, .wgs84, [8801: 0, 8802: 15, 8805: 1, 8806: 0, 8807: 0])
        check(lo15, lon: 16.2, lat: -28.5, x: -117_489.648862, y: 3_154_440.623234)
        // EPSG's FE/FN: W = FE − E′, S = FN − N′.
        let shifted = try projection(
            .transverseMercatorSouthOrientated, .wgs84, [8801: 0, 8802: 15, 8805: 1, 8806: 1000, 8807: 2000])
        check(shifted, lon: 16.2, lat: -28.5, x: 1000 - 117_489.648862, y: 2000 + 3_154_440.623234)
    }

    @Test func transverseMercator3DIsTransverseMercatorIn2D() throws {
        // LUREF / Luxembourg TM (3D) (EPSG:9895).
        let p = try projection(
            .transverseMercator3D, Self.intl,
            [8801: Self.dms(49, 50), 8802: Self.dms(6, 10), 8805: 1, 8806: 80_000, 8807: 100_000])
        check(p, lon: 6.1, lat: 49.6, x: 75_180.514907, y: 74_049.036712)
    }

    @Test func colombiaUrban() throws {
        // MAGNA-SIRGAS / Bogota urban grid (EPSG:6247), h0 2550 m.
        let bogota = try projection(
            .colombiaUrban, .grs80,
            [
                8801: Self.dms(4, 40, 49.75), 8802: -Self.dms(74, 8, 47.73), 8806: 92_334.879, 8807: 109_320.965,
                1039: 2550,
            ])
        check(bogota, lon: -74.08, lat: 4.62, x: 99_726.857988, y: 102_629.968423)
        // Medellin (EPSG:6257), h0 1510 m.
        let medellin = try projection(
            .colombiaUrban, .grs80,
            [
                8801: Self.dms(6, 13, 45.152), 8802: -Self.dms(75, 33, 53.593), 8806: 835_378.647, 8807: 1_180_816.875,
                1039: 1510,
            ])
        check(medellin, lon: -75.6, lat: 6.25, x: 831_492.037889, y: 1_183_116.786034)
    }

    @Test func equidistantCylindrical() throws {
        // WGS 84 / World Equidistant Cylindrical (EPSG:4087), ellipsoidal as EPSG defines 1028.
        // Reference: OSGeo/PROJ#4654 (Apache SIS, GeoCalc, ESRI PE agree; PROJ 9.1 is spherical here).
        let p = try projection(.equidistantCylindrical, .wgs84, [8823: 0, 8802: 0, 8806: 0, 8807: 0])
        check(
            p, lon: -143.9999611505, lat: 71.9993230521, x: -16_030_002.350, y: 7_992_053.817, tolerance: 0.002,
            inverseTolerance: 1e-7)
        // The spherical method on a sphere is PROJ's eqc (PROJ 9.1's answer for 4087 on radius a).
        let s = try projection(
            .equidistantCylindricalSpherical, .sphere(name: "a", radius: 6_378_137),
            [8823: 0, 8802: 0, 8806: 0, 8807: 0])
        check(s, lon: 10, lat: 55, x: 1_113_194.907933, y: 6_122_571.993630)
        #expect(!p.inverse(x: 0, y: 10_100_000).lat.isFinite)
    }

    @Test func lambertCylindricalEqualArea() throws {
        // WGS 84 / NSIDC EASE-Grid 2.0 Global (EPSG:6933).
        let p = try projection(.lambertCylindricalEqualArea, .wgs84, [8823: 30, 8802: 0, 8806: 0, 8807: 0])
        check(p, lon: 10, lat: 45, x: 964_862.802509, y: 5_180_102.328839)
        check(p, lon: -120, lat: -80, x: -11_578_353.630108, y: -7_229_704.847593)
        #expect(!p.inverse(x: 0, y: 7_400_000).lat.isFinite)
        // Spherical form on a sphere: X = R·Δλ·cosφ₁, Y = R·sinφ/cosφ₁.
        let r = 6_371_007.0
        let s = try projection(
            .lambertCylindricalEqualAreaSpherical, .sphere(name: "r", radius: r), [8823: 30, 8802: 0, 8806: 0, 8807: 0])
        let c30 = 3.0.squareRoot() / 2
        check(s, lon: 10, lat: 45, x: r * 10 * .pi / 180 * c30, y: r * 0.5.squareRoot() / c30)
    }

    @Test func polarStereographicVariantC() throws {
        // Petrels 1972 / Terre Adelie Polar Stereographic (EPSG:2985); GN 7-2:
        // 66°36′18.820″S 140°04′17.040″E → E 303169.522, N 244055.721. PROJ 9.1 lacks variant C;
        // the reference is PROJ's stere variant B with the pole at NF − ρf.
        let p = try projection(.polarStereographicC, Self.intl, [8832: -67, 8833: 140, 8826: 300_000, 8827: 200_000])
        check(
            p, lon: Self.dms(140, 4, 17.040), lat: Self.dms(-66, 36, 18.820), x: 303_169.522, y: 244_055.721,
            tolerance: 0.002, inverseTolerance: 2e-7)
        check(p, lon: 140.0714, lat: -66.605228, x: 303_169.521826, y: 244_055.695683)
    }

    @Test func newZealandMapGrid() throws {
        // NZGD49 / New Zealand Map Grid (EPSG:27200).
        let p = try projection(.newZealandMapGrid, Self.intl, [8801: -41, 8802: 173, 8806: 2_510_000, 8807: 6_023_150])
        check(p, lon: 172.7333333333333, lat: -34.43333333333333, x: 2_486_562.682239, y: 6_752_240.674726)
        check(p, lon: 174.76, lat: -36.85, x: 2_667_368.262927, y: 6_482_219.908298)
        #expect(!p.inverse(x: .nan, y: 6_000_000).lon.isFinite)
    }

    @Test func equalEarth() throws {
        // WGS 84 / Equal Earth Greenwich (EPSG:8857) and Americas (EPSG:8858).
        let g = try projection(.equalEarth, .wgs84, [8802: 0, 8806: 0, 8807: 0])
        check(g, lon: 10, lat: 45, x: 821_804.152722, y: 5_466_867.760214)
        let am = try projection(.equalEarth, .wgs84, [8802: -90, 8806: 0, 8807: 0])
        check(am, lon: -100, lat: -30, x: -896_533.993861, y: -3_764_325.426892)
        #expect(!g.inverse(x: 0, y: 9_000_000).lat.isFinite)
        #expect(!g.inverse(x: 18_000_000, y: 0).lon.isFinite)
    }

    @Test func lambertAzimuthalEqualAreaSpherical() throws {
        // NAD27 / US National Atlas Equal Area (EPSG:9311): spherical formulas on the authalic
        // sphere of Clarke 1866, as GN 7-2 and PROJ ≥ 9.2 (`laea +R_A`) do; PROJ 9.1.1 computes
        // it on the ellipsoid instead. PROJ's R_A is a series (~1e-10 relative), hence 1 mm.
        let p = try projection(
            .lambertAzimuthalEqualAreaSpherical, Self.clarke1866, [8801: 45, 8802: -100, 8806: 0, 8807: 0])
        check(p, lon: -100.5, lat: 38.2, x: -43_768.348077, y: -755_550.455404)
        check(p, lon: -70, lat: 25, x: 2_998_697.738066, y: -1_695_122.620197)
    }

    @Test func guamProjection() throws {
        // Guam 1963 / Guam SPCS (EPSG:3993); GN 7-2: 13°20′20.53846″N 144°38′07.19265″E → E 37712.48, N 35242.00.
        let p = try projection(
            .guamProjection, Self.clarke1866,
            [8801: Self.dms(13, 28, 20.87887), 8802: Self.dms(144, 44, 55.50254), 8806: 50_000, 8807: 50_000])
        check(p, lon: 144.635331292, lat: 13.33903846, x: 37_712.481090, y: 35_242.001016)
        check(p, lon: 144.75, lat: 13.45, x: 50_135.282807, y: 47_514.591069)
        check(
            p, lon: Self.dms(144, 38, 7.19265), lat: Self.dms(13, 20, 20.53846), x: 37_712.48, y: 35_242.00,
            tolerance: 0.01, inverseTolerance: 2e-7)
    }

    @Test func bonneSouthOrientated() throws {
        // Lisbon 1890 / Portugal Bonne New (EPSG:5017) shape; PROJ 9.1 lacks 9828, the
        // reference is its ellipsoidal `bonne` read as westing/southing (+axis=wsu; FE = FN = 0).
        let p = try projection(.bonneSouthOrientated, Self.bessel, [8801: Self.dms(39, 40), 8802: 0, 8806: 0, 8807: 0])
        check(p, lon: -1.2, lat: 1.5, x: 133_519.639838, y: 4_225_485.067461)
        check(p, lon: 0.5, lat: -0.8, x: -55_647.706831, y: 4_480_402.212214)
    }

    @Test func labordeObliqueMercator() throws {
        // Tananarive / Laborde Grid (EPSG:8441), EPSG's exact formulation (rotated Gauss sphere
        // plus the complex cubic). PROJ's `labrd` is a truncated series of it: they differ by up
        // to 1.6 cm over Madagascar, hence 2 cm here; the round trip is exact.
        let p = try projection(
            .labordeObliqueMercator, Self.intl,
            [8811: -18.9, 8812: Self.dms(46, 26, 14.025), 8813: 18.9, 8815: 0.9995, 8806: 400_000, 8807: 800_000])
        check(p, lon: 46.5, lat: -19.5, x: 406_585.930722, y: 733_614.057341, tolerance: 0.02, inverseTolerance: 3e-7)
        check(p, lon: 44.0, lat: -24.0, x: 151_876.642899, y: 233_686.536367, tolerance: 0.02, inverseTolerance: 3e-7)
        // At the centre the grid is (FE, FN) exactly.
        check(p, lon: Self.dms(46, 26, 14.025), lat: -18.9, x: 400_000, y: 800_000, tolerance: 1e-6)
    }

    @Test func modifiedAzimuthalEquidistant() throws {
        // Guam 1963 / Yap Islands (EPSG:3295): EPSG's series against PROJ's exact geodesic `aeqd`
        // (they agree to 0.2 mm over the islands); GN 7-2: 9°35′47.493″N 138°11′34.908″E → E 42665.90, N 65509.82.
        let p = try projection(
            .modifiedAzimuthalEquidistant, Self.clarke1866,
            [8801: Self.dms(9, 32, 48.15), 8802: Self.dms(138, 10, 7.48), 8806: 40_000, 8807: 60_000])
        check(p, lon: 138.1, lat: 9.5, x: 32_451.575369, y: 54_834.904063)
        check(p, lon: 138.25, lat: 9.62, x: 48_919.071923, y: 68_106.987639)
        check(
            p, lon: Self.dms(138, 11, 34.908), lat: Self.dms(9, 35, 47.493), x: 42_665.90, y: 65_509.82,
            tolerance: 0.01, inverseTolerance: 2e-7)
    }

    @Test func lambertConicNearConformal() throws {
        // Deir ez Zor / Levant Zone (EPSG:22700) on Clarke 1880 (IGN); PROJ 9.1 lacks the
        // method. GN 7-2: 37°31′17.625″N 34°08′11.291″E → E 15707.96, N 623165.96 (1 cm rounding).
        let clarkeIGN = Ellipsoid(name: "Clarke 1880 (IGN)", semiMajorAxis: 6_378_249.2, semiMinorAxis: 6_356_515.0)
        let p = try projection(
            .lambertConicNearConformal, clarkeIGN,
            [8801: Self.dms(34, 39), 8802: Self.dms(37, 21), 8805: 0.9996256, 8806: 300_000, 8807: 300_000])
        check(
            p, lon: Self.dms(34, 8, 11.291), lat: Self.dms(37, 31, 17.625), x: 15_707.96, y: 623_165.96,
            tolerance: 0.005, inverseTolerance: 2e-7)
        check(p, lon: Self.dms(37, 21), lat: Self.dms(34, 39), x: 300_000, y: 300_000, tolerance: 1e-6)
    }

    @Test func transverseMercatorZonedGrid() throws {
        // WGS 84 / UTM grid system (EPSG:32600/32700): the easting is the UTM zone's, prefixed by
        // the zone number × 10⁶ (PROJ 9.1 lacks the method; references are PROJ's UTM 32N / 60S).
        let north = try projection(
            .transverseMercatorZonedGrid, .wgs84, [8801: 0, 8830: -180, 8831: 6, 8805: 0.9996, 8806: 500_000, 8807: 0])
        check(north, lon: 9.5, lat: 47, x: 32_000_000 + 538_012.754993, y: 5_205_285.415385)
        let south = try projection(
            .transverseMercatorZonedGrid, .wgs84,
            [8801: 0, 8830: -180, 8831: 6, 8805: 0.9996, 8806: 500_000, 8807: 10_000_000])
        check(south, lon: 179.9, lat: -40, x: 60_000_000 + 747_561.693182, y: 5_568_213.761424)
        // An easting whose prefix is no zone has no position.
        #expect(!north.inverse(x: 61_500_000, y: 0).lat.isFinite)
        #expect(!north.inverse(x: 400_000, y: 0).lat.isFinite)
        #expect(throws: CRSError.self) {
            _ = try ProjectionParameters(method: .transverseMercatorZonedGrid, epsgParameters: [8830: -180, 8831: 0])
        }
    }

    @Test func mercatorVariantsAgainstPROJ() throws {
        // Segara / NEIEZ (EPSG:3000), variant A with k0 0.997; SIRGAS 2000 / Brazil Mercator
        // (EPSG:5641), variant B; WGS 84 / PDC Mercator (EPSG:3832) across the antimeridian.
        let a = try projection(
            .mercator1SP, Self.bessel, [8801: 0, 8802: 110, 8805: 0.997, 8806: 3_900_000, 8807: 900_000])
        check(a, lon: 117.4, lat: -1.6, x: 4_721_197.671626, y: 723_605.589735)
        let b = try projection(.mercator2SP, .grs80, [8823: -2, 8802: -43, 8806: 5_000_000, 8807: 10_000_000])
        check(b, lon: -43, lat: -20, x: 5_000_000, y: 7_742_942.920068)
        let pdc = try projection(.mercator1SP, .wgs84, [8801: 0, 8802: 150, 8805: 1, 8806: 0, 8807: 0])
        check(pdc, lon: 170, lat: 10, x: 2_226_389.815865, y: 1_111_475.102852)
    }

    @Test func geoKeysMapTheGeoTIFFMethods() throws {
        func crs(_ ct: Int, _ extra: [UInt16: GeoKeyDirectory.Value]) throws -> CRS {
            var keys = GeoKeyDirectory()
            keys[GeoKey.gtModelType] = .shorts([1])
            keys[GeoKey.projectedCSType] = .shorts([32767])
            keys[GeoKey.geographicType] = .shorts([4326])
            keys[GeoKey.projCoordTrans] = .shorts([UInt16(ct)])
            for (k, v) in extra { keys[k] = v }
            return try CRS(geoKeys: keys)
        }
        let k = GeoKey.self
        #expect(
            try crs(27, [k.projNatOriginLong: .doubles([29]), k.projScaleAtNatOrigin: .doubles([1])])
                .projectionParameters?.method == .transverseMercatorSouthOrientated)
        #expect(
            try crs(28, [k.projStdParallel1: .doubles([30])]).projectionParameters?.method
                == .lambertCylindricalEqualArea)
        #expect(
            try crs(17, [k.projStdParallel1: .doubles([0])]).projectionParameters?.method == .equidistantCylindrical)
        #expect(throws: CRSError.self) { try crs(17, [k.projCenterLat: .doubles([10])]) }
        #expect(
            try crs(26, [k.projNatOriginLat: .doubles([-41]), k.projNatOriginLong: .doubles([173])])
                .projectionParameters?.method == .newZealandMapGrid)
    }

    @Test func methodNamesAndCodesAreEPSGs() {
        let expected: [(ProjectionMethod, Int, String)] = [
            (.transverseMercatorSouthOrientated, 9808, "Transverse Mercator (South Orientated)"),
            (.transverseMercator3D, 1111, "Transverse Mercator 3D"),
            (.equidistantCylindrical, 1028, "Equidistant Cylindrical"),
            (.equidistantCylindricalSpherical, 1029, "Equidistant Cylindrical (Spherical)"),
            (.lambertCylindricalEqualArea, 9835, "Lambert Cylindrical Equal Area"),
            (.lambertCylindricalEqualAreaSpherical, 9834, "Lambert Cylindrical Equal Area (Spherical)"),
            (.polarStereographicC, 9830, "Polar Stereographic (variant C)"),
            (.newZealandMapGrid, 9811, "New Zealand Map Grid"),
            (.equalEarth, 1078, "Equal Earth"),
            (.lambertAzimuthalEqualAreaSpherical, 1027, "Lambert Azimuthal Equal Area (Spherical)"),
            (.colombiaUrban, 1052, "Colombia Urban"),
            (.guamProjection, 9831, "Guam Projection"),
            (.bonneSouthOrientated, 9828, "Bonne (South Orientated)"),
            (.labordeObliqueMercator, 9813, "Laborde Oblique Mercator"),
            (.modifiedAzimuthalEquidistant, 9832, "Modified Azimuthal Equidistant"),
            (.lambertConicNearConformal, 9817, "Lambert Conic Near-Conformal"),
            (.transverseMercatorZonedGrid, 9824, "Transverse Mercator Zoned Grid System"),
        ]
        for (m, code, name) in expected {
            #expect(m.epsgMethodCode == code && m.rawValue == name && ProjectionMethod(epsgMethodCode: code) == m)
        }
    }
}
