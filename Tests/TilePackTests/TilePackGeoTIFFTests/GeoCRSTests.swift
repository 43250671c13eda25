import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackGeoTIFF
import TilePackTestSupport

/// CRSs from real GeoKey sets (as GDAL writes them) and from the EPSG table.
@Suite("Geo CRS from GeoKeys and EPSG")
struct GeoCRSTests {
    func keys(_ pairs: [(UInt16, GeoKeyDirectory.Value)]) -> GeoKeyDirectory {
        GeoKeyDirectory(version: [1, 1, 0], entries: pairs)
    }

    @Test func utm18NByProjectedCSType() throws {
        // gdal_translate -a_srs EPSG:32618 writes these three keys.
        let crs = try CRS(
            geoKeys: keys([
                (GeoKey.gtModelType, .shorts([1])), (GeoKey.gtRasterType, .shorts([1])),
                (GeoKey.projectedCSType, .shorts([32618])),
            ]))
        #expect(crs.epsg == 32618)
        #expect(crs.kind == .projected)
        #expect(crs.projectionParameters == .utm(zone: 18, north: true))
        #expect(crs.datum == .wgs84)
        #expect(crs.datumNote == nil)
        let ll = crs.lonLat(x: 500_000, y: 4_427_757.218738374)
        #expect(abs(ll.lon - -75) < 1e-9 && abs(ll.lat - 40) < 1e-9)
    }

    @Test func userDefinedTransverseMercatorFromParameters() throws {
        // A user-defined TM on WGS 84 equal to UTM 33N, spelled out parameter by parameter.
        let crs = try CRS(
            geoKeys: keys([
                (GeoKey.gtModelType, .shorts([1])), (GeoKey.projectedCSType, .shorts([32767])),
                (GeoKey.projection, .shorts([32767])), (GeoKey.projCoordTrans, .shorts([1])),
                (GeoKey.geographicType, .shorts([4326])), (GeoKey.projLinearUnits, .shorts([9001])),
                (GeoKey.projNatOriginLat, .doubles([0])), (GeoKey.projNatOriginLong, .doubles([15])),
                (GeoKey.projScaleAtNatOrigin, .doubles([0.9996])), (GeoKey.projFalseEasting, .doubles([500_000])),
                (GeoKey.projFalseNorthing, .doubles([0])), (GeoKey.pcsCitation, .ascii("custom TM")),
            ]))
        #expect(crs.epsg == nil)
        #expect(crs.name == "custom TM")
        #expect(crs.projectionParameters == .utm(zone: 33, north: true))
        let a = crs.coordinate(lon: 16, lat: 60), b = try CRS(epsg: 32633).coordinate(lon: 16, lat: 60)
        #expect(a.x == b.x && a.y == b.y)
    }

    @Test func userDefinedDatumEllipsoidAxesAndFeet() throws {
        // TM on an ellipsoid given by its axes, in US survey feet, with a 7-parameter TOWGS84.
        let crs = try CRS(
            geoKeys: keys([
                (GeoKey.gtModelType, .shorts([1])), (GeoKey.projectedCSType, .shorts([32767])),
                (GeoKey.geographicType, .shorts([32767])), (GeoKey.geogGeodeticDatum, .shorts([32767])),
                (GeoKey.geogEllipsoid, .shorts([32767])), (GeoKey.geogSemiMajorAxis, .doubles([6_377_397.155])),
                (GeoKey.geogInvFlattening, .doubles([299.1528128])),
                (GeoKey.geogTOWGS84, .doubles([598.1, 73.7, 418.2, 0.202, 0.045, -2.455, 6.7])),
                (GeoKey.projCoordTrans, .shorts([1])), (GeoKey.projLinearUnits, .shorts([9003])),
                (GeoKey.projNatOriginLong, .doubles([9])), (GeoKey.projScaleAtNatOrigin, .doubles([1])),
                (GeoKey.projFalseEasting, .doubles([3_500_000 / (1200.0 / 3937.0)])),
            ]))
        #expect(crs.linearUnit == .usSurveyFoot)
        #expect(crs.datum.ellipsoid.semiMajorAxis == 6_377_397.155)
        #expect(crs.datum.toWGS84 != nil)
        #expect(abs(crs.projectionParameters!.falseEasting - 3_500_000) < 1e-6)
        // Round trip through the datum shift and the unit.
        let p = crs.coordinate(lon: 9.5, lat: 50)
        let g = crs.lonLat(x: p.x, y: p.y)
        #expect(abs(g.lon - 9.5) < 1e-7 && abs(g.lat - 50) < 1e-7)
        // Clarke 1866 by semi-minor axis.
        let c = try CRS(
            geoKeys: keys([
                (GeoKey.gtModelType, .shorts([2])), (GeoKey.geogSemiMajorAxis, .doubles([6_378_206.4])),
                (GeoKey.geogSemiMinorAxis, .doubles([6_356_583.8])),
            ]))
        #expect(abs(c.datum.ellipsoid.inverseFlattening - 294.9786982138982) < 1e-9)
        #expect(c.datumNote != nil)
    }

