import TilePackCore
import TilePackGeoTIFF
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Several GeoTIFFs (a list, a folder, or a GDAL VRT) as one ``RasterSource``: a virtual
/// grid that the build resamples like a single file, so a bilinear tap on one side of a seam
/// reads the neighbour file and no seam shows.
///
/// The grid is a ``GeoReference`` (``grid``), which is also the build's
/// ``SourceGeoreference``. For a VRT it is the VRT's grid; for a list of files it is the
/// first file's CRS and pixel size, extended to cover every file. A file on that grid (same
/// CRS and pixel size, whole-pixel offset: tiles cut from one DEM, a `gdalbuildvrt` mosaic)
/// is copied pixel for pixel, so the mosaic builds exactly what the uncut file builds.
///
/// Files on other grids (another UTM zone, another resolution) make the mosaic *layered*:
/// ``layers`` holds one mosaic per grid (the files sharing it, on their own grid), and
/// The build samples each layer natively per output pixel and keeps the sample of the file
/// listed last (see ``LayeredResampler``), as `gdalwarp` does with several inputs.
/// ``readFloats(x:y:width:height:)`` on the whole mosaic still resamples such files into
/// ``grid`` (bilinear at each grid pixel centre) for the source statistics; tiles never read
/// those resampled values, which would be a second interpolation.
///
/// Where files overlap the last listed wins, as in a VRT; a pixel that is nodata (that
/// file's own nodata, or a VRT `NODATA`) or NaN there lets the files before it show through.
/// Grid pixels no file covers are the mosaic's ``nodata`` (when every file agrees on one)
/// or NaN, which the build draws transparent either way.
///
/// Files are opened lazily through a ``TIFFFilePool`` and closed, least recently used
/// first, beyond ``maxOpenFiles`` (default 64); the layers share the mosaic's pool.
///
/// ```swift
/// let mosaic = try MosaicSource(files: ["n45e006.tif", "n45e007.tif"])
/// let builder = TileBuilder(source: mosaic, georeference: mosaic.grid, options: .init(), codec: codec)
/// ```
///
/// - Cost: opening reads each file's header once (files are then closed). `readFloats` scans
///   the placements (O(files)), reads from each file that intersects the window its part of
///   it, and for resampled files projects every grid pixel centre (one inverse projection each).
public struct MosaicSource: RasterSource {
    /// What the mosaic knows of one input file without holding it open.
    public struct File: Sendable {
        public let path: String
        public let width: Int
        public let height: Int
        public let bands: Int
        public let sampleType: SampleType
        public let nodata: Double?
        public let georeference: GeoReference
    }

    /// How a grid pixel finds its value in a file.
    enum Sampling: Sendable, Hashable {
        /// The file lies on the grid: file pixel = grid pixel − (dx, dy).
        case copy(dx: Int, dy: Int)
        /// A VRT window scaled onto the grid, nearest neighbour as GDAL's VRT default:
        /// file col = x0 + (grid col + 0.5 − dstX) · sx.
        case scaled(x0: Double, sx: Double, dstX: Double, y0: Double, sy: Double, dstY: Double)
        /// Another CRS or pixel size: grid pixel centre → file pixel, bilinear in the file
        /// over the valid taps.
        case resampled(sameCRS: Bool)
    }

    /// One file's part of the grid.
    struct Placement: Sendable {
        let file: Int
        /// Grid pixels [x0, x1) × [y0, y1) the file may supply.
        let x0: Int, y0: Int, x1: Int, y1: Int
        /// File pixels it may be read from (a VRT SrcRect, else the whole file).
        let src: (x0: Int, y0: Int, x1: Int, y1: Int)
        let sampling: Sampling
        /// Source values that are not data here.
        let nodata: Double?
    }

    public let files: [File]
    /// The virtual grid: the mosaic's CRS, geotransform and size.
    public let grid: GeoReference
    let placements: [Placement]
    let pool: TIFFFilePool
    /// One mosaic per grid the files lie on, when there are two or more; else empty.
    let layers: [MosaicSource]

