import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A raster's georeferencing: its CRS, its pixel → CRS affine transform (GDAL order, pixel
/// corner convention) and its size, with everything a tiler and `tilepack info` ask of it:
/// pixel ↔ CRS ↔ WGS 84 lon/lat, bounds, ground resolution, the matching web-mercator zoom,
/// and a batch inverse from lon/lat (or a whole tile) to source pixel coordinates.
///
/// Pixel coordinates are continuous: (0, 0) is the top-left corner of the first pixel, the
/// centre of pixel (c, r) is (c + 0.5, r + 0.5). Creation is O(1); bounds are O(edge points).
public struct GeoReference: Sendable {
    public let crs: CRS
    public let transform: GeoTransform
    public let width: Int
    public let height: Int
    private let toPixel: GeoTransform

    /// Why a georeference could not be made from reader output (a singular transform, an
    /// empty raster). `subject` is empty: the detail names the value itself.
    public struct Error: TilePackError, Equatable {
        /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
        public struct Code: TilePackErrorCode {
            private let name: String
            private init(_ name: String) { self.name = name }
            public var description: String { name }
            /// The geotransform has no inverse or is not finite.
            public static let singularTransform = Code("singularTransform")
            /// Width or height is not positive.
            public static let invalidSize = Code("invalidSize")
        }

        public let code: Code
        public let subject: String
        public let detail: String
        public var cause: (any Swift.Error)? { nil }

        public init(_ code: Code, subject: String = "", detail: String) {
            self.code = code
            self.subject = subject
            self.detail = detail
        }

        public static func singularTransform(_ c: [Double]) -> GeoReference.Error {
            GeoReference.Error(
                .singularTransform, detail: "geotransform \(c) is singular or not finite: pixels have no area")
        }

        public static func invalidSize(width: Int, height: Int) -> GeoReference.Error {
            GeoReference.Error(.invalidSize, detail: "raster size \(width)×\(height) is not positive")
        }
    }

    public init(crs: CRS, transform: GeoTransform, width: Int, height: Int) throws(GeoReference.Error) {
        guard width > 0, height > 0 else { throw .invalidSize(width: width, height: height) }
        guard transform.coefficients.allSatisfy(\.isFinite), let inv = transform.inverted() else {
            throw .singularTransform(transform.coefficients)
        }
        self.crs = crs
        self.transform = transform
        self.width = width
        self.height = height
        self.toPixel = inv
    }

    // MARK: Point conversions (O(1))

    /// CRS coordinates of a (fractional) pixel position.
    public func crsCoordinate(col: Double, row: Double) -> (x: Double, y: Double) {
        transform.apply(col: col, row: row)
    }

    /// Fractional pixel position of CRS coordinates.
    public func pixel(x: Double, y: Double) -> (col: Double, row: Double) {
        let p = toPixel.apply(col: x, row: y)
        return (p.x, p.y)
    }

    /// WGS 84 lon/lat (degrees) of a fractional pixel position.
    public func lonLat(col: Double, row: Double) -> (lon: Double, lat: Double) {
        let c = crsCoordinate(col: col, row: row)
        return crs.lonLat(x: c.x, y: c.y)
    }

    /// Fractional pixel position of a WGS 84 lon/lat; non-finite when the CRS cannot
    /// represent the point. Not clipped to the raster: compare with width/height.
    public func pixel(lon: Double, lat: Double) -> (col: Double, row: Double) {
        let c = crs.coordinate(lon: lon, lat: lat)
        return pixel(x: c.x, y: c.y)
    }

    // MARK: Bounds

    /// Bounding box of the raster in CRS units (all four corners, so rotated transforms work).
    public var nativeBounds: (minX: Double, minY: Double, maxX: Double, maxY: Double) {
        let corners = [(0.0, 0.0), (Double(width), 0), (0, Double(height)), (Double(width), Double(height))]
            .map { crsCoordinate(col: $0.0, row: $0.1) }
        return (corners.map(\.x).min()!, corners.map(\.y).min()!, corners.map(\.x).max()!, corners.map(\.y).max()!)
    }

