import TilePackCore

/// Polar stereographic, variant C (EPSG method 9830; Terre Adélie): variant B's true scale
/// on the standard parallel φf, but the false origin (EF, NF) is where φf crosses the
/// central meridian instead of the pole (IOGP GN 7-2 §3.5.2.3). Since ρ(φf) = a·mf, that is
/// variant B with the pole at northing NF + ρf (north) or NF − ρf (south).
extension PolarStereographic {
    /// Variant C: standard parallel (degrees; its sign picks the pole), longitude of origin,
    /// easting/northing at the false origin (metres).
    public init(
        ellipsoid: Ellipsoid, standardParallel: Double, longitudeOfOrigin: Double,
        eastingAtFalseOrigin: Double, northingAtFalseOrigin: Double
    ) {
        var p = PolarStereographic(
            ellipsoid: ellipsoid, standardParallel: standardParallel,
            centralMeridian: longitudeOfOrigin, falseEasting: eastingAtFalseOrigin,
            falseNorthing: 0)
        let rhoF = p.aK * ConformalLatitude.t(phi: abs(standardParallel) * .pi / 180, e: p.e)
        p = PolarStereographic(
            ellipsoid: ellipsoid, standardParallel: standardParallel,
            centralMeridian: longitudeOfOrigin, falseEasting: eastingAtFalseOrigin,
            falseNorthing: northingAtFalseOrigin + p.s * rhoF)
        self = p
    }
}
