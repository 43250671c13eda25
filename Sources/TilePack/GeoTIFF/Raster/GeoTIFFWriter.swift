import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

#if _endian(big)
#error("GeoTIFFWriter writes sample bytes as they lie in memory and assumes a little-endian host")
#endif

/// Writes tiled, Deflate-compressed, little-endian GeoTIFFs (or BigTIFFs) block by block.
///
/// The caller describes the image in ``Options`` and supplies the pixels one block
/// (``Options/blockWidth`` × ``Options/blockHeight`` pixels, samples interleaved, each sample
/// little-endian as it lies in memory) at a time; blocks are requested in row-major order.
/// Each block gets its predictor, is deflated and written at once, so memory is bounded by
/// a small batch of blocks (a few per core) plus 16 bytes of offset/count per block,
/// whatever the image size. The IFD goes at the end of the file and the header is patched
/// to point at it; classic TIFF is written unless the file passes 4 GiB (then BigTIFF) or
/// BigTIFF is demanded. Everything goes to `path.tmp-PID`, renamed onto `path` on success, so a
/// failure never leaves a half file under the target name.
///
/// ```swift
/// var options = GeoTIFFWriter.Options(width: 1000, height: 700, samplesPerPixel: 1, sampleType: .int16)
/// options.geoTransform = GeoTransform([323_910, 30, 0, 5_092_200, 0, -30])
/// options.noData = -32768
/// let writer = try GeoTIFFWriter(path: "dem.tif", options: options)
/// try writer.write { blockX, blockY, block in /* fill block (pre-zeroed) */ }
/// ```
///
/// Cost: one deflate per block (compressed in parallel over the cores); the pixels of edge
/// blocks beyond the image are whatever the provider leaves (zero unless it writes them).
public struct GeoTIFFWriter: Sendable {
    /// TIFF Predictor tag values the writer produces.
    public enum Predictor: UInt16, Sendable {
        /// No prediction (1).
        case none = 1
        /// Horizontal differencing of integer samples, per sample of a pixel (2).
        case horizontal = 2
        /// Floating-point predictor (3): bytes of each row split into planes, most significant
        /// plane first, then byte-wise differencing, as libtiff and GDAL write it.
        case floatingPoint = 3
    }

    /// PhotometricInterpretation values the writer produces.
    public enum Photometric: UInt16, Sendable {
        case minIsBlack = 1
        case rgb = 2
    }

    /// Which TIFF flavour to write.
    public enum Format: Sendable {
        /// Classic TIFF unless the file passes 4 GiB, then BigTIFF (decided exactly at the end).
        case automatic
        /// Classic TIFF; writing fails if the file passes 4 GiB.
        case classic
        /// BigTIFF whatever the size.
        case bigTIFF
    }

    /// Everything that describes the image to write.
    public struct Options: Sendable {
        public var width: Int
        public var height: Int
        public var samplesPerPixel: Int
        public var sampleType: SampleType
        public var photometric: Photometric = .minIsBlack
        /// The last sample is unassociated alpha (ExtraSamples = 2).
        public var alpha: Bool = false
        /// Tile size in pixels; TIFF requires multiples of 16.
        public var blockWidth: Int = 256
        public var blockHeight: Int = 256
        /// Defaults to `.floatingPoint` for float samples and `.horizontal` for integers.
        public var predictor: Predictor
        /// zlib level 1…9 (6 is zlib's default balance).
        public var compressionLevel: Int32 = 6
        /// Pixel-corner geotransform; north-up ones become ModelPixelScale + ModelTiepoint,
        /// others ModelTransformation. Nil writes no georeferencing tags.
        public var geoTransform: GeoTransform?
        /// Written as GeoKeyDirectory/GeoDoubleParams/GeoAsciiParams, keys sorted by id.
        public var geoKeys: GeoKeyDirectory?
        /// Written as the GDAL_NODATA ASCII tag.
        public var noData: Double?
        /// Written as the GDAL_METADATA ASCII tag (band units, descriptions).
        public var gdalMetadata: GDALMetadata?
        public var format: Format = .automatic
        /// The Software tag; nil omits it.
        public var software: String? = "tilepack"
        /// Largest file classic TIFF may produce (32-bit offsets); lowered only by tests, to
        /// exercise the automatic switch to BigTIFF without writing 4 GiB.
        var classicLimit: UInt64 = UInt64(UInt32.max)

        public init(width: Int, height: Int, samplesPerPixel: Int, sampleType: SampleType) {
            self.width = width
            self.height = height
            self.samplesPerPixel = samplesPerPixel
            self.sampleType = sampleType
            self.predictor = sampleType.isFloat ? .floatingPoint : .horizontal
        }
    }

    /// What a finished write produced.
    public struct Summary: Sendable, Equatable {
        public var fileSize: UInt64
        public var isBigTIFF: Bool
        public var blockCount: Int
        /// Sum of the compressed block sizes.
        public var compressedBytes: UInt64
    }

    public let path: String
    public let options: Options

