import TilePackCore
import TilePackGeoTIFF
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Placing the files of a mosaic on its grid: from a list of GeoTIFFs, or from a VRT.
extension MosaicSource {
    /// A mosaic of GeoTIFFs in the given order (later files win where they overlap).
    ///
    /// The grid takes the first file's CRS and pixel size and is extended by whole pixels
    /// until it covers every file's outline. When the files lie on more than one grid (another
    /// CRS, pixel size or a sub-pixel offset), each grid also becomes one of ``layers``.
    /// - Throws: ``InputFileError`` or ``TIFFError`` naming the file: unreadable, not
    ///   georeferenced, or with bands, sample type, palette or alpha unlike the first file's.
    /// - Cost: opens each file once to read its header (then closes it); O(files) projections
    ///   of 33 outline points per edge, twice for a layered mosaic; O(files × grids) to group.
    public init(
        files paths: [String], maxOpenFiles: Int = MosaicSource.defaultMaxOpenFiles,
        registry: CRSRegistry = .builtin
    ) throws {
        guard let firstPath = paths.first else {
            throw BuildError.invalidOption("a mosaic needs at least one file")
        }
        let first = try TIFFFile(path: firstPath, cacheBytes: 0)
        var files: [File] = []
        files.reserveCapacity(paths.count)
        for path in paths {
            let tiff = path == firstPath && files.isEmpty ? first : try TIFFFile(path: path, cacheBytes: 0)
            try Self.checkCompatible(tiff, with: first)
            files.append(
                File(
                    path: path, width: tiff.width, height: tiff.height, bands: tiff.bands,
                    sampleType: tiff.sampleType, nodata: tiff.nodata,
                    georeference: try GeoReference(image: tiff.image, path: path, registry: registry)))
        }
        let (grid, placements) = try Self.place(files, members: Array(files.indices))
        // The grids the files lie on: files sharing a CRS, pixel size and whole-pixel
        // alignment form one (tiles cut from one DEM, one UTM zone's sheets), so a seam inside
        // a grid is sampled across as one image; a second grid makes the mosaic layered.
        var groups: [[Int]] = []
        for i in files.indices {
            let ref = files[i].georeference
            if let g = groups.firstIndex(where: { Self.wholePixelOffset(ref, on: files[$0[0]].georeference) != nil }) {
                groups[g].append(i)
            } else {
                groups.append([i])
            }
        }
        let pool = TIFFFilePool(paths: files.map(\.path), limit: maxOpenFiles)
        func source(
            _ grid: GeoReference, _ placements: [Placement], nodata: Double?, layers: [MosaicSource]
        ) -> MosaicSource {
            MosaicSource(
                files: files, grid: grid, placements: placements, pool: pool, layers: layers,
                bands: first.bands, sampleType: first.sampleType, nodata: nodata,
                colorMap: first.colorMap, alphaBand: first.alphaBand, terrainHints: first.terrainHints)
        }
        var layers: [MosaicSource] = []
        if groups.count > 1 {
            for members in groups {
                let (g, p) = try Self.place(files, members: members)
                layers.append(source(g, p, nodata: Self.commonNodata(members.map { files[$0].nodata }), layers: []))
            }
        }
        self = source(grid, placements, nodata: Self.commonNodata(files.map(\.nodata)), layers: layers)
    }

