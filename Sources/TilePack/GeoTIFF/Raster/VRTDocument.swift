import TilePackCore
/// A GDAL virtual raster (`.vrt`) as `gdalbuildvrt` writes it: a grid (size, geotransform,
/// SRS) and, per band, the GeoTIFF windows placed on it.
///
/// The subset read is the one mosaics need: `VRTDataset` with `SRS`, `GeoTransform`,
/// `Metadata` and `VRTRasterBand`s; a band with `NoDataValue`, `ColorInterp`, `Description`,
/// `UnitType`, `Metadata` and `SimpleSource`/`ComplexSource`; a source with `SourceFilename`
/// (`relativeToVRT`), `SourceBand`, `SourceProperties`, `SrcRect`, `DstRect` and, for a
/// complex source, `NODATA` and an identity `ScaleOffset`/`ScaleRatio`. Anything else (warped
/// or derived datasets, pixel functions, LUTs, kernel filters, colour tables) is declined
/// with an error naming the element: silently ignoring it would build the wrong pixels.
///
/// A source equal to the one before it paints the same pixels again, so it is listed once
/// (``Band/sources`` has no two equal neighbours): a VRT naming one file 240,000 times holds one
/// source, and a build samples it once.
///
/// ```swift
/// let vrt = try VRTDocument(path: "mosaic.vrt")
/// for s in vrt.bands[0].sources { print(s.path, s.dstRect) }
/// ```
///
/// - Cost: reads the whole file (at most ``XMLElement/maxBytes``) and parses it once, hashing
///   the bytes read on a second thread meanwhile (``sha256``); opens none of the sources.
public struct VRTDocument: Sendable, Equatable {
    /// A pixel rectangle (`SrcRect`/`DstRect`); fractional offsets and sizes are allowed by GDAL.
    public struct Rect: Sendable, Equatable {
        public var x: Double, y: Double, width: Double, height: Double
        public init(x: Double, y: Double, width: Double, height: Double) {
            self.x = x; self.y = y; self.width = width; self.height = height
        }
    }

    /// One `SimpleSource` or `ComplexSource`.
    public struct Source: Sendable, Equatable {
        /// The source file, resolved against the VRT's folder when `relativeToVRT="1"`.
        public var path: String
        /// 1-based band of the source file.
        public var band: Int
        /// Window of the source file read; nil = the whole file.
        public var srcRect: Rect?
        /// Where that window lands on the VRT grid; nil = the same as `srcRect`.
        public var dstRect: Rect?
        /// A complex source's `NODATA`: source pixels equal to it are not copied.
        public var nodata: Double?
        /// Whether this was a `ComplexSource` (only those honour `NODATA` in GDAL).
        public var isComplex: Bool
    }

    /// One `VRTRasterBand`.
    public struct Band: Sendable, Equatable {
        public var dataType: SampleType
        public var nodata: Double?
        /// In document order, each run of equal sources once.
        public var sources: [Source]
        /// `Description`, `ColorInterp` and `UnitType` as written (nil when absent).
        public var description: String?
        public var colorInterp: String?
        public var unitType: String?
    }

    public let path: String
    public let width: Int
    public let height: Int
    /// GDAL order, pixel-corner; nil when the VRT has no `GeoTransform`.
    public let geoTransform: GeoTransform?
    /// The `SRS` text as written (WKT); informational, the sources' GeoKeys decide the CRS.
    public let srs: String?
    public let bands: [Band]
    /// Lowercase hex SHA-256 of the file's bytes as parsed (a build's source identity); nil for
    /// a document parsed from memory. Taken from the bytes read, so it is the digest of what was
    /// parsed even if the file changes afterwards, and the file is not read twice.
    public private(set) var sha256: String?

    /// Reads and parses `path`.
    /// - Throws: ``InputFileError`` naming the VRT (and the element or value) for a file that
    ///   cannot be read, is not the XML subset, or uses a VRT feature tilepack does not support.
    public init(path: String) throws(InputFileError) {
        // Read once; the digest is taken from the same bytes on a second thread while they are
        // read and parsed (FileDigest.readWhole).
        let (document, digest) = try FileDigest.readWhole(path: path, maxBytes: XMLElement.maxBytes, what: "VRT") {
            (bytes) throws(InputFileError) in try VRTDocument(xml: bytes, path: path)
        }
        self = document
        sha256 = digest
    }

