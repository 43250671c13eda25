import TilePackCore
/// One image (IFD) of a TIFF as the reader understands it: dimensions, sample layout,
/// compression, block grid and GeoTIFF georeferencing. Metadata only; pixels come from
/// ``TIFFFile/read(window:)``.
///
/// Values are the file's own (raw photometric, palette indices, no nodata masking); the
/// reader never converts colour spaces.
public struct TIFFImage: Sendable {
    /// PlanarConfiguration: samples of a pixel together (1) or each band in its own plane (2).
    public enum PlanarConfig: Int, Sendable, Equatable {
        case contig = 1
        case separate = 2
        /// The manifest's spelling.
        public var name: String { self == .contig ? "contig" : "separate" }
    }

    /// Index of this image's IFD in the file's IFD chain.
    public let ifdIndex: Int
    public let width: Int
    public let height: Int
    /// SamplesPerPixel, extra samples included.
    public let bands: Int
    /// The in-memory sample type (24-bit integers widened to 32).
    public let sampleType: SampleType
    /// BitsPerSample as stored in the file (8, 16, 24, 32 or 64).
    public let bitsPerSample: Int
    /// SampleFormat code (1 unsigned, 2 signed, 3 IEEE float).
    public let sampleFormat: Int
    /// Compression code (see ``TIFFCompression``).
    public let compression: UInt16
    /// Predictor code: 1 none, 2 horizontal differencing, 3 floating point.
    public let predictor: Int
    public let planarConfig: PlanarConfig
    /// PhotometricInterpretation code (0 min-is-white, 1 min-is-black, 2 RGB, 3 palette, …).
    public let photometric: Int
    /// True when the image is stored in tiles, false for strips.
    public let isTiled: Bool
    /// Tile size, or (image width, RowsPerStrip) for strips.
    public let blockWidth: Int
    public let blockHeight: Int
    /// ExtraSamples codes (0 unspecified, 1 associated alpha, 2 unassociated alpha).
    public let extraSamples: [Int]
    /// The palette (3 × 2^bits values: all reds, then greens, then blues), for palette images.
    public let colorMap: [UInt16]?
    /// NewSubfileType bits (1 reduced resolution, 2 page, 4 transparency mask).
    public let subfileType: UInt32
    /// FillOrder 2: bits within each byte are stored least significant first.
    public let fillOrderReversed: Bool

    /// The GeoKey directory, when the file has one.
    public let geoKeys: GeoKeyDirectory?
    /// Pixel-corner geotransform in GDAL order (PixelIsPoint already shifted by half a pixel).
    public let geoTransform: GeoTransform?
    /// GTRasterTypeGeoKey, when the file states it.
    public let rasterType: RasterType?
    /// GDAL_NODATA, when present and representable in ``sampleType``.
    public let nodata: Double?
    /// GDAL_METADATA (tag 42112): band units and descriptions, when present.
    public let gdalMetadata: GDALMetadata?
    /// EPSG code from ProjectedCSType or GeographicType (nil when absent or user-defined).
    public let epsg: Int?
    /// The raw georeferencing tags.
    public let modelPixelScale: [Double]?
    public let modelTiepoints: [Double]?
    public let modelTransformation: [Double]?

    /// Where each block's compressed bytes are (planes one after another for planar 2).
    let blockOffsets: [UInt64]
    let blockByteCounts: [UInt64]

    /// The manifest's name of the compression ("none", "lzw", "deflate", …).
    public var compressionName: String { TIFFCompression.name(compression) }

    /// Photometric interpretation as tifffile/the manifest spell it.
    public var photometricName: String { Self.photometricName(photometric) }

    /// Number of block columns and rows in one plane.
    public var blocksAcross: Int { (width + blockWidth - 1) / blockWidth }
    public var blocksDown: Int { (height + blockHeight - 1) / blockHeight }
    /// Planes stored separately (1 for contig, `bands` for separate).
    var planes: Int { planarConfig == .contig ? 1 : bands }
    /// Samples per pixel inside one block.
    var samplesPerBlockPixel: Int { planarConfig == .contig ? bands : 1 }
    /// Bytes per sample as stored in the file.
    var fileSampleBytes: Int { bitsPerSample / 8 }
    /// Bytes of one decoded block in memory (all the samples a block stores, widened to
    /// ``sampleType``): what a read holds per block it decodes. At most ``TIFFLimits/maxBlockBytes``
    /// (checked when the image was parsed, so the products cannot overflow).
    public var decodedBlockBytes: Int { blockWidth * blockHeight * samplesPerBlockPixel * sampleType.byteWidth }
    /// True for reduced-resolution images (overviews).
    public var isReducedResolution: Bool { subfileType & 1 != 0 }
    /// True for transparency masks.
    public var isMask: Bool { subfileType & 4 != 0 }