    /// Number of block columns and rows.
    public let blocksAcross: Int
    public let blocksDown: Int
    /// Bytes of one uncompressed block: blockWidth × blockHeight × samplesPerPixel × sample width.
    public let blockByteCount: Int

    /// Checks the options; nothing touches the disk until ``write(blockProvider:)``.
    public init(path: String, options: Options) throws(TIFFWriteError) {
        self.path = path
        self.options = options
        func invalid(_ why: String) -> TIFFWriteError { TIFFWriteError.invalidOptions(path: path, why) }
        let o = options
        guard o.width > 0, o.height > 0, o.width <= Int(UInt32.max), o.height <= Int(UInt32.max) else {
            throw invalid("image size \(o.width)×\(o.height) must be 1…\(UInt32.max) on each side")
        }
        guard o.samplesPerPixel >= 1, o.samplesPerPixel <= 4096 else {
            throw invalid("\(o.samplesPerPixel) samples per pixel (1…4096 supported)")
        }
        guard o.blockWidth > 0, o.blockHeight > 0, o.blockWidth % 16 == 0, o.blockHeight % 16 == 0,
            o.blockWidth <= 65536, o.blockHeight <= 65536
        else {
            throw invalid("block size \(o.blockWidth)×\(o.blockHeight) must be positive multiples of 16")
        }
        let colourSamples = o.photometric == .rgb ? 3 : 1
        guard o.samplesPerPixel >= colourSamples else {
            throw invalid("RGB needs at least 3 samples per pixel, got \(o.samplesPerPixel)")
        }
        if o.alpha && o.samplesPerPixel == colourSamples {
            throw invalid("alpha needs a sample beyond the \(colourSamples) colour sample(s)")
        }
        switch o.predictor {
        case .horizontal where o.sampleType.isFloat:
            throw invalid("predictor 2 (horizontal) is for integer samples; use 3 for \(o.sampleType)")
        case .floatingPoint where !o.sampleType.isFloat:
            throw invalid("predictor 3 (floating point) is for float samples, not \(o.sampleType)")
        default: break
        }
        guard (1...9).contains(o.compressionLevel) else {
            throw invalid("compression level \(o.compressionLevel) must be 1…9")
        }
        if let noData = o.noData, !noData.isNaN, !o.sampleType.canRepresent(noData) {
            throw invalid("nodata \(noData) is not representable as \(o.sampleType)")
        }
        if let keys = o.geoKeys {
            for (id, value) in keys.entries {
                switch value {
                case .shorts(let v) where v.isEmpty:
                    throw invalid("GeoKey \(GeoKey.name(id)) has no values")
                case .doubles(let v) where v.isEmpty:
                    throw invalid("GeoKey \(GeoKey.name(id)) has no values")
                case .ascii(let s) where s.contains("|"):
                    throw invalid("GeoKey \(GeoKey.name(id)) text contains '|', the GeoTIFF separator")
                default: break
                }
            }
        }
        let (rowBytes, overflowA) = o.blockWidth.multipliedReportingOverflow(
            by: o.samplesPerPixel * o.sampleType.byteWidth)
        let (blockBytes, overflowB) = rowBytes.multipliedReportingOverflow(by: o.blockHeight)
        guard !overflowA, !overflowB, blockBytes <= Int(Int32.max) else {
            throw invalid("one block of \(o.blockWidth)×\(o.blockHeight)×\(o.samplesPerPixel) samples is too large")
        }
        blockByteCount = blockBytes
        blocksAcross = (o.width + o.blockWidth - 1) / o.blockWidth
        blocksDown = (o.height + o.blockHeight - 1) / o.blockHeight
        guard blocksAcross.multipliedReportingOverflow(by: blocksDown).partialValue <= Int(UInt32.max) else {
            throw invalid("too many blocks")
        }
    }

    /// The image pixels a block covers (the block itself may extend past the image edge).
    public func blockRegion(blockX: Int, blockY: Int) -> (x: Int, y: Int, width: Int, height: Int) {
        let x = blockX * options.blockWidth, y = blockY * options.blockHeight
        return (x, y, min(options.blockWidth, options.width - x), min(options.blockHeight, options.height - y))
    }

    /// Writes the file, asking `blockProvider` for each block in row-major order on the
    /// calling thread; predictors and deflate then run in parallel over a batch of blocks.
    ///
    /// The provider receives a zero-filled buffer of ``blockByteCount`` bytes and must leave
    /// it that size. Errors it throws abort the write (the temporary file is removed) and
    /// are rethrown as they are.
    @discardableResult
    public func write(
        blockProvider: (_ blockX: Int, _ blockY: Int, _ block: inout [UInt8]) throws -> Void
    ) throws -> Summary {
        try writeFile { batch in
            var raws: [[UInt8]] = []
            raws.reserveCapacity(batch.count)
            for index in batch {
                var block = [UInt8](repeating: 0, count: blockByteCount)
                try blockProvider(index % blocksAcross, index / blocksAcross, &block)
                precondition(block.count == blockByteCount, "block provider changed the block size")
                raws.append(block)
            }
            let first = batch.lowerBound, filled = raws
            return try parallelMap(batch) { index in
                var block = filled[index - first]
                return try encode(&block)
            }
        }
    }

