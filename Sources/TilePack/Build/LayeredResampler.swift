import TilePackCore

/// What Tiling asks of a resampler: the source's samples at the pixel centres of one grid,
/// into `ws.values` (pixel-interleaved, `bands` per pixel) and `ws.valid` (1/0).
///
/// ``Resampler`` does it for a source on one grid; ``LayeredResampler`` for a mosaic whose
/// files lie on several.
protocol GridResampling: Sendable {
    /// Fills `ws.values`/`ws.valid` for `grid`; returns whether any pixel is valid. `tile`
    /// names the tile in errors.
    func resample(_ grid: PixelGrid, tile: TileID, into ws: ResampleWorkspace) throws -> Bool
}

extension Resampler: GridResampling {
    /// The resampler Tiling uses for `source`: a ``LayeredResampler`` when the source is a
    /// ``LayeredRasterSource`` with two or more layers, else one ``Resampler`` over the source
    /// and `georeference` (a single file, or a mosaic whose files share one grid: unchanged).
    static func forSource(_ source: any RasterSource, georeference: any SourceGeoreference,
                          maxError: Double, method: Resampling) -> any GridResampling {
        if let layered = source as? any LayeredRasterSource, layered.rasterLayers.count > 1 {
            return LayeredResampler(layers: layered.rasterLayers, maxError: maxError, method: method)
        }
        return Resampler(source: source, mapper: CoordinateMapper(georeference: georeference, maxError: maxError),
                         method: method)
    }
}

/// A source whose pixels lie on more than one grid: a mosaic of files in different CRSs,
/// pixel sizes or sub-pixel alignments. Resampling a single grid of it would interpolate
/// twice (file → common grid → tile) and blur the seams; Tiling samples each layer on its
/// own grid instead.
protocol LayeredRasterSource: RasterSource {
    /// The grids, each a source of its own; fewer than two means "resample me as one grid".
    var rasterLayers: [any RasterLayer] { get }
}

/// One grid of a ``LayeredRasterSource``: a source, where it lies, and which input wins.
protocol RasterLayer: RasterSource {
    var layerGeoreference: any SourceGeoreference { get }
    /// The mosaic list position of the input that supplies the layer's pixel (col, row) —
    /// the last listed of those covering it; nil where none does. Where layers overlap the
    /// higher position wins. Coverage, not data, decides: where a layer's top file is nodata
    /// and an earlier file of the same layer shows through, the layer still ranks by the top
    /// file (only matters when files of different grids are listed interleaved and overlap).
    /// Cost: O(inputs of the layer).
    func priority(col: Int, row: Int) -> Int?
}

extension MosaicSource: LayeredRasterSource, RasterLayer {
    var rasterLayers: [any RasterLayer] { layers }
    var layerGeoreference: any SourceGeoreference { grid }

    func priority(col: Int, row: Int) -> Int? {
        for p in placements.reversed() where col >= p.x0 && col < p.x1 && row >= p.y0 && row < p.y1 {
            return p.file
        }
        return nil
    }
}

/// Resamples a ``LayeredRasterSource`` onto a ``PixelGrid``: every layer natively, with its
/// own ``CoordinateMapper`` (same approximation bound) and ``Resampler`` (same method,
/// same nodata rules, reading only the layer's own files), then per output pixel the valid
/// sample of the layer whose input is listed last there.
///
/// This is what `gdalwarp` does with several inputs, each warped in turn over the earlier
/// ones where it has data: an output pixel whose nearest layer pixel is data takes that
/// layer's sample, and at a layer's edge its bilinear kernel keeps the taps inside the layer
/// (renormalised), so a seam between zones is sampled once, not resampled twice. Inside a
/// layer the files are one image, so a seam between two of its files is invisible.
///
/// Cost: a bounds test per layer; each layer whose footprint the grid reaches maps the grid
/// (≈ 2 % of pixels projected exactly), reads one window and samples it, so a tile costs
/// about what one source does per layer it touches; where two layers are valid at a pixel,
/// one ``RasterLayer/priority(col:row:)`` lookup each.
struct LayeredResampler: GridResampling {
    struct Layer: Sendable {
        let source: any RasterLayer
        let resampler: Resampler
        /// The layer's footprint, widened by 1 % of its span either way: the outline is
        /// densified, not exact, so it may cut a curved edge by a hair.
        let bounds: GeoBounds
    }