    @Test func geographic4326AndUnits() throws {
        let crs = try CRS(
            geoKeys: keys([
                (GeoKey.gtModelType, .shorts([2])), (GeoKey.geographicType, .shorts([4326])),
                (GeoKey.geogAngularUnits, .shorts([9102])),
            ]))
        #expect(crs.kind == .geographic && crs.epsg == 4326)
        let ll = crs.lonLat(x: 12.5, y: -33)
        #expect(ll.lon == 12.5 && ll.lat == -33)
        let grads = try CRS(
            geoKeys: keys([
                (GeoKey.gtModelType, .shorts([2])), (GeoKey.geogGeodeticDatum, .shorts([6326])),
                (GeoKey.geogAngularUnits, .shorts([9105])),
            ]))
        #expect(abs(grads.lonLat(x: 100, y: 50).lon - 90) < 1e-12)
        #expect(abs(grads.lonLat(x: 100, y: 50).lat - 45) < 1e-12)
        let rad = try CRS(
            geoKeys: keys([
                (GeoKey.gtModelType, .shorts([2])), (GeoKey.geographicType, .shorts([4269])),
                (GeoKey.geogAngularUnits, .shorts([9101])),
            ]))
        #expect(abs(rad.lonLat(x: .pi, y: 0).lon - 180) < 1e-12)
    }

    @Test func webMercator3857() throws {
        let crs = try CRS(
            geoKeys: keys([(GeoKey.gtModelType, .shorts([1])), (GeoKey.projectedCSType, .shorts([3857]))]))
        #expect(crs.projectionParameters?.method == .pseudoMercator)
        let p = crs.coordinate(lon: 180, lat: 0)
        #expect(abs(p.x - WebMercator.originShift) < 1e-6)
        #expect(try CRS(epsg: 900913).projectionParameters?.method == .pseudoMercator)
    }

    @Test func polarStereographicFromGeoKeysFollowsGDAL() throws {
        func ps(_ lat: Double, _ k: Double?) throws -> ProjectionParameters? {
            var pairs: [(UInt16, GeoKeyDirectory.Value)] = [
                (GeoKey.gtModelType, .shorts([1])), (GeoKey.geographicType, .shorts([4326])),
                (GeoKey.projCoordTrans, .shorts([15])), (GeoKey.projNatOriginLat, .doubles([lat])),
                (GeoKey.projStraightVertPoleLong, .doubles([-45])),
            ]
            if let k { pairs.append((GeoKey.projScaleAtNatOrigin, .doubles([k]))) }
            return try CRS(geoKeys: keys(pairs)).projectionParameters
        }
        #expect(try ps(70, 1)?.method == .polarStereographicB)
        #expect(try ps(70, 1)?.standardParallel1 == 70)
        #expect(try ps(90, 0.994)?.method == .polarStereographicA)
        #expect(try ps(-90, nil)?.method == .polarStereographicA)
    }

