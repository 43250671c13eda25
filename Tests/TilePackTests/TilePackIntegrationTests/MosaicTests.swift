import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
@testable import TilePackStore
#if canImport(Glibc)
import Glibc
#endif
import TilePackTestSupport

/// Writes DEM pieces: one float32 raster in EPSG:4326 (0.0003° pixels near Chamonix, as
/// DEMFixture) cut at any window, so a mosaic of the pieces can be compared with the whole.
enum MosaicFixture {
    static let width = 180, height = 150
    static let nodata = -9999.0

    /// Hills with a nodata hole, so nodata crosses a seam.
    static func value(_ c: Int, _ r: Int) -> Double? {
        let dx = c - 60, dy = r - 70
        if dx * dx + dy * dy < 64 { return nil }
        return DEMFixture.hills(c, r) + 0.25 * Double((c * 7 + r * 3) % 5)
    }

    /// Writes the window (x, y, w, h) of the whole raster as a GeoTIFF of its own.
    static func writePiece(
        _ path: String, x: Int, y: Int, w: Int, h: Int, type: SampleType = .float32,
        bands: Int = 1, nodata: Double? = nodata, epsg: UInt16 = 4326,
        transform: GeoTransform? = nil
    ) throws {
        var options = GeoTIFFWriter.Options(width: w, height: h, samplesPerPixel: bands, sampleType: type)
        options.blockWidth = 64
        options.blockHeight = 64
        let s = DEMFixture.step
        options.geoTransform =
            transform ?? GeoTransform([DEMFixture.west + Double(x) * s, s, 0, DEMFixture.north - Double(y) * s, 0, -s])
        let geographic = epsg == 4326
        options.geoKeys = GeoKeyDirectory(entries: [
            (GeoKey.gtModelType, .shorts([geographic ? 2 : 1])),
            (GeoKey.gtRasterType, .shorts([1])),
            (geographic ? GeoKey.geographicType : GeoKey.projectedCSType, .shorts([epsg])),
        ])
        options.noData = nodata
        let writer = try GeoTIFFWriter(path: path, options: options)
        try DEMFixture.fill(writer, blockWidth: options.blockWidth, bands: bands, type: type) { c, r in
            value(x + c, y + r) ?? nodata ?? 0
        }
    }

    /// The whole raster and its four pieces, cut off the tile grid at (cx, cy).
    static let cx = 77, cy = 61
    static var pieces: [(name: String, x: Int, y: Int, w: Int, h: Int)] {
        [
            ("a.tif", 0, 0, cx, cy), ("b.tif", cx, 0, width - cx, cy), ("c.tif", 0, cy, cx, height - cy),
            ("d.tif", cx, cy, width - cx, height - cy),
        ]
    }

    /// A VRT over the pieces as gdalbuildvrt writes it.
    static func vrt(pieces: [(name: String, x: Int, y: Int, w: Int, h: Int)], extra: String = "") -> String {
        let s = DEMFixture.step
        var xml = """
            <VRTDataset rasterXSize="\(width)" rasterYSize="\(height)">
              <SRS>GEOGCS["WGS 84",AUTHORITY["EPSG","4326"]]</SRS>
              <GeoTransform> \(DEMFixture.west), \(s), 0, \(DEMFixture.north), 0, \(-s)</GeoTransform>
              <VRTRasterBand dataType="Float32" band="1">
                <NoDataValue>\(nodata)</NoDataValue>
                <ColorInterp>Gray</ColorInterp>

            """
        for p in pieces {
            xml += """
                    <ComplexSource>
                      <SourceFilename relativeToVRT="1">\(p.name)</SourceFilename>
                      <SourceBand>1</SourceBand>
                      <SourceProperties RasterXSize="\(p.w)" RasterYSize="\(p.h)" DataType="Float32" BlockXSize="64" BlockYSize="64" />
                      <SrcRect xOff="0" yOff="0" xSize="\(p.w)" ySize="\(p.h)" />
                      <DstRect xOff="\(p.x)" yOff="\(p.y)" xSize="\(p.w)" ySize="\(p.h)" />
                      <NODATA>\(nodata)</NODATA>\(extra)
                    </ComplexSource>

                """
        }
        return xml + "  </VRTRasterBand>\n</VRTDataset>\n"
    }
}