    let layers: [Layer]
    let bands: Int

    init(layers: [any RasterLayer], maxError: Double, method: Resampling) {
        self.layers = layers.map { layer in
            let b = layer.layerGeoreference.lonLatBounds
            let mx = (b.east - b.west) / 100, my = (b.north - b.south) / 100
            return Layer(source: layer, resampler: Resampler(
                source: layer, mapper: CoordinateMapper(georeference: layer.layerGeoreference, maxError: maxError), method: method),
                bounds: GeoBounds(west: b.west - mx, south: b.south - my, east: b.east + mx, north: b.north + my))
        }
        bands = layers.first?.bands ?? 1
    }

    /// Whether `grid` (its pixel centres, widened by one pixel for an averaging footprint)
    /// can reach `layer`: a mosaic of many small grids maps each tile only onto the few
    /// layers near it. Cost: 4 coordinate conversions.
    func reaches(_ grid: PixelGrid, _ layer: Layer) -> Bool {
        let west = grid.lon(column: -1), east = grid.lon(column: grid.width)
        let north = grid.lat(row: -1), south = grid.lat(row: grid.height)
        return west <= layer.bounds.east && east >= layer.bounds.west && south <= layer.bounds.north && north >= layer.bounds.south
    }

    func resample(_ grid: PixelGrid, tile: TileID, into ws: ResampleWorkspace) throws -> Bool {
        let n = grid.width * grid.height
        if ws.layers.count != layers.count { ws.layers = layers.map { _ in ResampleWorkspace() } }
        var active: [Int] = []
        for (i, layer) in layers.enumerated() where reaches(grid, layer) {
            if try layer.resampler.resample(grid, tile: tile, into: ws.layers[i]) { active.append(i) }
        }
        if ws.values.count != n * bands { ws.values = [Float](repeating: 0, count: n * bands) }
        if ws.valid.count != n { ws.valid = [UInt8](repeating: 0, count: n) }
        for k in 0..<n { ws.valid[k] = 0 }
        guard !active.isEmpty else { return false }

        /// Priority of layer `i`'s sample at output pixel `k`: its input's list position.
        func priority(_ i: Int, _ k: Int) -> Int {
            let lws = ws.layers[i], layer = layers[i].source
            // A valid sample maps inside the layer or, when averaging, up to a footprint
            // beside it: rank it by the layer pixel nearest, clamped in Double before Int.
            let c = lws.cols[k].rounded(.down), r = lws.rows[k].rounded(.down)
            guard c.isFinite, r.isFinite, layer.width > 0, layer.height > 0 else { return Int.min }
            let col = Int(min(max(c, 0), Double(layer.width - 1))), row = Int(min(max(r, 0), Double(layer.height - 1)))
            return layer.priority(col: col, row: row) ?? Int.min
        }
        // The active layers' results as plain arrays, so the loop does no class-field access.
        let valids = active.map { ws.layers[$0].valid }, values = active.map { ws.layers[$0].values }
        let bands = self.bands
        var any = false
        ws.values.withUnsafeMutableBufferPointer { out in
            ws.valid.withUnsafeMutableBufferPointer { valid in
                for k in 0..<n {
                    var best = -1, bestPriority: Int? = nil
                    for a in valids.indices where valids[a][k] != 0 {
                        if best < 0 { best = a; continue }
                        // Two layers have data here (an overlap): the input listed last wins.
                        let p = priority(active[a], k)
                        let q = bestPriority ?? priority(active[best], k)
                        if p > q { best = a; bestPriority = p } else { bestPriority = q }
                    }
                    guard best >= 0 else { continue }
                    for b in 0..<bands { out[k * bands + b] = values[best][k * bands + b] }
                    valid[k] = 1
                    any = true
                }
            }
        }
        return any
    }
}
