import TilePackCore
import TilePackGeoTIFF

/// `tilepack info` on several GeoTIFFs, a folder or a VRT: the mosaic the build would read
/// (its grid's union bounds, resolution and CRS) and each file's size and CRS.
///
/// - Cost: what ``MosaicSource`` costs to open (each file's header once); no pixel is read.
public struct MosaicInfo: Sendable, Encodable {
    public let mosaic: MosaicSource
    /// The VRT described, if the mosaic came from one.
    public let vrtPath: String?

    public init(mosaic: MosaicSource, vrtPath: String? = nil) {
        self.mosaic = mosaic
        self.vrtPath = vrtPath
    }

    /// Opens what ``RegionInput`` resolved to (a single file becomes a mosaic of one; the
    /// CLI describes that with ``SourceInfo`` instead).
    public init(
        input: RegionInput, maxOpenFiles: Int = MosaicSource.defaultMaxOpenFiles, registry: CRSRegistry = .builtin
    ) throws {
        if case .vrt(let path) = input {
            self.init(
                mosaic: try MosaicSource(
                    vrt: try VRTDocument(path: path), maxOpenFiles: maxOpenFiles, registry: registry), vrtPath: path)
        } else {
            self.init(mosaic: try MosaicSource(files: input.paths, maxOpenFiles: maxOpenFiles, registry: registry))
        }
    }

    private func crsLabel(_ crs: CRS) -> String { crs.epsg.map { "EPSG:\($0)" } ?? crs.name }

    /// `label: value` lines, then one line per file.
    public var text: String {
        let g = mosaic.grid
        var lines: [String] = []
        func add(_ label: String, _ value: String) {
            lines.append(label + String(repeating: " ", count: max(1, 16 - label.count)) + value)
        }
        if let vrtPath { add("vrt:", vrtPath) }
        add(
            "mosaic:",
            "\(mosaic.files.count) file\(mosaic.files.count == 1 ? "" : "s"), later files win where they overlap")
        let bands = mosaic.vrtBands?.count ?? mosaic.bands
        let picked =
            mosaic.vrtBands.map { ", the files' bands " + $0.map { String($0 + 1) }.joined(separator: ",") } ?? ""
        add(
            "size:", "\(g.width) x \(g.height) pixels, \(bands) band\(bands == 1 ? "" : "s") (the mosaic grid\(picked))"
        )
        add("sample type:", mosaic.sampleType.rawValue)
        add("nodata:", mosaic.nodata.map { "\($0)" } ?? "none (per file, or none)")
        add("crs:", mosaic.crsNames.joined(separator: ", "))
        add("grid crs:", g.crs.name + (g.crs.epsg.map { " (EPSG:\($0))" } ?? " (user-defined)"))
        add("geotransform:", g.transform.coefficients.map { "\($0)" }.joined(separator: ", "))
        let b = g.nativeBounds, ll = g.lonLatBounds(pointsPerEdge: 33)
        add("bounds:", "\(b.minX), \(b.minY), \(b.maxX), \(b.maxY) (native, union of the files)")
        add("bounds lon/lat:", "\(ll.west), \(ll.south), \(ll.east), \(ll.north) (W, S, E, N)")
        add("resolution:", "\(g.groundResolution) m on the ground, web-mercator zoom \(g.nativeZoom)")
        lines.append("files:")
        for f in mosaic.files {
            lines.append(
                """
                  \(f.path)  \(f.width) x \(f.height)  \(crsLabel(f.georeference.crs))  \
                \(f.georeference.groundResolution) m
                """
            )
        }
        return lines.joined(separator: "\n")
    }

    enum CodingKeys: String, CodingKey {
        case vrt, mosaic, files, width, height, bands, dtype, nodata, crs, epsg, geotransform, bounds
        case gridCRS = "grid_crs"
        case boundsLonLat = "bounds_lonlat"
        case resolutionMetres = "resolution_m"
        case nativeZoom = "native_zoom"
    }

    struct FileEntry: Encodable {
        let path: String
        let width: Int, height: Int
        let crs: String
        let resolution_m: Double
    }

    public func encode(to encoder: any Encoder) throws {
        let g = mosaic.grid
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeOrNull(vrtPath, forKey: .vrt)
        try c.encode(true, forKey: .mosaic)
        try c.encode(
            mosaic.files.map {
                FileEntry(
                    path: $0.path, width: $0.width, height: $0.height, crs: crsLabel($0.georeference.crs),
                    resolution_m: JSONOutput.number($0.georeference.groundResolution))
            }, forKey: .files)
        try c.encode(g.width, forKey: .width)
        try c.encode(g.height, forKey: .height)
        try c.encode(mosaic.vrtBands?.count ?? mosaic.bands, forKey: .bands)
        try c.encode(mosaic.sampleType.rawValue, forKey: .dtype)
        try c.encodeOrNull(mosaic.nodata.map(JSONOutput.number), forKey: .nodata)
        try c.encode(mosaic.crsNames, forKey: .crs)
        try c.encode(crsLabel(g.crs), forKey: .gridCRS)
        try c.encodeOrNull(g.crs.epsg, forKey: .epsg)
        try c.encode(g.transform.coefficients.map(JSONOutput.number), forKey: .geotransform)
        let b = g.nativeBounds, ll = g.lonLatBounds(pointsPerEdge: 33)
        try c.encode([b.minX, b.minY, b.maxX, b.maxY].map(JSONOutput.number), forKey: .bounds)
        try c.encode([ll.west, ll.south, ll.east, ll.north].map(JSONOutput.number), forKey: .boundsLonLat)
        try c.encode(JSONOutput.number(g.groundResolution), forKey: .resolutionMetres)
        try c.encode(g.nativeZoom, forKey: .nativeZoom)
    }

    /// One JSON object, one line, keys sorted.
    public var json: String {
        get throws { try JSONOutput.string(self) }
    }
}
