import TilePackCore
/// What `tilepack info` reports about a TIFF: structure, sample layout, georeferencing and,
/// optionally, pixel checksums. Built in the library so the CLI only prints; rendered as
/// human text (``text``) or as one deterministic JSON object (``json``).
public struct TIFFInfo: Sendable {
    public let path: String
    public let image: TIFFImage
    public let byteOrder: TIFFByteOrder
    public let isBigTIFF: Bool
    public let overviewSizes: [(width: Int, height: Int)]
    public let maskSizes: [(width: Int, height: Int)]
    public let checksum: PixelChecksum?

    /// Gathers the report; with `checksum`, streams every pixel through SHA-256.
    public init(file: TIFFFile, checksum: Bool = false) throws(TIFFError) {
        self.path = file.path
        self.image = file.image
        self.byteOrder = file.byteOrder
        self.isBigTIFF = file.isBigTIFF
        self.overviewSizes = file.directories.filter { $0.isReducedResolution && !$0.isMask && $0.index != file.image.ifdIndex }
            .map { ($0.width, $0.height) }
        self.maskSizes = file.masks.map { ($0.width, $0.height) }
        self.checksum = checksum ? try file.pixelChecksum() : nil
    }

    /// The EPSG code, "user-defined", or "none", for humans.
    var crsLabel: String {
        if let epsg = image.epsg { return "EPSG:\(epsg)" }
        guard let keys = image.geoKeys else { return "none" }
        if keys.short(GeoKey.projectedCSType) != nil || keys.short(GeoKey.geographicType) != nil
            || keys.short(GeoKey.gtModelType) != nil {
            return "user-defined"
        }
        return "none"
    }

    // MARK: JSON

    /// One JSON object with snake_case fields (schema in README, "## tilepack info").
    /// Keys in a fixed order; non-finite numbers as the strings "nan", "inf", "-inf".
    public var json: String { JSONValue.object(jsonFields).rendered }

    /// The fields of ``json`` in order, for reports that extend this one (`info` adds the
    /// CRS fields from Geo).
    public var jsonFields: [(String, JSONValue)] {
        let img = image
        var fields: [(String, JSONValue)] = [
            ("path", .string(path)),
            ("width", .int(img.width)),
            ("height", .int(img.height)),
            ("bands", .int(img.bands)),
            ("dtype", .string(img.sampleType.rawValue)),
            ("bits_per_sample", .int(img.bitsPerSample)),
            ("compression", .string(img.compressionName)),
            ("compression_code", .int(Int(img.compression))),
            ("predictor", .int(img.predictor)),
            ("planar_config", .string(img.planarConfig.name)),
            ("layout", .string(img.isTiled ? "tiled" : "stripped")),
            ("block_size", .array([.int(img.blockWidth), .int(img.blockHeight)])),
            ("bigtiff", .bool(isBigTIFF)),
            ("byte_order", .string(byteOrder.rawValue)),
            ("photometric", .string(img.photometricName)),
            ("extra_samples", .array(img.extraSamples.map { .int($0) })),
            ("overviews", .array(overviewSizes.map { .array([.int($0.width), .int($0.height)]) })),
            ("masks", .array(maskSizes.map { .array([.int($0.width), .int($0.height)]) })),
            ("geotransform", img.geoTransform.map { .array($0.coefficients.map { .number($0) }) } ?? .null),
            ("raster_type", img.rasterType.map { .string($0.rawValue) } ?? .null),
            ("nodata", img.nodata.map { .number($0) } ?? .null),
            ("epsg", img.epsg.map { .int($0) } ?? .null),
            ("geokeys", img.geoKeys.map { keys in .object(keys.entries.map { (GeoKey.name($0.id), Self.json($0.value)) }) } ?? .null),
        ]
        if let checksum {
            fields.append(("pixel_sha256", .string(checksum.pixelSHA256)))
            fields.append(("band_sha256", .array(checksum.bandSHA256.map { .string($0) })))
        }
        return fields
    }

    static func json(_ value: GeoKeyDirectory.Value) -> JSONValue {
        switch value {
        case .shorts(let v): v.count == 1 ? .int(Int(v[0])) : .array(v.map { .int(Int($0)) })
        case .doubles(let v): v.count == 1 ? .number(v[0]) : .array(v.map { .number($0) })
        case .ascii(let s): .string(s)
        }
    }

    // MARK: Text

    /// Human-readable report, one "label: value" per line.
    public var text: String { textLines.joined(separator: "\n") }

    /// The lines of ``text``, for reports that extend this one.
    public var textLines: [String] {
        let img = image
        var lines: [String] = []
        func add(_ label: String, _ value: String) {
            lines.append(label.padding(16) + value)
        }
        add("file:", path)
        add("size:", "\(img.width) x \(img.height) pixels, \(img.bands) band\(img.bands == 1 ? "" : "s")")
        add("sample type:", "\(img.sampleType.rawValue) (\(img.bitsPerSample)-bit\(img.bitsPerSample == 24 ? ", widened to 32" : ""))")
        add("photometric:", img.photometricName + (img.extraSamples.isEmpty ? "" : ", extra samples \(img.extraSamples)"))
        if let map = img.colorMap { add("color map:", "\(map.count / 3) entries") }
        add("compression:", "\(img.compressionName) (\(img.compression))")
        add("layout:", "\(img.isTiled ? "tiled" : "stripped"), block \(img.blockWidth) x \(img.blockHeight)")
        add("predictor:", "\(img.predictor)")
        add("planar config:", img.planarConfig.name)
        add("format:", "\(isBigTIFF ? "BigTIFF" : "classic TIFF"), \(byteOrder == .little ? "little-endian (II)" : "big-endian (MM)")")
        add("overviews:", overviewSizes.isEmpty ? "none" : overviewSizes.map { "\($0.width)x\($0.height)" }.joined(separator: ", "))
        if !maskSizes.isEmpty { add("masks:", maskSizes.map { "\($0.width)x\($0.height)" }.joined(separator: ", ")) }
        if let gt = img.geoTransform {
            add("geotransform:", gt.coefficients.map { "\($0)" }.joined(separator: ", "))
        } else {
            add("geotransform:", "none")
        }
        add("raster type:", img.rasterType.map { "Pixel is \($0.rawValue)" } ?? "unspecified")
        add("nodata:", img.nodata.map { "\($0)" } ?? "none")
        add("crs:", crsLabel)
        if let keys = img.geoKeys {
            lines.append("geokeys (version \(keys.versionParts.map(String.init).joined(separator: "."))):")
            for (id, value) in keys.entries {
                let text: String = switch value {
                case .shorts(let v): v.map(String.init).joined(separator: ", ")
                case .doubles(let v): v.map { "\($0)" }.joined(separator: ", ")
                case .ascii(let s): "\"\(s)\""
                }
                lines.append("  " + GeoKey.name(id).padding(26) + text)
            }
        }
        if let checksum {
            add("pixel sha256:", checksum.pixelSHA256)
            for (i, h) in checksum.bandSHA256.enumerated() { add("band \(i + 1) sha256:", h) }
        }
        return lines
    }
}

private extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
