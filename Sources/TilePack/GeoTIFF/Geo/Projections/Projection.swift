import TilePackCore
/// The map projection methods tilepack implements, named as the EPSG dataset names them.
public enum ProjectionMethod: String, Sendable, Equatable, CaseIterable {
    case transverseMercator = "Transverse Mercator"
    case mercator1SP = "Mercator (variant A)"
    case mercator2SP = "Mercator (variant B)"
    case pseudoMercator = "Popular Visualisation Pseudo Mercator"
    case polarStereographicA = "Polar Stereographic (variant A)"
    case polarStereographicB = "Polar Stereographic (variant B)"
    case lambertAzimuthalEqualArea = "Lambert Azimuthal Equal Area"
    case lambertConicConformal1SP = "Lambert Conic Conformal (1SP)"
    case lambertConicConformal2SP = "Lambert Conic Conformal (2SP)"
    case lambertConicConformal1SPVariantB = "Lambert Conic Conformal (1SP variant B)"
    case lambertConicConformal2SPBelgium = "Lambert Conic Conformal (2SP Belgium)"
    case lambertConicConformal2SPMichigan = "Lambert Conic Conformal (2SP Michigan)"
    case lambertConicConformalWestOrientated = "Lambert Conic Conformal (West Orientated)"
    case albersEqualArea = "Albers Equal Area"
    case obliqueStereographic = "Oblique Stereographic"
    case hotineObliqueMercatorA = "Hotine Oblique Mercator (variant A)"
    case hotineObliqueMercatorB = "Hotine Oblique Mercator (variant B)"
    case krovak = "Krovak"
    case krovakNorthOrientated = "Krovak (North Orientated)"
    case krovakModified = "Krovak Modified"
    case krovakModifiedNorthOrientated = "Krovak Modified (North Orientated)"
    case cassiniSoldner = "Cassini-Soldner"
    case hyperbolicCassiniSoldner = "Hyperbolic Cassini-Soldner"
    case americanPolyconic = "American Polyconic"
    case transverseMercatorSouthOrientated = "Transverse Mercator (South Orientated)"
    case transverseMercator3D = "Transverse Mercator 3D"
    case equidistantCylindrical = "Equidistant Cylindrical"
    case equidistantCylindricalSpherical = "Equidistant Cylindrical (Spherical)"
    case lambertCylindricalEqualArea = "Lambert Cylindrical Equal Area"
    case lambertCylindricalEqualAreaSpherical = "Lambert Cylindrical Equal Area (Spherical)"
    case polarStereographicC = "Polar Stereographic (variant C)"
    case newZealandMapGrid = "New Zealand Map Grid"
    case equalEarth = "Equal Earth"
    case lambertAzimuthalEqualAreaSpherical = "Lambert Azimuthal Equal Area (Spherical)"
    case colombiaUrban = "Colombia Urban"
    case guamProjection = "Guam Projection"
    case bonneSouthOrientated = "Bonne (South Orientated)"
    case labordeObliqueMercator = "Laborde Oblique Mercator"
    case modifiedAzimuthalEquidistant = "Modified Azimuthal Equidistant"
    case lambertConicNearConformal = "Lambert Conic Near-Conformal"
    case transverseMercatorZonedGrid = "Transverse Mercator Zoned Grid System"

    /// The method with this EPSG coordinate operation method code, if tilepack implements it.
    public init?(epsgMethodCode code: Int) {
        guard let m = Self.allCases.first(where: { $0.epsgMethodCode == code }) else { return nil }
        self = m
    }