    /// WGS 84 bounds (west, south, east, north) of the raster's outline densified to
    /// `pointsPerEdge` points per edge: a projected raster's edges are curves in lon/lat, so
    /// its corners alone can miss a bulge by kilometres (UTM edges, polar rasters). If a
    /// pole lies inside the raster the box extends to it over all longitudes. A raster whose
    /// outline crosses the antimeridian gets west > east. O(pointsPerEdge).
    public func lonLatBounds(pointsPerEdge: Int = 33) -> GeoBounds {
        let k = max(2, pointsPerEdge)
        var lons: [Double] = [], lats: [Double] = []
        lons.reserveCapacity(4 * k)
        lats.reserveCapacity(4 * k)
        let w = Double(width), h = Double(height)
        for i in 0..<k {
            let t = Double(i) / Double(k - 1)
            for (c, r) in [(t * w, 0.0), (t * w, h), (0.0, t * h), (w, t * h)] {
                let p = lonLat(col: c, row: r)
                if p.lon.isFinite && p.lat.isFinite {
                    lons.append(p.lon)
                    lats.append(p.lat)
                }
            }
        }
        guard !lons.isEmpty else { return GeoBounds(west: .nan, south: .nan, east: .nan, north: .nan) }
        var south = lats.min()!, north = lats.max()!
        var west = lons.min()!, east = lons.max()!
        // Antimeridian: consecutive outline longitudes never jump by > 180° on a real raster,
        // so a spread that large means the outline wraps; report the box across ±180.
        if east - west > 180, crs.kind == .projected {
            let shifted = lons.map { $0 < 0 ? $0 + 360 : $0 }
            if shifted.max()! - shifted.min()! < east - west {
                west = shifted.min()!
                east = shifted.max()! - 360
            }
        }
        // Only a projected raster can hold a pole as an interior point whose longitudes all
        // meet there (polar stereographic); a geographic raster reaching ±90 stays within its
        // own longitude range, as GDAL reports it.
        for pole in [90.0, -90.0] where crs.kind == .projected && contains(lon: 0, lat: pole) {
            if pole > 0 { north = 90 } else { south = -90 }
            west = -180
            east = 180
        }
        return GeoBounds(west: west, south: south, east: east, north: north)
    }

    /// Whether a WGS 84 point falls inside the raster.
    public func contains(lon: Double, lat: Double) -> Bool {
        let p = pixel(lon: lon, lat: lat)
        return p.col >= 0 && p.row >= 0 && p.col <= Double(width) && p.row <= Double(height)
    }

    // MARK: Resolution

    /// WGS 84 lon/lat of the raster's centre.
    public var centre: (lon: Double, lat: Double) {
        lonLat(col: Double(width) / 2, row: Double(height) / 2)
    }

    /// Pixel size in CRS units along the pixel grid's columns and rows (√(c1²+c4²), √(c2²+c5²)).
    public var nativePixelSize: (x: Double, y: Double) {
        let c = transform.coefficients
        return ((c[1] * c[1] + c[4] * c[4]).squareRoot(), (c[2] * c[2] + c[5] * c[5]).squareRoot())
    }

    /// Ground size of a pixel at the raster's centre, metres (x: along a row, y: down a
    /// column): for geographic CRSs degrees become metres with the ellipsoid's radii at the
    /// centre latitude; for projected CRSs the CRS unit in metres (projection scale error,
    /// e.g. UTM's 0.9996 or mercator's 1/cos φ, is not removed — see ``groundResolution``).
    public var nativeResolutionMetres: (x: Double, y: Double) {
        let s = nativePixelSize
        let lat = crs.unproject(
            x: crsCoordinate(col: Double(width) / 2, row: Double(height) / 2).x,
            y: crsCoordinate(col: Double(width) / 2, row: Double(height) / 2).y
        ).lat
        let m = crs.metresPerUnit(atLatitude: lat)
        return (s.x * m.x, s.y * m.y)
    }

