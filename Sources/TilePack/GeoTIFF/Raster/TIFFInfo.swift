import TilePackCore
/// What `tilepack info` reports about a TIFF: structure, sample layout, georeferencing and,
/// optionally, pixel checksums. Built in the library so the CLI only prints; rendered as
/// human text (``text``) or as one deterministic JSON object (``json``).
public struct TIFFInfo: Sendable, Encodable {
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
        self.overviewSizes = file.directories.filter {
            $0.isReducedResolution && !$0.isMask && $0.index != file.image.ifdIndex
        }
        .map { ($0.width, $0.height) }
        self.maskSizes = file.masks.map { ($0.width, $0.height) }
        self.checksum = checksum ? try file.pixelChecksum() : nil
    }

    /// The EPSG code, "user-defined", or "none", for humans.
    var crsLabel: String {
        if let epsg = image.epsg { return "EPSG:\(epsg)" }
        guard let keys = image.geoKeys else { return "none" }
        if keys.short(GeoKey.projectedCSType) != nil || keys.short(GeoKey.geographicType) != nil
            || keys.short(GeoKey.gtModelType) != nil
        {
            return "user-defined"
        }
        return "none"
    }

    // MARK: JSON

    /// One JSON object with snake_case fields (schema in docs/BUILDING.md, "Inspecting a source"), on one
    /// line with sorted keys; non-finite numbers as the strings "nan", "inf", "-inf".
    public var json: String {
        get throws { try JSONOutput.string(self) }
    }

    /// docs/BUILDING.md's field names. Nullable fields print `null`, never disappear.
    enum CodingKeys: String, CodingKey {
        case path, width, height, bands, dtype, compression, predictor, layout, bigtiff, photometric, overviews, masks
        case geotransform, nodata, epsg, geokeys
        case bitsPerSample = "bits_per_sample"
        case compressionCode = "compression_code"
        case planarConfig = "planar_config"
        case blockSize = "block_size"
        case byteOrder = "byte_order"
        case extraSamples = "extra_samples"
        case rasterType = "raster_type"
        case pixelSHA256 = "pixel_sha256"
        case bandSHA256 = "band_sha256"
    }

    public func encode(to encoder: any Encoder) throws {
        try encode(to: encoder, epsg: image.epsg)
    }

    /// The fields of ``json`` with `epsg` given by the caller: `info` reports the CRS's code
    /// from Geo, which also knows codes the keys spell out.
    func encode(to encoder: any Encoder, epsg: Int?) throws {
        let img = image
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(path, forKey: .path)
        try c.encode(img.width, forKey: .width)
        try c.encode(img.height, forKey: .height)
        try c.encode(img.bands, forKey: .bands)
        try c.encode(img.sampleType.rawValue, forKey: .dtype)
        try c.encode(img.bitsPerSample, forKey: .bitsPerSample)
        try c.encode(img.compressionName, forKey: .compression)
        try c.encode(Int(img.compression), forKey: .compressionCode)
        try c.encode(img.predictor, forKey: .predictor)
        try c.encode(img.planarConfig.name, forKey: .planarConfig)
        try c.encode(img.isTiled ? "tiled" : "stripped", forKey: .layout)
        try c.encode([img.blockWidth, img.blockHeight], forKey: .blockSize)
        try c.encode(isBigTIFF, forKey: .bigtiff)
        try c.encode(byteOrder.rawValue, forKey: .byteOrder)
        try c.encode(img.photometricName, forKey: .photometric)
        try c.encode(img.extraSamples, forKey: .extraSamples)
        try c.encode(overviewSizes.map { [$0.width, $0.height] }, forKey: .overviews)
        try c.encode(maskSizes.map { [$0.width, $0.height] }, forKey: .masks)
        try c.encodeOrNull(img.geoTransform?.coefficients.map(JSONOutput.number), forKey: .geotransform)
        try c.encodeOrNull(img.rasterType?.rawValue, forKey: .rasterType)
        try c.encodeOrNull(img.nodata.map(JSONOutput.number), forKey: .nodata)
        try c.encodeOrNull(epsg, forKey: .epsg)
        try c.encodeOrNull(img.geoKeys.map(GeoKeysJSON.init), forKey: .geokeys)
        if let checksum {
            try c.encode(checksum.pixelSHA256, forKey: .pixelSHA256)
            try c.encode(checksum.bandSHA256, forKey: .bandSHA256)
        }
    }

    /// `geokeys`: GeoKey name → int (one SHORT), number (one DOUBLE), string (ASCII), or an array.
    struct GeoKeysJSON: Encodable {
        let keys: GeoKeyDirectory

        struct Name: CodingKey {
            let stringValue: String
            init(stringValue: String) { self.stringValue = stringValue }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }

        func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: Name.self)
            for (id, value) in keys.entries {
                let name = Name(stringValue: GeoKey.name(id))
                switch value {
                case .shorts(let v) where v.count == 1: try c.encode(Int(v[0]), forKey: name)
                case .shorts(let v): try c.encode(v.map(Int.init), forKey: name)
                case .doubles(let v) where v.count == 1: try c.encode(JSONOutput.number(v[0]), forKey: name)
                case .doubles(let v): try c.encode(v.map(JSONOutput.number), forKey: name)
                case .ascii(let s): try c.encode(s, forKey: name)
                }
            }
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
        add(
            "sample type:",
            "\(img.sampleType.rawValue) (\(img.bitsPerSample)-bit\(img.bitsPerSample == 24 ? ", widened to 32" : ""))")
        add(
            "photometric:",
            img.photometricName + (img.extraSamples.isEmpty ? "" : ", extra samples \(img.extraSamples)"))
        if let map = img.colorMap { add("color map:", "\(map.count / 3) entries") }
        add("compression:", "\(img.compressionName) (\(img.compression))")
        add("layout:", "\(img.isTiled ? "tiled" : "stripped"), block \(img.blockWidth) x \(img.blockHeight)")
        add("predictor:", "\(img.predictor)")
        add("planar config:", img.planarConfig.name)
        add(
            "format:",
            """
            \(isBigTIFF ? "BigTIFF" : "classic TIFF"), \
            \(byteOrder == .little ? "little-endian (II)" : "big-endian (MM)")
            """
        )
        add(
            "overviews:",
            overviewSizes.isEmpty ? "none" : overviewSizes.map { "\($0.width)x\($0.height)" }.joined(separator: ", "))
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
                let text: String =
                    switch value {
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
