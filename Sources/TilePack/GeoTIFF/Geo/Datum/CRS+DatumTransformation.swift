import TilePackCore

extension CRS {
    /// A copy whose ``lonLat(x:y:)`` and ``coordinate(lon:lat:)`` go through
    /// `transformation` (nil: back to the datum's TOWGS84, if any).
    /// - Cost: O(1); the grids are shared, not copied.
    public func with(datumTransformation transformation: DatumTransformation?) -> CRS {
        var copy = self
        copy.datumTransformation = transformation
        return copy
    }

    /// How lon/lat reach WGS 84, one line for the build summary and the
    /// `tilepack:datum_transform` metadata key: the operation's summary
    /// ("DHDN to WGS 84 (4) [EPSG:15949, BETA2007.gsb, 1 m]"), the GeoKeys TOWGS84
    /// Helmert, "none (WGS 84)" for WGS 84 and the frames treated as it, or
    /// "none (DATUM treated as WGS 84)".
    public var datumTransformSummary: String {
        if let t = datumTransformation { return t.summary }
        if let h = datum.toWGS84 {
            return "TOWGS84 Helmert [\(h.tx), \(h.ty), \(h.tz), \(h.rx), \(h.ry), \(h.rz), \(h.ppm)] (GeoKeys)"
        }
        if datum.isWGS84Compatible || datum.epsg == 6326 { return DatumTransformation.noneSummary }
        return "none (\(datum.name) treated as WGS 84)"
    }
}