    /// The grid of `members` (indices into `files`, in mosaic order) and where each lies on
    /// it: the first member's CRS and pixel size, extended by whole pixels until it covers
    /// every member's outline. A member on that grid is copied, any other resampled into it.
    /// - Cost: O(members) projections of 33 outline points per edge.
    static func place(_ files: [File], members: [Int]) throws -> (grid: GeoReference, placements: [Placement]) {
        let head = files[members[0]]
        let ref = head.georeference
        // Each file's footprint in the first member's pixel space, from its densified outline.
        var boxes: [(minC: Double, minR: Double, maxC: Double, maxR: Double)] = []
        for f in members.map({ files[$0] }) {
            var box = (minC: Double.infinity, minR: Double.infinity, maxC: -Double.infinity, maxR: -Double.infinity)
            let k = 33, w = Double(f.width), h = Double(f.height)
            for i in 0..<k {
                let t = Double(i) / Double(k - 1)
                for (c, r) in [(t * w, 0.0), (t * w, h), (0.0, t * h), (w, t * h)] {
                    let p: (col: Double, row: Double)
                    if f.georeference.crs == ref.crs {
                        let xy = f.georeference.crsCoordinate(col: c, row: r)
                        p = ref.pixel(x: xy.x, y: xy.y)
                    } else {
                        let ll = f.georeference.lonLat(col: c, row: r)
                        p = ref.pixel(lon: ll.lon, lat: ll.lat)
                    }
                    guard p.col.isFinite, p.row.isFinite else { continue }
                    box = (min(box.minC, p.col), min(box.minR, p.row), max(box.maxC, p.col), max(box.maxR, p.row))
                }
            }
            guard box.minC.isFinite, box.maxC.isFinite, box.minR.isFinite, box.maxR.isFinite else {
                throw InputFileError(
                    path: f.path, detail: "cannot be placed in \(ref.crs.name), the CRS of \(head.path)")
            }
            boxes.append(box)
        }
        // Whole pixels of the first file's grid, with a tolerance so a file ending exactly on
        // a pixel edge (up to rounding in its geotransform) does not add a column.
        let eps = 1e-6
        let limit = Double(1 << 31)
        let lo = (c: boxes.map(\.minC).min() ?? 0, r: boxes.map(\.minR).min() ?? 0)
        let hi = (c: boxes.map(\.maxC).max() ?? 0, r: boxes.map(\.maxR).max() ?? 0)
        guard abs(lo.c) < limit, abs(lo.r) < limit, abs(hi.c) < limit, abs(hi.r) < limit else {
            throw InputFileError(
                path: head.path, detail: "the mosaic's files span more than 2^31 pixels of this file's grid")
        }
        let minC = Int(floor(lo.c + eps)), minR = Int(floor(lo.r + eps))
        let gridW = Int(ceil(hi.c - eps)) - minC, gridH = Int(ceil(hi.r - eps)) - minR
        guard gridW > 0, gridH > 0, gridW < (1 << 31), gridH < (1 << 31) else {
            throw InputFileError(
                path: head.path,
                detail: "the mosaic's grid \(gridW)x\(gridH) is empty or larger than 2^31 pixels a side")
        }
        var placements: [Placement] = []
        var exactOrigin: (x: Double?, y: Double?) = (nil, nil)
        let t = ref.transform.coefficients
        for (k, i) in members.enumerated() {
            let f = files[i]
            if let (dx, dy) = Self.wholePixelOffset(f.georeference, on: ref) {
                let gx = dx - minC, gy = dy - minR
                // The grid's origin from a file that sits on it, not recomputed: the mosaic of
                // tiles cut from one DEM then has that DEM's geotransform, bit for bit.
                if gx == 0 { exactOrigin.x = f.georeference.transform.coefficients[0] }
                if gy == 0 { exactOrigin.y = f.georeference.transform.coefficients[3] }
                placements.append(
                    Placement(
                        file: i, x0: max(0, gx), y0: max(0, gy), x1: min(gridW, gx + f.width),
                        y1: min(gridH, gy + f.height), src: (0, 0, f.width, f.height),
                        sampling: .copy(dx: gx, dy: gy), nodata: f.nodata))
            } else {
                let b = boxes[k]
                placements.append(
                    Placement(
                        file: i, x0: max(0, Int(floor(b.minC)) - minC - 1), y0: max(0, Int(floor(b.minR)) - minR - 1),
                        x1: min(gridW, Int(ceil(b.maxC)) - minC + 1), y1: min(gridH, Int(ceil(b.maxR)) - minR + 1),
                        src: (0, 0, f.width, f.height),
                        sampling: .resampled(sameCRS: f.georeference.crs == ref.crs), nodata: f.nodata))
            }
        }
        let c0 = Double(minC), r0 = Double(minR)
        var g = [t[0] + c0 * t[1] + r0 * t[2], t[1], t[2], t[3] + c0 * t[4] + r0 * t[5], t[4], t[5]]
        if t[2] == 0, t[4] == 0 {
            if let x = exactOrigin.x { g[0] = x }
            if let y = exactOrigin.y { g[3] = y }
        }
        let grid: GeoReference
        do { grid = try GeoReference(crs: ref.crs, transform: GeoTransform(g), width: gridW, height: gridH) } catch {
            throw InputFileError(path: head.path, detail: error.description)
        }
        return (grid, placements)
    }