    /// EPSG coordinate operation method code.
    public var epsgMethodCode: Int {
        switch self {
        case .transverseMercator: 9807
        case .mercator1SP: 9804
        case .mercator2SP: 9805
        case .pseudoMercator: 1024
        case .polarStereographicA: 9810
        case .polarStereographicB: 9829
        case .lambertAzimuthalEqualArea: 9820
        case .lambertConicConformal1SP: 9801
        case .lambertConicConformal2SP: 9802
        case .lambertConicConformal1SPVariantB: 1102
        case .lambertConicConformal2SPBelgium: 9803
        case .lambertConicConformal2SPMichigan: 1051
        case .lambertConicConformalWestOrientated: 9826
        case .albersEqualArea: 9822
        case .obliqueStereographic: 9809
        case .hotineObliqueMercatorA: 9812
        case .hotineObliqueMercatorB: 9815
        case .krovak: 9819
        case .krovakNorthOrientated: 1041
        case .krovakModified: 1042
        case .krovakModifiedNorthOrientated: 1043
        case .cassiniSoldner: 9806
        case .hyperbolicCassiniSoldner: 9833
        case .americanPolyconic: 9818
        case .transverseMercatorSouthOrientated: 9808
        case .transverseMercator3D: 1111
        case .equidistantCylindrical: 1028
        case .equidistantCylindricalSpherical: 1029
        case .lambertCylindricalEqualArea: 9835
        case .lambertCylindricalEqualAreaSpherical: 9834
        case .polarStereographicC: 9830
        case .newZealandMapGrid: 9811
        case .equalEarth: 1078
        case .lambertAzimuthalEqualAreaSpherical: 1027
        case .colombiaUrban: 1052
        case .guamProjection: 9831
        case .bonneSouthOrientated: 9828
        case .labordeObliqueMercator: 9813
        case .modifiedAzimuthalEquidistant: 9832
        case .lambertConicNearConformal: 9817
        case .transverseMercatorZonedGrid: 9824
        }
    }
}

/// A projection as the registry or the GeoKeys state it: method plus parameters in degrees
/// and metres (already converted from the file's units). Descriptive and cheap; the
/// computing form is ``Projection``.
///
/// Parameter meaning per method (unused ones are 0 / nil):
/// - TM, mercator, 1SP LCC, polar stereographic A: `latitudeOfOrigin`, `centralMeridian`,
///   `scale`, `falseEasting`, `falseNorthing` at the natural origin.
/// - Mercator 2SP and polar stereographic B: `standardParallel1` is the latitude of true scale.
/// - LCC 2SP: `standardParallel1/2`; `latitudeOfOrigin`/`centralMeridian` and the false
///   easting/northing are those of the false origin.
/// - LAEA: `latitudeOfOrigin`/`centralMeridian` are the centre.
/// - Albers, LCC 2SP Belgium/Michigan: as LCC 2SP (Michigan adds `ellipsoidScale`).
/// - LCC 1SP variant B: natural origin and `scale` as 1SP, `latitudeOfFalseOrigin`, and the
///   false easting/northing at the false origin.
/// - Hotine A/B: `latitudeOfOrigin`/`centralMeridian` are the projection centre, `azimuth`,
///   `rectifiedGridAngle`, `scale` on the initial line; A's false easting/northing are at the
///   natural origin, B's at the centre.
/// - Krovak: `latitudeOfOrigin` is the projection centre, `centralMeridian` the longitude of
///   origin, `azimuth` the co-latitude of the cone axis, `pseudoStandardParallel` with `scale`
///   on it; the modified methods add `evaluationPoint` and `krovakCoefficients` C1…C10.
/// - TM south orientated, Bonne south orientated: `falseEasting`/`falseNorthing` are EPSG's
///   FE/FN of a westing/southing grid (W = FE − E′, S = FN − N′).
/// - Equidistant cylindrical, Lambert cylindrical equal area: `standardParallel1`.
/// - Polar stereographic C: `standardParallel1`, and the false easting/northing are those at
///   the false origin (the standard parallel on the central meridian).
/// - Colombia Urban: `originHeight` is the projection plane's height h₀.
/// - Spherical variants (1027, 1029, 9834) and Equal Earth compute on the authalic sphere.
public struct ProjectionParameters: Sendable, Equatable, CustomStringConvertible {
    public var method: ProjectionMethod
    public var latitudeOfOrigin: Double = 0
    public var centralMeridian: Double = 0
    public var scale: Double = 1
    public var falseEasting: Double = 0
    public var falseNorthing: Double = 0
    public var standardParallel1: Double? = nil
    public var standardParallel2: Double? = nil
    /// Hotine oblique mercator: azimuth of the initial line (degrees). Krovak: co-latitude
    /// of the cone axis (degrees).
    public var azimuth: Double? = nil
    /// Hotine oblique mercator: angle from rectified to skew grid (degrees).
    public var rectifiedGridAngle: Double? = nil
    /// Krovak: latitude of the pseudo standard parallel (degrees); `scale` is the scale on it.
    public var pseudoStandardParallel: Double? = nil
    /// Lambert conic conformal (1SP variant B): latitude of the false origin (degrees), where
    /// `latitudeOfOrigin` is the natural origin's.
    public var latitudeOfFalseOrigin: Double? = nil
    /// Lambert conic conformal (2SP Michigan): ellipsoid scaling factor.
    public var ellipsoidScale: Double? = nil
    /// Colombia Urban: height of the projection plane origin (metres).
    public var originHeight: Double? = nil
    /// Krovak modified: ordinates 1 and 2 (X0, Y0) of the evaluation point (metres).
    public var evaluationPoint: [Double]? = nil
    /// Krovak modified: C1…C10 (C1, C2 in metres, the rest unitless coefficients).
    public var krovakCoefficients: [Double]? = nil
    /// Transverse Mercator Zoned Grid System: zone width (degrees); `centralMeridian` is then
    /// the initial longitude (western limit of zone 1).
    public var zoneWidth: Double? = nil

