import TilePackCore
/// TIFF 6.0, BigTIFF, and GeoTIFF tag numbers shared by the reader and the writer.
public enum TIFFTag {
    public static let newSubfileType: UInt16 = 254
    public static let imageWidth: UInt16 = 256
    public static let imageLength: UInt16 = 257
    public static let bitsPerSample: UInt16 = 258
    public static let compression: UInt16 = 259
    public static let photometric: UInt16 = 262
    public static let fillOrder: UInt16 = 266
    public static let imageDescription: UInt16 = 270
    public static let stripOffsets: UInt16 = 273
    public static let orientation: UInt16 = 274
    public static let samplesPerPixel: UInt16 = 277
    public static let rowsPerStrip: UInt16 = 278
    public static let stripByteCounts: UInt16 = 279
    public static let planarConfiguration: UInt16 = 284
    public static let software: UInt16 = 305
    public static let predictor: UInt16 = 317
    public static let colorMap: UInt16 = 320
    public static let tileWidth: UInt16 = 322
    public static let tileLength: UInt16 = 323
    public static let tileOffsets: UInt16 = 324
    public static let tileByteCounts: UInt16 = 325
    public static let subIFDs: UInt16 = 330
    public static let extraSamples: UInt16 = 338
    public static let sampleFormat: UInt16 = 339
    public static let jpegTables: UInt16 = 347
    public static let yCbCrSubSampling: UInt16 = 530
    public static let modelPixelScale: UInt16 = 33550
    public static let modelTiepoint: UInt16 = 33922
    public static let modelTransformation: UInt16 = 34264
    public static let geoKeyDirectory: UInt16 = 34735
    public static let geoDoubleParams: UInt16 = 34736
    public static let geoAsciiParams: UInt16 = 34737
    public static let gdalMetadata: UInt16 = 42112
    public static let gdalNoData: UInt16 = 42113
}

/// TIFF field types (classic TIFF 1–12, BigTIFF 16–18) with their byte sizes.
public enum TIFFFieldType: UInt16, Sendable {
    case byte = 1, ascii = 2, short = 3, long = 4, rational = 5
    case sbyte = 6, undefined = 7, sshort = 8, slong = 9, srational = 10
    case float = 11, double = 12, ifd = 13
    case long8 = 16, slong8 = 17, ifd8 = 18

    /// Size in bytes of one value of this type.
    public var size: Int {
        switch self {
        case .byte, .ascii, .sbyte, .undefined: 1
        case .short, .sshort: 2
        case .long, .slong, .float, .ifd: 4
        case .rational, .srational, .double, .long8, .slong8, .ifd8: 8
        }
    }
}

/// Compression codes a TIFF may name; the reader supports a subset and declines the rest by name.
public enum TIFFCompression {
    public static let none: UInt16 = 1
    public static let lzw: UInt16 = 5
    public static let oldJPEG: UInt16 = 6
    public static let jpeg: UInt16 = 7
    public static let deflate: UInt16 = 8
    public static let packBits: UInt16 = 32773
    public static let deflateLegacy: UInt16 = 32946
    public static let lerc: UInt16 = 34887
    public static let lzma: UInt16 = 34925
    public static let zstd: UInt16 = 50000
    public static let webp: UInt16 = 50001
    public static let jpegXL: UInt16 = 50002

    /// A human name for any code (the manifest's spelling for supported ones).
    public static func name(_ code: UInt16) -> String {
        switch code {
        case 1: "none"
        case 2: "ccittrle"
        case 3: "ccittfax3"
        case 4: "ccittfax4"
        case 5: "lzw"
        case 6: "ojpeg"
        case 7: "jpeg"
        case 8: "deflate"
        case 32773: "packbits"
        case 32946: "deflate(32946)"
        case 34887: "lerc"
        case 34925: "lzma"
        case 50000: "zstd"
        case 50001: "webp"
        case 50002: "jpegxl"
        default: "unknown(\(code))"
        }
    }
}
