import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackGeoTIFF
@testable import TilePackBuild
@testable import TilePackStore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TilePackTestSupport

/// Writes small single-band DEMs in EPSG:4326 (0.0003° pixels near Chamonix) the way SRTM
/// tiles come: any integer or float type, a nodata value, optional vertical GeoKeys and
/// GDAL_METADATA.
enum DEMFixture {
    static let west = 6.80, north = 45.95, step = 0.0003

    /// Smooth hills from 312 m up to about 4800 m.
    static func hills(_ col: Int, _ row: Int) -> Double {
        let x = Double(col) / 40, y = Double(row) / 35
        return (312 + 2240 * (1 + sin(x) * cos(y)) + 3 * Double(col)).rounded()
    }

    @discardableResult
    static func write(
        _ path: String, type: SampleType, nodata: Double?, width: Int = 240, height: Int = 200,
        verticalKeys: [(UInt16, GeoKeyDirectory.Value)] = [], metadata: GDALMetadata? = nil,
        value: @escaping (Int, Int) -> Double? = { c, r in hills(c, r) }
    ) throws -> TIFFFile {
        var options = GeoTIFFWriter.Options(width: width, height: height, samplesPerPixel: 1, sampleType: type)
        options.blockWidth = 128
        options.blockHeight = 128
        options.geoTransform = GeoTransform([west, step, 0, north, 0, -step])
        options.geoKeys = GeoKeyDirectory(
            entries: [
                (GeoKey.gtModelType, .shorts([2])),  // geographic
                (GeoKey.gtRasterType, .shorts([1])),  // pixel is area
                (GeoKey.geographicType, .shorts([4326])),
            ] + verticalKeys)
        options.noData = nodata
        options.gdalMetadata = metadata
        let writer = try GeoTIFFWriter(path: path, options: options)
        try fill(writer, blockWidth: options.blockWidth, bands: 1, type: type) { c, r in value(c, r) ?? nodata ?? 0 }
        return try TIFFFile(path: path)
    }

    /// Writes every block of `writer` from `sample(column, row)`, the same value in each of
    /// `bands`, converted to `type` (uint8 wraps, uint16/int16 clamp, float32 as is).
    static func fill(
        _ writer: GeoTIFFWriter, blockWidth: Int, bands: Int, type: SampleType,
        sample: (Int, Int) -> Double
    ) throws {
        let size = type.byteWidth
        try writer.write { bx, by, block in
            let r = writer.blockRegion(blockX: bx, blockY: by)
            block.withUnsafeMutableBytes { raw in
                for j in 0..<r.height {
                    for i in 0..<r.width {
                        let v = sample(r.x + i, r.y + j)
                        for b in 0..<bands {
                            let o = ((j * blockWidth + i) * bands + b) * size
                            switch type {
                            case .uint8:
                                raw.storeBytes(of: UInt8(clamping: Int(v) % 256), toByteOffset: o, as: UInt8.self)
                            case .uint16:
                                raw.storeBytes(
                                    of: UInt16(clamping: Int(v)).littleEndian, toByteOffset: o, as: UInt16.self)
                            case .int16:
                                raw.storeBytes(
                                    of: Int16(clamping: Int(v)).littleEndian, toByteOffset: o, as: Int16.self)
                            case .float32:
                                raw.storeBytes(of: Float(v).bitPattern.littleEndian, toByteOffset: o, as: UInt32.self)
                            default: preconditionFailure("fixture writes uint8, uint16, int16 and float32")
                            }
                        }
                    }
                }
            }
        }
    }
}

@Suite("Terrain detection: --color auto finds DEMs from the file's signals")
struct TerrainDetectionTests {
    /// The decision for a single-band source of `type` whose valid samples span `range`.
    func decide(
        _ type: SampleType, range: ClosedRange<Float>?, hints: TerrainHints = TerrainHints(),
        requested: ColorMode = .auto
    ) -> ColorDecision {
        ColorDecision.decide(
            requested: requested, sampleType: type, bands: 1, dataBands: [0], hasColorMap: false,
            hints: hints, sample: { .init(range: range) })
    }