    public init(
        method: ProjectionMethod, latitudeOfOrigin: Double = 0, centralMeridian: Double = 0,
        scale: Double = 1, falseEasting: Double = 0, falseNorthing: Double = 0,
        standardParallel1: Double? = nil, standardParallel2: Double? = nil,
        azimuth: Double? = nil, rectifiedGridAngle: Double? = nil, pseudoStandardParallel: Double? = nil,
        latitudeOfFalseOrigin: Double? = nil, ellipsoidScale: Double? = nil, originHeight: Double? = nil,
        zoneWidth: Double? = nil
    ) {
        self.method = method
        self.latitudeOfOrigin = latitudeOfOrigin
        self.centralMeridian = centralMeridian
        self.scale = scale
        self.falseEasting = falseEasting
        self.falseNorthing = falseNorthing
        self.standardParallel1 = standardParallel1
        self.standardParallel2 = standardParallel2
        self.azimuth = azimuth
        self.rectifiedGridAngle = rectifiedGridAngle
        self.pseudoStandardParallel = pseudoStandardParallel
        self.latitudeOfFalseOrigin = latitudeOfFalseOrigin
        self.ellipsoidScale = ellipsoidScale
        self.originHeight = originHeight
        self.zoneWidth = zoneWidth
    }

    /// UTM zone 1…60 (central meridian −183° + 6°·zone, k0 0.9996, FE 500 km, FN 10,000 km south).
    public static func utm(zone: Int, north: Bool) -> ProjectionParameters {
        precondition((1...60).contains(zone), "UTM zones are 1…60")
        return ProjectionParameters(
            method: .transverseMercator, centralMeridian: Double(6 * zone - 183),
            scale: 0.9996, falseEasting: 500_000, falseNorthing: north ? 0 : 10_000_000)
    }

