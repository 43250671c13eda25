import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Transverse Mercator Zoned Grid System (EPSG method 9824; "WGS 84 / UTM grid system",
/// EPSG:32600/32700), by IOGP GN 7-2: the zone comes from the longitude,
///   Z = (⌊(λ − λI)/W⌋ mod 360/W) + 1,  λ₀ = λI + Z·W − W/2,
/// and the easting carries the zone number as a prefix, E = Z·10⁶ + FE + E′ (E′ the ordinary
/// transverse mercator easting about λ₀). The inverse reads Z back from ⌊E/10⁶⌋, so it needs
/// FE + E′ in [0, 10⁶) — true for UTM-like systems. PROJ 9.1 lacks the method.
///
/// One transverse mercator about meridian 0 serves every zone (it depends on λ − λ₀ only):
/// O(1), allocation-free.
public struct TransverseMercatorZonedGrid: Sendable, Equatable {
    let tm: TransverseMercator
    let lonI: Double, width: Double  // degrees
    let zones: Double  // 360 / W
    let fe: Double

    /// - Parameters: latitude of natural origin, initial longitude (western limit of zone 1) and
    ///   zone width (degrees, 0 < W ≤ 360), k₀, FE, FN.
    public init(
        ellipsoid: Ellipsoid, latitudeOfOrigin: Double, initialLongitude: Double, zoneWidth: Double,
        scale k0: Double, falseEasting: Double, falseNorthing: Double
    ) {
        tm = TransverseMercator(
            ellipsoid: ellipsoid, latitudeOfOrigin: latitudeOfOrigin, centralMeridian: 0,
            scale: k0, falseEasting: 0, falseNorthing: falseNorthing)
        lonI = initialLongitude
        width = zoneWidth
        zones = (360 / zoneWidth).rounded(.down)
        fe = falseEasting
    }

    /// Zone number's central meridian in degrees.
    func centralMeridian(zone z: Double) -> Double { lonI + z * width - width / 2 }

    /// Geodetic lon/lat (radians) → easting (zone-prefixed) / northing (metres).
    public func forward(lon: Double, lat: Double) -> (x: Double, y: Double) {
        let deg = lon * 180 / .pi
        guard deg.isFinite else { return (.nan, .nan) }
        let k = ((deg - lonI) / width).rounded(.down)
        let z = k - (k / zones).rounded(.down) * zones + 1
        let lam = (deg - centralMeridian(zone: z)) * .pi / 180
        let p = tm.forward(lon: lam, lat: lat)
        return (z * 1_000_000 + fe + p.x, p.y)
    }

    /// Zone-prefixed easting / northing (metres) → geodetic lon/lat (radians); non-finite for
    /// an easting whose prefix is not a zone.
    public func inverse(x: Double, y: Double) -> (lon: Double, lat: Double) {
        let z = (x / 1_000_000).rounded(.down)
        guard z >= 1, z <= zones else { return (.nan, .nan) }
        let g = tm.inverse(x: x - z * 1_000_000 - fe, y: y)
        return (remainder(g.lon + centralMeridian(zone: z) * .pi / 180, 2 * .pi), g.lat)
    }
}
