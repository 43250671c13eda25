import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
import TilePackTestSupport

@Suite struct BuildResampleTests {
    /// Largest |approximate − exact| source-pixel coordinate over a tile's grid.
    func approximationError(_ georef: any SourceGeoreference, _ tile: TileID, maxError: Double) -> Double {
        let grid = MapFrame(tile: tile, border: 1)
        let approx = ResampleWorkspace(), exact = ResampleWorkspace()
        CoordinateMapper(georeference: georef, maxError: maxError).map(grid, into: approx)
        CoordinateMapper(georeference: georef, maxError: 0).map(grid, into: exact)
        var worst = 0.0
        for k in 0..<exact.cols.count where !exact.cols[k].isNaN {
            worst = max(worst, abs(approx.cols[k] - exact.cols[k]), abs(approx.rows[k] - exact.rows[k]))
        }
        return worst
    }

    @Test func approximateTransformStaysWithinAnEighthPixel() {
        let plate = PlateCarree(west: 5, north: 62, dx: 0.0005, dy: 0.0005, width: 20000, height: 20000)
        let polar = PolarLike()
        for (georef, tiles) in [
            (plate as any SourceGeoreference, [TileID(z: 8, x: 132, y: 70)!, TileID(z: 12, x: 2130, y: 1120)!]),
            (polar, [TileID(z: 5, x: 16, y: 2)!, TileID(z: 4, x: 7, y: 1)!, TileID(z: 7, x: 70, y: 12)!]),
        ] {
            for tile in tiles {
                #expect(approximationError(georef, tile, maxError: 0.125) <= 0.125, "\(tile)")
                #expect(approximationError(georef, tile, maxError: 0.01) <= 0.01, "\(tile)")
            }
        }
        // The curved mapping really needs the fallback somewhere (the check is not vacuous).
        let ws = ResampleWorkspace()
        CoordinateMapper(georeference: polar, maxError: 0.01).map(MapFrame(tile: TileID(z: 4, x: 7, y: 1)!), into: ws)
        #expect(ws.exactCells > 0)
    }

    /// A mapping whose source column follows the grid column alone and whose source row the
    /// grid row alone (web mercator, longitude and latitude) is kept a column and a row at a
    /// time, with the values the per-pixel mapping gives bit for bit; a mapping that is not
    /// (a polar grid), or one with a cell computed exactly, is kept per pixel.
    @Test func separableMappingKeepsThePerPixelValues() {
        let mercator = MercatorGrid(
            originX: 1_113_194.9 + 1234.5, originY: 5_780_000, res: 13.7, width: 3000, height: 3000)
        let plate = PlateCarree(west: 10.013, north: 46.05, dx: 0.00017, dy: 0.00013, width: 3000, height: 3000)
        for (georef, tile) in [
            (mercator as any SourceGeoreference, TileID(z: 13, x: 4323, y: 2894)!),
            (plate, TileID(z: 12, x: 2161, y: 1457)!),
        ] {
            let grid = MapFrame(tile: tile, border: 1)
            let mapper = CoordinateMapper(georeference: georef, maxError: 0.125)
            let separable = ResampleWorkspace(), perPixel = ResampleWorkspace()
            mapper.map(grid, into: separable, separable: true)
            mapper.map(grid, into: perPixel)
            #expect(separable.separable && !perPixel.separable, "\(tile)")
            #expect(separable.columnOf.count == grid.width && separable.rowOf.count == grid.height)
            // `cols`/`rows` made from the columns and rows on first read: the mapper's own values.
            #expect(separable.cols.map(\.bitPattern) == perPixel.cols.map(\.bitPattern), "\(tile)")
            #expect(separable.rows.map(\.bitPattern) == perPixel.rows.map(\.bitPattern), "\(tile)")
            // A later per-pixel mapping into the same workspace is read as such.
            mapper.map(grid, into: separable)
            #expect(!separable.separable && separable.cols.map(\.bitPattern) == perPixel.cols.map(\.bitPattern))
        }
        // Not separable: a polar grid's columns turn with the rows; and a curved mapping whose
        // cells need exact values somewhere keeps them.
        let ws = ResampleWorkspace()
        CoordinateMapper(georeference: PolarLike(), maxError: 0.125).map(
            MapFrame(tile: TileID(z: 5, x: 16, y: 2)!), into: ws, separable: true)
        #expect(!ws.separable)
        CoordinateMapper(georeference: plate, maxError: 1e-9).map(
            MapFrame(tile: TileID(z: 3, x: 4, y: 2)!), into: ws, separable: true)
        #expect(!ws.separable && ws.exactCells > 0)
    }