    /// A mosaic as a GDAL VRT describes it: the VRT's grid, its sources in order.
    ///
    /// Every band must take the same windows of the same files (what `gdalbuildvrt` writes),
    /// each band one band of them: band k from band k, or any other (what
    /// `gdal_translate -of VRT -b 3 -b 2 -b 1` writes; then the mosaic holds the files' bands
    /// and ``vrtBands`` says which the VRT shows). The files must be GeoTIFFs in one CRS with
    /// the VRT's data type.
    /// - Throws: ``InputFileError`` naming the VRT and, for a source, the source file.
    /// - Cost: opens each distinct source once to read its header (then closes it).
    public init(
        vrt: VRTDocument, maxOpenFiles: Int = MosaicSource.defaultMaxOpenFiles,
        registry: CRSRegistry = .builtin
    ) throws {
        func fail(_ problem: String) -> InputFileError { InputFileError(path: vrt.path, detail: problem) }
        let sources = vrt.bands[0].sources
        guard !sources.isEmpty else { throw fail("VRTRasterBand 1 has no sources") }
        var picks: [Int] = []  // the file band (1-based) each VRT band shows
        for (k, band) in vrt.bands.enumerated() {
            guard band.dataType == vrt.bands[0].dataType else {
                throw fail("bands of different data types are not supported")
            }
            let fileBand = band.sources.first?.band ?? 0
            guard band.sources.count == sources.count,
                zip(band.sources, sources).allSatisfy({
                    $0.path == $1.path && $0.srcRect == $1.srcRect && $0.dstRect == $1.dstRect && $0.band == fileBand
                })
            else {
                throw fail(
                    """
                    VRTRasterBand \(k + 1) does not take one band of the same windows of the same sources as band \
                    1; per-band sources are not supported
                    """
                )
            }
            picks.append(fileBand)
        }
        let fileBands = picks.max() ?? 1
        guard let transform = vrt.geoTransform else { throw fail("VRT has no GeoTransform: it is not georeferenced") }
        var index: [String: Int] = [:]
        var files: [File] = []
        var first: TIFFFile?
        // The document lists a run of equal sources once; `withoutRepeats` drops repeats that
        // are not neighbours.
        for s in sources where index[s.path] == nil {
            let tiff: TIFFFile
            let geo: GeoReference
            do {
                tiff = try TIFFFile(path: s.path, cacheBytes: 0)
                geo = try GeoReference(image: tiff.image, path: s.path, registry: registry)
                if let first { try Self.checkCompatible(tiff, with: first) }
            } catch let e as any TilePackError {
                throw fail("source \(e.description)")
            }
            guard tiff.bands >= fileBands else {
                throw fail(
                    """
                    source \(s.path): has \(tiff.bands) band\(tiff.bands == 1 ? "" : "s"), the VRT takes its band \
                    \(fileBands)
                    """
                )
            }
            guard tiff.sampleType == vrt.bands[0].dataType else {
                throw fail(
                    """
                    source \(s.path): holds \(tiff.sampleType.rawValue), the VRT declares \
                    \(vrt.bands[0].dataType.rawValue); type conversion is not supported
                    """
                )
            }
            if let f = files.first, geo.crs != f.georeference.crs {
                throw fail(
                    """
                    source \(s.path): is in \(geo.crs.name), \(f.path) in \(f.georeference.crs.name); a VRT's \
                    sources share one CRS
                    """
                )
            }
            if first == nil { first = tiff }
            index[s.path] = files.count
            files.append(
                File(
                    path: s.path, width: tiff.width, height: tiff.height, bands: tiff.bands,
                    sampleType: tiff.sampleType, nodata: tiff.nodata, georeference: geo))
        }
        guard let first else { throw fail("VRTRasterBand 1 has no sources") }
        let grid: GeoReference
        do {
            grid = try GeoReference(
                crs: files[0].georeference.crs, transform: transform, width: vrt.width, height: vrt.height)
        } catch {
            throw fail(error.description)
        }
        var placements: [Placement] = []
        for s in sources {
            guard let i = index[s.path] else { continue }
            let f = files[i]
            let src = s.srcRect ?? VRTDocument.Rect(x: 0, y: 0, width: Double(f.width), height: Double(f.height))
            let dst = s.dstRect ?? src
            let sx0 = max(0, Int(floor(src.x))), sy0 = max(0, Int(floor(src.y)))
            let sx1 = min(f.width, Int(ceil(src.x + src.width))), sy1 = min(f.height, Int(ceil(src.y + src.height)))
            guard sx0 < sx1, sy0 < sy1 else { continue }  // a window wholly outside its file adds nothing
            let integral = [src.x, src.y, src.width, src.height, dst.x, dst.y].allSatisfy { $0.rounded() == $0 }
            let sampling: Sampling
            var x0 = Int(floor(dst.x)), y0 = Int(floor(dst.y))
            var x1 = Int(ceil(dst.x + dst.width)), y1 = Int(ceil(dst.y + dst.height))
            if integral, src.width == dst.width, src.height == dst.height {
                let dx = Int(dst.x) - Int(src.x), dy = Int(dst.y) - Int(src.y)
                sampling = .copy(dx: dx, dy: dy)
                x0 = max(x0, sx0 + dx); y0 = max(y0, sy0 + dy); x1 = min(x1, sx1 + dx); y1 = min(y1, sy1 + dy)
            } else {
                sampling = .scaled(
                    x0: src.x, sx: src.width / dst.width, dstX: dst.x, y0: src.y, sy: src.height / dst.height,
                    dstY: dst.y)
            }
            x0 = max(0, x0); y0 = max(0, y0); x1 = min(vrt.width, x1); y1 = min(vrt.height, y1)
            guard x0 < x1, y0 < y1 else { continue }
            placements.append(
                Placement(
                    file: i, x0: x0, y0: y0, x1: x1, y1: y1, src: (sx0, sy0, sx1, sy1),
                    sampling: sampling, nodata: s.nodata ?? f.nodata))
        }
        placements = Self.withoutRepeats(placements)
        if let (depth, x, y) = Self.deepestOverlap(placements, width: vrt.width, height: vrt.height),
            depth > Self.maxSourcesPerPixel
        {
            throw fail(
                """
                \(depth) sources overlap near pixel (\(x), \(y)); tilepack samples at most \
                \(Self.maxSourcesPerPixel) per pixel
                """
            )
        }
        self.init(
            files: files, grid: grid, placements: placements,
            pool: TIFFFilePool(paths: files.map(\.path), limit: maxOpenFiles), layers: [],
            bands: first.bands, sampleType: first.sampleType,
            nodata: vrt.bands[0].nodata ?? Self.commonNodata(files.map(\.nodata)),
            colorMap: first.colorMap, alphaBand: first.alphaBand, terrainHints: first.terrainHints)
        if picks != Array(1...first.bands) {
            vrtBands = picks.map { $0 - 1 }
            var hints = TerrainHints()
            for (k, b) in vrt.bands.enumerated() {
                hints.descriptions[k] = b.description.flatMap { $0.isEmpty ? nil : $0 }
                hints.colorInterps[k] = b.colorInterp
                hints.unitTypes[k] = b.unitType.flatMap { $0.isEmpty ? nil : $0 }
            }
            vrtBandHints = hints
        }
    }

