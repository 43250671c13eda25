import TilePackCore
/// tilepack's built-in EPSG table: the CRSs terrain and imagery GeoTIFFs actually come in.
/// Parameters are those of the EPSG dataset (checked against PROJ by Scripts/proj-check).
extension CRS {
    /// The CRS for an EPSG code from the built-in table; O(1), no I/O.
    /// - Throws: ``CRSError/unsupportedEPSG(_:)`` for a code outside the table.
    public init(epsg code: Int) throws(CRSError) {
        guard var crs = Self.lookup(code) else { throw .unsupportedEPSG(code) }
        // Every built-in datum has a built-in geographic CRS: what transformations are keyed by.
        let geographic: [Int: Int] = [
            6326: 4326, 6269: 4269, 6258: 4258, 6283: 4283, 6674: 4674, 6171: 4171, 6267: 4267, 6322: 4322,
        ]
        crs.geodeticCRSCode = crs.kind == .geographic ? code : crs.datum.epsg.flatMap { geographic[$0] }
        self = crs
    }

    /// Every code ``init(epsg:)`` accepts, ascending.
    public static let supportedEPSGCodes: [Int] = {
        var codes = [
            4019, 4035, 4047, 4258, 4267, 4269, 4283, 4322, 4326, 4674,
            2154, 3031, 3034, 3035, 3395, 3413, 3857, 3976, 3995, 32661, 32761, 900913,
        ]
        codes += Array(32601...32660) + Array(32701...32760) + Array(25828...25838)
        codes += Array(26901...26923) + Array(26701...26722) + Array(31965...31985) + Array(28348...28358)
        return codes.sorted()
    }()

    /// Geographic CRS by code.
    static func geographic(_ code: Int) -> CRS? {
        switch code {
        case 4326: CRS(geographic: "WGS 84", epsg: 4326, datum: .wgs84)
        case 4269: CRS(geographic: "NAD83", epsg: 4269, datum: .nad83)
        case 4258: CRS(geographic: "ETRS89", epsg: 4258, datum: .etrs89)
        case 4283: CRS(geographic: "GDA94", epsg: 4283, datum: .gda94)
        case 4674: CRS(geographic: "SIRGAS 2000", epsg: 4674, datum: .sirgas2000)
        case 4171: CRS(geographic: "RGF93 v1", epsg: 4171, datum: .rgf93)
        case 4267: CRS(geographic: "NAD27", epsg: 4267, datum: .nad27)
        case 4322: CRS(geographic: "WGS 72", epsg: 4322, datum: .wgs72)
        case 4019:
            CRS(
                geographic: "Unknown datum based upon the GRS 1980 ellipsoid", epsg: 4019,
                datum: Datum(name: "Not specified (based on GRS 1980 ellipsoid)", epsg: 6019, ellipsoid: .grs80))
        case 4035:
            CRS(
                geographic: "Unknown datum based upon the Authalic Sphere", epsg: 4035,
                datum: Datum(
                    name: "Not specified (based on Authalic Sphere)", epsg: 6035, ellipsoid: Ellipsoid.epsg(7035)!))
        case 4047:
            CRS(
                geographic: "Unspecified datum based upon the GRS 1980 Authalic Sphere", epsg: 4047,
                datum: Datum(
                    name: "Not specified (based on GRS 1980 Authalic Sphere)", epsg: 6047,
                    ellipsoid: Ellipsoid.epsg(7048)!))
        default: nil
        }
    }

    private static func utm(
        _ code: Int, _ base: String, _ datum: Datum, zone: Int, north: Bool, prefix: String = "UTM zone"
    ) -> CRS {
        CRS(
            projected: "\(base) / \(prefix) \(zone)\(prefix == "UTM zone" ? (north ? "N" : "S") : "")", epsg: code,
            datum: datum, parameters: .utm(zone: zone, north: north))
    }

    private static func lookup(_ code: Int) -> CRS? {
        if let g = geographic(code) { return g }
        switch code {
        case 32601...32660: return utm(code, "WGS 84", .wgs84, zone: code - 32600, north: true)
        case 32701...32760: return utm(code, "WGS 84", .wgs84, zone: code - 32700, north: false)
        case 25828...25838: return utm(code, "ETRS89", .etrs89, zone: code - 25800, north: true)
        case 26901...26923: return utm(code, "NAD83", .nad83, zone: code - 26900, north: true)
        case 26701...26722: return utm(code, "NAD27", .nad27, zone: code - 26700, north: true)
        case 31965...31976: return utm(code, "SIRGAS 2000", .sirgas2000, zone: code - 31954, north: true)
        case 31977...31985: return utm(code, "SIRGAS 2000", .sirgas2000, zone: code - 31960, north: false)
        case 28348...28358: return utm(code, "GDA94", .gda94, zone: code - 28300, north: false, prefix: "MGA zone")
        case 3857, 900913:
            return CRS(
                projected: code == 3857 ? "WGS 84 / Pseudo-Mercator" : "Google Maps Global Mercator",
                epsg: code, datum: .wgs84, parameters: ProjectionParameters(method: .pseudoMercator))
        case 3395:
            return CRS(
                projected: "WGS 84 / World Mercator", epsg: 3395, datum: .wgs84,
                parameters: ProjectionParameters(method: .mercator1SP))
        case 32661, 32761:
            return CRS(
                projected: "WGS 84 / UPS \(code == 32661 ? "North" : "South") (N,E)", epsg: code, datum: .wgs84,
                parameters: ProjectionParameters(
                    method: .polarStereographicA, latitudeOfOrigin: code == 32661 ? 90 : -90,
                    scale: 0.994, falseEasting: 2_000_000, falseNorthing: 2_000_000))
        case 3031, 3413, 3995, 3976:
            let (name, latTS, lon0): (String, Double, Double) =
                switch code {
                case 3031: ("Antarctic Polar Stereographic", -71, 0)
                case 3413: ("NSIDC Sea Ice Polar Stereographic North", 70, -45)
                case 3995: ("Arctic Polar Stereographic", 71, 0)
                default: ("NSIDC Sea Ice Polar Stereographic South", -70, 0)
                }
            return CRS(
                projected: "WGS 84 / \(name)", epsg: code, datum: .wgs84,
                parameters: ProjectionParameters(
                    method: .polarStereographicB, latitudeOfOrigin: latTS > 0 ? 90 : -90,
                    centralMeridian: lon0, standardParallel1: latTS))
        case 3035:
            return CRS(
                projected: "ETRS89-extended / LAEA Europe", epsg: 3035, datum: .etrs89,
                parameters: ProjectionParameters(
                    method: .lambertAzimuthalEqualArea, latitudeOfOrigin: 52,
                    centralMeridian: 10, falseEasting: 4_321_000, falseNorthing: 3_210_000))
        case 3034:
            return CRS(
                projected: "ETRS89-extended / LCC Europe", epsg: 3034, datum: .etrs89,
                parameters: ProjectionParameters(
                    method: .lambertConicConformal2SP, latitudeOfOrigin: 52, centralMeridian: 10,
                    falseEasting: 4_000_000, falseNorthing: 2_800_000,
                    standardParallel1: 35, standardParallel2: 65))
        case 2154:
            return CRS(
                projected: "RGF93 v1 / Lambert-93", epsg: 2154, datum: .rgf93,
                parameters: ProjectionParameters(
                    method: .lambertConicConformal2SP, latitudeOfOrigin: 46.5, centralMeridian: 3,
                    falseEasting: 700_000, falseNorthing: 6_600_000,
                    standardParallel1: 49, standardParallel2: 44))
        default:
            return nil
        }
    }
}