    /// Bytes the file stores for the block at (`column`, `row`), every plane's summed: how
    /// much detail the block holds once compressed (flat areas compress small), read from the
    /// byte-count tags without touching the data. The counts are the file's claims, not
    /// checked against its size; a sum that overflows saturates.
    /// - Precondition: `column` in `0..<blocksAcross`, `row` in `0..<blocksDown`.
    /// - Cost: O(planes).
    public func storedByteCount(blockColumn column: Int, blockRow row: Int) -> UInt64 {
        precondition((0..<blocksAcross).contains(column) && (0..<blocksDown).contains(row), "block outside the image")
        let perPlane = blocksAcross * blocksDown
        var total: UInt64 = 0
        for plane in 0..<planes {
            let (sum, overflow) = total.addingReportingOverflow(
                blockByteCounts[plane * perPlane + row * blocksAcross + column])
            total = overflow ? .max : sum
        }
        return total
    }

    /// Rows actually stored in block row `row` (strips: the last strip is short; tiles are always full).
    func storedRows(blockRow row: Int) -> Int {
        isTiled ? blockHeight : min(blockHeight, height - row * blockHeight)
    }

    static func photometricName(_ code: Int) -> String {
        switch code {
        case 0: "MINISWHITE"
        case 1: "MINISBLACK"
        case 2: "RGB"
        case 3: "PALETTE"
        case 4: "MASK"
        case 5: "SEPARATED"
        case 6: "YCBCR"
        case 8: "CIELAB"
        case 9: "ICCLAB"
        case 10: "ITULAB"
        case 32844: "LOGL"
        case 32845: "LOGLUV"
        default: "\(code)"
        }
    }
}

extension TIFFImage {
    /// Largest decoded block accepted (bytes): ``TIFFLimits/maxBlockBytes``.
    static let maxBlockBytes = TIFFLimits.maxBlockBytes