    public var width: Int { grid.width }
    public var height: Int { grid.height }
    public let bands: Int
    public let sampleType: SampleType
    public let nodata: Double?
    public let colorMap: [UInt16]?
    public let alphaBand: Int?
    public let terrainHints: TerrainHints
    /// For a VRT whose bands are not the files' bands 1…n in order: the file band (0-based)
    /// each VRT band shows. The mosaic itself holds all the files' bands; the build sees it
    /// through a ``SelectedBandsSource`` (``RegionBuild``).
    public internal(set) var vrtBands: [Int]?
    /// The VRT's own band Description/ColorInterp/UnitType, by VRT band, with ``vrtBands``.
    var vrtBandHints = TerrainHints()

    /// Default limit on files open at once.
    public static let defaultMaxOpenFiles = 64

    public var maxOpenFiles: Int { pool.limit }

    /// Files opened and the most open at once so far.
    public var openFileStatistics: (opens: Int, peakOpen: Int) {
        let s = pool.statistics
        return (s.opens, s.peakOpen)
    }

    /// The distinct CRSs of the files, in order of first appearance.
    public var crsNames: [String] {
        var seen: [String] = []
        for f in files {
            let c = f.georeference.crs
            let name = c.epsg.map { "EPSG:\($0)" } ?? c.name
            if !seen.contains(name) { seen.append(name) }
        }
        return seen
    }

    init(
        files: [File], grid: GeoReference, placements: [Placement], pool: TIFFFilePool, layers: [MosaicSource],
        bands: Int, sampleType: SampleType, nodata: Double?, colorMap: [UInt16]?, alphaBand: Int?,
        terrainHints: TerrainHints
    ) {
        self.files = files
        self.grid = grid
        self.placements = placements
        self.pool = pool
        self.layers = layers
        self.bands = bands
        self.sampleType = sampleType
        self.nodata = nodata
        self.colorMap = colorMap
        self.alphaBand = alphaBand
        self.terrainHints = terrainHints
    }

    /// The window from every file that covers it, last file first.
    /// - Cost: O(placements) to find the files, then per covering file one windowed read of
    ///   the part it supplies; resampled files add one projection per grid pixel.
    public func readFloats(x: Int, y: Int, width w: Int, height h: Int) throws -> [Float] {
        guard w > 0, h > 0, x >= 0, y >= 0, x <= width - w, y <= height - h else {
            throw BuildError.invalidOption("window \(x),\(y) \(w)x\(h) is outside the \(width)x\(height) mosaic")
        }
        let fill: Float = nodata.map { Float($0) } ?? .nan
        var out = [Float](repeating: fill, count: w * h * bands)
        var done = [Bool](repeating: false, count: w * h)
        var remaining = w * h
        for p in placements.reversed() {
            let cx0 = max(x, p.x0), cy0 = max(y, p.y0), cx1 = min(x + w, p.x1), cy1 = min(y + h, p.y1)
            guard cx0 < cx1, cy0 < cy1 else { continue }
            let region = Region(x: x, y: y, w: w, cx0: cx0, cy0: cy0, cx1: cx1, cy1: cy1)
            switch p.sampling {
            case .copy(let dx, let dy):
                remaining -= try copy(p, dx: dx, dy: dy, region, &out, &done)
            case .scaled, .resampled:
                remaining -= try resample(p, region, fillGaps: false, &out, &done)
            }
            if remaining == 0 { break }
        }
        // Pixels no file has data nearest to, but beside a resampled file's data: fill them
        // from the valid taps (last file first).
        for p in placements.reversed() where remaining > 0 {
            guard case .resampled = p.sampling else { continue }
            let cx0 = max(x, p.x0), cy0 = max(y, p.y0), cx1 = min(x + w, p.x1), cy1 = min(y + h, p.y1)
            guard cx0 < cx1, cy0 < cy1 else { continue }
            remaining -= try resample(
                p, Region(x: x, y: y, w: w, cx0: cx0, cy0: cy0, cx1: cx1, cy1: cy1), fillGaps: true, &out, &done)
        }
        return out
    }