    /// Parses VRT XML; relative source names resolve against `path`'s folder.
    public init(xml bytes: [UInt8], path: String) throws(InputFileError) {
        try self.init(
            root: bytes.withUnsafeBytes { raw in Result { () throws(InputFileError) in try Self.root(raw, path: path) }
            }.get(), path: path)
    }

    init(xml bytes: UnsafeRawBufferPointer, path: String) throws(InputFileError) {
        try self.init(root: try Self.root(bytes, path: path), path: path)
    }

    private static func root(_ bytes: UnsafeRawBufferPointer, path: String) throws(InputFileError) -> XMLElement {
        do { return try XMLElement.parse(bytes) } catch { throw InputFileError(path: path, detail: error.description) }
    }

    private init(root: XMLElement, path: String) throws(InputFileError) {
        func fail(_ problem: String) -> InputFileError { InputFileError(path: path, detail: problem) }
        guard root.name == "VRTDataset" else { throw fail("root element <\(root.name)> is not <VRTDataset>") }
        if let sub = root.attributes["subClass"] {
            throw fail("VRTDataset subClass=\"\(sub)\" is not supported (only plain mosaics)")
        }
        self.path = path
        width = try Self.positiveInt(root.attributes["rasterXSize"], "VRTDataset rasterXSize", fail)
        height = try Self.positiveInt(root.attributes["rasterYSize"], "VRTDataset rasterYSize", fail)
        var transform: GeoTransform?
        var srs: String?
        var bands: [Band] = []
        let folder = Self.folder(of: path)
        for child in root.children {
            switch child.name {
            case "SRS": srs = child.trimmedText
            case "Metadata", "OverviewList": continue  // descriptive only
            case "GeoTransform":
                let parts = child.trimmedText.split(whereSeparator: { $0 == "," || $0.isWhitespace }).map { Double($0) }
                guard parts.count == 6, parts.allSatisfy({ $0?.isFinite == true }) else {
                    throw fail(
                        "GeoTransform \(ErrorText.quoted(ErrorText.oneLine(child.trimmedText))) is not 6 numbers")
                }
                transform = GeoTransform(parts.compactMap { $0 })
            case "VRTRasterBand":
                // Equal bands in a row are still bands of their own (GDAL numbers them in order).
                for _ in 0..<child.repeats {
                    // The TIFF reader's band cap holds for virtual rasters too.
                    guard bands.count < TIFFLimits.maxBands else {
                        throw fail(
                            "more than \(TIFFLimits.maxBands) bands; tilepack reads at most \(TIFFLimits.maxBands)")
                    }
                    bands.append(try Self.band(child, expected: bands.count + 1, folder: folder, fail))
                }
            default:
                throw fail("VRT element <\(child.name)> is not supported")
            }
        }
        guard !bands.isEmpty else { throw fail("VRT has no VRTRasterBand") }
        geoTransform = transform
        self.srs = srs
        self.bands = bands
    }

    private static func band(
        _ e: XMLElement, expected: Int, folder: String,
        _ fail: (String) -> InputFileError
    ) throws(InputFileError) -> Band {
        if let sub = e.attributes["subClass"] { throw fail("VRTRasterBand subClass=\"\(sub)\" is not supported") }
        let bandNumber = try positiveInt(e.attributes["band"] ?? "\(expected)", "VRTRasterBand band", fail)
        guard bandNumber == expected else {
            throw fail("VRTRasterBand band=\"\(bandNumber)\" is out of order (expected \(expected))")
        }
        guard let typeName = e.attributes["dataType"], let type = sampleType(gdal: typeName) else {
            throw fail("VRTRasterBand dataType \(ErrorText.quoted(e.attributes["dataType"] ?? "")) is not supported")
        }
        var band = Band(dataType: type, nodata: nil, sources: [])
        // A run of equal elements is one child (XMLElement.repeats), read once: a repeated
        // source paints the same pixels, a repeated description says the same thing.
        for child in e.children {
            switch child.name {
            case "Metadata": continue
            case "Description": band.description = child.trimmedText
            case "ColorInterp": band.colorInterp = child.trimmedText
            case "UnitType": band.unitType = child.trimmedText
            case "NoDataValue": band.nodata = try number(child.trimmedText, "NoDataValue", fail)
            case "SimpleSource", "ComplexSource":
                let s = try source(child, folder: folder, fail)
                // Elements that differ only in what is ignored (SourceProperties) give equal sources.
                if band.sources.last != s { band.sources.append(s) }
            default: throw fail("VRT element <\(child.name)> in VRTRasterBand \(bandNumber) is not supported")
            }
        }
        return band
    }