    @Test func verticalGeoKeysAreSignals() {
        let units = decide(.uint16, range: 0...65000, hints: TerrainHints(verticalUnits: 9001))
        #expect(
            units
                == ColorDecision(
                    mode: .elevation, reason: "single-band uint16 with VerticalUnitsGeoKey metre", valueKind: .elevation
                ))
        let cs = decide(.uint16, range: 0...65000, hints: TerrainHints(verticalCSType: 5703))
        #expect(cs.mode == .elevation && cs.reason.contains("VerticalCSTypeGeoKey 5703"))
        let datum = decide(.uint16, range: nil, hints: TerrainHints(verticalDatum: 5103))
        #expect(datum.mode == .elevation && datum.reason.contains("VerticalDatumGeoKey 5103"))
        // A signal outranks the look of the samples: a uint8 band with vertical units is a DEM.
        #expect(
            decide(.uint8, range: 0...255, hints: TerrainHints(verticalUnits: 9002)).reason
                == "single-band uint8 with VerticalUnitsGeoKey foot")
    }

    @Test func gdalUnitTypeAndDescriptionAreSignals() {
        let unit = decide(.uint16, range: 0...65000, hints: TerrainHints(unitTypes: [0: "m"]))
        #expect(
            unit == ColorDecision(mode: .elevation, reason: "single-band uint16 with UNITTYPE m", valueKind: .elevation)
        )
        let described = decide(.uint16, range: 0...65000, hints: TerrainHints(descriptions: [0: "SRTM DEM v3"]))
        #expect(
            described.mode == .elevation && described.reason == "single-band uint16 with DESCRIPTION \"SRTM DEM v3\"")
        for text in ["Elevation", "height above ellipsoid", "Altitude (m)", "terrain model"] {
            #expect(
                decide(.uint32, range: nil, hints: TerrainHints(descriptions: [0: text])).mode == .elevation, "\(text)")
        }
        // Not lengths, not heights, or another band's: no signal.
        #expect(decide(.uint16, range: 0...65000, hints: TerrainHints(unitTypes: [0: "K"])).mode == .stretch)
        #expect(
            decide(.uint16, range: 0...65000, hints: TerrainHints(descriptions: [0: "demand index"])).mode == .stretch)
        #expect(decide(.uint16, range: 0...65000, hints: TerrainHints(unitTypes: [1: "m"])).mode == .stretch)
    }

    @Test func sampleRangeDecidesUnsignedBands() {
        #expect(
            decide(.uint16, range: 312...4807)
                == ColorDecision(
                    mode: .elevation, reason: "single-band uint16, values 312…4807 within Earth's elevation range",
                    valueKind: .elevation))
        #expect(
            decide(.uint16, range: 0...255)
                == ColorDecision(
                    mode: .stretch, reason: "single-band uint16, values 0…255 look like a 0–255 image",
                    valueKind: .value))
        #expect(decide(.uint16, range: 20...65000).mode == .stretch)
        #expect(decide(.uint16, range: 20...65000).reason.contains("beyond Earth's elevations (-500…9000 m)"))
        #expect(
            decide(.uint16, range: nil)
                == ColorDecision(mode: .stretch, reason: "single-band uint16 without valid samples", valueKind: .value))
        #expect(decide(.uint32, range: 100...900).mode == .elevation)
    }

    @Test func signedAndFloatBandsAreElevationWithinEarthsRange() {
        #expect(
            decide(.int16, range: 312...4807)
                == ColorDecision(
                    mode: .elevation, reason: "single-band int16, values 312…4807 within Earth's elevation range",
                    valueKind: .elevation))
        // Beyond any height on Earth: a value, stretched (no longer terrain).
        #expect(
            decide(.int16, range: -20000...30000)
                == ColorDecision(
                    mode: .stretch,
                    reason:
                        """
                        single-band int16, signed samples, values -20000…30000 beyond Earth's elevations \
                        (-500…9000 m)
                        """,
                    valueKind: .value))
        #expect(
            decide(.float32, range: 0.5...12.25).reason
                == "single-band float32, values 0.50…12.25 within Earth's elevation range")
        #expect(decide(.float32, range: nil).reason == "single-band float32, floating-point samples")
    }

    @Test func imagesStayImagesAndExplicitModesAreAsRequested() {
        #expect(
            decide(.uint8, range: 0...255)
                == ColorDecision(mode: .rgb, reason: "single-band uint8 looks like a grey image"))
        #expect(
            decide(.uint8, range: 0...255, requested: .stretch)
                == ColorDecision(mode: .stretch, reason: "as requested", valueKind: .value))
        #expect(
            decide(.uint16, range: 0...65000, requested: .elevation)
                == ColorDecision(mode: .elevation, reason: "as requested", valueKind: .elevation))
        let rgb = ColorDecision.decide(
            requested: .auto, sampleType: .uint8, bands: 3, dataBands: [0, 1, 2], hasColorMap: false,
            hints: TerrainHints(verticalUnits: 9001), sample: { .init(range: nil) })
        #expect(rgb == ColorDecision(mode: .rgb, reason: "3 bands uint8 (RGB)"))
        let palette = ColorDecision.decide(
            requested: .auto, sampleType: .uint8, bands: 1, dataBands: [0], hasColorMap: true,
            hints: TerrainHints(), sample: { .init(range: nil) })
        #expect(palette.mode == .palette && palette.valueKind == .class)
        #expect(ColorDecision(mode: .elevation, reason: "as requested").description == "elevation (as requested)")
    }

    @Test func gdalMetadataXMLIsParsedAndWrittenBack() {
        let xml = """
            <GDALMetadata>
              <Item name="AREA_OR_POINT">Area</Item>
              <Item name="DESCRIPTION" sample="0" role="description">Height &amp; depth &lt;m&gt;</Item>
              <Item name="UNITTYPE" sample="0" role="unittype">m</Item>
              <Item name="STATISTICS_MAXIMUM" sample="0">4807</Item>
              <Item name="X" domain="IMAGE_STRUCTURE"/>
            </GDALMetadata>
            """
        let m = GDALMetadata(xml: xml)
        #expect(m.items.count == 5)
        #expect(m.items[0] == GDALMetadata.Item(name: "AREA_OR_POINT", value: "Area"))
        #expect(
            m.items[1]
                == GDALMetadata.Item(name: "DESCRIPTION", value: "Height & depth <m>", sample: 0, role: "description"))
        #expect(m.items[4] == GDALMetadata.Item(name: "X", value: "", domain: "IMAGE_STRUCTURE"))
        #expect(GDALMetadata(xml: m.xml) == m)
        #expect(GDALMetadata(xml: "not xml <Item").items.isEmpty)
        #expect(
            GDALMetadata(xml: "<Items><Item name=\"A\" sample=\"-1\">v</Item>").items
                == [GDALMetadata.Item(name: "A", value: "v")])
    }

    @Test func theTIFFAdapterReportsVerticalKeysAndBandMetadata() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let metadata = GDALMetadata(items: [
            .init(name: "AREA_OR_POINT", value: "Point"),
            .init(name: "DESCRIPTION", value: "Elevation", sample: 0, role: "description"),
            .init(name: "UNITTYPE", value: "metre", sample: 0, role: "unittype"),
            .init(name: "UNITTYPE", value: "m", sample: 3, role: "unittype"),  // no such band: dropped
        ])
        let tiff = try DEMFixture.write(
            dir + "/signals.tif", type: .uint16, nodata: 65535, width: 32, height: 32,
            verticalKeys: [(GeoKey.verticalCSType, .shorts([5773])), (GeoKey.verticalUnits, .shorts([9001]))],
            metadata: metadata)
        #expect(tiff.image.gdalMetadata == metadata)
        #expect(
            tiff.terrainHints
                == TerrainHints(
                    verticalCSType: 5773, verticalUnits: 9001,
                    unitTypes: [0: "metre"], descriptions: [0: "Elevation"]))
        let colorizer = try Colorizer(source: tiff, mode: .auto, elevationRange: nil)
        #expect(
            colorizer.decision.reason
                == """
                single-band uint16 with VerticalCSTypeGeoKey 5773, VerticalUnitsGeoKey metre, UNITTYPE metre, \
                DESCRIPTION \"Elevation\"
                """
        )

        // AREA_OR_POINT alone is no signal: a uint16 image beyond Earth's elevations stays a stretch.
        let image = try DEMFixture.write(
            dir + "/image.tif", type: .uint16, nodata: nil, width: 32, height: 32,
            metadata: GDALMetadata(items: [.init(name: "AREA_OR_POINT", value: "Area")])
        ) { c, r in
            Double((c * 2000 + r * 37) % 60000)
        }
        #expect(image.terrainHints == TerrainHints())
        #expect(try Colorizer(source: image, mode: .auto, elevationRange: nil).mode == .stretch)
    }

    @Test func aUInt8GreyImageStaysAnImage() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let grey = try DEMFixture.write(dir + "/grey.tif", type: .uint8, nodata: nil, width: 32, height: 32) { c, r in
            Double((c * 8 + r) % 256)
        }
        let colorizer = try Colorizer(source: grey, mode: .auto, elevationRange: nil)
        #expect(colorizer.decision == ColorDecision(mode: .rgb, reason: "single-band uint8 looks like a grey image"))
        // A 16-bit band holding 0…255 is an image too, shown stretched.
        let wide = try DEMFixture.write(dir + "/grey16.tif", type: .uint16, nodata: nil, width: 32, height: 32) {
            c, r in
            Double((c * 8 + r) % 256)
        }
        #expect(try Colorizer(source: wide, mode: .auto, elevationRange: nil).decision.mode == .stretch)
    }

    /// The case: an SRTM-style uint16 DEM with nodata 65535 and no other signal
    /// builds as terrain with `--color auto`, and a point query answers its elevation.
    @Test(arguments: [(SampleType.uint16, 65535.0), (SampleType.int16, -32768.0)])
    func srtmStyleDEMBuildsAsTerrainAndAnswersElevation(type: SampleType, nodata: Double) throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let path = dir + "/srtm.tif"
        // A void (nodata) strip along the top, as SRTM has over water and radar shadows.
        try DEMFixture.write(path, type: type, nodata: nodata) { c, r in r < 6 ? nil : DEMFixture.hills(c, r) }
        var request = RegionBuild.Request(sourcePath: path)
        request.outputPath = dir + "/srtm.mbtiles"
        request.codec = .png
        #expect(request.options.colorMode == .auto)
        let result = try RegionBuild(request).run()
        #expect(result.report.color.mode == .elevation)
        #expect(result.report.color.reason.hasPrefix("single-band \(type.rawValue), values "))
        #expect(result.report.color.reason.hasSuffix("within Earth's elevation range"))
        #expect(result.archive.elevationTiles == result.report.tilesWritten && result.report.tilesWritten > 0)

        let (col, row) = (120, 100)
        let lon = DEMFixture.west + (Double(col) + 0.5) * DEMFixture.step
        let lat = DEMFixture.north - (Double(row) + 0.5) * DEMFixture.step
        let answers = try PointQuery.answer(
            try TileQuery(lat: lat, lon: lon, zoom: result.report.metadata.maxZoom),
            store: TileStore.over([result.outputPath]))
        let answer = try #require(answers.first)
        let metres = try #require(answer.elevationMetres, "no elevation answered")
        // Within the source samples two pixels around the point (a blend of blends of them).
        let around = (-2...2).flatMap { dj in (-2...2).map { di in DEMFixture.hills(col + di, row + dj) } }
        let lo = around.min() ?? 0, hi = around.max() ?? 0
        #expect(metres >= lo - 1e-3 && metres <= hi + 1e-3, "elevation \(metres) outside \(lo)…\(hi)")
    }
}
