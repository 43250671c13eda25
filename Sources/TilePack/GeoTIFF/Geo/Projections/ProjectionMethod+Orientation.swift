import TilePackCore

/// Which way `Projection.forward`'s x and y grow for each method, so a CRS can apply its
/// coordinate system's axis directions on top without per-method knowledge.
extension ProjectionMethod {
    /// The directions of forward's (x, y): `east`/`north` for nearly every method.
    /// Exceptions, each as the method (and PROJ) computes it:
    /// - Lambert Conic Conformal (West Orientated): x is a westing (W = FE − r·sinθ).
    /// - Transverse Mercator and Bonne (South Orientated): westing and southing.
    /// - Krovak and its variants return PROJ `+proj=krovak`'s numbers, x = −westing and
    ///   y = −southing, which grow east and north; so they are listed as east/north and a
    ///   CRS whose axes are south/west (EPSG:5513, 2065) negates both, as PROJ's `+axis=swu` does.
    ///
    /// A CRS axis value is then: +x for an axis pointing the way x grows, −x for the opposite
    /// way (likewise y). Cost: O(1).
    public var forwardAxes: (xEast: Bool, yNorth: Bool) {
        switch self {
        case .lambertConicConformalWestOrientated:
            (false, true)
        case .transverseMercatorSouthOrientated, .bonneSouthOrientated:
            (false, false)
        case .transverseMercator, .mercator1SP, .mercator2SP, .pseudoMercator, .polarStereographicA,
            .polarStereographicB, .lambertAzimuthalEqualArea, .lambertConicConformal1SP, .lambertConicConformal2SP,
            .lambertConicConformal1SPVariantB, .lambertConicConformal2SPBelgium, .lambertConicConformal2SPMichigan,
            .albersEqualArea, .obliqueStereographic, .hotineObliqueMercatorA, .hotineObliqueMercatorB,
            .krovak, .krovakNorthOrientated, .krovakModified, .krovakModifiedNorthOrientated,
            .cassiniSoldner, .hyperbolicCassiniSoldner, .americanPolyconic,
            .transverseMercator3D, .equidistantCylindrical, .equidistantCylindricalSpherical,
            .lambertCylindricalEqualArea, .lambertCylindricalEqualAreaSpherical, .polarStereographicC,
            .newZealandMapGrid, .equalEarth, .lambertAzimuthalEqualAreaSpherical, .colombiaUrban,
            .transverseMercatorZonedGrid, .guamProjection, .labordeObliqueMercator,
            .modifiedAzimuthalEquidistant, .lambertConicNearConformal:
            (true, true)
        }
    }
}