    /// The part of a requested window one placement covers, in grid pixels.
    struct Region {
        let x: Int, y: Int, w: Int
        let cx0: Int, cy0: Int, cx1: Int, cy1: Int
    }

    /// Whether `bands` samples at `v[i...]` are data in a file with nodata `nd`: no NaN, and
    /// not every data band equal to nodata (the rule the build applies to a single file).
    @inline(__always)
    func isData(_ v: UnsafeBufferPointer<Float>, _ i: Int, _ nd: Float?) -> Bool {
        var allNodata = nd != nil
        for b in 0..<bands {
            let s = v[i + b]
            if s.isNaN { return false }
            if b != alphaBand, let nd, s != nd { allNodata = false }
        }
        return !allNodata
    }

    private func copy(
        _ p: Placement, dx: Int, dy: Int, _ r: Region, _ out: inout [Float], _ done: inout [Bool]
    ) throws -> Int {
        let fw = r.cx1 - r.cx0, fh = r.cy1 - r.cy0
        let values = try pool.withFile(p.file) { file in
            try checked(file, p.file).readFloats(x: r.cx0 - dx, y: r.cy0 - dy, width: fw, height: fh)
        }
        guard values.count == fw * fh * bands else {
            throw BuildError.sourceReadMismatch(expected: fw * fh * bands, got: values.count)
        }
        let nd = p.nodata.map { Float($0) }
        var filled = 0
        values.withUnsafeBufferPointer { v in
            for row in 0..<fh {
                for col in 0..<fw {
                    let o = (r.cy0 - r.y + row) * r.w + (r.cx0 - r.x + col)
                    guard !done[o] else { continue }
                    let i = (row * fw + col) * bands
                    guard isData(v, i, nd) else { continue }
                    for b in 0..<bands { out[o * bands + b] = v[i + b] }
                    done[o] = true
                    filled += 1
                }
            }
        }
        return filled
    }

