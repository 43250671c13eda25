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

/// Why a GeoTIFF could not be written; `description` names the target path.
public struct TIFFWriteError: TilePackError, Equatable {
    public enum Reason: Sendable, Equatable {
        /// The options describe an image TIFF cannot hold or the writer does not produce.
        case invalidOptions(String)
        /// The temporary file next to the target could not be created (errno).
        case cannotCreate(errno: Int32)
        /// A write to the temporary file failed (errno), e.g. a full disk.
        case writeFailed(errno: Int32)
        /// The finished temporary file could not be renamed onto the target (errno).
        case cannotRename(errno: Int32)
        /// zlib refused to compress a block.
        case compressionFailed(String)
        /// The image passed 4 GiB but classic TIFF was demanded.
        case tooLargeForClassicTIFF(bytes: UInt64)
    }

    /// The file the caller asked for (not the temporary one).
    public var path: String
    public var reason: Reason

    public init(path: String, reason: Reason) {
        self.path = path
        self.reason = reason
    }

    public var description: String {
        switch reason {
        case .invalidOptions(let why): "\(path): cannot write GeoTIFF: \(why)"
        case .cannotCreate(let e): "\(path): cannot create its temporary file: \(Self.message(e))"
        case .writeFailed(let e): "\(path): write failed: \(Self.message(e))"
        case .cannotRename(let e): "\(path): cannot rename its temporary file into place: \(Self.message(e))"
        case .compressionFailed(let why): "\(path): deflate failed: \(why)"
        case .tooLargeForClassicTIFF(let n): "\(path): \(n) bytes do not fit classic TIFF (4 GiB); allow BigTIFF"
        }
    }

    /// Bad options are the caller's; the rest are the environment's fault.
    public var category: TilePackErrorCategory {
        if case .invalidOptions = reason { return .invalidArgument }
        return .environment
    }