@Suite("Mosaics: several GeoTIFFs and VRTs as one source")
struct MosaicTests {
    /// Builds `sources` into `output` with PNG tiles (lossless and fast in a debug build).
    func build(_ sources: [String], _ output: String, maxOpenFiles: Int = 64) throws -> RegionBuild.Result {
        var request = RegionBuild.Request(sourcePaths: sources)
        request.outputPath = output
        request.codec = .png
        request.maxOpenFiles = maxOpenFiles
        return try RegionBuild(request).run()
    }

    /// Every tile and elevation grid of two archives.
    func contents(_ path: String) throws -> [TileID: ([UInt8], [Float]?)] {
        let reader = try MBTilesReader(path: path)
        var out: [TileID: ([UInt8], [Float]?)] = [:]
        for z in reader.zoomRange ?? 0...0 {
            for id in try reader.tileIDs(zoom: z) {
                out[id] = (try reader.tile(id) ?? [], try reader.elevation(id)?.values)
            }
        }
        return out
    }

    /// Writes the whole DEM and its four pieces; returns the scratch directory.
    func writeWholeAndPieces() throws -> TemporaryDirectory {
        let dir = TemporaryDirectory()
        try MosaicFixture.writePiece(dir.file("whole.tif"), x: 0, y: 0, w: MosaicFixture.width, h: MosaicFixture.height)
        _ = mkdir(dir.file("pieces"), 0o755)
        for p in MosaicFixture.pieces {
            try MosaicFixture.writePiece(dir.file("pieces/" + p.name), x: p.x, y: p.y, w: p.w, h: p.h)
        }
        return dir
    }