    /// Bilinear reproduces a function linear in source pixels exactly; the only error is the
    /// approximate transform's ≤ 0.125 px times the gradient.
    @Test(arguments: [false, true])
    func bilinearMatchesAnalyticFunction(mercator: Bool) throws {
        let (a, b): (Double, Double) = (2, 3)
        let w = 3000, h = 3000
        let source = FunctionSource(width: w, height: h) { c, r, _ in
            Float(a * (Double(c) + 0.5) + b * (Double(r) + 0.5))
        }
        let georef: any SourceGeoreference =
            mercator
            ? MercatorGrid(originX: 1_113_194.9 + 1234.5, originY: 5_780_000, res: 13.7, width: w, height: h)
            : PlateCarree(west: 10.013, north: 46.05, dx: 0.00017, dy: 0.00013, width: w, height: h)
        let tile = WebMercator.tile(
            lon: georef.lonLatBounds.west + 0.1, lat: georef.lonLatBounds.north - 0.1, zoom: 13)!.tile
        let resampler = Resampler(
            source: source, mapper: CoordinateMapper(georeference: georef, maxError: 0.125), method: .bilinear)
        let ws = ResampleWorkspace()
        #expect(try resampler.resample(MapFrame(tile: tile), tile: tile, into: ws))
        var checked = 0
        for py in stride(from: 0, to: 256, by: 5) {
            for px in stride(from: 0, to: 256, by: 7) {
                let p = pixelCentre(tile, px, py)
                let s = georef.sourcePixel(lon: p.lon, lat: p.lat)!
                guard s.col > 1, s.row > 1, s.col < Double(w - 1), s.row < Double(h - 1) else { continue }
                let k = py * 256 + px
                #expect(ws.valid[k] == 1)
                let expected = a * s.col + b * s.row
                // 0.125 px transform error × gradient, plus Float rounding of values near 2e4.
                #expect(abs(Double(ws.values[k]) - expected) <= 0.125 * (a + b) + 0.01, "pixel \(px),\(py)")
                checked += 1
            }
        }
        #expect(checked > 1000)
        // Only the window the tile needs was read.
        let win = ws.lastWindow
        #expect(win.width < 800 && win.height < 800 && source.log.all.count == 1)
    }

