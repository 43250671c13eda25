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
    public var json: String {
        let img = image
        var fields: [(String, JSON)] = [
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
        var out = ""
        JSON.object(fields).write(to: &out)
        return out
    }

    static func json(_ value: GeoKeyDirectory.Value) -> JSON {
        switch value {
        case .shorts(let v): v.count == 1 ? .int(Int(v[0])) : .array(v.map { .int(Int($0)) })
        case .doubles(let v): v.count == 1 ? .number(v[0]) : .array(v.map { .number($0) })
        case .ascii(let s): .string(s)
        }
    }

    /// A minimal JSON value with deterministic rendering (no Foundation dependency).
    enum JSON {
        case null
        case bool(Bool)
        case int(Int)
        case number(Double)
        case string(String)
        case array([JSON])
        case object([(String, JSON)])

        func write(to out: inout String) {
            switch self {
            case .null: out += "null"
            case .bool(let b): out += b ? "true" : "false"
            case .int(let i): out += String(i)
            case .number(let d): out += JSON.render(d)
            case .string(let s): JSON.quote(s, into: &out)
            case .array(let items):
                out += "["
                for (i, item) in items.enumerated() {
                    if i > 0 { out += ", " }
                    item.write(to: &out)
                }
                out += "]"
            case .object(let fields):
                out += "{"
                for (i, (key, value)) in fields.enumerated() {
                    if i > 0 { out += ", " }
                    JSON.quote(key, into: &out)
                    out += ": "
                    value.write(to: &out)
                }
                out += "}"
            }
        }

        /// Shortest round-tripping decimal; integral values without a fraction; non-finite as strings.
        static func render(_ d: Double) -> String {
            if d.isNaN { return "\"nan\"" }
            if d.isInfinite { return d < 0 ? "\"-inf\"" : "\"inf\"" }
            if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
            return "\(d)"
        }

        static func quote(_ s: String, into out: inout String) {
            out += "\""
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                default:
                    if scalar.value < 0x20 {
                        let hex = String(scalar.value, radix: 16)
                        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                }
            }
            out += "\""
        }
    }

    // MARK: Text

    /// Human-readable report, one "label: value" per line.
    public var text: String {
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
        return lines.joined(separator: "\n")
    }
}

private extension String {
    func padding(_ width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
