import TilePackCore
/// A TIFF or GeoTIFF opened for reading: its structure parsed, its first full-resolution
/// image validated, its pixels read on demand by window.
///
/// ```swift
/// let file = try TIFFFile(path: "dem.tif")
/// let w = try file.read(window: PixelWindow(x: 0, y: 0, width: 256, height: 256))
/// let h = w.sample(x: 10, y: 20, band: 0)
/// ```
///
/// Opening reads the header and every IFD (a few KiB), never the pixels. Reads decode only
/// the blocks a window touches, through a small LRU cache of decoded blocks, and are safe to
/// issue from several threads at once (`pread` on one descriptor, the cache behind a mutex).
public final class TIFFFile: Sendable {
    public let path: String
    public let byteOrder: TIFFByteOrder
    public let isBigTIFF: Bool
    /// The first full-resolution image (metadata).
    public let image: TIFFImage
    /// Reduced-resolution images that follow (overviews), largest first as stored.
    public let overviews: [TIFFImage]
    /// Every IFD in the chain, in order, with the little the reader knows of each.
    public let directories: [TIFFDirectorySummary]

    private let handle: TIFFFileHandle
    /// Decoded blocks by (image, block): windows that walk a raster in tiles touch each block
    /// a few times (neighbouring windows share edge blocks), and the cache turns those repeats
    /// into copies. Decoding happens outside its lock: two threads asking for the same missing
    /// block may both decode it, which costs time, never correctness.
    private let cache: ByteBudgetCache<BlockKey, [UInt8]>

    struct BlockKey: Hashable, Sendable {
        var image: Int
        var block: Int
    }

    /// Opens and parses `path`.
    /// - Parameter cacheBytes: decoded bytes the block cache may keep (default 64 MiB).
    /// - Throws: ``TIFFError`` for unreadable, malformed or unsupported files.
    public init(path: String, cacheBytes: Int = 64 << 20) throws(TIFFError) {
        let handle = try TIFFFileHandle(path: path)
        let header = try TIFFStructureReader.readHeader(handle)
        let reader = TIFFStructureReader(handle: handle, order: header.order, isBigTIFF: header.isBigTIFF)
        let dirs = try reader.readDirectories(first: header.firstIFDOffset)
        let summaries = dirs.enumerated().map { i, d in TIFFDirectorySummary(d, index: i, reader: reader) }
        let main = summaries.first { !$0.isReducedResolution && !$0.isMask }?.index ?? 0
        self.path = path
        self.byteOrder = header.order
        self.isBigTIFF = header.isBigTIFF
        self.handle = handle
        self.cache = ByteBudgetCache(limit: cacheBytes)
        self.directories = summaries
        self.image = try TIFFImage.parse(dirs[main], index: main, reader: reader)
        // Overviews are metadata others may use; one this reader cannot decode is left out
        // rather than failing the whole file.
        self.overviews = summaries.filter { $0.index != main && $0.isReducedResolution && !$0.isMask }
            .compactMap { s in try? TIFFImage.parse(dirs[s.index], index: s.index, reader: reader) }
    }

    /// Every full-resolution, non-mask image in IFD order, the main image among them: PROJ's
    /// GeoTIFF datum grids store their subgrids so. Unlike ``overviews`` an image this
    /// reader cannot parse is an error, not left out.
    /// - Cost: re-reads the IFD chain (a few KiB), no pixels.
    public func fullResolutionImages() throws(TIFFError) -> [TIFFImage] {
        let header = try TIFFStructureReader.readHeader(handle)
        let reader = TIFFStructureReader(handle: handle, order: header.order, isBigTIFF: header.isBigTIFF)
        let dirs = try reader.readDirectories(first: header.firstIFDOffset)
        var images: [TIFFImage] = []
        for s in directories where !s.isReducedResolution && !s.isMask && dirs.indices.contains(s.index) {
            images.append(try TIFFImage.parse(dirs[s.index], index: s.index, reader: reader))
        }
        return images
    }

    /// Decodes all bands of `image` (one of ``fullResolutionImages()``) inside `window`.
    public func read(_ image: TIFFImage, window: PixelWindow) throws(TIFFError) -> RasterWindow {
        try read(image, window: window, bands: 0..<image.bands)
    }

    /// Transparency-mask IFDs (NewSubfileType bit 4).
    public var masks: [TIFFDirectorySummary] { directories.filter(\.isMask) }

    /// Decodes all bands of the main image inside `window`.
    /// - Throws: `.badWindow` when the window is empty or leaves the image; `.corruptBlock`,
    ///   `.truncated`, `.offsetPastEnd` for bad block data.
    /// - Cost: decodes each intersecting block once (or copies it from the cache); allocates
    ///   the window's bytes.
    public func read(window: PixelWindow) throws(TIFFError) -> RasterWindow {
        try read(image, window: window, bands: 0..<image.bands)
    }