    /// Like ``write(blockProvider:)``, but the provider itself runs in parallel (blocks of a
    /// batch are requested concurrently, in no particular order); use it when producing a
    /// block costs as much as compressing it, as for synthetic terrain.
    @discardableResult
    public func writeConcurrently(
        blockProvider: @Sendable (_ blockX: Int, _ blockY: Int, _ block: inout [UInt8]) throws -> Void
    ) throws -> Summary {
        try writeFile { batch in
            try parallelMap(batch) { index in
                var block = [UInt8](repeating: 0, count: blockByteCount)
                try blockProvider(index % blocksAcross, index / blocksAcross, &block)
                precondition(block.count == blockByteCount, "block provider changed the block size")
                return try encode(&block)
            }
        }
    }

    // MARK: - Encoding one block

    /// Applies the predictor in place and deflates.
    func encode(_ block: inout [UInt8]) throws(TIFFWriteError) -> [UInt8] {
        let o = options
        block.withUnsafeMutableBytes { raw in
            switch o.predictor {
            case .none: break
            case .horizontal:
                TIFFPredictor.applyHorizontal(
                    raw, width: o.blockWidth, rows: o.blockHeight,
                    samplesPerPixel: o.samplesPerPixel, bytesPerSample: o.sampleType.byteWidth)
            case .floatingPoint:
                TIFFPredictor.applyFloatingPoint(
                    raw, width: o.blockWidth, rows: o.blockHeight,
                    samplesPerPixel: o.samplesPerPixel, bytesPerSample: o.sampleType.byteWidth)
            }
        }
        do {
            return try Zlib.deflate(block, level: o.compressionLevel)
        } catch {
            throw TIFFWriteError.compressionFailed(path: path, error)
        }
    }

    // MARK: - The file

    /// Runs `encodeBatch` over the blocks in batches, writes each compressed block as it
    /// comes, then the IFD and the header, then renames into place.
    private func writeFile(encodeBatch: (Range<Int>) throws -> [[UInt8]]) throws -> Summary {
        let file = try TIFFOutputFile(path: path)
        var finished = false
        defer { if !finished { file.abandon() } }

        let blockCount = blocksAcross * blocksDown
        var offsets = [UInt64](repeating: 0, count: blockCount)
        var counts = [UInt64](repeating: 0, count: blockCount)
        // Data starts after 16 bytes, room for either header; classic files leave 8 unused.
        try file.write([UInt8](repeating: 0, count: 16))
        let batchSize = max(1, min(blockCount, 4 * ProcessorInfo.activeCount))
        var start = 0
        while start < blockCount {
            let batch = start..<min(blockCount, start + batchSize)
            let compressed = try encodeBatch(batch)
            for (k, block) in compressed.enumerated() {
                offsets[batch.lowerBound + k] = file.position
                counts[batch.lowerBound + k] = UInt64(block.count)
                try file.write(block)
            }
            start = batch.upperBound
        }
        let compressedBytes = counts.reduce(0, +)
        if file.position % 2 == 1 { try file.write([0]) }  // IFDs start on a word boundary

        let ifdOffset = file.position
        var entries = ifdEntries()
        let classicEnd =
            ifdOffset + UInt64(IFDEntry.serializedSize(entries + blockEntries(offsets, counts, big: false), big: false))
        let big: Bool
        switch options.format {
        case .bigTIFF: big = true
        case .automatic: big = classicEnd > options.classicLimit
        case .classic:
            guard classicEnd <= options.classicLimit else {
                throw TIFFWriteError.tooLargeForClassicTIFF(path: path, bytes: classicEnd)
            }
            big = false
        }
        entries += blockEntries(offsets, counts, big: big)
        let ifd = IFDEntry.serialize(entries, big: big, at: ifdOffset)
        try file.write(ifd)

        var header = LittleEndianBytes(capacity: 16)
        header.append(UInt8(ascii: "I"))
        header.append(UInt8(ascii: "I"))
        if big {
            header.append(UInt16(43))
            header.append(UInt16(8))  // bytes per offset
            header.append(UInt16(0))
            header.append(ifdOffset)
        } else {
            header.append(UInt16(42))
            header.append(UInt32(ifdOffset))
        }
        try file.write(header.bytes, at: 0)
        let size = file.position
        try file.finish()
        finished = true
        return Summary(fileSize: size, isBigTIFF: big, blockCount: blockCount, compressedBytes: compressedBytes)
    }

    /// Maps `range` through `body` on all cores, results in range order; the first error wins.
    private func parallelMap(_ range: Range<Int>, _ body: @Sendable (Int) throws -> [UInt8]) throws -> [[UInt8]] {
        let first = range.lowerBound
        return try TilePackCore.parallelMap(count: range.count, workers: ProcessorInfo.activeCount) { k, _ in
            try body(first + k)
        }
    }
}
