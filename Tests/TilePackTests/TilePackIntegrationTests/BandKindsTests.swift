import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackGeoTIFF
@testable import TilePackArchive
@testable import TilePackBuild
@testable import TilePackStore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePackTestSupport

/// A source with the file hints a test gives.
private struct HintedSource: RasterSource {
    var base: FunctionSource
    var terrainHints: TerrainHints
    var width: Int { base.width }
    var height: Int { base.height }
    var bands: Int { base.bands }
    var sampleType: SampleType { base.sampleType }
    var nodata: Double? { base.nodata }
    var colorMap: [UInt16]? { base.colorMap }
    var alphaBand: Int? { base.alphaBand }
    func readFloats(x: Int, y: Int, width: Int, height: Int) throws -> [Float] {
        try base.readFloats(x: x, y: y, width: width, height: height)
    }
}

/// Writes a `bands`-band uint8 GeoTIFF near Chamonix (EPSG:4326), band b of pixel (c, r) = value(c, r, b).
private func writeStack(
    _ path: String, bands: Int, width: Int = 64, height: Int = 48, metadata: GDALMetadata? = nil,
    value: (Int, Int, Int) -> UInt8
) throws {
    var options = GeoTIFFWriter.Options(width: width, height: height, samplesPerPixel: bands, sampleType: .uint8)
    options.blockWidth = 64
    options.blockHeight = 64
    options.geoTransform = GeoTransform([DEMFixture.west, DEMFixture.step, 0, DEMFixture.north, 0, -DEMFixture.step])
    options.geoKeys = GeoKeyDirectory(entries: [
        (GeoKey.gtModelType, .shorts([2])), (GeoKey.gtRasterType, .shorts([1])),
        (GeoKey.geographicType, .shorts([4326])),
    ])
    options.gdalMetadata = metadata
    let writer = try GeoTIFFWriter(path: path, options: options)
    try writer.write { bx, by, block in
        let r = writer.blockRegion(blockX: bx, blockY: by)
        for j in 0..<r.height {
            for i in 0..<r.width {
                for b in 0..<bands { block[(j * options.blockWidth + i) * bands + b] = value(r.x + i, r.y + j, b) }
            }
        }
    }
}

@Suite("Band kinds: colour by what the band holds, --bands, VRT band choice, query value")
struct BandKindsTests {
    typealias Row = (
        type: SampleType, range: ClosedRange<Float>?, distinct: [Float]?, hints: TerrainHints,
        mode: ColorMode, kind: ValueKind?, negated: Bool
    )

    /// The classification table, one row per rule (and the near misses that must not match it).
    static let rules: [Row] = [
        // Depth by description; positive depths negated.
        (.float32, -2340 ... -19, nil, TerrainHints(descriptions: [0: "Depth"]), .bathymetry, .depth, false),
        (.float32, 19...2340, nil, TerrainHints(descriptions: [0: "Depth"]), .bathymetry, .depth, true),
        (.int16, -50...0, nil, TerrainHints(descriptions: [0: "Bathymetry (m)"]), .bathymetry, .depth, false),
        // Percent by unit, or by name with values within 0…100.
        (.float32, 0...100, nil, TerrainHints(unitTypes: [0: "%"]), .percent, .percent, false),
        (.float32, 3...97, nil, TerrainHints(descriptions: [0: "Sea ice concentration"]), .percent, .percent, false),
        (.uint16, 0...100, nil, TerrainHints(descriptions: [0: "tree cover"]), .percent, .percent, false),
        (.float32, 0...250, nil, TerrainHints(descriptions: [0: "cover"]), .elevation, .elevation, false),  // not 0…100
        // Classes by name: "land cover" is categories, even within 0…100 (and even uint8).
        (.int16, 1...14, [1, 2, 14], TerrainHints(descriptions: [0: "Land cover"]), .classes, .class, false),
        (.uint8, 10...80, [10, 20, 80], TerrainHints(descriptions: [0: "Land use class"]), .classes, .class, false),
        // Terrain signals: heights, or depth when all ≤ 0.
        (.float32, 312...4807, nil, TerrainHints(verticalUnits: 9001), .elevation, .elevation, false),
        (.float32, -400 ... -2, nil, TerrainHints(unitTypes: [0: "m"]), .bathymetry, .depth, false),
        (.int16, 1...14, [1, 2, 3, 14], TerrainHints(descriptions: [0: "DEM"]), .elevation, .elevation, false),
        // Classes: integer (not uint8), few distinct values, no height signal.
        (.int16, 1...14, [1, 2, 3, 14], TerrainHints(), .classes, .class, false),
        (.uint16, 10...90, [10, 20, 90], TerrainHints(), .classes, .class, false),
        // an 8-bit grey image: its grey is its value, nothing stored
        (.uint8, 1...5, [1, 2, 5], TerrainHints(), .rgb, nil, false),
        (.int16, 312...4807, nil, TerrainHints(), .elevation, .elevation, false),  // too many values
        // Float/signed: depth when all ≤ 0, elevation within Earth's range, else a value.
        (.float32, -2000 ... -1, nil, TerrainHints(), .bathymetry, .depth, false),
        (.float32, 0.5...12.25, nil, TerrainHints(), .elevation, .elevation, false),
        (.float32, -1e6...1e6, nil, TerrainHints(), .stretch, .value, false),
        (.uint16, 20...65000, nil, TerrainHints(), .stretch, .value, false),
        (.uint16, 312...4807, nil, TerrainHints(), .elevation, .elevation, false),
    ]

