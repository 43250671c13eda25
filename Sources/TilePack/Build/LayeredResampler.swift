import TilePackCore

/// What the build asks of a resampler: the source's samples at the pixel centres of one grid,
/// into `ws.values` (pixel-interleaved, `bands` per pixel) and `ws.valid` (1/0).
///
/// ``Resampler`` does it for a source on one grid; ``LayeredResampler`` for a mosaic whose
/// files lie on several.
protocol GridResampling: Sendable {
    /// Fills `ws.values`/`ws.valid` for `grid`; returns whether any pixel is valid. `tile`
    /// names the tile in errors.
    func resample(_ grid: MapFrame, tile: TileID, into ws: ResampleWorkspace) throws -> Bool
}

extension Resampler: GridResampling {
    /// The resampler the build uses for `source`: a ``LayeredResampler`` when the source is a
    /// ``LayeredRasterSource`` with two or more layers, else one ``Resampler`` over the source
    /// and `georeference` (a single file, or a mosaic whose files share one grid: unchanged).
    static func forSource(
        _ source: any RasterSource, georeference: any SourceGeoreference,
        maxError: Double, method: Resampling
    ) -> any GridResampling {
        if let layered = source as? any LayeredRasterSource, layered.rasterLayers.count > 1 {
            return LayeredResampler(layers: layered.rasterLayers, maxError: maxError, method: method)
        }
        return Resampler(
            source: source, mapper: CoordinateMapper(georeference: georeference, maxError: maxError),
            method: method)
    }
}

/// A source whose pixels lie on more than one grid: a mosaic of files in different CRSs,
/// pixel sizes or sub-pixel alignments. Resampling a single grid of it would interpolate
/// twice (file → common grid → tile) and blur the seams; the build samples each layer on its
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

/// Resamples a ``LayeredRasterSource`` onto a ``MapFrame``: every layer natively, with its
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
/// one ``RasterLayer/priority(col:row:)`` lookup each. Memory per worker: one scratch
/// workspace and three per-pixel arrays, whatever the number of layers.
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
            return Layer(
                source: layer,
                resampler: Resampler(
                    source: layer, mapper: CoordinateMapper(georeference: layer.layerGeoreference, maxError: maxError),
                    method: method),
                bounds: GeoBounds(west: b.west - mx, south: b.south - my, east: b.east + mx, north: b.north + my))
        }
        bands = layers.first?.bands ?? 1
    }

    /// Whether `grid` (its pixel centres, widened by one pixel for an averaging footprint)
    /// can reach `layer`: a mosaic of many small grids maps each tile only onto the few
    /// layers near it. Cost: 4 coordinate conversions.
    func reaches(_ grid: MapFrame, _ layer: Layer) -> Bool {
        let west = grid.lon(column: -1), east = grid.lon(column: grid.width)
        let north = grid.lat(row: -1), south = grid.lat(row: grid.height)
        return west <= layer.bounds.east && east >= layer.bounds.west && south <= layer.bounds.north
            && north >= layer.bounds.south
    }

    func resample(_ grid: MapFrame, tile: TileID, into ws: ResampleWorkspace) throws -> Bool {
        let n = grid.width * grid.height
        let lw: LayeredWorkspace
        if let existing = ws.layered { lw = existing } else { lw = LayeredWorkspace(); ws.layered = lw }
        if ws.values.count != n * bands { ws.values = [Float](repeating: 0, count: n * bands) }
        if ws.valid.count != n { ws.valid = [UInt8](repeating: 0, count: n) }
        if lw.owner.count != n {
            lw.owner = [Int](repeating: 0, count: n)
            lw.ownerCol = [Int](repeating: 0, count: n)
            lw.ownerRow = [Int](repeating: 0, count: n)
        }
        for k in 0..<n { ws.valid[k] = 0 }
        let bands = self.bands
        var any = false
        // Layers one after another through one scratch workspace, each merged into the output
        // as it is done; an output pixel remembers its layer and layer cell, so an overlap
        // can be ranked later without keeping every layer's samples.
        for (i, layer) in layers.enumerated() where reaches(grid, layer) {
            let s = lw.scratch
            guard try layer.resampler.resample(grid, tile: tile, into: s) else { continue }
            let w = layer.source.width, h = layer.source.height
            guard w > 0, h > 0 else { continue }
            let valid = s.valid, cols = s.cols, rows = s.rows  // read-only for the merge
            s.values.withUnsafeBufferPointer { from in
                ws.values.withUnsafeMutableBufferPointer { out in
                    for k in 0..<n where valid[k] != 0 {
                        // The layer cell of the sample: inside the layer or, when averaging, up
                        // to a footprint beside it, so clamped (in Double, before Int).
                        let c = cols[k].rounded(.down), r = rows[k].rounded(.down)
                        guard c.isFinite, r.isFinite else { continue }
                        let col = Int(min(max(c, 0), Double(w - 1))), row = Int(min(max(r, 0), Double(h - 1)))
                        if ws.valid[k] != 0 {
                            // Two layers have data here (an overlap): the input listed last wins.
                            let mine = layer.source.priority(col: col, row: row) ?? Int.min
                            let theirs =
                                layers[lw.owner[k]].source.priority(col: lw.ownerCol[k], row: lw.ownerRow[k]) ?? Int.min
                            if mine <= theirs { continue }
                        }
                        for b in 0..<bands { out[k * bands + b] = from[k * bands + b] }
                        ws.valid[k] = 1
                        lw.owner[k] = i
                        lw.ownerCol[k] = col
                        lw.ownerRow[k] = row
                        any = true
                    }
                }
            }
        }
        return any
    }
}

/// What a worker's ``LayeredResampler`` reuses from tile to tile: one scratch workspace that
/// every layer is resampled into in turn (memory independent of the number of layers), and
/// per output pixel the layer that supplied it and the layer cell it came from.
/// Unchecked Sendable for the reason ``ResampleWorkspace`` is: one worker at a time owns it.
final class LayeredWorkspace: @unchecked Sendable {
    let scratch = ResampleWorkspace()
    var owner: [Int] = []
    var ownerCol: [Int] = []
    var ownerRow: [Int] = []
}