    @Test func utmByProjectionCode() throws {
        let crs = try CRS(
            geoKeys: keys([
                (GeoKey.gtModelType, .shorts([1])), (GeoKey.projectedCSType, .shorts([32767])),
                (GeoKey.geographicType, .shorts([4269])), (GeoKey.projection, .shorts([16114])),
            ]))
        #expect(crs.projectionParameters == .utm(zone: 14, north: false))
        #expect(crs.datum == .nad83)
    }

    @Test func errorsNameTheCodeAndMethod() {
        #expect(throws: CRSError.unsupportedEPSG(2056)) {
            try CRS(geoKeys: keys([(GeoKey.gtModelType, .shorts([1])), (GeoKey.projectedCSType, .shorts([2056]))]))
        }
        #expect(CRSError.unsupportedEPSG(2056).description.contains("EPSG:2056"))
        #expect(throws: CRSError.unsupportedEPSG(27700)) { try CRS(epsg: 27700) }
        let vanDerGrinten = keys([
            (GeoKey.gtModelType, .shorts([1])), (GeoKey.geographicType, .shorts([4326])),
            (GeoKey.projCoordTrans, .shorts([25])),
        ])
        #expect(throws: CRSError.unsupportedMethod(code: 25, name: "VanDerGrinten")) { try CRS(geoKeys: vanDerGrinten) }
        #expect(CRSError.unsupportedMethod(code: 25, name: "VanDerGrinten").description.contains("VanDerGrinten"))
        #expect(throws: CRSError.unsupportedModelType(3)) {
            try CRS(geoKeys: keys([(GeoKey.gtModelType, .shorts([3]))]))
        }
        #expect(throws: CRSError.missingCRS) { try CRS(geoKeys: keys([])) }
        #expect(throws: CRSError.unsupportedCode(key: "ProjLinearUnitsGeoKey", code: 9999)) {
            try CRS(
                geoKeys: keys([
                    (GeoKey.gtModelType, .shorts([1])), (GeoKey.projectedCSType, .shorts([32618])),
                    (GeoKey.projLinearUnits, .shorts([9999])),
                ]))
        }
        #expect(throws: CRSError.self) {
            try CRS(geoKeys: keys([(GeoKey.gtModelType, .shorts([2])), (GeoKey.geogSemiMajorAxis, .doubles([-1]))]))
        }
        #expect(throws: CRSError.self) {
            try CRS(
                geoKeys: keys([
                    (GeoKey.gtModelType, .shorts([2])), (GeoKey.geographicType, .shorts([4326])),
                    (GeoKey.geogTOWGS84, .doubles([1, 2, 3, 4])),
                ]))
        }
    }

    @Test func datumNotes() throws {
        #expect(try CRS(epsg: 26718).datumNote?.contains("NAD27") == true)
        #expect(try CRS(epsg: 26718).datumNote?.contains("~200 m") == true)
        for code in [4326, 4269, 4258, 4283, 4674, 25832, 28355, 31983, 2154, 3035] {
            #expect(try CRS(epsg: code).datumNote == nil, "EPSG:\(code)")
        }
        #expect(try CRS(epsg: 4019).datumNote != nil)
    }

    @Test func tableCoversTheRequestedRanges() throws {
        let codes = Set(CRS.supportedEPSGCodes)
        for range in [
            32601...32660, 32701...32760, 25828...25838, 26901...26923, 26701...26722, 31965...31985, 28348...28358,
        ] {
            #expect(range.allSatisfy(codes.contains))
        }
        #expect(try CRS(epsg: 31977).projectionParameters == .utm(zone: 17, north: false))
        #expect(try CRS(epsg: 31976).projectionParameters == .utm(zone: 22, north: true))
        #expect(try CRS(epsg: 28356).projectionParameters == .utm(zone: 56, north: false))
        #expect(try CRS(epsg: 4047).datum.ellipsoid.semiMajorAxis == 6_371_007)
    }
}