    /// One line for `info`, e.g. "Transverse Mercator: lat0 0°, lon0 −75°, k0 0.9996, FE 500000 m, FN 0 m".
    public var description: String {
        var parts = ["lat0 \(latitudeOfOrigin)°", "lon0 \(centralMeridian)°"]
        switch method {
        case .mercator2SP, .polarStereographicB, .polarStereographicC, .equidistantCylindrical,
            .equidistantCylindricalSpherical, .lambertCylindricalEqualArea, .lambertCylindricalEqualAreaSpherical:
            parts.append("lat_ts \(standardParallel1 ?? 0)°")
        case .colombiaUrban:
            parts.append("h0 \(originHeight ?? 0) m")
        case .transverseMercatorZonedGrid:
            parts.append("zone width \(zoneWidth ?? 6)°")
            parts.append("k0 \(scale)")
        case .labordeObliqueMercator:
            parts.append("azimuth \(azimuth ?? 0)°")
            parts.append("k \(scale)")
        case .newZealandMapGrid, .equalEarth, .lambertAzimuthalEqualAreaSpherical, .guamProjection,
            .bonneSouthOrientated, .modifiedAzimuthalEquidistant:
            break
        case .lambertConicConformal2SP:
            parts.append("lat1 \(standardParallel1 ?? 0)°")
            parts.append("lat2 \(standardParallel2 ?? 0)°")
        case .lambertAzimuthalEqualArea, .pseudoMercator, .cassiniSoldner, .hyperbolicCassiniSoldner,
            .americanPolyconic:
            break
        case .albersEqualArea, .lambertConicConformal2SPBelgium:
            parts.append("lat1 \(standardParallel1 ?? 0)°")
            parts.append("lat2 \(standardParallel2 ?? 0)°")
        case .lambertConicConformal2SPMichigan:
            parts.append("lat1 \(standardParallel1 ?? 0)°")
            parts.append("lat2 \(standardParallel2 ?? 0)°")
            parts.append("K \(ellipsoidScale ?? 1)")
        case .lambertConicConformal1SPVariantB:
            parts.append("k0 \(scale)")
            parts.append("latF \(latitudeOfFalseOrigin ?? latitudeOfOrigin)°")
        case .hotineObliqueMercatorA, .hotineObliqueMercatorB:
            parts.append("alpha \(azimuth ?? 0)°")
            parts.append("gamma \(rectifiedGridAngle.map { "\($0)°" } ?? "γ0")")
            parts.append("k0 \(scale)")
        case .krovak, .krovakNorthOrientated, .krovakModified, .krovakModifiedNorthOrientated:
            parts.append("cone axis co-latitude \(azimuth ?? 0)°")
            parts.append("lat_p \(pseudoStandardParallel ?? 0)°")
            parts.append("k_p \(scale)")
            if let p = evaluationPoint { parts.append("X0/Y0 \(p.map { "\($0)" }.joined(separator: "/")) m") }
        default:
            parts.append("k0 \(scale)")
        }
        parts.append("FE \(falseEasting) m")
        parts.append("FN \(falseNorthing) m")
        return "\(method.rawValue): " + parts.joined(separator: ", ")
    }
}

/// A projection ready to compute: geodetic lon/lat in radians ↔ easting/northing in metres
/// on the given ellipsoid. Building one precomputes constants (O(1)); each call is O(1)
/// and allocation-free. Points with no image come back non-finite.
public enum Projection: Sendable, Equatable {
    case transverseMercator(TransverseMercator)
    case mercator(Mercator)
    case polarStereographic(PolarStereographic)
    case lambertAzimuthalEqualArea(LambertAzimuthalEqualArea)
    case lambertConformalConic(LambertConformalConic)
    case albersEqualArea(AlbersEqualArea)
    case obliqueStereographic(ObliqueStereographic)
    case hotineObliqueMercator(HotineObliqueMercator)
    case krovak(Krovak)
    case cassiniSoldner(CassiniSoldner)
    case americanPolyconic(AmericanPolyconic)
    case transverseMercatorSouthOrientated(TransverseMercatorSouthOrientated)
    case equidistantCylindrical(EquidistantCylindrical)
    case lambertCylindricalEqualArea(LambertCylindricalEqualArea)
    case newZealandMapGrid(NewZealandMapGrid)
    case equalEarth(EqualEarth)
    case colombiaUrban(ColombiaUrban)
    case guamProjection(GuamProjection)
    case bonneSouthOrientated(BonneSouthOrientated)
    case labordeObliqueMercator(LabordeObliqueMercator)
    case modifiedAzimuthalEquidistant(ModifiedAzimuthalEquidistant)
    case lambertConicNearConformal(LambertConicNearConformal)
    case transverseMercatorZonedGrid(TransverseMercatorZonedGrid)