    /// True ground distance covered by one pixel step at the raster's centre, metres: the
    /// finer of the column and row steps, measured on the WGS 84 ellipsoid between the
    /// lon/lat of neighbouring pixel centres (``pixelGroundSize(col:row:)``, as ``nativeZoom``
    /// measures), right for every CRS (mercator sources included, whose CRS metres shrink by
    /// cos φ on the ground).
    public var groundResolution: Double {
        pixelGroundSize(col: Double(width) / 2, row: Double(height) / 2)
    }

    /// The finer of one pixel step along a row and one down a column from (col, row), on the
    /// ellipsoid (``localDistance(_:_:)``), metres.
    func pixelGroundSize(col c: Double, row r: Double) -> Double {
        let p0 = lonLat(col: c, row: r), px = lonLat(col: c + 1, row: r), py = lonLat(col: c, row: r + 1)
        return min(Self.localDistance(p0, px), Self.localDistance(p0, py))
    }

    /// The web-mercator zoom matching the source: the first zoom whose tile pixel, measured
    /// on the ground where the source's pixel is measured and in the same way
    /// (``pixelGroundSize(col:row:)`` against ``tilePixelGroundSize(zoom:at:)``), is at or below
    /// it, with a tolerance of 10⁻⁵ so that a source made on a zoom's own pixel grid maps to
    /// that zoom. Rounding toward the finer zoom keeps every source pixel (to within the 0.7 %
    /// by which a web-mercator pixel's two sides differ on the ellipsoid: at most 2×
    /// oversampling); gdal2tiles rounds toward the coarser one.
    /// Where: the raster's centre; when web mercator does not reach it (a polar raster centred
    /// beyond ±85.05°, where its tile pixels shrink toward nothing), the point on the centre's
    /// meridian at the middle latitude of the bounds web mercator covers.
    /// Why not resolution(z)·cos φ: that is the pixel on a sphere, while the source's is
    /// measured on the ellipsoid, where a web-mercator pixel is shorter north to south than
    /// the sphere's below ~55° of latitude (0.7 % at the equator, 0.15 % at 46°). Compared that
    /// way, a source on a zoom's own grid (rio-tiler's web.tif, EPSG:3857 at z8; rasterio's
    /// shade.tif at z14; world.rgb, z1's 0.703125° at the equator) came out a hair finer than
    /// its zoom and was built one zoom deeper: every tile 2× upsampled, 4× the tiles.
    /// Why 10⁻⁵: the two measurements of a grid-aligned source reach the same two points by
    /// different inverse projections, whose rounding is ~10⁻⁹ m, relatively ~10⁻⁸ of a z20
    /// pixel and up to ~3 × 10⁻⁶ at z23; a real 10 ppm difference in resolution is invisible.
    /// Cost: up to ``TileID/maxZoom`` + 1 measurements (two inverse projections each); a polar
    /// raster adds its outline's inverse projections (``lonLatBounds(pointsPerEdge:)``).
    public var nativeZoom: Int {
        var (c, r) = (Double(width) / 2, Double(height) / 2)
        var p = lonLat(col: c, row: r)
        if p.lon.isFinite, p.lat.isFinite, abs(p.lat) > WebMercator.maxLatitude {
            let q = pixel(lon: p.lon, lat: WebMercator.middleLatitude(of: lonLatBounds()))
            let there = lonLat(col: q.col, row: q.row)
            // Where the CRS cannot place that point, the centre it is.
            if there.lon.isFinite, there.lat.isFinite { (c, r, p) = (q.col, q.row, there) }
        }
        let ground = pixelGroundSize(col: c, row: r) * (1 + 1e-5)
        guard ground > 0, ground.isFinite, p.lon.isFinite, p.lat.isFinite else { return TileID.maxZoom }
        for z in 0...TileID.maxZoom where Self.tilePixelGroundSize(zoom: z, at: p) <= ground { return z }
        return TileID.maxZoom
    }

