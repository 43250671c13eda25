import TilePackCore
/// GeoTIFF georeferencing read from one IFD: the key directory with its parameters, the
/// geotransform GDAL would derive, the raster type, GDAL_NODATA, GDAL_METADATA and the EPSG code.
struct GeoTIFFTags: Sendable {
    var geoKeys: GeoKeyDirectory?
    var geoTransform: GeoTransform?
    var rasterType: RasterType?
    var nodata: Double?
    var gdalMetadata: GDALMetadata?
    var epsg: Int?
    var pixelScale: [Double]?
    var tiepoints: [Double]?
    var transformation: [Double]?

    /// GeoKey value meaning "user-defined" (no EPSG code).
    static let userDefined: UInt16 = 32767

    static func parse(
        _ dir: TIFFDirectory, reader: TIFFStructureReader, sampleType: SampleType
    ) throws(TIFFError) -> GeoTIFFTags {
        var tags = GeoTIFFTags()
        tags.pixelScale = try reader.doubles(dir, TIFFTag.modelPixelScale)
        tags.tiepoints = try reader.doubles(dir, TIFFTag.modelTiepoint)
        tags.transformation = try reader.doubles(dir, TIFFTag.modelTransformation)

        if let directory = try reader.unsigned(dir, TIFFTag.geoKeyDirectory) {
            let doubles = try reader.doubles(dir, TIFFTag.geoDoubleParams) ?? []
            // GeoAsciiParams are '|'-separated strings; keep NULs out but not the separators.
            let asciiEntry = dir[TIFFTag.geoAsciiParams]
            let asciiBytes = try asciiEntry.map { e throws(TIFFError) in try reader.textBytes(e) } ?? []
            tags.geoKeys = try keyDirectory(
                directory.map { UInt16(truncatingIfNeeded: $0) }, doubles: doubles, ascii: asciiBytes,
                path: reader.path)
        }
        if let keys = tags.geoKeys {
            switch keys.short(GeoKey.gtRasterType) {
            case 1: tags.rasterType = .pixelIsArea
            case 2: tags.rasterType = .pixelIsPoint
            default: tags.rasterType = nil
            }
            tags.epsg = epsgCode(keys)
        }
        tags.geoTransform = geoTransform(
            scale: tags.pixelScale, tiepoints: tags.tiepoints,
            transformation: tags.transformation, rasterType: tags.rasterType)
        if let text = try reader.ascii(dir, TIFFTag.gdalNoData) {
            tags.nodata = parseNodata(text, sampleType: sampleType)
        }
        // Metadata only hints (units, band descriptions): a tag that cannot be read is
        // treated as absent rather than making the image unreadable.
        if let text = try? reader.ascii(dir, TIFFTag.gdalMetadata) {
            tags.gdalMetadata = GDALMetadata(xml: text)
        }
        return tags
    }