    @Test(arguments: rules.indices)
    func classificationTable(_ i: Int) {
        let row = Self.rules[i]
        let d = ColorDecision.decide(
            requested: .auto, sampleType: row.type, bands: 1, dataBands: [0], hasColorMap: false,
            hints: row.hints, sample: { .init(range: row.range, distinct: row.distinct) })
        #expect(
            d.mode == row.mode && d.valueKind == row.kind && d.negated == row.negated,
            "row \(i): \(d) \(String(describing: d.valueKind))")
        #expect(!d.reason.isEmpty)
    }

    @Test func explicitModesSetTheKindAndReasonsSayWhy() {
        func decide(
            _ requested: ColorMode, _ hints: TerrainHints = TerrainHints(), range: ClosedRange<Float> = 0...100
        ) -> ColorDecision {
            ColorDecision.decide(
                requested: requested, sampleType: .float32, bands: 1, dataBands: [0], hasColorMap: false,
                hints: hints, sample: { .init(range: range) })
        }
        #expect(decide(.classes).valueKind == .class)
        #expect(decide(.percent).valueKind == .percent)
        #expect(decide(.bathymetry).valueKind == .depth)
        #expect(decide(.stretch, TerrainHints(unitTypes: [0: "%"])).valueKind == .percent)
        let positive = decide(.bathymetry, TerrainHints(descriptions: [0: "depth"]), range: 5...90)
        #expect(positive.negated && positive.reason == "as requested")
        let auto = decide(.auto, TerrainHints(descriptions: [0: "Depth"]), range: 5...90)
        #expect(
            auto.description == "bathymetry (single-band float32 with DESCRIPTION \"Depth\", positive depths negated)")
        // Several data bands: no kind, nothing stored.
        let rgb = ColorDecision.decide(
            requested: .auto, sampleType: .uint8, bands: 6, dataBands: Array(0..<6), hasColorMap: false,
            hints: TerrainHints(), sample: { .init(range: nil) })
        #expect(rgb.mode == .rgb && rgb.valueKind == nil)
    }

    @Test func classPaletteAndLegendAreFixed() throws {
        // No collisions: every code keeps its home entry v mod 32, in every archive.
        let plain = ClassPalette(codes: [7, 3, -1, 7, 2.5, .nan])
        #expect(plain.codes == [-1, 3, 7] && plain.overrides.isEmpty)
        let legend = plain.legend
        #expect(legend.map(\.value) == [-1, 3, 7])
        #expect(legend.map(\.label) == ["class -1", "class 3", "class 7"])
        #expect(legend.allSatisfy { $0.rgba.count == 4 && $0.rgba[3] == 255 })
        func rgb(_ i: Int) -> [UInt8] {
            [ClassPalette.colors[i].0, ClassPalette.colors[i].1, ClassPalette.colors[i].2]
        }
        #expect(legend.map { Array($0.rgba.prefix(3)) } == [rgb(31), rgb(3), rgb(7)])
        #expect(ClassPalette.home(.nan) == nil && ClassPalette.home(3e12) == nil && plain.color(-3e12) == nil)
        #expect(Set(ClassPalette.colors.map { "\($0.0),\($0.1),\($0.2)" }).count == 32)
        let json = try LegendEntry.json(Array(legend.prefix(1)))
        #expect(json.hasPrefix("[{\"label\":\"class -1\",\"rgba\":[") && json.hasSuffix(",\"value\":-1}]"))
        #expect(
            PercentRamp.color(0) == (68, 1, 84) && PercentRamp.color(100) == (253, 231, 37)
                && PercentRamp.color(250) == (253, 231, 37))
    }

    @Test func classPaletteSeparatesCodes32Apart() throws {
        // NLCD land cover: 11/43 and 31/95 share a home entry.
        let nlcd: [Float] = [11, 12, 21, 22, 23, 24, 31, 41, 42, 43, 52, 71, 81, 82, 90, 95]
        let p = ClassPalette(codes: nlcd.reversed())
        let entries = nlcd.compactMap { p.index($0) }
        #expect(entries.count == 16 && Set(entries).count == 16)
        #expect(Set(nlcd.compactMap { p.color($0) }.map { "\($0.0),\($0.1),\($0.2)" }).count == 16)
        let legend = p.legend
        #expect(legend.map(\.value) == nlcd.map(Double.init) && Set(legend.map(\.rgba)).count == 16)
        // The smaller code keeps its home; the later takes the next entry no code of the build
        // uses (43: 11 → 12 is code 12's → 13; 95: 31 → 0).
        #expect(p.index(11) == 11 && p.index(43) == 13 && p.index(31) == 31 && p.index(95) == 0)
        #expect(p.overrides.map(\.code) == [43, 95] && p.overrides.map(\.index) == [13, 0])
        for v in nlcd where v != 43 && v != 95 { #expect(p.index(v) == ClassPalette.home(v)) }
        // A code the sample missed falls back to v mod 32 (75 → 11, shared with 11).
        #expect(p.index(75) == 11 && p.index(-21) == 11)
        // Deterministic: the same codes in any order give the same table.
        let q = ClassPalette(codes: nlcd.shuffled() + nlcd)
        #expect(q.codes == p.codes && q.legend.map(\.rgba) == legend.map(\.rgba))
    }

    @Test func classPaletteOf32CodesIsFullAndA33rdFallsBack() throws {
        // 32 codes with only 16 homes (0…15 and 32…47): all 32 entries used once.
        let codes: [Float] = (0..<16).map { Float($0) } + (32..<48).map { Float($0) }
        let p = ClassPalette(codes: codes)
        #expect(Set(codes.compactMap { p.index($0) }).count == 32)
        #expect(p.index(32) == 16 && p.index(47) == 31)
        // A 33rd code (not in the table) falls back to its home.
        #expect(p.index(64) == 0 && p.index(95) == 31)
        // More than 32 codes cannot all be told apart: the last keeps its (shared) home.
        let over = ClassPalette(codes: codes + [64])
        #expect(over.index(64) == 0 && over.overrides.count == 16)
    }

    @Test func classesColourPixelsThroughTheBuildTable() throws {
        // NLCD codes in vertical stripes (as the uint8 NLCD rasters hold them).
        let nlcd: [Float] = [11, 12, 21, 22, 23, 24, 31, 41, 42, 43, 52, 71, 81, 82, 90, 95]
        let src = FunctionSource(width: 64, height: 16, sampleType: .uint8) { c, _, _ in nlcd[c / 4] }
        let colorizer = try Colorizer(source: src, mode: .classes, elevationRange: nil)
        #expect(colorizer.decision.mode == .classes)
        #expect(colorizer.legend.map(\.value) == nlcd.map(Double.init) && Set(colorizer.legend.map(\.rgba)).count == 16)
        let values = nlcd + [75]
        let n = values.count, grid = MapFrame(zoom: 10, originX: 0, originY: 0, width: n, height: 1)
        var rgba = [UInt8](repeating: 0, count: n * 4)
        let stored = colorizer.colorize(values: values, valid: [UInt8](repeating: 1, count: n), grid: grid, into: &rgba)
        #expect(stored == values)
        for (i, entry) in colorizer.legend.enumerated() { #expect(Array(rgba[(i * 4)..<(i * 4 + 4)]) == entry.rgba) }
        // 43 and 11 differ on the map, not only in the legend; 75 (unseen) falls back to 75 mod 32 = 11.
        #expect(rgba[0..<4] != rgba[36..<40] && Array(rgba[64..<67]) == Array(rgba[0..<3]))
    }

    @Test func classesAreSampledNearestAndParentsPickNeverAverage() throws {
        // int16 land cover: 3 codes in vertical stripes.
        let src = FunctionSource(width: 32, height: 32, sampleType: .int16) { c, _, _ in Float([4, 9, 30][c / 11]) }
        let colorizer = try Colorizer(source: src, mode: .auto, elevationRange: nil)
        #expect(
            colorizer.decision.mode == .classes && colorizer.forcesNearest && colorizer.storesValues
                && colorizer.categorical)
        #expect(colorizer.legend.map(\.value) == [4, 9, 30])
        let size = 4
        let a: [Float] = [1, 1, 2, 3] + [1, 2, .nan, .nan] + [5, 6, 7, 8] + [6, 5, 8, .nan]
        let rgba: [UInt8] = (0..<(size * size)).flatMap { i -> [UInt8] in [UInt8(i), 0, 0, 255] }
        let picked = Pyramid.downsampleClasses([a, nil, nil, nil], colours: [rgba, nil, nil, nil], size: size)
        // Blocks: {1,1,1,2} → 1; {2,3,nan,nan} → 2 (tie: first); {5,6,6,5} → 5 (tie: first); {7,8,8,nan} → 8.
        #expect(
            picked.values[0] == 1 && picked.values[1] == 2 && picked.values[size] == 5 && picked.values[size + 1] == 8)
        #expect(picked.rgba[0] == 0 && picked.rgba[4] == 2 && picked.rgba[(size + 1) * 4] == 11)
        #expect(picked.values[2].isNaN && picked.rgba[2 * 4 + 3] == 0)
    }

    @Test func positiveDepthsAreNegatedInColourAndStoredValues() throws {
        let src = HintedSource(
            base: FunctionSource(width: 16, height: 16) { c, r, _ in Float(10 + c + r) },
            terrainHints: TerrainHints(descriptions: [0: "Water depth"]))
        let colorizer = try Colorizer(source: src, mode: .auto, elevationRange: nil)
        #expect(colorizer.decision.mode == .bathymetry && colorizer.decision.negated)
        #expect(colorizer.tint == .bathymetry)
        let grid = MapFrame(tile: TileID(z: 10, x: 530, y: 360)!, border: colorizer.border)
        let n = grid.width * grid.height
        var rgba = [UInt8](repeating: 0, count: 256 * 256 * 4)
        let values = colorizer.colorize(
            values: [Float](repeating: 42, count: n), valid: [UInt8](repeating: 1, count: n), grid: grid, into: &rgba)
        #expect(values?.allSatisfy { $0 == -42 } == true)
        // −42 m is the shallows' blue of the bathymetric ramp, shaded flat.
        #expect(rgba[2] > rgba[0] && rgba[2] > rgba[1] && rgba[3] == 255)
    }

    @Test func bandsParseAndABandTheFileLacksIsAUsageError() throws {
        #expect(try BandSelection.parse("3,2,1") == [3, 2, 1])
        #expect(try BandSelection.parse(" 4 ") == [4])
        #expect(try BandSelection.parse("3,2,1,6") == [3, 2, 1, 6])
        for bad in ["", "0", "3,,1", "a", "1,2,3,4,5", "-1", "3.5"] {
            #expect(throws: BuildError.self, "\(bad)") { try BandSelection.parse(bad) }
        }
        let six = FunctionSource(width: 8, height: 8, bands: 6, sampleType: .uint8) { _, _, b in Float(b * 10) }
        do {
            _ = try BandSelection.resolve(requested: [3, 2, 7], source: six)
            Issue.record("band 7 of 6 accepted")
        } catch {
            #expect(error.category == .invalidArgument)
            #expect(error.description == "--bands 3,2,7: the source has no band 7; it has 6 bands (1…6)")
        }
        let chosen = try #require(try BandSelection.resolve(requested: [3, 2, 1], source: six))
        #expect(chosen.bands == [2, 1, 0] && chosen.description == "3,2,1 (--bands)")
        let view = SelectedBandsSource(base: six, picks: chosen.bands)
        #expect(view.bands == 3)
        #expect(try view.readFloats(x: 1, y: 1, width: 2, height: 1) == [20, 10, 0, 20, 10, 0])
        #expect(BandSelection.hint(for: six, selection: nil)?.contains("--bands 3,2,1") == true)
        #expect(try BandSelection.resolve(requested: nil, source: six) == nil)
    }

    @Test func aSelectionKeepsALayeredMosaicLayered() throws {
        let dir = TemporaryDirectory()
        let (geo, utm) = try MosaicTests().writeTwoCRSPieces(dir)
        let m = try MosaicSource(files: [geo, utm])
        let view = SelectedBandsSource(base: m, picks: [0, 0, 0])
        #expect(view.rasterLayers.count == 2)
        let plain = Resampler.forSource(m, georeference: m.grid, maxError: 0.125, method: .bilinear)
        let picked = Resampler.forSource(view, georeference: m.grid, maxError: 0.125, method: .bilinear)
        #expect(picked is LayeredResampler)
        let tile = try #require(try MosaicTests().maxZoomTiles(m).first)
        let grid = MapFrame(tile: tile, border: 0)
        let a = ResampleWorkspace(), b = ResampleWorkspace()
        _ = try plain.resample(grid, tile: tile, into: a)
        _ = try picked.resample(grid, tile: tile, into: b)
        let n = grid.width * grid.height
        #expect(a.valid.prefix(n) == b.valid.prefix(n) && a.valid.prefix(n).contains(1))
        #expect(
            (0..<n).allSatisfy { k in a.valid[k] == 0 || (0..<3).allSatisfy { b.values[k * 3 + $0] == a.values[k] } })
    }

    @Test func namedRedGreenBlueBandsAreDrawnAsRGB() throws {
        let six = FunctionSource(width: 8, height: 8, bands: 6, sampleType: .uint8) { _, _, b in Float(b) }
        let named = HintedSource(
            base: six, terrainHints: TerrainHints(descriptions: [0: "Blue", 1: "Green", 2: "Red", 3: "NIR"]))
        #expect(try BandSelection.resolve(requested: nil, source: named)?.bands == [2, 1, 0])
        var interp = TerrainHints(descriptions: [0: "Red", 1: "Green", 2: "Blue"])  // COLORINTERP wins
        interp.colorInterps = [3: "Red", 4: "Green", 5: "Blue"]
        let byInterp = try #require(
            try BandSelection.resolve(requested: nil, source: HintedSource(base: six, terrainHints: interp)))
        #expect(byInterp.bands == [3, 4, 5] && byInterp.reason.hasPrefix("COLORINTERP"))
        // Two bands named red: ambiguous, drawn as they are.
        let twice = HintedSource(
            base: six, terrainHints: TerrainHints(descriptions: [0: "Red", 1: "Green", 2: "Blue", 3: "Red edge"]))
        #expect(try BandSelection.resolve(requested: nil, source: twice) == nil)
    }

    /// What `gdal_translate -of VRT -b 3 -b 2 -b 1 stack.tif out.vrt` (GDAL 3.6) writes, on our file.
    static func gdalTranslateVRT(_ tif: String, width: Int, height: Int) -> String {
        let bands = [(3, "Red"), (2, "Green"), (1, "Blue")].enumerated().map { k, b in
            """
              <VRTRasterBand dataType="Byte" band="\(k + 1)" blockYSize="64">
                <ColorInterp>Undefined</ColorInterp>
                <SimpleSource>
                  <SourceFilename relativeToVRT="1">\(tif.split(separator: "/").last.map(String.init) ?? tif)</SourceFilename>
                  <SourceBand>\(b.0)</SourceBand>
                  <SourceProperties RasterXSize="\(width)" RasterYSize="\(height)" DataType="Byte" BlockXSize="64" BlockYSize="64" />
                  <SrcRect xOff="0" yOff="0" xSize="\(width)" ySize="\(height)" />
                  <DstRect xOff="0" yOff="0" xSize="\(width)" ySize="\(height)" />
                </SimpleSource>
              </VRTRasterBand>
            """
        }.joined(separator: "\n")
        return """
            <VRTDataset rasterXSize="\(width)" rasterYSize="\(height)">
              <SRS dataAxisToSRSAxisMapping="2,1">GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563]],AUTHORITY["EPSG","4326"]]</SRS>
              <GeoTransform> \(DEMFixture.west), \(DEMFixture.step), 0, \(DEMFixture.north), 0, -\(DEMFixture.step)</GeoTransform>
              <Metadata><MDI key="AREA_OR_POINT">Area</MDI></Metadata>
              <Metadata domain="IMAGE_STRUCTURE"><MDI key="INTERLEAVE">PIXEL</MDI></Metadata>
            \(bands)
            </VRTDataset>
            """
    }

    @Test func aVRTTakingBands321BuildsLikeBands321() throws {
        let scratch = TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let tif = scratch.file("stack.tif")
        // Landsat order: blue, green, red, NIR, SWIR1, SWIR2.
        try writeStack(tif, bands: 6) { c, r, b in UInt8((c * 3 + r * 5 + b * 40) % 250 + 1) }
        let vrtPath = try scratch.write("bgr.vrt", Array(Self.gdalTranslateVRT(tif, width: 64, height: 48).utf8))
        let mosaic = try MosaicSource(vrt: try VRTDocument(path: vrtPath))
        #expect(mosaic.vrtBands == [2, 1, 0] && mosaic.bands == 6)

        func build(_ source: String, bands: [Int]?, _ name: String) throws -> (RegionBuild.Result, [TileID: [UInt8]]) {
            var request = RegionBuild.Request(sourcePath: source)
            request.outputPath = scratch.file(name)
            request.codec = .png
            request.options.bands = bands
            let result = try RegionBuild(request).run()
            let reader = try MBTilesReader(path: result.outputPath)
            var tiles: [TileID: [UInt8]] = [:]
            for id in result.report.perZoom.keys.flatMap({ z in tilesAt(z, reader) }) {
                tiles[id] = try reader.tile(id)
            }
            return (result, tiles)
        }
        func tilesAt(_ z: Int, _ reader: MBTilesReader) -> [TileID] {
            let b = reader.bounds ?? GeoBounds(west: 0, south: 0, east: 0, north: 0)
            guard let a = WebMercator.tile(lon: b.west, lat: b.north, zoom: z),
                let c = WebMercator.tile(lon: b.east, lat: b.south, zoom: z)
            else { return [] }
            return (a.tile.y...c.tile.y).flatMap { y in
                (a.tile.x...c.tile.x).compactMap { x in TileID(z: z, x: x, y: y) }
            }
        }
        let (viaVRT, vrtTiles) = try build(vrtPath, bands: nil, "vrt.mbtiles")
        let (viaBands, bandTiles) = try build(tif, bands: [3, 2, 1], "bands.mbtiles")
        let (plain, plainTiles) = try build(tif, bands: nil, "plain.mbtiles")
        #expect(viaVRT.report.color.mode == .rgb && viaBands.bands == "3,2,1 (--bands)")
        #expect(plain.bands?.contains("--bands 3,2,1") == true)
        #expect(!vrtTiles.isEmpty && vrtTiles == bandTiles)
        #expect(plainTiles != bandTiles)
        // --bands on top of the VRT counts the VRT's bands.
        var request = RegionBuild.Request(sourcePath: vrtPath)
        request.outputPath = scratch.file("bad.mbtiles")
        request.options.bands = [4]
        #expect { try RegionBuild(request).run() } throws: {
            ($0 as? BuildError)?.description.contains("it has 3 bands") == true
        }
    }

    @Test func queryAnswersValueAndKind() throws {
        let scratch = TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        // An int16 class raster (4 codes in blocks) and a float32 percent raster.
        let classes = scratch.file("classes.tif")
        try DEMFixture.write(classes, type: .int16, nodata: -1, width: 64, height: 64) { c, r in
            Double([3, 7, 11, 12][(c / 32) * 2 + r / 32])
        }
        let percent = scratch.file("percent.tif")
        try DEMFixture.write(
            percent, type: .float32, nodata: nil, width: 64, height: 64,
            metadata: GDALMetadata(items: [.init(name: "UNITTYPE", value: "%", sample: 0, role: "unittype")])
        ) { c, _ in
            Double(c) * 100 / 63
        }
        func build(_ path: String) throws -> RegionBuild.Result {
            var request = RegionBuild.Request(sourcePath: path)
            request.outputPath = path + ".mbtiles"
            request.codec = .png
            return try RegionBuild(request).run()
        }
        let c = try build(classes), p = try build(percent)
        #expect(c.report.color.mode == .classes && p.report.color.mode == .percent)
        let meta = try MBTilesReader(path: c.outputPath).metadata
        #expect(meta["tilepack:value_kind"] == "class" && meta["tilepack:color_mode"] == "classes")
        #expect(meta["tilepack:datum_transform"] == "none (WGS 84)" && c.datumTransform == "none (WGS 84)")
        let legend = try JSONDecoder().decode([LegendEntry].self, from: Data((meta["tilepack:legend"] ?? "").utf8))
        #expect(legend.map(\.value) == [3, 7, 11, 12])
        #expect(try MBTilesReader(path: p.outputPath).summary.valueKind == .percent)

        for (col, row, code) in [(10, 10, 3.0), (10, 50, 7.0), (50, 10, 11.0), (50, 50, 12.0)] {
            let lon = DEMFixture.west + (Double(col) + 0.5) * DEMFixture.step,
                lat = DEMFixture.north - (Double(row) + 0.5) * DEMFixture.step
            let answer = try #require(
                try PointQuery.answer(
                    try TileQuery(lat: lat, lon: lon, zoom: c.report.metadata.maxZoom),
                    store: TileStore.over([c.outputPath])
                ).first)
            #expect(answer.value == code && answer.valueKind == .class && answer.elevationMetres == nil)
            let json = try answer.json
            #expect(
                json.contains("\"value\":\(Int(code))") && json.contains("\"value_kind\":\"class\"")
                    && json.contains("\"elevation_m\":null"))
            #expect(answer.text.contains("class:     \(Int(code)) (from zoom"))
        }
        let lon = DEMFixture.west + 32 * DEMFixture.step, lat = DEMFixture.north - 32 * DEMFixture.step
        let answer = try #require(
            try PointQuery.answer(
                try TileQuery(lat: lat, lon: lon, zoom: p.report.metadata.maxZoom),
                store: TileStore.over([p.outputPath])
            ).first)
        let v = try #require(answer.value)
        #expect(abs(v - 50) < 2 && answer.valueKind == .percent && answer.elevationMetres == nil)
        #expect(answer.text.contains("value:     ") && answer.text.contains(" % (from zoom"))
        // Archives that predate the key: elevation when they store it.
        #expect(ValueKind(metadata: [:], hasElevationTable: true) == .elevation)
        #expect(ValueKind(metadata: ["tilepack:elevation": "false"], hasElevationTable: true) == nil)
        #expect(ValueKind(metadata: ["tilepack:value_kind": "bogus"], hasElevationTable: true) == .value)
        #expect(
            try JSONOutput.string(UncoveredPointAnswer(query: try TileQuery(lat: 1, lon: 1, zoom: 3), searched: "x"))
                .contains("\"value\":null,\"value_kind\":null"))
    }
}

