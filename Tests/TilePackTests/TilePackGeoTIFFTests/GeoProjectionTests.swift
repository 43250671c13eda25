import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackGeoTIFF
import TilePackTestSupport

/// Worked examples from IOGP Guidance Note 7-2 (Coordinate Conversions and Transformations),
/// one per projection family, forward to the note's centimetre figures and back to the
/// input within 1e-9° (~0.1 mm).
@Suite("Geo projections: GN 7-2 worked examples")
struct GeoProjectionTests {
    func dms(_ d: Double, _ m: Double = 0, _ s: Double = 0) -> Double {
        d < 0 ? d - m / 60 - s / 3600 : d + m / 60 + s / 3600
    }

    func check(
        _ crs: CRS, lon: Double, lat: Double, e: Double, n: Double, tolerance: Double = 0.005,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let p = crs.project(lon: lon, lat: lat)
        #expect(abs(p.x - e) < tolerance, "easting \(p.x) vs \(e)", sourceLocation: sourceLocation)
        #expect(abs(p.y - n) < tolerance, "northing \(p.y) vs \(n)", sourceLocation: sourceLocation)
        let g = crs.unproject(x: e, y: n)
        // The note's coordinates are rounded to 1 cm, so the inverse of them is within ~1e-7°.
        #expect(
            abs(g.lon - lon) < 2e-7 && abs(g.lat - lat) < 2e-7, "inverse \(g) vs \(lon),\(lat)",
            sourceLocation: sourceLocation)
        let back = crs.unproject(x: p.x, y: p.y)
        #expect(
            abs(back.lon - lon) < 1e-9 && abs(back.lat - lat) < 1e-9, "round trip \(back)",
            sourceLocation: sourceLocation)
    }

    @Test func transverseMercatorBritishNationalGrid() {
        let osgb = Datum(name: "OSGB 1936", ellipsoid: .airy1830)
        let crs = CRS(
            projected: "OSGB 1936 / British National Grid", datum: osgb,
            parameters: ProjectionParameters(
                method: .transverseMercator, latitudeOfOrigin: 49, centralMeridian: -2, scale: 0.9996012717,
                falseEasting: 400_000, falseNorthing: -100_000))
        // GN 7-2 computes TM with the USGS (Snyder) series, 577274.99 / 69740.50; the exact
        // Krüger-n⁶ result, which PROJ gives too, differs from it by 6–8 mm.
        check(crs, lon: 0.5, lat: 50.5, e: 577_274.99, n: 69_740.50, tolerance: 0.01)
        let p = crs.project(lon: 0.5, lat: 50.5)
        #expect(abs(p.x - 577_274.9838134756) < 1e-6 && abs(p.y - 69_740.4922666242) < 1e-6)
    }

    @Test func lambertConic2SPTexasSouthCentralInUSFeet() throws {
        // NAD27 / Texas South Central, false origin easting 2,000,000 US survey feet.
        var keys = GeoKeyDirectory()
        keys[GeoKey.gtModelType] = .shorts([1])
        keys[GeoKey.projectedCSType] = .shorts([32767])
        keys[GeoKey.geographicType] = .shorts([4267])
        keys[GeoKey.projCoordTrans] = .shorts([8])
        keys[GeoKey.projLinearUnits] = .shorts([9003])
        keys[GeoKey.projStdParallel1] = .doubles([dms(28, 23)])
        keys[GeoKey.projStdParallel2] = .doubles([dms(30, 17)])
        keys[GeoKey.projFalseOriginLat] = .doubles([dms(27, 50)])
        keys[GeoKey.projFalseOriginLong] = .doubles([-99])
        keys[GeoKey.projFalseOriginEasting] = .doubles([2_000_000])
        keys[GeoKey.projFalseOriginNorthing] = .doubles([0])
        let crs = try CRS(geoKeys: keys)
        #expect(crs.linearUnit == .usSurveyFoot)
        #expect(crs.projectionParameters?.method == .lambertConicConformal2SP)
        check(crs, lon: -96, lat: 28.5, e: 2_963_503.91, n: 254_759.80)
        #expect(crs.datumNote?.contains("~200 m") == true)
    }

    @Test func lambertConic1SPJamaica() {
        let jad69 = Datum(name: "JAD69", ellipsoid: .clarke1866)
        let crs = CRS(
            projected: "JAD69 / Jamaica National Grid", datum: jad69,
            parameters: ProjectionParameters(
                method: .lambertConicConformal1SP, latitudeOfOrigin: 18, centralMeridian: -77, scale: 1,
                falseEasting: 250_000, falseNorthing: 150_000))
        check(crs, lon: dms(-76, 56, 37.26), lat: dms(17, 55, 55.80), e: 255_966.58, n: 142_493.51)
    }

    @Test func polarStereographicVariantAUPSNorth() throws {
        check(try CRS(epsg: 32661), lon: 44, lat: 73, e: 3_320_416.75, n: 632_668.43)
    }

    @Test func polarStereographicVariantBAustralianAntarctic() {
        // EPSG:3032 (not in the table): true scale at 71°S, central meridian 70°E.
        let crs = CRS(
            projected: "WGS 84 / Australian Antarctic Polar Stereographic", datum: .wgs84,
            parameters: ProjectionParameters(
                method: .polarStereographicB, latitudeOfOrigin: -90,
                centralMeridian: 70, falseEasting: 6_000_000,
                falseNorthing: 6_000_000, standardParallel1: -71))
        check(crs, lon: 120, lat: -75, e: 7_255_380.79, n: 7_053_389.56)
    }

    @Test func lambertAzimuthalEqualAreaEurope() throws {
        check(try CRS(epsg: 3035), lon: 5, lat: 50, e: 3_962_799.45, n: 2_999_718.85)
    }

    @Test func mercator1SPMakassar() {
        let crs = CRS(
            projected: "Makassar / NEIEZ", datum: Datum(name: "Makassar", ellipsoid: .bessel1841),
            parameters: ProjectionParameters(
                method: .mercator1SP, centralMeridian: 110, scale: 0.997,
                falseEasting: 3_900_000, falseNorthing: 900_000))
        check(crs, lon: 120, lat: -3, e: 5_009_726.58, n: 569_150.82)
    }

    @Test func mercator2SPCaspian() {
        let crs = CRS(
            projected: "Pulkovo 1942 / Caspian Sea Mercator",
            datum: Datum(name: "Pulkovo 1942", ellipsoid: .krassowsky1940),
            parameters: ProjectionParameters(method: .mercator2SP, centralMeridian: 51, standardParallel1: 42))
        check(crs, lon: 53, lat: 53, e: 165_704.29, n: 5_171_848.07)
    }

    @Test func webMercatorMatchesTheSphericalFormula() throws {
        let crs = try CRS(epsg: 3857)
        for (lon, lat) in [(-122.4, 37.8), (151.2, -33.9), (0.0, 0.0), (179.9, 85.0)] {
            let p = crs.project(lon: lon, lat: lat)
            let w = WebMercator.metres(lon: lon, lat: lat)
            #expect(abs(p.x - w.x) < 1e-6 && abs(p.y - w.y) < 1e-6)
        }
    }

    @Test func utmFarFromTheCentralMeridianRoundTrips() throws {
        // Krüger to n⁶ holds to nanometres far beyond the 6° zone; check the round trip 30° out.
        let crs = try CRS(epsg: 32633)
        for lon in stride(from: -15.0, through: 45.0, by: 5.0) {
            for lat in stride(from: 0.0, through: 84.0, by: 12.0) {
                let p = crs.project(lon: lon, lat: lat)
                let g = crs.unproject(x: p.x, y: p.y)
                #expect(abs(g.lon - lon) < 1e-10 && abs(g.lat - lat) < 1e-10, "\(lon),\(lat) → \(g)")
            }
        }
        // A point from PROJ (tmerc, WGS 84, zone 18N).
        let p = try CRS(epsg: 32618).project(lon: -75.5, lat: 40.25)
        #expect(abs(p.x - 457_476.1141306412) < 1e-6 && abs(p.y - 4_455_625.261064567) < 1e-6)
    }

    @Test func everyTableEntryRoundTripsAtItsOrigin() throws {
        for code in CRS.supportedEPSGCodes {
            let crs = try CRS(epsg: code)
            let lon = crs.projectionParameters?.centralMeridian ?? 10
            let lat: Double =
                switch crs.projectionParameters?.method {
                case .polarStereographicA?, .polarStereographicB?:
                    (crs.projectionParameters!.latitudeOfOrigin > 0 ? 75 : -75)
                default: 45
                }
            let p = crs.project(lon: lon + 1, lat: lat)
            let g = crs.unproject(x: p.x, y: p.y)
            #expect(abs(g.lon - (lon + 1)) < 1e-9 && abs(g.lat - lat) < 1e-9, "EPSG:\(code)")
        }
    }

    @Test func helmertMatchesPROJ() throws {
        // PROJ: +proj=longlat +ellps=bessel +towgs84=598.1,73.7,418.2,0.202,0.045,-2.455,6.7 → WGS 84.
        let dhdn = Datum(
            name: "DHDN", ellipsoid: .bessel1841,
            toWGS84: Helmert([598.1, 73.7, 418.2, 0.202, 0.045, -2.455, 6.7]))
        let crs = CRS(geographic: "DHDN", datum: dhdn)
        let w = crs.lonLat(x: 10, y: 50)
        #expect(abs(w.lon - 9.998813925294645) < 1e-9 && abs(w.lat - 49.99885726430581) < 1e-9, "\(w)")
        // The round trip drops the ellipsoidal height twice (h = 0 on each ellipsoid), so it
        // closes to ~1 mm (1e-8°), not to rounding.
        let back = crs.coordinate(lon: w.lon, lat: w.lat)
        #expect(abs(back.x - 10) < 1e-7 && abs(back.y - 50) < 1e-7, "\(back)")
        #expect(crs.datumNote == nil)
        // 3-parameter NAD27 shift.
        let nad27 = CRS(geographic: "NAD27", datum: Datum.nad27.with(toWGS84: Helmert([-8, 160, 176])))
        let v = nad27.lonLat(x: -100, y: 40)
        #expect(abs(v.lon - -100.0004176222188) < 1e-9 && abs(v.lat - 40.00000948276804) < 1e-9, "\(v)")
        #expect(Helmert([1, 2]) == nil)
    }

    @Test func poleAndNoImagePoints() throws {
        let merc = try CRS(epsg: 3395)
        #expect(!merc.project(lon: 0, lat: 90).y.isFinite)
        let ups = try CRS(epsg: 32661)
        let pole = ups.project(lon: 0, lat: 90)
        #expect(abs(pole.x - 2_000_000) < 1e-6 && abs(pole.y - 2_000_000) < 1e-6)
        #expect(abs(ups.unproject(x: 2_000_000, y: 2_000_000).lat - 90) < 1e-12)
    }
}