    /// Refuses a file whose samples cannot join `first`'s in one raster.
    static func checkCompatible(_ tiff: TIFFFile, with first: TIFFFile) throws {
        func describe(_ t: TIFFFile) -> String {
            "\(t.bands) band\(t.bands == 1 ? "" : "s") of \(t.sampleType.rawValue)"
        }
        guard tiff.bands == first.bands, tiff.sampleType == first.sampleType else {
            throw InputFileError(
                path: tiff.path,
                detail:
                    """
                    has \(describe(tiff)), but \(first.path) has \(describe(first)); a mosaic's files must agree \
                    in bands and sample type
                    """
            )
        }
        guard tiff.colorMap == first.colorMap else {
            throw InputFileError(
                path: tiff.path,
                detail: "has a different palette from \(first.path); a mosaic's palettes must be identical")
        }
        guard tiff.alphaBand == first.alphaBand else {
            throw InputFileError(
                path: tiff.path,
                detail:
                    """
                    has its alpha band at \(tiff.alphaBand.map(String.init) ?? "none"), \(first.path) at \
                    \(first.alphaBand.map(String.init) ?? "none")
                    """
            )
        }
    }

    /// The whole-pixel offset of `g`'s grid on `ref`'s, when both share CRS and pixel size.
    static func wholePixelOffset(_ g: GeoReference, on ref: GeoReference) -> (Int, Int)? {
        guard g.crs == ref.crs else { return nil }
        let a = g.transform.coefficients, b = ref.transform.coefficients
        let size = max(abs(b[1]), abs(b[5]), abs(b[2]), abs(b[4]))
        for k in [1, 2, 4, 5] where abs(a[k] - b[k]) > 1e-9 * size { return nil }
        let p = ref.pixel(x: a[0], y: a[3])
        let c = p.col.rounded(), r = p.row.rounded()
        guard abs(p.col - c) < 1e-6, abs(p.row - r) < 1e-6, abs(c) < Double(1 << 31), abs(r) < Double(1 << 31) else {
            return nil
        }
        return (Int(c), Int(r))
    }