    /// Decodes all bands of overview `index` (0 = the largest) inside `window`.
    public func read(window: PixelWindow, overview index: Int) throws(TIFFError) -> RasterWindow {
        guard overviews.indices.contains(index) else {
            throw TIFFError(
                path: path, code: .badWindow, detail: "no overview \(index) (the file has \(overviews.count))")
        }
        let ov = overviews[index]
        return try read(ov, window: window, bands: 0..<ov.bands)
    }

    /// Decodes the bands `bands` of `image` inside `window`, pixel-interleaved.
    func read(_ image: TIFFImage, window: PixelWindow, bands: Range<Int>) throws(TIFFError) -> RasterWindow {
        guard window.fits(width: image.width, height: image.height) else {
            throw TIFFError(
                path: path, code: .badWindow,
                detail: "window \(window) is outside the \(image.width)x\(image.height) image")
        }
        precondition(
            !bands.isEmpty && bands.lowerBound >= 0 && bands.upperBound <= image.bands, "band range outside the image")
        let bw = image.sampleType.byteWidth
        let outBands = bands.count
        let outPixelBytes = outBands * bw
        let (pixels, o1) = window.width.multipliedReportingOverflow(by: window.height)
        let (total, o2) = pixels.multipliedReportingOverflow(by: outPixelBytes)
        guard !o1, !o2 else {
            throw TIFFError(path: path, code: .badWindow, detail: "window \(window) is too large to hold in memory")
        }
        var out = [UInt8](repeating: 0, count: total)
        let planes: [Int] = image.planarConfig == .contig ? [0] : Array(bands)
        let spb = image.samplesPerBlockPixel
        let blockPixelBytes = spb * bw
        let across = image.blocksAcross
        let perPlane = across * image.blocksDown
        let x1 = window.x + window.width, y1 = window.y + window.height

        for plane in planes {
            for by in (window.y / image.blockHeight)...((y1 - 1) / image.blockHeight) {
                for bx in (window.x / image.blockWidth)...((x1 - 1) / image.blockWidth) {
                    let index = plane * perPlane + by * across + bx
                    let block = try decodedBlock(image, index: index)
                    let top = by * image.blockHeight, left = bx * image.blockWidth
                    let r0 = max(window.y, top), r1 = min(y1, top + image.blockHeight)
                    let c0 = max(window.x, left), c1 = min(x1, left + image.blockWidth)
                    let cols = c1 - c0
                    block.withUnsafeBytes { src in
                        out.withUnsafeMutableBytes { dst in
                            for r in r0..<r1 {
                                let s =
                                    src.baseAddress! + ((r - top) * image.blockWidth + (c0 - left)) * blockPixelBytes
                                let d =
                                    dst.baseAddress! + ((r - window.y) * window.width + (c0 - window.x)) * outPixelBytes
                                if image.planarConfig == .separate {
                                    let db = d + (plane - bands.lowerBound) * bw
                                    for c in 0..<cols {
                                        (db + c * outPixelBytes).copyMemory(from: s + c * bw, byteCount: bw)
                                    }
                                } else if outBands == spb {
                                    d.copyMemory(from: s, byteCount: cols * blockPixelBytes)
                                } else {
                                    let sb = s + bands.lowerBound * bw
                                    for c in 0..<cols {
                                        (d + c * outPixelBytes).copyMemory(
                                            from: sb + c * blockPixelBytes, byteCount: outPixelBytes)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        return RasterWindow(window: window, bands: outBands, sampleType: image.sampleType, bytes: out)
    }

    /// One block decoded to little-endian in-memory samples (rows × blockWidth × samples),
    /// from the cache or the file.
    func decodedBlock(_ image: TIFFImage, index: Int) throws(TIFFError) -> [UInt8] {
        let key = BlockKey(image: image.ifdIndex, block: index)
        if let hit = cache.get(key) { return hit }
        let bytes = try TIFFBlockDecoder(image: image, order: byteOrder, path: path).decode(index, handle: handle)
        return cache.put(key, bytes, bytes: bytes.count)
    }
}

/// What the reader knows of any IFD, decodable or not (masks are often 1-bit).
public struct TIFFDirectorySummary: Sendable, Equatable {
    public let index: Int
    public let offset: UInt64
    public let width: Int
    public let height: Int
    /// NewSubfileType bits (1 reduced resolution, 2 page, 4 transparency mask).
    public let subfileType: UInt32

    public var isReducedResolution: Bool { subfileType & 1 != 0 }
    public var isMask: Bool { subfileType & 4 != 0 }

    init(_ dir: TIFFDirectory, index: Int, reader: TIFFStructureReader) {
        self.index = index
        self.offset = dir.offset
        self.width = Int(clamping: ((try? reader.scalar(dir, TIFFTag.imageWidth)) ?? nil) ?? 0)
        self.height = Int(clamping: ((try? reader.scalar(dir, TIFFTag.imageLength)) ?? nil) ?? 0)
        self.subfileType = UInt32(truncatingIfNeeded: ((try? reader.scalar(dir, TIFFTag.newSubfileType)) ?? nil) ?? 0)
    }
}
