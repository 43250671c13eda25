import TilePackCore
extension GeoReference {
    /// The georeference of a TIFF's first image: its CRS from the GeoKeys and its
    /// geotransform (PixelIsPoint already folded in by the reader, as GDAL does).
    /// Cost: O(1); no I/O beyond what the reader already parsed.
    public init(image: TIFFImage, path: String) throws(InputFileError) {
        try self.init(image: image, path: path, registry: .builtin)
    }

    /// As ``init(image:path:)``, resolving EPSG codes outside the built-in table through
    /// `registry` (proj.db). Cost: O(1) plus a registry lookup for a code new to it.
    public init(image: TIFFImage, path: String, registry: CRSRegistry) throws(InputFileError) {
        guard let keys = image.geoKeys else {
            throw InputFileError(path: path, detail: "no GeoKey directory: the file is not georeferenced")
        }
        guard let transform = image.geoTransform else {
            throw InputFileError(
                path: path,
                detail:
                    """
                    no geotransform (ModelPixelScale+ModelTiepoint or ModelTransformation): the file is not \
                    georeferenced
                    """
            )
        }
        let crs: CRS
        do { crs = try CRS(geoKeys: keys, registry: registry) } catch {
            throw InputFileError(path: path, detail: "unsupported CRS: \(error.description)")
        }
        do { try self.init(crs: crs, transform: transform, width: image.width, height: image.height) } catch {
            throw InputFileError(path: path, detail: error.description)
        }
    }
}

/// `tilepack info`'s report: the TIFF structure from Raster plus, when the file is
/// georeferenced, its CRS, bounds (native and lon/lat from the densified outline),
/// resolution and matching web-mercator zoom. A CRS tilepack declines is reported in
/// `crs_error` rather than failing the whole report.
public struct SourceInfo: Sendable, Encodable {
    public let tiff: TIFFInfo
    public let georeference: GeoReference?
    /// Why the file could not be georeferenced, when it carries GeoTIFF tags but no usable CRS.
    public let georeferencingProblem: String?

    public init(tiff: TIFFInfo, registry: CRSRegistry = .builtin) {
        self.tiff = tiff
        do {
            georeference = try GeoReference(image: tiff.image, path: tiff.path, registry: registry)
            georeferencingProblem = nil
        } catch {
            georeference = nil
            georeferencingProblem = tiff.image.geoKeys == nil && tiff.image.geoTransform == nil ? nil : error.detail
        }
    }

    /// The TIFF fields (``TIFFInfo/CodingKeys``) with `epsg` from the CRS, then `crs_name`,
    /// `datum_note`, `bounds`, `bounds_lonlat` ([west, south, east, north]), `resolution_m`,
    /// `native_zoom`, `crs_error`; null where the file is not georeferenced.
    enum CodingKeys: String, CodingKey {
        case bounds
        case crsName = "crs_name"
        case datumNote = "datum_note"
        case boundsLonLat = "bounds_lonlat"
        case resolutionMetres = "resolution_m"
        case nativeZoom = "native_zoom"
        case crsError = "crs_error"
        case crsSource = "crs_source"
    }

    /// `crs_source`: {"kind": "proj.db", "path", "epsg_version", "deprecated"}, {"kind": "builtin"}
    /// or {"kind": "geokeys"} (a user-defined CRS).
    struct SourceJSON: Encodable {
        let source: CRSSource
        let deprecated: Bool
        enum CodingKeys: String, CodingKey { case kind, path, epsgVersion = "epsg_version", deprecated }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(source.kind, forKey: .kind)
            if case .projDB(let path, let version) = source {
                try c.encode(path, forKey: .path)
                try c.encode(version, forKey: .epsgVersion)
                try c.encode(deprecated, forKey: .deprecated)
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        let g = georeference
        try tiff.encode(to: encoder, epsg: g?.crs.epsg ?? tiff.image.epsg)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeOrNull(g?.crs.name, forKey: .crsName)
        try c.encodeOrNull(g?.crs.datumNote, forKey: .datumNote)
        let b = g?.nativeBounds, ll = g?.lonLatBounds(pointsPerEdge: 33)
        try c.encodeOrNull(b.map { [$0.minX, $0.minY, $0.maxX, $0.maxY].map(JSONOutput.number) }, forKey: .bounds)
        try c.encodeOrNull(
            ll.map { [$0.west, $0.south, $0.east, $0.north].map(JSONOutput.number) }, forKey: .boundsLonLat)
        try c.encodeOrNull(g.map { JSONOutput.number($0.groundResolution) }, forKey: .resolutionMetres)
        try c.encodeOrNull(g?.nativeZoom, forKey: .nativeZoom)
        try c.encodeOrNull(georeferencingProblem, forKey: .crsError)
        try c.encodeOrNull(
            g.map { SourceJSON(source: $0.crs.source, deprecated: $0.crs.isDeprecated) }, forKey: .crsSource)
    }

    /// One JSON object (schema in docs/BUILDING.md, "Inspecting a source"), one line, keys sorted.
    public var json: String {
        get throws { try JSONOutput.string(self) }
    }

    /// The TIFF report followed by the georeferencing lines.
    public var text: String {
        var lines = tiff.textLines
        func add(_ label: String, _ value: String) {
            lines.append(label + String(repeating: " ", count: max(1, 16 - label.count)) + value)
        }
        if let g = georeference {
            add("crs name:", g.crs.name + (g.crs.epsg.map { " (EPSG:\($0))" } ?? " (user-defined)"))
            add(
                "crs source:", g.crs.source.description + (g.crs.isDeprecated ? "; deprecated in the EPSG dataset" : "")
            )
            if let note = g.crs.datumNote { add("datum note:", note) }
            let b = g.nativeBounds, ll = g.lonLatBounds(pointsPerEdge: 33)
            add("bounds:", "\(b.minX), \(b.minY), \(b.maxX), \(b.maxY) (native)")
            add("bounds lon/lat:", "\(ll.west), \(ll.south), \(ll.east), \(ll.north) (W, S, E, N)")
            add("resolution:", "\(g.groundResolution) m on the ground, web-mercator zoom \(g.nativeZoom)")
        } else if let problem = georeferencingProblem {
            add("crs error:", problem)
        }
        return lines.joined(separator: "\n")
    }
}
