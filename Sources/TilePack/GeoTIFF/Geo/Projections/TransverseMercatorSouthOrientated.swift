import TilePackCore

/// Transverse mercator, south orientated (EPSG method 9808; South African Lo zones, Namibian
/// grids): the ordinary transverse mercator computed without false origin, then
/// W = FE − E′ (westing) and S = FN − N′ (southing), as IOGP GN 7-2 defines the method.
///
/// Returned x is the westing, y the southing (the CRS's west/south axes are applied by the
/// CRS, not here). Note: PROJ writes this method as `tmerc +axis=wsu +x_0=FE`, which reads a
/// non-zero FE as −FE; every EPSG CRS with this method has FE = FN = 0, where both agree.
/// O(1), allocation-free (one transverse mercator evaluation).
public struct TransverseMercatorSouthOrientated: Sendable, Equatable {
    let tm: TransverseMercator
    let fe: Double, fn: Double

    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, centralMeridian: Double,
        scale k0: Double, falseEasting: Double, falseNorthing: Double
    ) {
        tm = TransverseMercator(
            ellipsoid: ellipsoid, latitudeOfOrigin: latitudeOfOrigin,
            centralMeridian: centralMeridian, scale: k0, falseEasting: 0, falseNorthing: 0)
        fe = falseEasting
        fn = falseNorthing
    }

    /// Geodetic lon/lat (radians) → westing/southing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let p = tm.forward(lon: lon, lat: lat)
        return (fe - p.x, fn - p.y)
    }

    /// Westing/southing (metres) → geodetic lon/lat (radians).
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        tm.inverse(x: fe - x, y: fn - y)
    }
}