    @Test func piecesFolderAndVRTBuildTheUncutTiles() throws {
        let dir = try writeWholeAndPieces()
        let whole = try contents(try build([dir.file("whole.tif")], dir.file("whole.mbtiles")).outputPath)
        let vrt = try dir.write("pieces/mosaic.vrt", Array(MosaicFixture.vrt(pieces: MosaicFixture.pieces).utf8))
        let inputs: [[String]] = [
            MosaicFixture.pieces.map { dir.file("pieces/" + $0.name) }, [dir.file("pieces")], [vrt],
        ]
        for (k, input) in inputs.enumerated() {
            let result = try build(input, dir.file("m\(k).mbtiles"))
            #expect(result.mosaic?.files == 4)
            let mosaic = try contents(result.outputPath)
            #expect(mosaic.keys.sorted() == whole.keys.sorted())
            for (id, (tile, metres)) in whole {
                // PNG is lossless, so "colours within 1" is met as equality.
                #expect(mosaic[id]?.0 == tile, "\(input): tile \(id) differs")
                let m = mosaic[id]?.1
                #expect(
                    m?.count == metres?.count
                        && zip(m ?? [], metres ?? []).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) },
                    "\(input): elevation of \(id) differs")
            }
            let meta = try MBTilesReader(path: result.outputPath).metadata
            let sources = try #require(meta["tilepack:sources"])
            for p in MosaicFixture.pieces { #expect(sources.contains("\"file\":\"\(p.name)\"")) }
            #expect(sources.contains("\"sha256\":\"\(try FileDigest.sha256(path: dir.file("pieces/a.tif")))\""))
        }
    }

    @Test func aQueryOnTheSeamAnswersLikeTheUncutBuild() throws {
        let dir = try writeWholeAndPieces()
        let whole = try build([dir.file("whole.tif")], dir.file("whole.mbtiles"))
        let mosaic = try build([dir.file("pieces")], dir.file("mosaic.mbtiles"))
        let s = DEMFixture.step
        // On the vertical seam, the horizontal one, and the corner where all four meet.
        for (c, r) in [
            (MosaicFixture.cx, 20), (30, MosaicFixture.cy), (MosaicFixture.cx, MosaicFixture.cy),
            (MosaicFixture.cx, 120),
        ] {
            let lon = DEMFixture.west + Double(c) * s, lat = DEMFixture.north - Double(r) * s
            let query = try TileQuery(lat: lat, lon: lon, zoom: whole.report.metadata.maxZoom)
            let a = try PointQuery.answer(query, store: TileStore.over([whole.outputPath]))
            let b = try PointQuery.answer(query, store: TileStore.over([mosaic.outputPath]))
            #expect(a.first?.elevationMetres != nil)
            #expect(a.first?.elevationMetres == b.first?.elevationMetres, "seam point \(c),\(r)")
            #expect(a.first?.rgba == b.first?.rgba)
        }
        // The raw grid across the corner is the whole file's, pixel for pixel.
        let tiff = try TIFFFile(path: dir.file("whole.tif"))
        let m = try MosaicSource(files: MosaicFixture.pieces.map { dir.file("pieces/" + $0.name) })
        let a = try tiff.readFloats(x: MosaicFixture.cx - 5, y: MosaicFixture.cy - 5, width: 10, height: 10)
        let b = try m.readFloats(x: MosaicFixture.cx - 5, y: MosaicFixture.cy - 5, width: 10, height: 10)
        #expect(a == b)
        #expect(m.grid.transform == tiff.image.geoTransform)
    }

    @Test func laterFilesWinAndNodataShowsWhatIsBelow() throws {
        let dir = TemporaryDirectory()
        // Two files on the same 40 × 40 pixels: `over` (listed last) has a nodata hole
        // centred at (20, 20); `under` has none, and shows through the hole only.
        let s = DEMFixture.step
        let origin = GeoTransform([DEMFixture.west, s, 0, DEMFixture.north, 0, -s])
        try MosaicFixture.writePiece(dir.file("under.tif"), x: 100, y: 0, w: 40, h: 40, transform: origin)
        try MosaicFixture.writePiece(dir.file("over.tif"), x: 40, y: 50, w: 40, h: 40, transform: origin)
        let m = try MosaicSource(files: [dir.file("under.tif"), dir.file("over.tif")])
        #expect(m.nodata == MosaicFixture.nodata)
        let v = try m.readFloats(x: 0, y: 0, width: 40, height: 40)
        #expect(v[0] == Float(MosaicFixture.value(40, 50) ?? 0))
        #expect(v[20 * 40 + 20] == Float(MosaicFixture.value(120, 20) ?? 0))
    }

    @Test func filesInAnotherCRSAreResampledIntoTheGrid() throws {
        let dir = TemporaryDirectory()
        // A UTM 32N piece (Chamonix lies in zone 32) next to a geographic one.
        try MosaicFixture.writePiece(dir.file("geo.tif"), x: 0, y: 0, w: 60, h: 60)
        try MosaicFixture.writePiece(
            dir.file("utm.tif"), x: 0, y: 0, w: 60, h: 60, epsg: 32632,
            transform: GeoTransform([333_000, 25, 0, 5_092_000, 0, -25]))
        let m = try MosaicSource(files: [dir.file("geo.tif"), dir.file("utm.tif")])
        #expect(m.crsNames == ["EPSG:4326", "EPSG:32632"])
        #expect(m.grid.crs == (try GeoReference(image: TIFFFile(path: dir.file("geo.tif")).image, path: "")).crs)
        #expect(m.width > 60 || m.height > 60)
        let v = try m.readFloats(x: 0, y: 0, width: m.width, height: m.height)
        #expect(v.contains { !$0.isNaN && $0 != Float(MosaicFixture.nodata) })
    }

    /// A geographic piece (60 × 60 pixels of about 23 × 33 m) and a UTM 32N piece (10 m
    /// pixels) whose west half overlaps its east third: two grids, so the mosaic is layered.
    func writeTwoCRSPieces(_ dir: TemporaryDirectory) throws -> (geo: String, utm: String) {
        try MosaicFixture.writePiece(dir.file("geo.tif"), x: 0, y: 0, w: 60, h: 60)
        // Put the UTM piece's north-west corner on the geographic piece's pixel (40, 10).
        let utm = try GeoReference(
            crs: CRS(epsg: 32632), transform: GeoTransform([0, 1, 0, 0, 0, -1]), width: 1, height: 1)
        let s = DEMFixture.step
        let corner = utm.pixel(lon: DEMFixture.west + 40 * s, lat: DEMFixture.north - 10 * s)
        try MosaicFixture.writePiece(
            dir.file("utm.tif"), x: 20, y: 30, w: 100, h: 110, epsg: 32632,
            transform: GeoTransform([corner.col, 10, 0, -corner.row, 0, -10]))
        return (dir.file("geo.tif"), dir.file("utm.tif"))
    }

    /// Max-zoom tiles of a source, as the build plans them.
    func maxZoomTiles(_ source: MosaicSource) throws -> [TileID] {
        let plan = try TileBuilder(
            source: source, georeference: source.grid, options: BuildOptions(), codec: PNGCodec()
        ).plan()
        let r = try #require(plan.range(atZoom: plan.maxZoom))
        return (r.minY...r.maxY).flatMap { y in (r.minX...r.maxX).map { x in TileID(unchecked: plan.maxZoom, x, y) } }
    }

    /// One file resampled alone onto `grid`, as a single-file build would.
    func sampleAlone(_ path: String, _ grid: MapFrame, _ tile: TileID, _ method: Resampling) throws -> ResampleWorkspace
    {
        let tiff = try TIFFFile(path: path)
        let geo = try GeoReference(image: tiff.image, path: path)
        let ws = ResampleWorkspace()
        _ = try Resampler(source: tiff, mapper: CoordinateMapper(georeference: geo, maxError: 0.125), method: method)
            .resample(grid, tile: tile, into: ws)
        return ws
    }

    @Test(arguments: [Resampling.bilinear, .nearest, .average])
    func filesInTwoCRSsAreSampledNativelyAndTheLastListedWins(_ method: Resampling) throws {
        let dir = TemporaryDirectory()
        let (geo, utm) = try writeTwoCRSPieces(dir)
        for order in [[geo, utm], [utm, geo]] {
            let m = try MosaicSource(files: order)
            #expect(m.layers.count == 2)
            let resampler = Resampler.forSource(m, georeference: m.grid, maxError: 0.125, method: method)
            #expect(resampler is LayeredResampler)
            var overlap = 0, onlyFirst = 0, onlyLast = 0
            for tile in try maxZoomTiles(m) {
                let grid = MapFrame(tile: tile, border: 1)
                let ws = ResampleWorkspace()
                _ = try resampler.resample(grid, tile: tile, into: ws)
                let first = try sampleAlone(order[0], grid, tile, method),
                    last = try sampleAlone(order[1], grid, tile, method)
                for k in 0..<(grid.width * grid.height) {
                    // Each output pixel is the native sample of the last listed file valid there.
                    let want: ResampleWorkspace? = last.valid[k] != 0 ? last : first.valid[k] != 0 ? first : nil
                    #expect((ws.valid[k] != 0) == (want != nil), "\(tile) pixel \(k)")
                    if let want { #expect(ws.values[k] == want.values[k], "\(tile) pixel \(k)") }
                    switch (first.valid[k] != 0, last.valid[k] != 0) {
                    case (true, true): overlap += 1
                    case (true, false): onlyFirst += 1
                    case (false, true): onlyLast += 1
                    default: break
                    }
                }
            }
            // The seam band exists and both files show: the test compares something.
            #expect(overlap > 1000 && onlyFirst > 1000 && onlyLast > 1000, "\(overlap) \(onlyFirst) \(onlyLast)")
        }
    }

    @Test func filesOnOneGridAreOneLayerSampledAcrossTheirSeams() throws {
        let dir = try writeWholeAndPieces()
        let pieces = try MosaicSource(files: MosaicFixture.pieces.map { dir.file("pieces/" + $0.name) })
        #expect(pieces.layers.isEmpty)
        #expect(Resampler.forSource(pieces, georeference: pieces.grid, maxError: 0.125, method: .bilinear) is Resampler)
        // Two grids, one of them holding two aligned pieces listed around the UTM file: those
        // stay one layer, a pixel bilinear between them reads both (as the uncut file does),
        // and where the layers overlap each pixel goes to the file listed last.
        let (_, utm) = try writeTwoCRSPieces(dir)
        let a = dir.file("pieces/a.tif"), b = dir.file("pieces/b.tif")
        let m = try MosaicSource(files: [a, utm, b])
        #expect(m.layers.count == 2)
        #expect(m.layers.map { $0.placements.map(\.file) } == [[0, 2], [1]])
        #expect(m.layers[0].priority(col: 5, row: 5) == 0)
        #expect(m.layers[0].priority(col: MosaicFixture.cx + 5, row: 5) == 2)
        #expect(m.layers[0].priority(col: 5, row: MosaicFixture.cy + 5) == nil)
        let whole = dir.file("whole.tif")
        let resampler = Resampler.forSource(m, georeference: m.grid, maxError: 0.125, method: .bilinear)
        let pair = Resampler(
            source: m.layers[0], mapper: CoordinateMapper(georeference: m.layers[0].grid, maxError: 0.125),
            method: .bilinear)
        var seam = 0, overA = 0, overB = 0
        for tile in try maxZoomTiles(m) {
            let grid = MapFrame(tile: tile)
            let ws = ResampleWorkspace(), layer = ResampleWorkspace()
            _ = try resampler.resample(grid, tile: tile, into: ws)
            _ = try pair.resample(grid, tile: tile, into: layer)
            let uncut = try sampleAlone(whole, grid, tile, .bilinear), u = try sampleAlone(utm, grid, tile, .bilinear)
            for k in 0..<(grid.width * grid.height)
            where u.valid[k] == 0 && uncut.valid[k] != 0 && layer.valid[k] != 0
                && layer.rows[k] < Double(MosaicFixture.cy) - 0.5
            {
                // Away from the UTM file (and the layer's south edge, where the uncut file
                // goes on), pieces a and b give what the uncut file gives.
                #expect(ws.values[k] == uncut.values[k], "\(tile) pixel \(k)")
                if abs(layer.cols[k] - Double(MosaicFixture.cx)) < 0.5 { seam += 1 }
            }
            // Where the UTM file (listed 2nd) overlaps the pieces, it covers a (1st) and b
            // (3rd) covers it: the files' list order decides, not the layers'.
            for k in 0..<(grid.width * grid.height) where u.valid[k] != 0 && layer.valid[k] != 0 {
                let inB = layer.cols[k] >= Double(MosaicFixture.cx)
                #expect(ws.values[k] == (inB ? layer : u).values[k], "\(tile) pixel \(k)")
                if inB { overB += 1 } else { overA += 1 }
            }
        }
        #expect(seam > 10)
        #expect(overA > 100 && overB > 100, "\(overA) \(overB)")
    }

    // MARK: Bad input: one line naming the file

    func expectOneLine(_ error: any Error, naming: String, _ words: String) {
        let text = (error as? any TilePackError)?.description ?? "\(error)"
        #expect(!text.contains("\n"), "\(text)")
        #expect(text.contains(naming), "\(text)")
        #expect(text.contains(words), "\(text)")
    }

    @Test func mismatchedBandsOrTypesAreDeclined() throws {
        let dir = TemporaryDirectory()
        try MosaicFixture.writePiece(dir.file("a.tif"), x: 0, y: 0, w: 20, h: 20)
        try MosaicFixture.writePiece(dir.file("b.tif"), x: 20, y: 0, w: 20, h: 20, type: .uint16, nodata: nil)
        try MosaicFixture.writePiece(dir.file("c.tif"), x: 20, y: 0, w: 20, h: 20, type: .float32, bands: 2)
        for (bad, words) in [("b.tif", "1 band of uint16"), ("c.tif", "2 bands of float32")] {
            do {
                _ = try MosaicSource(files: [dir.file("a.tif"), dir.file(bad)])
                Issue.record("\(bad) accepted")
            } catch { expectOneLine(error, naming: dir.file(bad), words) }
        }
    }

    @Test func vrtErrorsNameTheFileAndElement() throws {
        let dir = try writeWholeAndPieces()
        var pieces = MosaicFixture.pieces
        pieces[2].name = "missing.tif"
        let missing = try dir.write("pieces/missing.vrt", Array(MosaicFixture.vrt(pieces: pieces).utf8))
        do { _ = try build([missing], dir.file("x.mbtiles")); Issue.record("missing source accepted") } catch {
            expectOneLine(error, naming: dir.file("pieces/missing.tif"), "missing.vrt")
        }
        let lut = try dir.write(
            "pieces/lut.vrt", Array(MosaicFixture.vrt(pieces: MosaicFixture.pieces, extra: "<LUT>0:0,1:1</LUT>").utf8))
        do { _ = try build([lut], dir.file("x.mbtiles")); Issue.record("LUT accepted") } catch {
            expectOneLine(error, naming: "lut.vrt", "<LUT>")
        }
        let warped = try dir.write(
            "pieces/warped.vrt",
            Array("<VRTDataset subClass=\"VRTWarpedDataset\" rasterXSize=\"1\" rasterYSize=\"1\"/>".utf8))
        do { _ = try VRTDocument(path: warped); Issue.record("warped VRT accepted") } catch {
            expectOneLine(error, naming: "warped.vrt", "VRTWarpedDataset")
        }
        let broken = try dir.write("pieces/broken.vrt", Array("<VRTDataset rasterXSize=\"1\"><VRTRasterBand>".utf8))
        do { _ = try VRTDocument(path: broken); Issue.record("broken XML accepted") } catch {
            expectOneLine(error, naming: "broken.vrt", "XML error")
        }
    }

    /// A VRT listing its sources again and again samples each once (the same archive as the
    /// plain VRT), and sources stacked past the cap are refused naming the VRT.
    @Test func repeatedSourcesAreSampledOnceAndStacksAreCapped() throws {
        let dir = try writeWholeAndPieces()
        let once = try dir.write("pieces/once.vrt", Array(MosaicFixture.vrt(pieces: MosaicFixture.pieces).utf8))
        let repeated = try dir.write(
            "pieces/repeated.vrt",
            Array(MosaicFixture.vrt(pieces: Array(repeating: MosaicFixture.pieces, count: 300).flatMap { $0 }).utf8))
        let plain = try MosaicSource(vrt: try VRTDocument(path: once))
        let manyDocument = try VRTDocument(path: repeated)
        let many = try MosaicSource(vrt: manyDocument)
        #expect(many.placements.count == plain.placements.count)
        // The digest taken from the bytes parsed is the file's (a build's source identity).
        #expect(manyDocument.sha256 == (try FileDigest.sha256(path: repeated)))
        let r = try contents(build([repeated], dir.file("r.mbtiles")).outputPath)
        let o = try contents(build([once], dir.file("o.mbtiles")).outputPath)
        #expect(r.keys.sorted() == o.keys.sorted() && !o.isEmpty)
        for (id, (tile, _)) in o { #expect(r[id]?.0 == tile, "tile \(id) differs") }
        // 1,100 different windows of one piece stacked on the same spot.
        let a = MosaicFixture.pieces[0]
        let stacked = (0..<1100).map { i in (name: a.name, x: 0, y: 0, w: a.w - i % 40 - 1, h: a.h - i / 40 - 1) }
        let deep = try dir.write("pieces/deep.vrt", Array(MosaicFixture.vrt(pieces: stacked).utf8))
        do {
            _ = try MosaicSource(vrt: try VRTDocument(path: deep)); Issue.record("1,100 stacked sources accepted")
        } catch {
            expectOneLine(error, naming: "deep.vrt", "1100 sources overlap")
        }
    }

    /// The XML reader counts a child whose bytes repeat its previous sibling's: the tree is the
    /// one a full parse gives (compared with the same siblings made unequal by a space, which a
    /// full parse reads alike), a sibling that differs in its last byte is parsed, and a repeat
    /// cut short by the end of the document is still an error.
    @Test func repeatedSiblingsParseAsWritten() throws {
        let b = #"<b k="1">t&amp;<c/></b>"#
        let shared = try XMLElement.parse(Array("<a>\(b)\(b)<!-- x -->\(b)<b k=\"1\">t&amp;<c/></b ></a>".utf8))
        let spaced = try XMLElement.parse(
            Array(
                "<a>\(b)<b  k=\"1\">t&amp;<c/></b><!-- x --><b k=\"1\" >t&amp;<c/></b><b k=\"1\">t&amp;<c/></b ></a>"
                    .utf8))
        #expect(shared == spaced)
        // One run of four: the tree holds the element once.
        #expect(shared.children.count == 1 && shared.children[0].repeats == 4)
        #expect(shared.children[0].text == "t&" && shared.children[0].children.count == 1)
        let interrupted = try XMLElement.parse(Array(#"<a><b/><b/><c/><b/></a>"#.utf8))
        #expect(interrupted.children.map { "\($0.name)×\($0.repeats)" } == ["b×2", "c×1", "b×1"])
        let differs = try XMLElement.parse(Array(#"<a><b k="1"/><b k="2"/></a>"#.utf8))
        #expect(differs.children.map { $0.attributes["k"] } == ["1", "2"])
        #expect(throws: XMLSyntaxError.self) { try XMLElement.parse(Array(#"<a><b k="1"/><b k="1"/"#.utf8)) }
        #expect(throws: XMLSyntaxError.self) { try XMLElement.parse(Array(#"<a><b k="1"/><b k="1"/>"#.utf8)) }
        // The VRT's sources from shared elements equal those from elements parsed one by one.
        let source =
            #"<SimpleSource><SourceFilename relativeToVRT="1">a.tif</SourceFilename><SrcRect xOff="0" yOff="0" xSize="4" ySize="4"/></SimpleSource>"#
        let head = #"<VRTDataset rasterXSize="4" rasterYSize="4"><VRTRasterBand dataType="Byte" band="1">"#
        let tail = "</VRTRasterBand></VRTDataset>"
        let repeated = try VRTDocument(
            xml: Array((head + String(repeating: source, count: 50) + tail).utf8), path: "/d/r.vrt")
        let varied = try VRTDocument(
            xml: Array((head + (0..<50).map { source + String(repeating: " ", count: $0) }.joined() + tail).utf8),
            path: "/d/r.vrt")
        #expect(
            repeated == varied && repeated.bands[0].sources.count == 1
                && repeated.bands[0].sources[0].path == "/d/a.tif")
        // A source that is not its neighbour's repeat stays where it is; equal bands stay bands.
        let other =
            #"<SimpleSource><SourceFilename relativeToVRT="1">b.tif</SourceFilename><SrcRect xOff="0" yOff="0" xSize="4" ySize="4"/></SimpleSource>"#
        let band = #"<VRTRasterBand dataType="Byte">"# + source + other + source + "</VRTRasterBand>"
        let twoBands = try VRTDocument(
            xml: Array((#"<VRTDataset rasterXSize="4" rasterYSize="4">"# + band + band + "</VRTDataset>").utf8),
            path: "/d/r.vrt")
        #expect(
            twoBands.bands.count == 2
                && twoBands.bands.allSatisfy { $0.sources.map(\.path) == ["/d/a.tif", "/d/b.tif", "/d/a.tif"] })
    }

    @Test func anEmptyFolderIsDeclined() throws {
        let dir = TemporaryDirectory()
        _ = try dir.write("notes.txt", Array("not a tiff".utf8))
        do { _ = try RegionInput.resolve([dir.path]); Issue.record("empty folder accepted") } catch {
            expectOneLine(error, naming: dir.path, "no .tif or .tiff")
        }
    }

    @Test func manySmallFilesStayUnderTheOpenFileLimit() throws {
        let dir = TemporaryDirectory()
        _ = mkdir(dir.file("tiles"), 0o755)
        // 6 × 5 pieces of 30 × 30 pixels: 30 files, at most 4 open.
        for ty in 0..<5 {
            for tx in 0..<6 {
                try MosaicFixture.writePiece(dir.file("tiles/t\(ty)\(tx).tif"), x: tx * 30, y: ty * 30, w: 30, h: 30)
            }
        }
        try MosaicFixture.writePiece(dir.file("whole.tif"), x: 0, y: 0, w: 180, h: 150)
        let result = try build([dir.file("tiles")], dir.file("m.mbtiles"), maxOpenFiles: 4)
        let mosaic = try #require(result.mosaic)
        #expect(mosaic.files == 30)
        #expect(mosaic.peakOpenFiles <= 4)
        #expect(mosaic.opens > 4)  // files were closed and opened again
        let whole = try contents(try build([dir.file("whole.tif")], dir.file("w.mbtiles")).outputPath)
        let tiles = try contents(result.outputPath)
        #expect(tiles.keys.sorted() == whole.keys.sorted())
        #expect(whole.allSatisfy { tiles[$0.key]?.0 == $0.value.0 })
    }
}