    private static func source(
        _ e: XMLElement, folder: String, _ fail: (String) -> InputFileError
    ) throws(InputFileError) -> Source {
        let complex = e.name == "ComplexSource"
        var file: String?
        var s = Source(path: "", band: 1, srcRect: nil, dstRect: nil, nodata: nil, isComplex: complex)
        for child in e.children {
            switch child.name {
            case "SourceFilename":
                let name = child.trimmedText
                guard !name.isEmpty else { throw fail("empty SourceFilename") }
                let relative = child.attributes["relativeToVRT"] ?? "0"
                guard relative == "0" || relative == "1" else {
                    throw fail("SourceFilename relativeToVRT=\"\(relative)\" is not 0 or 1")
                }
                file = relative == "1" && !name.hasPrefix("/") ? folder + name : name
            case "SourceBand": s.band = try positiveInt(child.trimmedText, "SourceBand", fail)
            case "SourceProperties", "OpenOptions": continue  // hints GDAL re-reads from the file
            case "SrcRect": s.srcRect = try rect(child, fail)
            case "DstRect": s.dstRect = try rect(child, fail)
            case "NODATA" where complex: s.nodata = try number(child.trimmedText, "NODATA", fail)
            case "ScaleOffset" where complex:
                guard try number(child.trimmedText, "ScaleOffset", fail) == 0 else {
                    throw fail("ComplexSource ScaleOffset other than 0 is not supported")
                }
            case "ScaleRatio" where complex:
                guard try number(child.trimmedText, "ScaleRatio", fail) == 1 else {
                    throw fail("ComplexSource ScaleRatio other than 1 is not supported")
                }
            default: throw fail("VRT element <\(child.name)> in \(e.name) is not supported")
            }
        }
        guard let file else { throw fail("\(e.name) has no SourceFilename") }
        s.path = file
        return s
    }

    private static func rect(_ e: XMLElement, _ fail: (String) -> InputFileError) throws(InputFileError) -> Rect {
        var v: [Double] = []
        for key in ["xOff", "yOff", "xSize", "ySize"] {
            guard let text = e.attributes[key] else { throw fail("\(e.name) has no \(key)") }
            v.append(try number(text, "\(e.name) \(key)", fail))
        }
        guard v[2] > 0, v[3] > 0, v.allSatisfy({ abs($0) < 1e9 }) else {
            throw fail("\(e.name) \(v) has an empty or absurd size")
        }
        return Rect(x: v[0], y: v[1], width: v[2], height: v[3])
    }

    private static func number(
        _ text: String, _ what: String, _ fail: (String) -> InputFileError
    ) throws(InputFileError) -> Double {
        // GDAL writes "nan" (any case) for a NaN nodata; checked without lowercasing every number.
        if text.utf8.count == 3, text.lowercased() == "nan" { return .nan }
        guard let d = Double(text) else {
            throw fail("\(what) \(ErrorText.quoted(ErrorText.oneLine(text))) is not a number")
        }
        return d
    }

    private static func positiveInt(
        _ text: String?, _ what: String, _ fail: (String) -> InputFileError
    ) throws(InputFileError) -> Int {
        // 2^31 is GDAL's own limit on raster sizes.
        guard let text, let n = Int(text), n > 0, n < (1 << 31) else {
            throw fail("\(what) \(ErrorText.quoted(text ?? "")) is not a positive integer")
        }
        return n
    }

    /// GDAL's data type names (GDALGetDataTypeName).
    static func sampleType(gdal name: String) -> SampleType? {
        switch name {
        case "Byte": .uint8
        case "Int8": .int8
        case "UInt16": .uint16
        case "Int16": .int16
        case "UInt32": .uint32
        case "Int32": .int32
        case "UInt64": .uint64
        case "Int64": .int64
        case "Float32": .float32
        case "Float64": .float64
        default: nil
        }
    }

    /// `path`'s folder with a trailing slash ("" for a bare name).
    static func folder(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[...slash])
    }
}