    public init(_ p: ProjectionParameters, ellipsoid: Ellipsoid) {
        switch p.method {
        case .transverseMercator, .transverseMercator3D:
            // TM 3D differs from TM only in carrying ellipsoidal height through unchanged.
            self = .transverseMercator(
                TransverseMercator(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    scale: p.scale, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .mercator1SP, .mercator2SP, .pseudoMercator:
            self = .mercator(
                Mercator(
                    ellipsoid: ellipsoid, spherical: p.method == .pseudoMercator, centralMeridian: p.centralMeridian,
                    scale: p.scale, standardParallel: p.method == .mercator2SP ? (p.standardParallel1 ?? 0) : nil,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .polarStereographicA:
            self = .polarStereographic(
                PolarStereographic(
                    ellipsoid: ellipsoid, northPole: p.latitudeOfOrigin > 0, centralMeridian: p.centralMeridian,
                    scale: p.scale, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .polarStereographicB:
            self = .polarStereographic(
                PolarStereographic(
                    ellipsoid: ellipsoid, standardParallel: p.standardParallel1 ?? p.latitudeOfOrigin,
                    centralMeridian: p.centralMeridian, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .lambertAzimuthalEqualArea:
            self = .lambertAzimuthalEqualArea(
                LambertAzimuthalEqualArea(
                    ellipsoid: ellipsoid, latitudeOfCentre: p.latitudeOfOrigin, longitudeOfCentre: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .lambertConicConformal1SP:
            self = .lambertConformalConic(
                LambertConformalConic(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    scale: p.scale, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .lambertConicConformal2SP:
            self = .lambertConformalConic(
                LambertConformalConic(
                    ellipsoid: ellipsoid, standardParallel1: p.standardParallel1 ?? p.latitudeOfOrigin,
                    standardParallel2: p.standardParallel2 ?? p.standardParallel1 ?? p.latitudeOfOrigin,
                    latitudeOfFalseOrigin: p.latitudeOfOrigin, longitudeOfFalseOrigin: p.centralMeridian,
                    eastingAtFalseOrigin: p.falseEasting, northingAtFalseOrigin: p.falseNorthing))
        case .lambertConicConformal1SPVariantB:
            self = .lambertConformalConic(
                .variantB(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    scale: p.scale, latitudeOfFalseOrigin: p.latitudeOfFalseOrigin ?? p.latitudeOfOrigin,
                    eastingAtFalseOrigin: p.falseEasting, northingAtFalseOrigin: p.falseNorthing))
        case .lambertConicConformal2SPBelgium:
            self = .lambertConformalConic(
                .belgium(
                    ellipsoid: ellipsoid, standardParallel1: p.standardParallel1 ?? p.latitudeOfOrigin,
                    standardParallel2: p.standardParallel2 ?? p.standardParallel1 ?? p.latitudeOfOrigin,
                    latitudeOfFalseOrigin: p.latitudeOfOrigin, longitudeOfFalseOrigin: p.centralMeridian,
                    eastingAtFalseOrigin: p.falseEasting, northingAtFalseOrigin: p.falseNorthing))
        case .lambertConicConformal2SPMichigan:
            self = .lambertConformalConic(
                .michigan(
                    ellipsoid: ellipsoid, ellipsoidScale: p.ellipsoidScale ?? 1,
                    standardParallel1: p.standardParallel1 ?? p.latitudeOfOrigin,
                    standardParallel2: p.standardParallel2 ?? p.standardParallel1 ?? p.latitudeOfOrigin,
                    latitudeOfFalseOrigin: p.latitudeOfOrigin, longitudeOfFalseOrigin: p.centralMeridian,
                    eastingAtFalseOrigin: p.falseEasting, northingAtFalseOrigin: p.falseNorthing))
        case .lambertConicConformalWestOrientated:
            self = .lambertConformalConic(
                .westOrientated(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    scale: p.scale, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .albersEqualArea:
            self = .albersEqualArea(
                AlbersEqualArea(
                    ellipsoid: ellipsoid, standardParallel1: p.standardParallel1 ?? p.latitudeOfOrigin,
                    standardParallel2: p.standardParallel2 ?? p.standardParallel1 ?? p.latitudeOfOrigin,
                    latitudeOfFalseOrigin: p.latitudeOfOrigin, longitudeOfFalseOrigin: p.centralMeridian,
                    eastingAtFalseOrigin: p.falseEasting, northingAtFalseOrigin: p.falseNorthing))
        case .obliqueStereographic:
            self = .obliqueStereographic(
                ObliqueStereographic(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    scale: p.scale, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .hotineObliqueMercatorA, .hotineObliqueMercatorB:
            self = .hotineObliqueMercator(
                HotineObliqueMercator(
                    ellipsoid: ellipsoid, latitudeOfCentre: p.latitudeOfOrigin, longitudeOfCentre: p.centralMeridian,
                    azimuth: p.azimuth ?? 0, rectifiedGridAngle: p.rectifiedGridAngle, scale: p.scale,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing,
                    variantB: p.method == .hotineObliqueMercatorB))
        case .krovak, .krovakNorthOrientated, .krovakModified, .krovakModifiedNorthOrientated:
            var modification: Krovak.Modification?
            if p.method == .krovakModified || p.method == .krovakModifiedNorthOrientated {
                // ProjectionParameters(method:epsgParameters:) refuses these without all terms;
                // a hand-built value missing them computes NaN rather than an uncorrected map.
                let x0 = p.evaluationPoint?.first ?? .nan, y0 = p.evaluationPoint?.dropFirst().first ?? .nan
                let c = p.krovakCoefficients ?? []
                func ci(_ i: Int) -> Double { i < c.count ? c[i] : .nan }
                modification = Krovak.Modification(
                    x0: x0, y0: y0, c: (ci(0), ci(1), ci(2), ci(3), ci(4), ci(5), ci(6), ci(7), ci(8), ci(9)))
            }
            self = .krovak(
                Krovak(
                    ellipsoid: ellipsoid, latitudeOfCentre: p.latitudeOfOrigin, longitudeOfOrigin: p.centralMeridian,
                    coLatitudeOfConeAxis: p.azimuth ?? 0, pseudoStandardParallel: p.pseudoStandardParallel ?? 0,
                    scale: p.scale, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing,
                    modification: modification))
        case .cassiniSoldner, .hyperbolicCassiniSoldner:
            self = .cassiniSoldner(
                CassiniSoldner(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing,
                    hyperbolic: p.method == .hyperbolicCassiniSoldner))
        case .americanPolyconic:
            self = .americanPolyconic(
                AmericanPolyconic(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .transverseMercatorSouthOrientated:
            self = .transverseMercatorSouthOrientated(
                TransverseMercatorSouthOrientated(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    scale: p.scale, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .equidistantCylindrical, .equidistantCylindricalSpherical:
            self = .equidistantCylindrical(
                EquidistantCylindrical(
                    ellipsoid: p.method == .equidistantCylindrical ? ellipsoid : AuthalicLatitude.sphere(ellipsoid),
                    standardParallel: p.standardParallel1 ?? 0, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .lambertCylindricalEqualArea, .lambertCylindricalEqualAreaSpherical:
            self = .lambertCylindricalEqualArea(
                LambertCylindricalEqualArea(
                    ellipsoid: p.method == .lambertCylindricalEqualArea
                        ? ellipsoid : AuthalicLatitude.sphere(ellipsoid),
                    standardParallel: p.standardParallel1 ?? 0, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .polarStereographicC:
            self = .polarStereographic(
                PolarStereographic(
                    ellipsoid: ellipsoid, standardParallel: p.standardParallel1 ?? p.latitudeOfOrigin,
                    longitudeOfOrigin: p.centralMeridian, eastingAtFalseOrigin: p.falseEasting,
                    northingAtFalseOrigin: p.falseNorthing))
        case .newZealandMapGrid:
            self = .newZealandMapGrid(
                NewZealandMapGrid(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .equalEarth:
            self = .equalEarth(
                EqualEarth(
                    ellipsoid: ellipsoid, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .lambertAzimuthalEqualAreaSpherical:
            self = .lambertAzimuthalEqualArea(
                LambertAzimuthalEqualArea(
                    ellipsoid: AuthalicLatitude.sphere(ellipsoid), latitudeOfCentre: p.latitudeOfOrigin,
                    longitudeOfCentre: p.centralMeridian, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .colombiaUrban:
            self = .colombiaUrban(
                ColombiaUrban(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing, originHeight: p.originHeight ?? 0))
        case .guamProjection:
            self = .guamProjection(
                GuamProjection(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .bonneSouthOrientated:
            self = .bonneSouthOrientated(
                BonneSouthOrientated(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .labordeObliqueMercator:
            self = .labordeObliqueMercator(
                LabordeObliqueMercator(
                    ellipsoid: ellipsoid, latitudeOfCentre: p.latitudeOfOrigin, longitudeOfCentre: p.centralMeridian,
                    azimuth: p.azimuth ?? 0, scale: p.scale, falseEasting: p.falseEasting,
                    falseNorthing: p.falseNorthing))
        case .modifiedAzimuthalEquidistant:
            self = .modifiedAzimuthalEquidistant(
                ModifiedAzimuthalEquidistant(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .lambertConicNearConformal:
            self = .lambertConicNearConformal(
                LambertConicNearConformal(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, centralMeridian: p.centralMeridian,
                    scale: p.scale, falseEasting: p.falseEasting, falseNorthing: p.falseNorthing))
        case .transverseMercatorZonedGrid:
            self = .transverseMercatorZonedGrid(
                TransverseMercatorZonedGrid(
                    ellipsoid: ellipsoid, latitudeOfOrigin: p.latitudeOfOrigin, initialLongitude: p.centralMeridian,
                    zoneWidth: p.zoneWidth ?? 6, scale: p.scale, falseEasting: p.falseEasting,
                    falseNorthing: p.falseNorthing))
        }
    }

    /// Geodetic lon/lat (radians) → easting/northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        switch self {
        case .transverseMercator(let p): p.forward(lon: lon, lat: lat)
        case .mercator(let p): p.forward(lon: lon, lat: lat)
        case .polarStereographic(let p): p.forward(lon: lon, lat: lat)
        case .lambertAzimuthalEqualArea(let p): p.forward(lon: lon, lat: lat)
        case .lambertConformalConic(let p): p.forward(lon: lon, lat: lat)
        case .albersEqualArea(let p): p.forward(lon: lon, lat: lat)
        case .obliqueStereographic(let p): p.forward(lon: lon, lat: lat)
        case .hotineObliqueMercator(let p): p.forward(lon: lon, lat: lat)
        case .krovak(let p): p.forward(lon: lon, lat: lat)
        case .cassiniSoldner(let p): p.forward(lon: lon, lat: lat)
        case .americanPolyconic(let p): p.forward(lon: lon, lat: lat)
        case .transverseMercatorSouthOrientated(let p): p.forward(lon: lon, lat: lat)
        case .equidistantCylindrical(let p): p.forward(lon: lon, lat: lat)
        case .lambertCylindricalEqualArea(let p): p.forward(lon: lon, lat: lat)
        case .newZealandMapGrid(let p): p.forward(lon: lon, lat: lat)
        case .equalEarth(let p): p.forward(lon: lon, lat: lat)
        case .colombiaUrban(let p): p.forward(lon: lon, lat: lat)
        case .guamProjection(let p): p.forward(lon: lon, lat: lat)
        case .bonneSouthOrientated(let p): p.forward(lon: lon, lat: lat)
        case .lambertConicNearConformal(let p): p.forward(lon: lon, lat: lat)
        case .transverseMercatorZonedGrid(let p): p.forward(lon: lon, lat: lat)
        case .modifiedAzimuthalEquidistant(let p): p.forward(lon: lon, lat: lat)
        case .labordeObliqueMercator(let p): p.forward(lon: lon, lat: lat)
        }
    }

    /// Easting/northing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        switch self {
        case .transverseMercator(let p): p.inverse(x: x, y: y)
        case .mercator(let p): p.inverse(x: x, y: y)
        case .polarStereographic(let p): p.inverse(x: x, y: y)
        case .lambertAzimuthalEqualArea(let p): p.inverse(x: x, y: y)
        case .lambertConformalConic(let p): p.inverse(x: x, y: y)
        case .albersEqualArea(let p): p.inverse(x: x, y: y)
        case .obliqueStereographic(let p): p.inverse(x: x, y: y)
        case .hotineObliqueMercator(let p): p.inverse(x: x, y: y)
        case .krovak(let p): p.inverse(x: x, y: y)
        case .cassiniSoldner(let p): p.inverse(x: x, y: y)
        case .americanPolyconic(let p): p.inverse(x: x, y: y)
        case .transverseMercatorSouthOrientated(let p): p.inverse(x: x, y: y)
        case .equidistantCylindrical(let p): p.inverse(x: x, y: y)
        case .lambertCylindricalEqualArea(let p): p.inverse(x: x, y: y)
        case .newZealandMapGrid(let p): p.inverse(x: x, y: y)
        case .equalEarth(let p): p.inverse(x: x, y: y)
        case .colombiaUrban(let p): p.inverse(x: x, y: y)
        case .guamProjection(let p): p.inverse(x: x, y: y)
        case .bonneSouthOrientated(let p): p.inverse(x: x, y: y)
        case .lambertConicNearConformal(let p): p.inverse(x: x, y: y)
        case .transverseMercatorZonedGrid(let p): p.inverse(x: x, y: y)
        case .modifiedAzimuthalEquidistant(let p): p.inverse(x: x, y: y)
        case .labordeObliqueMercator(let p): p.inverse(x: x, y: y)
        }
    }
}