@Suite("Queries answer from the nearest zoom with a grid")
struct QueryZoomOrderTests {
    /// An archive built with `--elevation max-zoom` keeps grids at its max zoom only: a query
    /// at a coarser zoom answers from that finer grid and says so (`data_zoom`, not overzoomed).
    @Test func maxZoomOnlyElevationAnswersCoarserQueries() throws {
        let scratch = TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let dem = scratch.file("dem.tif")
        try DEMFixture.write(dem, type: .int16, nodata: -32768, width: 64, height: 64) { c, r in
            Double(1000 + c * 10 + r)
        }
        var request = RegionBuild.Request(sourcePath: dem)
        request.outputPath = dem + ".mbtiles"
        request.codec = .png
        request.options.elevationLevels = .maxZoom
        request.options.minZoom = 10
        let built = try RegionBuild(request).run()
        let (minZoom, maxZoom) = (built.report.metadata.minZoom, built.report.metadata.maxZoom)
        try #require(minZoom < maxZoom)
        let lon = DEMFixture.west + 20.5 * DEMFixture.step, lat = DEMFixture.north - 30.5 * DEMFixture.step
        for zoom in [minZoom, max(0, minZoom - 6)] {
            let answer = try #require(
                try PointQuery.answer(
                    try TileQuery(lat: lat, lon: lon, zoom: zoom), store: TileStore.over([built.outputPath])
                ).first
            )
            let metres = try #require(answer.elevationMetres, "zoom \(zoom)")
            #expect(
                abs(metres - 1230) < 15 && answer.elevationZoom == maxZoom && !answer.overzoomed,
                "zoom \(zoom): \(metres)")
        }
    }
}
