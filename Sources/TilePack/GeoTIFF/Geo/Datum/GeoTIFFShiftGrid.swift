import TilePackCore

/// Reads a PROJ GeoTIFF horizontal shift grid (`.tif`, PROJ's "Geodetic TIFF grid"
/// profile, as on cdn.proj.org) with tilepack's own TIFF reader.
///
/// The profile: GDAL metadata `TYPE=HORIZONTAL_OFFSET`; samples described as
/// `latitude_offset` and `longitude_offset` (first and second when undescribed), in the
/// `UNITTYPE` given per sample (arc-second when absent; degree accepted), longitude
/// `positive_value` east unless it says west; integer samples decoded as
/// offset + scale · raw; GDAL_NODATA nodes carry no shift; georeferenced in lon/lat
/// (PixelIsPoint or PixelIsArea, no rotation). Each full-resolution IFD is one subgrid,
/// read with its own GDAL metadata; an IFD after the first whose samples are described
/// without the two offsets is skipped (PROJ keeps accuracies there). The hierarchy is PROJ's:
/// a `parent_grid_name` naming an earlier `grid_name` whose extent contains the subgrid
/// makes it that grid's child; a `grid_name` without a parent makes it top-level; otherwise
/// it goes under the first top-level grid containing it, descending into the first child
/// that also does (top-level when none does).
enum GeoTIFFShiftGrid {
    static let maximumSide = 200_000
    /// Decoded samples over all subgrids (4 bytes each while reading): the largest published
    /// horizontal grids have a few million nodes.
    static let maximumSamples = 64_000_000