    /// The one nodata value every file carries (nil when any differs or all have none).
    static func commonNodata(_ values: [Double?]) -> Double? {
        guard let first = values.first, let v = first else { return nil }
        for x in values {
            guard let x else { return nil }
            if !(x == v || (x.isNaN && v.isNaN)) { return nil }
        }
        return v
    }
}

extension MosaicSource {
    /// Sources that may overlap at one output pixel, after repeats are dropped: each costs a
    /// read and a copy per pixel, so a VRT of thousands of sources stacked on one spot would
    /// make a tile cost thousands of times its pixels. GDAL mosaics rarely stack more than a
    /// few; 1,024 leaves room for any real one.
    static let maxSourcesPerPixel = 1024

    /// `placements` with every repeat of a source (same file, window, sampling and nodata)
    /// dropped but its last: the later of two identical sources paints the same pixels over
    /// the earlier, so the earlier adds only cost. Cost: O(placements) hashing.
    static func withoutRepeats(_ placements: [Placement]) -> [Placement] {
        struct Key: Hashable {
            let file: Int, x0: Int, y0: Int, x1: Int, y1: Int, sx0: Int, sy0: Int, sx1: Int, sy1: Int
            let sampling: Sampling, nodata: UInt64?
        }
        var seen = Set<Key>()
        var kept: [Placement] = []
        for p in placements.reversed() {
            let key = Key(
                file: p.file, x0: p.x0, y0: p.y0, x1: p.x1, y1: p.y1, sx0: p.src.x0, sy0: p.src.y0,
                sx1: p.src.x1, sy1: p.src.y1, sampling: p.sampling, nodata: p.nodata?.bitPattern)
            if seen.insert(key).inserted { kept.append(p) }
        }
        return kept.reversed()
    }

    /// The most placements touching one cell of a coarse grid over the output (at most
    /// 512 × 512 cells), and a pixel in that cell; nil without placements. An upper bound
    /// on the sources overlapping at any one pixel, exact when sources align to cells.
    /// Cost: O(placements + cells), by a two-dimensional difference array.
    static func deepestOverlap(_ placements: [Placement], width: Int, height: Int) -> (Int, Int, Int)? {
        guard !placements.isEmpty, width > 0, height > 0 else { return nil }
        let cell = max(1, (max(width, height) + 511) / 512)
        let cols = (width + cell - 1) / cell, rows = (height + cell - 1) / cell
        var diff = [Int](repeating: 0, count: (cols + 1) * (rows + 1))
        for p in placements {
            let c0 = min(cols - 1, max(0, p.x0 / cell)), c1 = min(cols, max(1, (p.x1 + cell - 1) / cell))
            let r0 = min(rows - 1, max(0, p.y0 / cell)), r1 = min(rows, max(1, (p.y1 + cell - 1) / cell))
            diff[r0 * (cols + 1) + c0] += 1
            diff[r0 * (cols + 1) + c1] -= 1
            diff[r1 * (cols + 1) + c0] -= 1
            diff[r1 * (cols + 1) + c1] += 1
        }
        var best = (0, 0, 0)
        var above = [Int](repeating: 0, count: cols + 1)
        for r in 0..<rows {
            var left = 0
            for c in 0..<cols {
                left += diff[r * (cols + 1) + c]
                above[c] += left
                if above[c] > best.0 { best = (above[c], c * cell, r * cell) }
            }
        }
        return best
    }
}