    /// Resolves the key directory's entries against the double and ASCII parameter tags.
    /// Keys whose references fall outside their parameter tag are dropped (libgeotiff warns
    /// and skips them too); the directory itself is never trusted for counts.
    /// - Throws: `.absurdDimensions` for more than ``TIFFLimits/maxGeoKeys`` keys, or keys
    ///   resolving to more than ``TIFFLimits/maxGeoKeyValues`` values together (keys may all
    ///   point at one large range: N keys would copy it N times).
    /// - Cost: O(keys + values resolved), both bounded by the limits.
    static func keyDirectory(
        _ dir: [UInt16], doubles: [Double], ascii: [UInt8], path: String = ""
    ) throws(TIFFError) -> GeoKeyDirectory? {
        guard dir.count >= 4 else { return nil }
        var keys = GeoKeyDirectory(version: Array(dir[0..<3]))
        let n = min(Int(dir[3]), (dir.count - 4) / 4)
        guard n <= TIFFLimits.maxGeoKeys else {
            throw TIFFError(
                path: path, code: .absurdDimensions,
                detail: "GeoKeyDirectory lists \(n) keys, more than the \(TIFFLimits.maxGeoKeys) tilepack reads")
        }
        var resolved = 0
        for i in 0..<n {
            let base = 4 + i * 4
            let id = dir[base], location = dir[base + 1], count = Int(dir[base + 2]), value = dir[base + 3]
            let start = Int(value)
            resolved += location == 0 ? 1 : count
            guard resolved <= TIFFLimits.maxGeoKeyValues else {
                throw TIFFError(
                    path: path, code: .absurdDimensions,
                    detail: "GeoKeys resolve to more than the \(TIFFLimits.maxGeoKeyValues) values tilepack reads")
            }
            switch location {
            case 0:
                keys[id] = .shorts([value])
            case TIFFTag.geoKeyDirectory:
                guard start + count <= dir.count else { continue }
                keys[id] = .shorts(Array(dir[start..<start + count]))
            case TIFFTag.geoDoubleParams:
                guard start + count <= doubles.count else { continue }
                keys[id] = .doubles(Array(doubles[start..<start + count]))
            case TIFFTag.geoAsciiParams:
                guard start + count <= ascii.count else { continue }
                var bytes = Array(ascii[start..<start + count])
                while let last = bytes.last, last == UInt8(ascii: "|") || last == 0 { bytes.removeLast() }
                keys[id] = .ascii(String(decoding: bytes, as: UTF8.self))
            default:
                continue
            }
        }
        return keys
    }

    /// EPSG code of the CRS: ProjectedCSType for projected models, else GeographicType.
    /// A user-defined (32767) projected CRS has no code even if its datum has one.
    static func epsgCode(_ keys: GeoKeyDirectory) -> Int? {
        if let pcs = keys.short(GeoKey.projectedCSType) {
            return pcs == 0 || pcs >= userDefined ? nil : Int(pcs)
        }
        if keys.short(GeoKey.gtModelType) == 1 { return nil }
        if let gcs = keys.short(GeoKey.geographicType) {
            return gcs == 0 || gcs >= userDefined ? nil : Int(gcs)
        }
        return nil
    }

    /// The geotransform GDAL derives: ModelTransformation first, else a single tiepoint with
    /// a pixel scale. Several tiepoints are ground control points, not a transform (nil).
    /// PixelIsPoint shifts the origin by half a pixel (GDAL's default, GTIFF_POINT_GEO_IGNORE=NO).
    static func geoTransform(
        scale: [Double]?, tiepoints: [Double]?, transformation: [Double]?,
        rasterType: RasterType?
    ) -> GeoTransform? {
        var c: [Double]
        if let m = transformation, m.count >= 16 {
            c = [m[3], m[0], m[1], m[7], m[4], m[5]]
        } else if let t = tiepoints, t.count >= 6, t.count < 12, let s = scale, s.count >= 2 {
            c = [t[3] - t[0] * s[0], s[0], 0, t[4] + t[1] * s[1], 0, -s[1]]
        } else {
            return nil
        }
        if rasterType == .pixelIsPoint {
            c[0] -= 0.5 * c[1] + 0.5 * c[2]
            c[3] -= 0.5 * c[4] + 0.5 * c[5]
        }
        guard c.allSatisfy(\.isFinite) else { return nil }
        return GeoTransform(c)
    }

    /// GDAL_NODATA text parsed against the sample type: a value the type cannot hold means
    /// no nodata, as GDAL does.
    static func parseNodata(_ text: String, sampleType: SampleType) -> Double? {
        var slice = Substring(text)
        while let f = slice.first, f.isWhitespace || f == "\0" { slice.removeFirst() }
        while let l = slice.last, l.isWhitespace || l == "\0" { slice.removeLast() }
        let trimmed = slice.lowercased()
        let value: Double?
        switch trimmed {
        case "nan", "-nan", "+nan": value = .nan
        case "inf", "+inf", "infinity": value = .infinity
        case "-inf", "-infinity": value = -.infinity
        default: value = Double(trimmed)
        }
        guard let value, sampleType.canRepresent(value) else { return nil }
        return value
    }
}
