import Foundation
import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
@testable import TilePackStore
@testable import TilePackSamples
import TilePackTestSupport

/// Every `--json` output goes through `JSONOutput` (JSONEncoder, sorted keys, unescaped
/// slashes). These pin the exact text: numbers as the shortest round-tripping decimal,
/// integral values without a fraction, -0 as 0, non-finite as "nan"/"inf"/"-inf", and `null`
/// for every documented nullable field.
@Suite("JSON output")
struct JSONOutputTests {
    struct Sample: Encodable {
        let values: [Double]
        let big: Int
        let path: String
    }

    @Test func numbersKeepTheirRepresentation() throws {
        let values: [Double] = [
            45, 0.1, -123, 100_000_000_000_000, 123_456_789_012_345, 1e16, 1e-5, 0.0001,
            300.0379266750948, 90.00000000000001, -3.4e38, 6_378_137, 3391.28,
            .nan, .infinity, -.infinity, JSONOutput.number(-0.0),
        ]
        let json = try JSONOutput.string(Sample(values: values, big: 9_007_199_254_740_993, path: "a/b"))
        #expect(
            json
                == #"{"big":9007199254740993,"path":"a/b","values":[45,0.1,-123,100000000000000,123456789012345,1e+16,1e-05,0.0001,300.0379266750948,90.00000000000001,-3.4e+38,6378137,3391.28,"nan","inf","-inf",0]}"#
        )
        // Why reports pass their numbers through JSONOutput.number: the encoder alone prints -0.
        #expect(try JSONOutput.string([-0.0]) == "[-0]")
        #expect(JSONOutput.number(-0.0).sign == .plus && JSONOutput.number(-2.5) == -2.5)
    }

    /// The rule the hand-written renderer had (and README documents): shortest round-trip
    /// decimal (Swift's `description`), integral values without a fraction, non-finite as
    /// strings. The old renderer kept Swift's ".0" on integral values from 1e15 up to 2^53
    /// ("1000000000000000.0"); the encoder drops it, which README's rule asks for.
    static func previousRendering(_ d: Double) -> String {
        if d.isNaN { return "\"nan\"" }
        if d.isInfinite { return d < 0 ? "\"-inf\"" : "\"inf\"" }
        if d == d.rounded(), abs(d) < 1e15 { return String(Int64(d)) }
        let s = "\(d)"
        return s.hasSuffix(".0") ? String(s.dropLast(2)) : s
    }

    @Test func encoderMatchesThePreviousRendererOnManyValues() throws {
        var random = TestRandom(seed: 7)
        var values: [Double] = []
        for i in 0..<4000 {
            let bits = random.next()
            switch i % 4 {
            case 0: values.append(Double(bitPattern: bits))  // any double
            case 1: values.append(Double(Int64(bitPattern: bits) >> 14))  // integers up to ~2^49
            case 2: values.append(Double(Int64(bitPattern: bits) >> 40) / 100)  // centimetres
            default: values.append(Double(bits >> 11) / Double(1 << 53) * 360 - 180)  // longitudes
            }
        }
        values += [1e15, 2e15, 9_007_199_254_740_992, 1e22, 5e-324, .greatestFiniteMagnitude, 1e-7, 0]
        let normalized = values.map(JSONOutput.number)
        let expected = "[" + normalized.map(Self.previousRendering).joined(separator: ",") + "]"
        #expect(try JSONOutput.string(normalized) == expected)
    }

    // MARK: TileQuery

    @Test func tileOnlyAnswerIsPinned() throws {
        let q = try TileQuery(arguments: ["geo:48.8583,2.2945;u=10", "15"])
        #expect(
            try q.json
                == #"{"lat":48.8583,"lon":2.2945,"pixel":{"x":217,"y":227},"tile":{"x":16592,"y":11272,"z":15},"tms_y":21495,"zoom":15}"#
        )
        let zero = try TileQuery(lat: -0.0, lon: -0.0, zoom: 3)
        #expect(
            try zero.json == #"{"lat":0,"lon":0,"pixel":{"x":0,"y":0},"tile":{"x":4,"y":4,"z":3},"tms_y":3,"zoom":3}"#)
        #expect(try JSONOutput.string(TileID(z: 12, x: 2126, y: 1459)!) == #"{"x":2126,"y":1459,"z":12}"#)
    }

    static func decode(_ json: String) throws -> TileQuery {
        try JSONDecoder().decode(TileQuery.self, from: Data(json.utf8))
    }

    @Test func decodingValidatesAndRecomputes() throws {
        #expect(try Self.decode(#"{"lat":45,"lon":6,"zoom":12}"#) == TileQuery(lat: 45, lon: 6, zoom: 12))
        let q = try TileQuery(lat: -33.8568, lon: 151.2153, zoom: 15)
        #expect(try Self.decode(q.json) == q)
        // Derived fields in the input are recomputed from the point, never trusted.
        let lying = try Self.decode(
            #"{"lat":45,"lon":6,"zoom":12,"tile":{"z":30,"x":-1,"y":9},"tms_y":-5,"pixel":{"x":999,"y":-3}}"#)
        #expect(lying == (try TileQuery(lat: 45, lon: 6, zoom: 12)))
    }

    @Test func decodingAnInvalidQueryThrows() throws {
        for (json, mention) in [
            (#"{"lat":45,"lon":6,"zoom":30}"#, "zoom 30"),
            (#"{"lat":45,"lon":6,"zoom":-1}"#, "zoom -1"),
            (#"{"lat":86,"lon":6,"zoom":3}"#, "latitude 86"),
            (#"{"lat":-90,"lon":6,"zoom":3}"#, "latitude -90"),
            (#"{"lat":0,"lon":180.5,"zoom":3}"#, "longitude 180.5"),
            (#"{"lat":0,"lon":-1e300,"zoom":3}"#, "longitude"),
        ] {
            do {
                _ = try Self.decode(json)
                Issue.record("\(json) decoded")
            } catch let DecodingError.dataCorrupted(context) {
                #expect(context.debugDescription.contains("invalid tile query"), "\(context.debugDescription)")
                #expect(context.debugDescription.contains(mention), "\(context.debugDescription)")
                #expect(context.underlyingError is QueryInputError)
            } catch {
                Issue.record("\(json): unexpected \(error)")
            }
        }
        #expect(throws: DecodingError.self) { try Self.decode(#"{"lat":45,"lon":6}"#) }
        #expect(throws: DecodingError.self) { try Self.decode(#"{"lat":45,"lon":6,"zoom":12.5}"#) }
        #expect(throws: DecodingError.self) { try Self.decode(#"{"lat":"45","lon":6,"zoom":12}"#) }
    }

    // MARK: Point answers

    @Test func pointAnswersArePinned() throws {
        let q = try TileQuery(lat: 45.85, lon: 6.88, zoom: 12)
        let stored = PointAnswer(
            archive: "/tmp/mb/montblanc-dem.mbtiles", region: "montblanc-dem", query: q,
            present: true, rgba: [100, 72, 45, 255], elevationMetres: 3391.2849, elevationZoom: 12)
        #expect(
            try stored.json
                == #"{"archive":"/tmp/mb/montblanc-dem.mbtiles","data_zoom":null,"elevation_m":3391.28,"elevation_zoom":12,"lat":45.85,"locked":false,"lon":6.88,"overzoomed":false,"pixel":{"x":71,"y":167},"present":true,"region":"montblanc-dem","rgba":[100,72,45,255],"tile":{"x":2126,"y":1459,"z":12},"tms_y":2636,"unlock":[],"value":null,"value_kind":null,"zoom":12}"#
        )
        let empty = PointAnswer(
            archive: "a.mbtiles", region: "", query: q, present: false, rgba: nil,
            elevationMetres: nil, elevationZoom: nil)
        #expect(
            try empty.json
                == #"{"archive":"a.mbtiles","data_zoom":null,"elevation_m":null,"elevation_zoom":null,"lat":45.85,"locked":false,"lon":6.88,"overzoomed":false,"pixel":{"x":71,"y":167},"present":false,"region":"","rgba":null,"tile":{"x":2126,"y":1459,"z":12},"tms_y":2636,"unlock":[],"value":null,"value_kind":null,"zoom":12}"#
        )
        // From a coarser zoom: data_zoom says which, overzoomed true; from a finer one, false.
        let over = PointAnswer(
            archive: "a", region: "r", query: q, present: true, rgba: [1, 2, 3, 255],
            elevationMetres: 1200, elevationZoom: 10, dataZoom: 10)
        #expect(
            try over.json.contains(#""data_zoom":10,"elevation_m":1200,"elevation_zoom":10,"#)
                && over.json.contains(#""overzoomed":true,"#))
        let under = PointAnswer(
            archive: "a", region: "r", query: q, present: true, rgba: [1, 2, 3, 255],
            elevationMetres: nil, elevationZoom: nil, dataZoom: 14)
        #expect(try under.json.contains(#""data_zoom":14,"#) && under.json.contains(#""overzoomed":false,"#))
        // Rounded to the centimetre: a whole number prints without a fraction, -0.004 as 0.
        for (metres, text) in [(1500.0, "1500"), (-0.004, "0"), (-12.345, "-12.35"), (0.1 + 0.2, "0.3")] {
            let a = PointAnswer(
                archive: "a", region: "r", query: q, present: false, rgba: nil,
                elevationMetres: metres, elevationZoom: 9)
            #expect(try a.json.contains(#""elevation_m":\#(text),"#), "\(metres)")
        }
        let uncovered = try UncoveredPointAnswer(query: try TileQuery(lat: 10, lon: 10, zoom: 12), searched: "/tmp/mb")
            .json
        #expect(
            uncovered
                == #"{"archive":null,"data_zoom":null,"elevation_m":null,"elevation_zoom":null,"lat":10,"locked":false,"lon":10,"message":"no region archive in /tmp/mb covers this point","overzoomed":false,"pixel":{"x":199,"y":163},"present":false,"region":null,"rgba":null,"tile":{"x":2161,"y":1933,"z":12},"tms_y":2162,"unlock":[],"value":null,"value_kind":null,"zoom":12}"#
        )
    }

    /// Every query that decodes is answerable: no force unwrap or index past a tile can be
    /// reached from a request, at any zoom, at the poles' edge or the antimeridian.
    @Test func pointQueryCannotBeCrashedByADecodedQuery() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("q.mbtiles")
        do {
            let writer = try MBTilesWriter(
                path: path, metadata: MBTilesMetadata(name: "q", format: "png", codec: "png"))
            let rgba = [UInt8](repeating: 200, count: 256 * 256 * 4)
            let png = try PNGCodec().encode(rgba: rgba, width: 256, height: 256)
            try writer.write(png, for: TileID(z: 0, x: 0, y: 0)!)
            try writer.write(png, for: TileID(z: 1, x: 1, y: 1)!)
            try writer.writeElevation(
                ElevationTile(width: 3, height: 1, values: [.nan, 1, 2]), for: TileID(z: 0, x: 0, y: 0)!)
            try writer.writeElevation(
                ElevationTile(width: 1, height: 1, values: [.nan]), for: TileID(z: 1, x: 0, y: 0)!)
            try writer.finish()
        }
        let reader = try MBTilesReader(path: path)
        var answered = 0
        let edge = "\(WebMercator.maxLatitude)"
        for lat in ["-" + edge, "-85", "-45.5", "0", "-0", "33.3", edge] {
            for lon in ["-180", "-179.999999", "-0.0000001", "0", "90", "179.9999999", "180"] {
                for zoom in [0, 1, 2, 12, 23, 24] {
                    let q = try Self.decode(#"{"lat":\#(lat),"lon":\#(lon),"zoom":\#(zoom)}"#)
                    let a = try PointQuery.answer(q, reader: reader)
                    // Stored at z0 and at 1/1/1; z2 and z12 are overzoomed from the nearest stored
                    // ancestor (z1 where 1/1/1 holds the point, else z0); beyond z22 nothing is made.
                    let inOneOne = q.tile.x >> max(0, zoom - 1) == 1 && q.tile.y >> max(0, zoom - 1) == 1
                    #expect(a.present == (zoom == 0 || (zoom == 1 && inOneOne) || zoom == 2 || zoom == 12))
                    if zoom == 2 || zoom == 12 { #expect(a.dataZoom == (inOneOne ? 1 : 0) && a.overzoomed) }
                    #expect(try JSONSerialization.jsonObject(with: Data(a.json.utf8)) is [String: Any])
                    answered += 1
                }
            }
        }
        #expect(answered == 7 * 7 * 6)
        for bad in [
            #"{"lat":0,"lon":0,"zoom":25}"#, #"{"lat":0,"lon":0,"zoom":9223372036854775807}"#,
            #"{"lat":0,"lon":0,"zoom":-9223372036854775808}"#, #"{"lat":85.06,"lon":0,"zoom":1}"#,
            #"{"lat":0,"lon":-180.0000001,"zoom":1}"#, #"{"lat":1e400,"lon":0,"zoom":1}"#,
        ] {
            #expect(throws: DecodingError.self, "\(bad)") { try Self.decode(bad) }
        }
    }

    // MARK: info and build options

    @Test func tiffInfoIsPinnedWithNullsAndNaN() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        t.bits = 32; t.sampleFormat = 3
        t.extraTags = [TIFFTag.gdalNoData: .ascii("nan")]
        let path = try dir.write("nan.tif", try t.build(t.makeSamples()))
        let tiff = try TIFFInfo(file: TIFFFile(path: path))
        #expect(
            try tiff.json
                == #"{"bands":1,"bigtiff":false,"bits_per_sample":32,"block_size":[8,6],"byte_order":"little","compression":"none","compression_code":1,"dtype":"float32","epsg":null,"extra_samples":[],"geokeys":null,"geotransform":null,"height":6,"layout":"stripped","masks":[],"nodata":"nan","overviews":[],"path":"\#(path)","photometric":"MINISBLACK","planar_config":"contig","predictor":1,"raster_type":null,"width":8}"#
        )
        let source = try SourceInfo(tiff: tiff).json
        #expect(
            source.hasSuffix(
                #","bounds_lonlat":null,"byte_order":"little","compression":"none","compression_code":1,"crs_error":null,"crs_name":null,"crs_source":null,"datum_note":null,"dtype":"float32","epsg":null,"extra_samples":[],"geokeys":null,"geotransform":null,"height":6,"layout":"stripped","masks":[],"native_zoom":null,"nodata":"nan","overviews":[],"path":"\#(path)","photometric":"MINISBLACK","planar_config":"contig","predictor":1,"raster_type":null,"resolution_m":null,"width":8}"#
            ))
        #expect(source.hasPrefix(#"{"bands":1,"bigtiff":false,"bits_per_sample":32,"block_size":[8,6],"bounds":null,"#))

        for (text, rendered) in [
            ("inf", #""inf""#), ("-inf", #""-inf""#), ("-3.4e38", "-3.4e+38"), ("-0", "0"), ("250.5", "250.5"),
        ] {
            t.extraTags = [TIFFTag.gdalNoData: .ascii(text)]
            let info = try TIFFInfo(file: TIFFFile(path: try dir.write("n.tif", try t.build(t.makeSamples()))))
            #expect(try info.json.contains(#""nodata":\#(rendered),"#), "\(text)")
        }
    }

    @Test func georeferencedInfoIsPinned() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        t.bits = 16; t.sampleFormat = 2
        t.extraTags = [
            TIFFTag.modelPixelScale: .doubles([30, 30, 0]),
            TIFFTag.modelTiepoint: .doubles([0, 0, 0, 500_000, 4_000_000, 0]),
            TIFFTag.geoKeyDirectory: .shorts([
                1, 1, 0, 5, 1024, 0, 1, 1, 1025, 0, 1, 2, 1026, 34737, 14, 0,
                3072, 0, 1, 32633, 3092, 34736, 1, 0,
            ]),
            TIFFTag.geoDoubleParams: .doubles([0.9996]),
            TIFFTag.geoAsciiParams: .ascii("WGS 84 / UTM33|"),
            TIFFTag.gdalNoData: .ascii("-9999"),
        ]
        let path = try dir.write("geo.tif", try t.build(t.makeSamples()))
        let info = SourceInfo(tiff: try TIFFInfo(file: TIFFFile(path: path)))
        let json = try info.json
        for piece in [
            #""epsg":32633,"#, #""geotransform":[499985,30,0,4000015,0,-30],"#, #""nodata":-9999,"#,
            #""raster_type":"Point","#, #""crs_error":null,"#, #""crs_name":"WGS 84 / UTM zone 33N","#,
            #""crs_source":{"kind":"builtin"},"#,
            #""geokeys":{"GTCitation":"WGS 84 / UTM33","GTModelType":1,"GTRasterType":2,"ProjScaleAtNatOrigin":0.9996,"ProjectedCSType":32633},"#,
            #""bounds":[499985,3999835,500225,4000015],"#, #""native_zoom":"#,
        ] {
            #expect(json.contains(piece), "\(piece) in \(json)")
        }
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object.count == 31)
        #expect((object["bounds_lonlat"] as? [Double])?.count == 4)
    }

    @Test func buildOptionsAreRecordedWithNullLevelForPNG() throws {
        let png = RegionBuild.RecordedOptions(
            minZoom: 9, maxZoom: 12, resampling: "bilinear", colorMode: "auto",
            keepEmpty: false, codec: "png", codecLevel: nil)
        #expect(
            try JSONOutput.string(png)
                == #"{"codec":"png","codec_level":null,"color_mode":"auto","keep_empty":false,"max_zoom":12,"min_zoom":9,"resampling":"bilinear"}"#
        )
        let pvrtc = RegionBuild.RecordedOptions(
            minZoom: 0, maxZoom: 3, resampling: "average", colorMode: "elevation",
            keepEmpty: true, codec: "pvrtc4", codecLevel: "quality")
        #expect(
            try JSONOutput.string(pvrtc)
                == #"{"codec":"pvrtc4","codec_level":"quality","color_mode":"elevation","keep_empty":true,"max_zoom":3,"min_zoom":0,"resampling":"average"}"#
        )
    }
}