    /// - Cost: decodes every subgrid once; allocates 8 bytes per node plus the decoded bands.
    static func read(path: String) throws(DatumGridError) -> HorizontalShiftGrid {
        func fail(_ kind: DatumGridError.Code, _ detail: String) -> DatumGridError {
            DatumGridError(path: path, code: kind, detail: "GeoTIFF grid: " + detail)
        }
        let file: TIFFFile
        let images: [TIFFImage]
        do {
            file = try TIFFFile(path: path, cacheBytes: 1 << 20)
            images = try file.fullResolutionImages()
        } catch {
            throw fail(error.code == .io ? .unreadable : .badHeader, "\(error.detail)")
        }
        guard !images.isEmpty else { throw fail(.badHeader, "no image") }
        var subgrids: [ShiftSubgrid] = []
        var extents: [(w: Double, s: Double, e: Double, n: Double)] = []
        var names: [(grid: String?, parent: String?)] = []
        var samples = 0
        for (k, image) in images.enumerated() {
            let items = image.gdalMetadata?.items ?? []
            func item(_ name: String, sample: Int? = nil) -> String? {
                items.first { $0.name.lowercased() == name.lowercased() && $0.sample == sample }?.value
            }
            if let type = item("TYPE"), type != "HORIZONTAL_OFFSET" {
                throw fail(.unsupported, "TYPE \(type) is not HORIZONTAL_OFFSET")
            }
            guard image.bands >= 2 else {
                throw fail(.unsupported, "subgrid \(k) has \(image.bands) sample(s), a horizontal grid needs 2")
            }
            var latBand = 0, lonBand = 1
            var described = false, foundLat = false, foundLon = false
            for b in 0..<image.bands {
                switch item("DESCRIPTION", sample: b) {
                case "latitude_offset": latBand = b; foundLat = true
                case "longitude_offset": lonBand = b; foundLon = true
                case .some(let d): described = described || !d.isEmpty
                case nil: break
                }
            }
            if (described || foundLat || foundLon) && !(foundLat && foundLon) {
                // Described samples without both offsets: PROJ skips such an extra IFD.
                guard k > 0 else {
                    throw fail(.unsupported, "the first image has no latitude_offset and longitude_offset samples")
                }
                continue
            }
            guard latBand != lonBand else {
                throw fail(.badHeader, "subgrid \(k) describes one sample as both offsets")
            }
            func arcSeconds(_ band: Int) throws(DatumGridError) -> Double {
                switch item("UNITTYPE", sample: band)?.lowercased() {
                case nil, "arc-second": 1
                case "degree": 3600
                case let unit?: throw fail(.unsupported, "sample \(band) unit \(unit) (expected arc-second or degree)")
                }
            }
            let latUnit = try arcSeconds(latBand)
            let lonSign: Double = item("positive_value", sample: lonBand)?.lowercased() == "west" ? -1 : 1
            let lonUnit = try arcSeconds(lonBand) * lonSign
            func scaleOffset(_ band: Int) -> (Double, Double) {
                guard image.sampleType != .float32, image.sampleType != .float64 else { return (1, 0) }
                return (
                    item("SCALE", sample: band).flatMap(Double.init) ?? 1,
                    item("OFFSET", sample: band).flatMap(Double.init) ?? 0
                )
            }
            let (latScale, latOffset) = scaleOffset(latBand), (lonScale, lonOffset) = scaleOffset(lonBand)

            let cols = image.width, rows = image.height
            guard cols >= 2, rows >= 2, cols <= maximumSide, rows <= maximumSide,
                cols * rows <= (maximumSamples - samples) / max(image.bands, 1)
            else {
                throw fail(
                    .tooLarge,
                    """
                    subgrid \(k) is \(cols)x\(rows)x\(image.bands) (each side 2…\(maximumSide), \(maximumSamples) \
                    samples in all at most)
                    """
                )
            }
            samples += cols * rows * image.bands
            guard let t = image.geoTransform?.coefficients, t[2] == 0, t[4] == 0, t[1] > 0, t[5] != 0,
                t.allSatisfy(\.isFinite)
            else {
                throw fail(.badHeader, "subgrid \(k) has no north-up lon/lat georeferencing")
            }
            // Node centres: GDAL's geotransform is corner-based whatever the raster type.
            let west = t[0] + 0.5 * t[1]
            let firstRowLat = t[3] + 0.5 * t[5]
            let south = t[5] < 0 ? firstRowLat + Double(rows - 1) * t[5] : firstRowLat
            let latStep = abs(t[5])
            let east = west + Double(cols - 1) * t[1], north = south + Double(rows - 1) * latStep
            guard abs(south) <= 90, abs(north) <= 90, abs(west) <= 540, abs(east) <= 540 else {
                throw fail(.badHeader, "subgrid \(k) extent \(west),\(south),\(east),\(north) is not in degrees")
            }
            let window: RasterWindow
            do {
                window = try file.read(image, window: PixelWindow(x: 0, y: 0, width: cols, height: rows))
            } catch {
                throw fail(.badValue, "subgrid \(k): \(error.detail)")
            }
            let nodata = image.nodata
            var shifts = [Float](repeating: 0, count: 2 * cols * rows)
            for r in 0..<rows {
                let j = t[5] < 0 ? rows - 1 - r : r  // ours run south to north
                for c in 0..<cols {
                    let rawLat = window.sample(x: c, y: r, band: latBand),
                        rawLon = window.sample(x: c, y: r, band: lonBand)
                    let o = 2 * (j * cols + c)
                    if let nodata,
                        rawLat == nodata || rawLon == nodata || (nodata.isNaN && (rawLat.isNaN || rawLon.isNaN))
                    {
                        // No shift known here: lookups touching this node fall outside the grid.
                        shifts[o] = .nan
                        shifts[o + 1] = .nan
                        continue
                    }
                    let dLat = (latOffset + latScale * rawLat) * latUnit
                    let dLon = (lonOffset + lonScale * rawLon) * lonUnit
                    guard dLat.isFinite, dLon.isFinite else {
                        throw fail(.badValue, "subgrid \(k) node \(c),\(r) has a non-finite shift")
                    }
                    shifts[o] = Float(dLat)
                    shifts[o + 1] = Float(dLon)
                }
            }
            extents.append((west, south, east, north))
            names.append(
                (
                    item("grid_name").flatMap { $0.isEmpty ? nil : $0 },
                    item("parent_grid_name").flatMap { $0.isEmpty ? nil : $0 }
                ))
            subgrids.append(
                ShiftSubgrid(
                    name: item("grid_name") ?? "\(k)", west: west, south: south, lonStep: t[1], latStep: latStep,
                    columns: cols, rows: rows, parent: nil, shifts: shifts))
        }
        // PROJ's hierarchy: by names when they say, else by extents.
        func contains(_ a: Int, _ b: Int) -> Bool {
            let o = extents[a], me = extents[b]
            return o.w <= me.w && o.e >= me.e && o.s <= me.s && o.n >= me.n
        }
        var parents = [Int?](repeating: nil, count: subgrids.count)
        var children = [[Int]](repeating: [], count: subgrids.count)
        var tops: [Int] = []
        var byName: [String: Int] = [:]
        for k in subgrids.indices {
            if let name = names[k].grid { byName[name] = k }
            if let parentName = names[k].parent, let p = byName[parentName], p != k, contains(p, k) {
                parents[k] = p
                children[p].append(k)
                continue
            }
            if names[k].grid != nil && names[k].parent == nil {
                tops.append(k)
                continue
            }
            guard var at = tops.first(where: { contains($0, k) }) else {
                tops.append(k)
                continue
            }
            while let c = children[at].first(where: { contains($0, k) }) { at = c }
            parents[k] = at
            children[at].append(k)
        }
        let withParents = subgrids.enumerated().map { k, g in
            ShiftSubgrid(
                name: g.name, west: g.west, south: g.south, lonStep: g.lonStep, latStep: g.latStep,
                columns: g.columns, rows: g.rows, parent: parents[k], shifts: g.shifts)
        }
        return HorizontalShiftGrid(path: path, subgrids: withParents)
    }
}
