import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// Geo's georeference as the tiler sees it. The native resolution is the true ground
/// distance between neighbouring pixel centres (``GeoReference/groundResolution``), and the
/// default max zoom is ``GeoReference/nativeZoom`` for every CRS.
extension GeoReference: SourceGeoreference {
    public var lonLatBounds: GeoBounds {
        lonLatBounds(pointsPerEdge: 33)
    }

    public var groundResolutionMetres: Double { groundResolution }

    public func sourcePixel(lon: Double, lat: Double) -> (col: Double, row: Double)? {
        let p = pixel(lon: lon, lat: lat)
        return p.col.isFinite && p.row.isFinite ? p : nil
    }
}