    /// Builds and validates an image from its IFD.
    /// - Throws: `.unsupported` for features the reader declines, `.badTag`/`.absurdDimensions`
    ///   for inconsistent tags.
    /// - Cost: reads the block offset/byte count arrays and the GeoTIFF tags.
    static func parse(_ dir: TIFFDirectory, index: Int, reader: TIFFStructureReader) throws(TIFFError) -> TIFFImage {
        let path = reader.path
        func bad(_ detail: String) -> TIFFError {
            TIFFError(path: path, code: .badTag, detail: "IFD \(index): \(detail)")
        }
        func absurd(_ detail: String) -> TIFFError {
            TIFFError(path: path, code: .absurdDimensions, detail: "IFD \(index): \(detail)")
        }
        guard let w = try reader.scalar(dir, TIFFTag.imageWidth),
            let h = try reader.scalar(dir, TIFFTag.imageLength)
        else {
            throw bad("missing ImageWidth or ImageLength")
        }
        guard w > 0, h > 0, w <= UInt64(Int32.max), h <= UInt64(Int32.max) else {
            throw absurd("image size \(w)x\(h) is empty or absurd")
        }
        let width = Int(w), height = Int(h)
        let spp64 = try reader.scalar(dir, TIFFTag.samplesPerPixel, or: 1)
        guard spp64 >= 1 else { throw absurd("SamplesPerPixel is \(spp64)") }
        // Checked before anything is sized by it: every per-band buffer downstream scales with it.
        guard spp64 <= UInt64(TIFFLimits.maxBands), let bands = Int(exactly: spp64) else {
            throw TIFFError(
                path: path, code: .unsupported,
                detail: "\(spp64) bands; tilepack reads at most \(TIFFLimits.maxBands)")
        }

        let compression64 = try reader.scalar(dir, TIFFTag.compression, or: 1)
        // Compression is a SHORT; a wider value must not wrap onto a supported code.
        let compression = UInt16(exactly: compression64) ?? UInt16.max
        switch compression {
        case TIFFCompression.none, TIFFCompression.lzw, TIFFCompression.deflate,
            TIFFCompression.deflateLegacy, TIFFCompression.packBits:
            break
        default:
            let label: String =
                switch compression {
                case 2, 3, 4: "CCITT bilevel compression"
                case 6: "old-style JPEG compression"
                case 7: "JPEG compression"
                case 34887: "LERC compression"
                case 34925: "LZMA compression"
                case 50000: "ZSTD compression"
                case 50001: "WebP compression"
                case 50002: "JPEG XL compression"
                default: "compression"
                }
            throw TIFFError.unsupported(path, label, code: Int(clamping: compression64))
        }

        let bitsList = try reader.unsigned(dir, TIFFTag.bitsPerSample) ?? [1]
        guard let bits64 = bitsList.first else { throw bad("BitsPerSample has no values") }
        guard bitsList.allSatisfy({ $0 == bits64 }) else {
            throw TIFFError.unsupported(
                path, "mixed BitsPerSample \(bitsList.map(String.init).joined(separator: ","))",
                code: Int(clamping: bitsList.max() ?? bits64))
        }
        let formatList = try reader.unsigned(dir, TIFFTag.sampleFormat) ?? [1]
        let format64 = formatList.first ?? 1
        guard formatList.allSatisfy({ $0 == format64 }) else {
            throw TIFFError.unsupported(path, "mixed SampleFormat", code: Int(clamping: format64))
        }
        let bits = Int(clamping: bits64)
        // SampleFormat 4 (void) is read as unsigned, as GDAL does.
        let format = format64 == 4 ? 1 : Int(clamping: format64)
        let sampleType: SampleType
        switch (format, bits) {
        case (1, 8): sampleType = .uint8
        case (1, 16): sampleType = .uint16
        case (1, 24), (1, 32): sampleType = .uint32
        case (1, 64): sampleType = .uint64
        case (2, 8): sampleType = .int8
        case (2, 16): sampleType = .int16
        case (2, 24), (2, 32): sampleType = .int32
        case (2, 64): sampleType = .int64
        case (3, 32): sampleType = .float32
        case (3, 64): sampleType = .float64
        case (3, 16): throw TIFFError.unsupported(path, "16-bit floating point samples", code: 16)
        case (3, 24): throw TIFFError.unsupported(path, "24-bit floating point samples", code: 24)
        case (1, _), (2, _), (3, _):
            let what = bits == 1 ? "1-bit (bilevel) samples" : "\(bits)-bit samples"
            throw TIFFError.unsupported(path, what, code: bits)
        default:
            throw TIFFError.unsupported(path, "SampleFormat", code: format)
        }

        let photometric = Int(clamping: try reader.scalar(dir, TIFFTag.photometric, or: bands >= 3 ? 2 : 1))
        switch photometric {
        case 0, 1, 2, 3, 5, 8, 9, 10: break
        case 6: throw TIFFError.unsupported(path, "YCbCr photometric interpretation (subsampled colour)", code: 6)
        case 4: throw TIFFError.unsupported(path, "transparency mask as main image", code: 4)
        default:
            throw TIFFError.unsupported(
                path, "photometric interpretation \(photometricName(photometric))", code: photometric)
        }

        let planar64 = try reader.scalar(dir, TIFFTag.planarConfiguration, or: 1)
        guard let planarConfig = PlanarConfig(rawValue: Int(clamping: planar64)) else {
            throw bad("PlanarConfiguration is \(planar64)")
        }
        let predictor = Int(clamping: try reader.scalar(dir, TIFFTag.predictor, or: 1))
        switch predictor {
        case 1: break
        case 2 where bits != 24: break
        case 3 where bits == 32 || bits == 64: break
        case 2, 3: throw TIFFError.unsupported(path, "predictor \(predictor) with \(bits)-bit samples", code: predictor)
        default: throw TIFFError.unsupported(path, "predictor", code: predictor)
        }
        let fillOrder = try reader.scalar(dir, TIFFTag.fillOrder, or: 1)
        guard fillOrder == 1 || fillOrder == 2 else { throw bad("FillOrder is \(fillOrder)") }

        // Block grid.
        let isTiled = dir[TIFFTag.tileWidth] != nil || dir[TIFFTag.tileOffsets] != nil
        let blockWidth: Int, blockHeight: Int
        if isTiled {
            guard let tw = try reader.scalar(dir, TIFFTag.tileWidth),
                let th = try reader.scalar(dir, TIFFTag.tileLength)
            else {
                throw bad("tiled image without TileWidth/TileLength")
            }
            guard tw > 0, th > 0, tw <= 1 << 20, th <= 1 << 20 else {
                throw absurd("tile size \(tw)x\(th)")
            }
            blockWidth = Int(tw); blockHeight = Int(th)
        } else {
            let rps = try reader.scalar(dir, TIFFTag.rowsPerStrip, or: UInt64(height))
            blockWidth = width
            blockHeight = rps == 0 || rps > UInt64(height) ? height : Int(rps)
        }
        let perPixel = planarConfig == .contig ? bands : 1
        let (pixels, o1) = blockWidth.multipliedReportingOverflow(by: blockHeight)
        let (samples, o2) = pixels.multipliedReportingOverflow(by: perPixel)
        let (blockBytes, o3) = samples.multipliedReportingOverflow(by: max(sampleType.byteWidth, bits / 8))
        guard !o1, !o2, !o3, blockBytes <= maxBlockBytes else {
            throw absurd(
                "a \(blockWidth)x\(blockHeight) block of \(perPixel) samples would exceed \(maxBlockBytes) bytes")
        }
        let across = (width + blockWidth - 1) / blockWidth
        let down = (height + blockHeight - 1) / blockHeight
        let (perPlane, o4) = across.multipliedReportingOverflow(by: down)
        let (blockCount, o5) = perPlane.multipliedReportingOverflow(by: planarConfig == .contig ? 1 : bands)
        guard !o4, !o5, blockCount <= TIFFLimits.maxBlocks else {
            throw absurd(
                """
                \(across)×\(down) blocks\(planarConfig == .contig ? "" : " × \(bands) planes") exceed the \
                \(TIFFLimits.maxBlocks) tilepack reads
                """
            )
        }

        // libtiff stores strip and tile offsets in one field and accepts either tag for either
        // layout (old files write StripOffsets with TileWidth); so do we.
        let offsetsTag =
            dir[isTiled ? TIFFTag.tileOffsets : TIFFTag.stripOffsets] != nil
            ? (isTiled ? TIFFTag.tileOffsets : TIFFTag.stripOffsets)
            : (isTiled ? TIFFTag.stripOffsets : TIFFTag.tileOffsets)
        let countsTag =
            dir[isTiled ? TIFFTag.tileByteCounts : TIFFTag.stripByteCounts] != nil
            ? (isTiled ? TIFFTag.tileByteCounts : TIFFTag.stripByteCounts)
            : (isTiled ? TIFFTag.stripByteCounts : TIFFTag.tileByteCounts)
        let kindName = isTiled ? "Tile" : "Strip"
        guard let offsetsEntry = dir[offsetsTag] else { throw bad("missing \(kindName)Offsets") }
        guard offsetsEntry.count >= UInt64(blockCount) else {
            throw bad("\(kindName)Offsets has \(offsetsEntry.count) entries, the image needs \(blockCount)")
        }
        guard let offsets = try reader.unsigned(dir, offsetsTag) else { throw bad("missing \(kindName)Offsets") }
        var counts: [UInt64]
        if let c = try reader.unsigned(dir, countsTag) {
            guard c.count >= blockCount else {
                throw bad("\(kindName)ByteCounts has \(c.count) entries, the image needs \(blockCount)")
            }
            counts = c
        } else if compression == TIFFCompression.none {
            // libtiff estimates missing byte counts of uncompressed images from the block size.
            counts = (0..<blockCount).map { i in
                let row = (i % perPlane) / across
                let rows = isTiled ? blockHeight : min(blockHeight, height - row * blockHeight)
                return UInt64(blockWidth * rows * perPixel * bits / 8)
            }
        } else {
            throw bad("missing \(kindName)ByteCounts")
        }

        let extraSamples = (try reader.unsigned(dir, TIFFTag.extraSamples) ?? []).map { Int(clamping: $0) }
        var colorMap: [UInt16]?
        if photometric == 3 {
            guard let map = try reader.unsigned(dir, TIFFTag.colorMap) else {
                throw bad("palette image without ColorMap")
            }
            guard bits <= 16, map.count >= 3 << bits else {
                throw bad("ColorMap has \(map.count) entries, \(bits)-bit palette needs \(bits <= 16 ? 3 << bits : 0)")
            }
            colorMap = map.prefix(3 << bits).map { UInt16(truncatingIfNeeded: $0) }
        }
        let subfileType = UInt32(truncatingIfNeeded: try reader.scalar(dir, TIFFTag.newSubfileType, or: 0))

        let geo = try GeoTIFFTags.parse(dir, reader: reader, sampleType: sampleType)

        return TIFFImage(
            ifdIndex: index, width: width, height: height, bands: bands, sampleType: sampleType,
            bitsPerSample: bits, sampleFormat: format, compression: compression, predictor: predictor,
            planarConfig: planarConfig, photometric: photometric, isTiled: isTiled,
            blockWidth: blockWidth, blockHeight: blockHeight, extraSamples: extraSamples,
            colorMap: colorMap, subfileType: subfileType, fillOrderReversed: fillOrder == 2,
            geoKeys: geo.geoKeys, geoTransform: geo.geoTransform, rasterType: geo.rasterType,
            nodata: geo.nodata, gdalMetadata: geo.gdalMetadata, epsg: geo.epsg, modelPixelScale: geo.pixelScale,
            modelTiepoints: geo.tiepoints, modelTransformation: geo.transformation,
            blockOffsets: Array(offsets.prefix(blockCount)), blockByteCounts: Array(counts.prefix(blockCount)))
    }
}