    private static func message(_ code: Int32) -> String {
        guard let c = strerror(code) else { return "errno \(code)" }
        return String(cString: c)
    }
}

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
        func invalid(_ why: String) -> TIFFWriteError { TIFFWriteError(path: path, reason: .invalidOptions(why)) }
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
            throw TIFFWriteError(path: path, reason: .compressionFailed(error.message))
        }
    }

    // MARK: - The file

    /// Runs `encodeBatch` over the blocks in batches, writes each compressed block as it
    /// comes, then the IFD and the header, then renames into place.
    private func writeFile(encodeBatch: (Range<Int>) throws -> [[UInt8]]) throws -> Summary {
        let file = try OutputFile(path: path)
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
                throw TIFFWriteError(path: path, reason: .tooLargeForClassicTIFF(bytes: classicEnd))
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

    private func blockEntries(_ offsets: [UInt64], _ counts: [UInt64], big: Bool) -> [IFDEntry] {
        if big {
            return [IFDEntry(TIFFTag.tileOffsets, long8s: offsets), IFDEntry(TIFFTag.tileByteCounts, long8s: counts)]
        }
        return [
            IFDEntry(TIFFTag.tileOffsets, longs: offsets.map { UInt32(truncatingIfNeeded: $0) }),
            IFDEntry(TIFFTag.tileByteCounts, longs: counts.map { UInt32(truncatingIfNeeded: $0) }),
        ]
    }

    /// All tags except the block offsets and counts.
    private func ifdEntries() -> [IFDEntry] {
        let o = options
        let spp = o.samplesPerPixel
        var e: [IFDEntry] = [
            IFDEntry(TIFFTag.imageWidth, longs: [UInt32(o.width)]),
            IFDEntry(TIFFTag.imageLength, longs: [UInt32(o.height)]),
            IFDEntry(TIFFTag.bitsPerSample, shorts: Array(repeating: UInt16(o.sampleType.byteWidth * 8), count: spp)),
            IFDEntry(TIFFTag.compression, shorts: [TIFFCompression.deflate]),
            IFDEntry(TIFFTag.photometric, shorts: [o.photometric.rawValue]),
            IFDEntry(TIFFTag.samplesPerPixel, shorts: [UInt16(spp)]),
            IFDEntry(TIFFTag.planarConfiguration, shorts: [1]),
            IFDEntry(TIFFTag.predictor, shorts: [o.predictor.rawValue]),
            IFDEntry(TIFFTag.tileWidth, longs: [UInt32(o.blockWidth)]),
            IFDEntry(TIFFTag.tileLength, longs: [UInt32(o.blockHeight)]),
        ]
        if let software = o.software { e.append(IFDEntry(TIFFTag.software, ascii: software)) }
        let extra = spp - (o.photometric == .rgb ? 3 : 1)
        if extra > 0 {
            var kinds = [UInt16](repeating: 0, count: extra)  // 0: unspecified data
            if o.alpha { kinds[extra - 1] = 2 }  // 2: unassociated alpha
            e.append(IFDEntry(TIFFTag.extraSamples, shorts: kinds))
        }
        let format: UInt16 = o.sampleType.isFloat ? 3 : (o.sampleType.isSignedInteger ? 2 : 1)
        e.append(IFDEntry(TIFFTag.sampleFormat, shorts: Array(repeating: format, count: spp)))
        if let t = o.geoTransform {
            let c = t.coefficients
            if c[2] == 0, c[4] == 0, c[1] > 0, c[5] < 0 {
                // PixelIsPoint files tie the CENTRE of pixel (0, 0) to the model point.
                let isPoint = o.geoKeys?.short(GeoKey.gtRasterType) == 2
                let tie = isPoint ? t.apply(col: 0.5, row: 0.5) : (c[0], c[3])
                e.append(IFDEntry(TIFFTag.modelPixelScale, doubles: [c[1], -c[5], 0]))
                e.append(IFDEntry(TIFFTag.modelTiepoint, doubles: [0, 0, 0, tie.0, tie.1, 0]))
            } else {
                let isPoint = o.geoKeys?.short(GeoKey.gtRasterType) == 2
                let origin = isPoint ? t.apply(col: 0.5, row: 0.5) : (c[0], c[3])
                e.append(
                    IFDEntry(
                        TIFFTag.modelTransformation,
                        doubles: [
                            c[1], c[2], 0, origin.0,
                            c[4], c[5], 0, origin.1,
                            0, 0, 0, 0,
                            0, 0, 0, 1,
                        ]))
            }
        }
        if let keys = o.geoKeys {
            let encoded = GeoTIFFWriter.encodeGeoKeys(keys)
            e.append(IFDEntry(TIFFTag.geoKeyDirectory, shorts: encoded.directory))
            if !encoded.doubles.isEmpty { e.append(IFDEntry(TIFFTag.geoDoubleParams, doubles: encoded.doubles)) }
            if !encoded.ascii.isEmpty { e.append(IFDEntry(TIFFTag.geoAsciiParams, ascii: encoded.ascii)) }
        }
        if let noData = o.noData {
            e.append(IFDEntry(TIFFTag.gdalNoData, ascii: GeoTIFFWriter.noDataText(noData)))
        }
        if let metadata = o.gdalMetadata, !metadata.items.isEmpty {
            e.append(IFDEntry(TIFFTag.gdalMetadata, ascii: metadata.xml))
        }
        return e
    }

    /// GDAL_NODATA text: integers without a fraction, other values in Swift's shortest
    /// round-tripping form, "nan"/"inf"/"-inf" as GDAL spells them.
    static func noDataText(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    /// The three GeoTIFF key tags' contents: keys sorted by id (the spec requires it), shorts
    /// with more than one value stored at the end of the directory itself, doubles in the
    /// double params, text in the ASCII params with '|' after each string.
    static func encodeGeoKeys(_ keys: GeoKeyDirectory) -> (directory: [UInt16], doubles: [Double], ascii: String) {
        let sorted = keys.entries.sorted { $0.id < $1.id }
        var directory: [UInt16] = keys.versionParts + [UInt16(sorted.count)]
        var extraShorts: [UInt16] = []
        var doubles: [Double] = []
        var ascii = ""
        let keysEnd = 4 + 4 * sorted.count
        for (id, value) in sorted {
            switch value {
            case .shorts(let v) where v.count == 1:
                directory += [id, 0, 1, v[0]]
            case .shorts(let v):
                directory += [id, TIFFTag.geoKeyDirectory, UInt16(v.count), UInt16(keysEnd + extraShorts.count)]
                extraShorts += v
            case .doubles(let v):
                directory += [id, TIFFTag.geoDoubleParams, UInt16(v.count), UInt16(doubles.count)]
                doubles += v
            case .ascii(let s):
                directory += [id, TIFFTag.geoAsciiParams, UInt16(s.utf8.count + 1), UInt16(ascii.utf8.count)]
                ascii += s + "|"
            }
        }
        return (directory + extraShorts, doubles, ascii)
    }

    /// Maps `range` through `body` on all cores, results in range order; the first error wins.
    private func parallelMap(_ range: Range<Int>, _ body: @Sendable (Int) throws -> [UInt8]) throws -> [[UInt8]] {
        let first = range.lowerBound
        return try TilePackCore.parallelMap(count: range.count, workers: ProcessorInfo.activeCount) { k, _ in
            try body(first + k)
        }
    }
}

/// One IFD entry with its value already in little-endian bytes.
struct IFDEntry {
    var tag: UInt16
    var type: TIFFFieldType
    var count: Int
    var payload: [UInt8]

    init(_ tag: UInt16, shorts: [UInt16]) {
        var b = LittleEndianBytes(capacity: shorts.count * 2)
        for v in shorts { b.append(v) }
        self.init(tag: tag, type: .short, count: shorts.count, payload: b.bytes)
    }

    init(_ tag: UInt16, longs: [UInt32]) {
        var b = LittleEndianBytes(capacity: longs.count * 4)
        for v in longs { b.append(v) }
        self.init(tag: tag, type: .long, count: longs.count, payload: b.bytes)
    }

    init(_ tag: UInt16, long8s: [UInt64]) {
        var b = LittleEndianBytes(capacity: long8s.count * 8)
        for v in long8s { b.append(v) }
        self.init(tag: tag, type: .long8, count: long8s.count, payload: b.bytes)
    }

    init(_ tag: UInt16, doubles: [Double]) {
        var b = LittleEndianBytes(capacity: doubles.count * 8)
        for v in doubles { b.append(v) }
        self.init(tag: tag, type: .double, count: doubles.count, payload: b.bytes)
    }

    /// ASCII with its terminating NUL, as TIFF counts it.
    init(_ tag: UInt16, ascii: String) {
        let bytes = Array(ascii.utf8) + [0]
        self.init(tag: tag, type: .ascii, count: bytes.count, payload: bytes)
    }

    init(tag: UInt16, type: TIFFFieldType, count: Int, payload: [UInt8]) {
        self.tag = tag
        self.type = type
        self.count = count
        self.payload = payload
    }

    /// Bytes the IFD and its out-of-line values take.
    static func serializedSize(_ entries: [IFDEntry], big: Bool) -> Int {
        var size = big ? 8 + 20 * entries.count + 8 : 2 + 12 * entries.count + 4
        let inline = big ? 8 : 4
        for e in entries where e.payload.count > inline {
            size = (size + 7) & ~7
            size += e.payload.count
        }
        return size
    }

    /// The IFD (entries sorted by tag, as TIFF requires) followed by out-of-line values,
    /// for placement at file offset `offset` (which must be even).
    static func serialize(_ entries: [IFDEntry], big: Bool, at offset: UInt64) -> [UInt8] {
        precondition(offset % 2 == 0)
        let sorted = entries.sorted { $0.tag < $1.tag }
        let inline = big ? 8 : 4
        var ifd = LittleEndianBytes()
        var values = LittleEndianBytes()
        let valuesStart = offset + UInt64(big ? 8 + 20 * sorted.count + 8 : 2 + 12 * sorted.count + 4)
        if big { ifd.append(UInt64(sorted.count)) } else { ifd.append(UInt16(sorted.count)) }
        for e in sorted {
            ifd.append(e.tag)
            ifd.append(e.type.rawValue)
            if big { ifd.append(UInt64(e.count)) } else { ifd.append(UInt32(e.count)) }
            if e.payload.count <= inline {
                ifd.append(contentsOf: e.payload)
                for _ in e.payload.count..<inline { ifd.append(UInt8(0)) }
            } else {
                // Align to 8 relative to the file (valuesStart may be only word aligned).
                while (valuesStart + UInt64(values.count)) % 8 != 0 { values.append(UInt8(0)) }
                let at = valuesStart + UInt64(values.count)
                if big { ifd.append(at) } else { ifd.append(UInt32(at)) }
                values.append(contentsOf: e.payload)
            }
        }
        if big { ifd.append(UInt64(0)) } else { ifd.append(UInt32(0)) }  // no next IFD
        ifd.append(contentsOf: values.bytes)
        return ifd.bytes
    }
}

/// The temporary output file: sequential writes with an explicit position, removed unless
/// ``finish()`` renames it onto the target.
private final class OutputFile {
    let path: String
    private let replacement: AtomicReplacement
    private var fd: Int32
    private(set) var position: UInt64 = 0

    init(path: String) throws(TIFFWriteError) {
        self.path = path
        replacement = AtomicReplacement(targetPath: path)
        fd = open(replacement.temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TIFFWriteError(path: path, reason: .cannotCreate(errno: errno)) }
    }

    func write(_ bytes: [UInt8]) throws(TIFFWriteError) {
        try write(bytes, at: position)
        position += UInt64(bytes.count)
    }

    /// pwrite until done, retrying interrupted and partial writes.
    func write(_ bytes: [UInt8], at offset: UInt64) throws(TIFFWriteError) {
        let failure: Int32? = bytes.withUnsafeBytes { raw in
            var done = 0
            while done < raw.count {
                let n = pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset) + off_t(done))
                if n < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                done += n
            }
            return nil
        }
        if let failure { throw TIFFWriteError(path: path, reason: .writeFailed(errno: failure)) }
    }

    /// Closes and renames onto the target.
    func finish() throws(TIFFWriteError) {
        let closed = close(fd)
        fd = -1
        guard closed == 0 else {
            let e = errno
            replacement.removeTemporary()
            throw TIFFWriteError(path: path, reason: .writeFailed(errno: e))
        }
        if let code = replacement.commit() {
            throw TIFFWriteError(path: path, reason: .cannotRename(errno: code))
        }
    }

    /// Closes and removes the temporary file after a failure.
    func abandon() {
        if fd >= 0 { close(fd); fd = -1 }
        replacement.removeTemporary()
    }

    deinit { if fd >= 0 { close(fd) } }
}