    /// Ground size of a web-mercator tile pixel at `zoom` at a point, metres, measured as
    /// ``pixelGroundSize(col:row:)`` measures a source pixel: the finer of one pixel step east and
    /// one south, on the WGS 84 ellipsoid (latitudes beyond web mercator's are taken at its edge).
    static func tilePixelGroundSize(zoom: Int, at point: (lon: Double, lat: Double)) -> Double {
        let lat = min(max(point.lat, -WebMercator.maxLatitude), WebMercator.maxLatitude)
        let m = WebMercator.metres(lon: point.lon, lat: lat), step = WebMercator.resolution(zoom: zoom)
        let p = (lon: point.lon, lat: lat)
        let east = WebMercator.lonLat(x: m.x + step, y: m.y), south = WebMercator.lonLat(x: m.x, y: m.y - step)
        return min(localDistance(p, east), localDistance(p, south))
    }

    /// Distance between two nearby points (degrees) on the WGS 84 ellipsoid, metres: the
    /// straight chord between their geocentric positions, which differs from the geodesic by
    /// (d / R)² / 24 of itself (10⁻¹² for 10 km). Unlike a flat approximation in degrees it
    /// holds at a pole, where a point's longitude is arbitrary (a polar stereographic raster's
    /// centre pixel is at −90° on its central meridian, its neighbours 90° of longitude away).
    static func localDistance(_ a: (lon: Double, lat: Double), _ b: (lon: Double, lat: Double)) -> Double {
        let el = Ellipsoid.wgs84, radians = Double.pi / 180
        let p = Geocentric.fromGeodetic(lon: a.lon * radians, lat: a.lat * radians, on: el)
        let q = Geocentric.fromGeodetic(lon: b.lon * radians, lat: b.lat * radians, on: el)
        let (dx, dy, dz) = (p.x - q.x, p.y - q.y, p.z - q.z)
        return (dx * dx + dy * dy + dz * dz).squareRoot()
    }

    // MARK: Batch inverse for the tiler

    /// Source pixel positions of WGS 84 points: `cols[i], rows[i]` for `(lons[i], lats[i])`.
    /// Non-finite where the CRS cannot represent a point. O(n), no allocation beyond the
    /// caller's buffers, which must hold `lons.count` values.
    public func sourcePixels(
        lons: UnsafeBufferPointer<Double>, lats: UnsafeBufferPointer<Double>,
        cols: UnsafeMutableBufferPointer<Double>, rows: UnsafeMutableBufferPointer<Double>
    ) {
        precondition(
            lats.count == lons.count && cols.count >= lons.count && rows.count >= lons.count,
            "output buffers must hold one value per input point")
        for i in 0..<lons.count {
            let p = pixel(lon: lons[i], lat: lats[i])
            cols[i] = p.col
            rows[i] = p.row
        }
    }

    /// Source pixel positions sampled by every pixel centre of a web-mercator tile, row by row
    /// (`size`×`size` values each, index `row * size + col`). Latitudes are computed once
    /// per row and longitudes once per column; the CRS inverse runs per pixel. O(size²).
    public func sourcePixels(
        for tile: TileID, size: Int = WebMercator.tileSize,
        cols: inout [Double], rows: inout [Double]
    ) {
        precondition(size > 0, "tile size must be positive")
        let count = size * size
        if cols.count != count { cols = [Double](repeating: 0, count: count) }
        if rows.count != count { rows = [Double](repeating: 0, count: count) }
        let b = WebMercator.metreBounds(of: tile)
        let step = (b.maxX - b.minX) / Double(size)
        var tileLons = [Double](repeating: 0, count: size)
        for c in 0..<size {
            tileLons[c] = WebMercator.lonLat(x: b.minX + (Double(c) + 0.5) * step, y: 0).lon
        }
        cols.withUnsafeMutableBufferPointer { colBuf in
            rows.withUnsafeMutableBufferPointer { rowBuf in
                for r in 0..<size {
                    let lat = WebMercator.lonLat(x: 0, y: b.maxY - (Double(r) + 0.5) * step).lat
                    for c in 0..<size {
                        let p = pixel(lon: tileLons[c], lat: lat)
                        colBuf[r * size + c] = p.col
                        rowBuf[r * size + c] = p.row
                    }
                }
            }
        }
    }
}