    @Test func nodataAndOutsideAreTransparent() throws {
        let w = 400, h = 400
        // A nodata square in the middle; the source itself ends inside the tile.
        let source = FunctionSource(width: w, height: h, nodata: -9999) { c, r, _ in
            (150..<250).contains(c) && (150..<250).contains(r) ? -9999 : Float(c + r)
        }
        let georef = PlateCarree(west: 0.01, north: 0.5, dx: 0.0005, dy: 0.0005, width: w, height: h)
        let tile = TileID(z: 9, x: 256, y: 255)!
        let resampler = Resampler(
            source: source, mapper: CoordinateMapper(georeference: georef, maxError: 0), method: .bilinear)
        let ws = ResampleWorkspace()
        _ = try resampler.resample(MapFrame(tile: tile), tile: tile, into: ws)
        var seen = (inside: 0, hole: 0, outside: 0)
        for py in 0..<256 {
            for px in 0..<256 {
                let p = pixelCentre(tile, px, py)
                let s = georef.sourcePixel(lon: p.lon, lat: p.lat)!
                let c = Int(floor(s.col)), r = Int(floor(s.row))
                let outside = c < 0 || r < 0 || c >= w || r >= h
                let hole = !outside && (150..<250).contains(c) && (150..<250).contains(r)
                let valid = ws.valid[py * 256 + px] == 1
                #expect(valid == !(outside || hole), "pixel \(px),\(py)")
                if outside { seen.outside += 1 } else if hole { seen.hole += 1 } else { seen.inside += 1 }
                // Valid pixels never blend in the nodata value.
                if valid { #expect(ws.values[py * 256 + px] > -1) }
            }
        }
        #expect(seen.inside > 0 && seen.hole > 0 && seen.outside > 0)
    }

    @Test func paletteSourcesAreSampledNearest() throws {
        let w = 600, h = 600
        var map = [UInt16](repeating: 0, count: 768)
        let colours: [(UInt16, UInt16, UInt16)] = [(65535, 0, 0), (0, 65535, 0), (0, 0, 65535), (65535, 65535, 0)]
        for (i, c) in colours.enumerated() { map[i] = c.0; map[256 + i] = c.1; map[512 + i] = c.2 }
        let source = FunctionSource(width: w, height: h, sampleType: .uint8, colorMap: map) { c, r, _ in
            Float((c / 3 + r / 5) % 4)
        }
        let georef = PlateCarree(west: 20.001, north: 40.3, dx: 0.00011, dy: 0.00009, width: w, height: h)
        var options = BuildOptions()
        options.resampling = .bilinear  // must be overridden for palettes
        options.maxZoom = 14; options.minZoom = 14
        options.approximationError = 0
        let sink = MemorySink()
        try TileBuilder(source: source, georeference: georef, options: options, codec: RawCodec()).run(sink: sink)
        #expect(!sink.writes.isEmpty)
        for (tile, rgba) in sink.writes {
            for py in stride(from: 0, to: 256, by: 3) {
                for px in stride(from: 0, to: 256, by: 3) {
                    let o = (py * 256 + px) * 4
                    guard rgba[o + 3] != 0 else { continue }
                    let p = pixelCentre(tile, px, py)
                    let s = georef.sourcePixel(lon: p.lon, lat: p.lat)!
                    let index = (Int(floor(s.col)) / 3 + Int(floor(s.row)) / 5) % 4
                    let c = colours[index]
                    #expect(
                        rgba[o] == UInt8(c.0 >> 8) && rgba[o + 1] == UInt8(c.1 >> 8) && rgba[o + 2] == UInt8(c.2 >> 8),
                        "\(tile) pixel \(px),\(py)")
                }
            }
        }
    }

    /// Average over a downsampled linear function: the box mean of a linear function is its
    /// value at the box centre.
    @Test func averageDownsamplesByFootprint() throws {
        let w = 4000, h = 4000
        let source = FunctionSource(width: w, height: h) { c, r, _ in Float(Double(c) + 0.5 + 2 * (Double(r) + 0.5)) }
        let georef = PlateCarree(west: 10.0, north: 46.2, dx: 0.00003, dy: 0.00003, width: w, height: h)
        let tile = WebMercator.tile(lon: 10.04, lat: 46.16, zoom: 11)!.tile  // ~ 20 source px per output px
        let ws = ResampleWorkspace()
        _ = try Resampler(
            source: source, mapper: CoordinateMapper(georeference: georef, maxError: 0.125), method: .average
        )
        .resample(MapFrame(tile: tile), tile: tile, into: ws)
        var checked = 0
        for py in stride(from: 0, to: 256, by: 9) {
            for px in stride(from: 0, to: 256, by: 11) {
                let p = pixelCentre(tile, px, py)
                let s = georef.sourcePixel(lon: p.lon, lat: p.lat)!
                guard s.col > 40, s.row > 40, s.col < Double(w - 40), s.row < Double(h - 40) else { continue }
                #expect(abs(Double(ws.values[py * 256 + px]) - (s.col + 2 * s.row)) < 0.5)
                checked += 1
            }
        }
        #expect(checked > 100)
    }
}