    private func resample(
        _ p: Placement, _ r: Region, fillGaps: Bool, _ out: inout [Float], _ done: inout [Bool]
    ) throws -> Int {
        let f = files[p.file]
        // File pixel coordinates (corner convention) of each pending grid pixel centre.
        var targets: [(o: Int, col: Double, row: Double)] = []
        var minC = Double.infinity, minR = Double.infinity, maxC = -Double.infinity, maxR = -Double.infinity
        for gy in r.cy0..<r.cy1 {
            for gx in r.cx0..<r.cx1 {
                let o = (gy - r.y) * r.w + (gx - r.x)
                guard !done[o] else { continue }
                let c = filePixel(p, f, col: Double(gx) + 0.5, row: Double(gy) + 0.5)
                guard c.col.isFinite, c.row.isFinite,
                    c.col >= Double(p.src.x0), c.col < Double(p.src.x1), c.row >= Double(p.src.y0),
                    c.row < Double(p.src.y1)
                else { continue }
                targets.append((o, c.col, c.row))
                minC = min(minC, c.col); maxC = max(maxC, c.col); minR = min(minR, c.row); maxR = max(maxR, c.row)
            }
        }
        guard !targets.isEmpty else { return 0 }
        // The file window the taps need: one pixel beyond the centres either way, inside SrcRect.
        let wx0 = max(p.src.x0, Int(floor(minC - 1))), wy0 = max(p.src.y0, Int(floor(minR - 1)))
        let wx1 = min(p.src.x1, Int(floor(maxC + 1)) + 1), wy1 = min(p.src.y1, Int(floor(maxR + 1)) + 1)
        guard wx0 < wx1, wy0 < wy1 else { return 0 }
        let ww = wx1 - wx0, wh = wy1 - wy0
        let values = try pool.withFile(p.file) { file in
            try checked(file, p.file).readFloats(x: wx0, y: wy0, width: ww, height: wh)
        }
        guard values.count == ww * wh * bands else {
            throw BuildError.sourceReadMismatch(expected: ww * wh * bands, got: values.count)
        }
        let nd = p.nodata.map { Float($0) }
        let nearestOnly: Bool
        if case .scaled = p.sampling { nearestOnly = true } else { nearestOnly = false }
        var filled = 0
        values.withUnsafeBufferPointer { v in
            func index(_ c: Int, _ r: Int) -> Int? {
                guard c >= wx0, c < wx1, r >= wy0, r < wy1 else { return nil }
                return ((r - wy0) * ww + (c - wx0)) * bands
            }
            for t in targets {
                // The file covers a grid pixel where its nearest pixel is data (the build's rule),
                // so a later file's ragged nodata edge does not overwrite an earlier file's
                // data with values extrapolated from one tap. In the gap-filling pass any
                // valid tap counts, as in GDAL's warper: two files cut along a meridian
                // (UTM zones) would otherwise leave a one-pixel crack between them.
                let nearest = index(Int(floor(t.col)), Int(floor(t.row)))
                guard let ni = nearest, isData(v, ni, nd) || (fillGaps && !nearestOnly) else { continue }
                if nearestOnly {
                    for b in 0..<bands { out[t.o * bands + b] = v[ni + b] }
                } else {
                    let fx = t.col - 0.5, fy = t.row - 0.5
                    let c0 = Int(floor(fx)), r0 = Int(floor(fy))
                    let ax = fx - Double(c0), ay = fy - Double(r0)
                    var acc = [Double](repeating: 0, count: bands)
                    var weight = 0.0
                    for (dc, dr, wgt) in [
                        (0, 0, (1 - ax) * (1 - ay)), (1, 0, ax * (1 - ay)), (0, 1, (1 - ax) * ay), (1, 1, ax * ay),
                    ] {
                        guard wgt > 0, let i = index(c0 + dc, r0 + dr), isData(v, i, nd) else { continue }
                        for b in 0..<bands { acc[b] += wgt * Double(v[i + b]) }
                        weight += wgt
                    }
                    guard weight > 0 else { continue }
                    for b in 0..<bands { out[t.o * bands + b] = Float(acc[b] / weight) }
                }
                done[t.o] = true
                filled += 1
            }
        }
        return filled
    }

    /// File pixel under a grid position.
    @inline(__always)
    func filePixel(_ p: Placement, _ f: File, col: Double, row: Double) -> (col: Double, row: Double) {
        switch p.sampling {
        case .copy(let dx, let dy):
            return (col - Double(dx), row - Double(dy))
        case .scaled(let x0, let sx, let dstX, let y0, let sy, let dstY):
            return (x0 + (col - dstX) * sx, y0 + (row - dstY) * sy)
        case .resampled(let sameCRS):
            if sameCRS {
                let c = grid.crsCoordinate(col: col, row: row)
                return f.georeference.pixel(x: c.x, y: c.y)
            }
            let ll = grid.lonLat(col: col, row: row)
            return f.georeference.pixel(lon: ll.lon, lat: ll.lat)
        }
    }

    /// `file` as planned: a file replaced since the mosaic was opened is refused rather than
    /// read with the wrong layout.
    private func checked(_ file: TIFFFile, _ index: Int) throws -> TIFFFile {
        let f = files[index]
        guard file.width == f.width, file.height == f.height, file.bands == f.bands, file.sampleType == f.sampleType
        else {
            throw InputFileError(
                path: f.path,
                detail:
                    """
                    changed while the mosaic was being read (now \(file.width)x\(file.height), \(file.bands) \
                    bands \(file.sampleType.rawValue))
                    """
            )
        }
        return file
    }
}
