import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackGeoTIFF
import TilePackTestSupport

/// Writes NTv2 files for tests: subgrids with shifts from a function of the node position.
enum NTv2Fixture {
    struct Subgrid {
        var name: String
        var parent = "NONE"
        /// Extent in arc-seconds, longitudes positive west as NTv2 has them.
        var south: Double, north: Double, east: Double, west: Double
        var latStep: Double, lonStep: Double
        /// (lat shift, lon shift positive west) in arc-seconds at (lat, lon positive west) seconds.
        var shift: @Sendable (Double, Double) -> (Float, Float)
        var gsCount: Int? = nil
    }

    static func bytes(_ subgrids: [Subgrid], bigEndian: Bool = false, numFile: Int? = nil) -> [UInt8] {
        var out: [UInt8] = []
        func key(_ k: String) { out += Array((k + String(repeating: " ", count: 8)).utf8.prefix(8)) }
        func int(_ k: String, _ v: Int) {
            key(k)
            let u = UInt32(truncatingIfNeeded: v)
            out +=
                bigEndian
                ? [UInt8(u >> 24), UInt8((u >> 16) & 255), UInt8((u >> 8) & 255), UInt8(u & 255)]
                : [UInt8(u & 255), UInt8((u >> 8) & 255), UInt8((u >> 16) & 255), UInt8(u >> 24)]
            out += [0, 0, 0, 0]
        }
        func text(_ k: String, _ v: String) { key(k); key(v) }
        func bits(_ v: UInt64, _ n: Int) {
            for i in 0..<n { out.append(UInt8((v >> (8 * UInt64(bigEndian ? n - 1 - i : i))) & 255)) }
        }
        func double(_ k: String, _ v: Double) { key(k); bits(v.bitPattern, 8) }
        int("NUM_OREC", 11); int("NUM_SREC", 11); int("NUM_FILE", numFile ?? subgrids.count)
        text("GS_TYPE", "SECONDS"); text("VERSION", "NTv2.0"); text("SYSTEM_F", "TEST_F"); text("SYSTEM_T", "TEST_T")
        double("MAJOR_F", 6_378_137); double("MINOR_F", 6_356_752.314); double("MAJOR_T", 6_378_137);
        double("MINOR_T", 6_356_752.314)
        for g in subgrids {
            let rows = Int(((g.north - g.south) / g.latStep).rounded()) + 1
            let cols = Int(((g.west - g.east) / g.lonStep).rounded()) + 1
            text("SUB_NAME", g.name); text("PARENT", g.parent); text("CREATED", "20260101"); text("UPDATED", "20260101")
            double("S_LAT", g.south); double("N_LAT", g.north); double("E_LONG", g.east); double("W_LONG", g.west)
            double("LAT_INC", g.latStep); double("LONG_INC", g.lonStep); int("GS_COUNT", g.gsCount ?? rows * cols)
            // An impossible extent (a test of the reader) writes no nodes.
            for r in 0..<max(rows, 0) {
                for c in 0..<max(cols, 0) {
                    let (a, b) = g.shift(g.south + Double(r) * g.latStep, g.east + Double(c) * g.lonStep)
                    bits(UInt64(a.bitPattern), 4); bits(UInt64(b.bitPattern), 4); bits(0, 4); bits(0, 4)
                }
            }
        }
        text("END", "")
        return out
    }

    /// A parent over 9°E…11°E, 49°N…51°N (0.25° nodes) with shifts linear in position, and
    /// a child over 9.5°E…10°E, 49.5°N…50°N with a constant shift.
    static let parent = Subgrid(
        name: "PARENT", south: 49 * 3600, north: 51 * 3600, east: -11 * 3600, west: -9 * 3600,
        latStep: 900, lonStep: 900,
        shift: { lat, lonW in
            (Float(0.5 + 0.01 * lat / 3600), Float(-0.3 + 0.02 * lonW / 3600))
        })
    static let child = Subgrid(
        name: "CHILD", parent: "PARENT", south: 49.5 * 3600, north: 50 * 3600, east: -10 * 3600,
        west: -9.5 * 3600, latStep: 300, lonStep: 300, shift: { _, _ in (2, -3) })
    /// The parent's shift at (lon east, lat) in degrees, as (Δlon east, Δlat) degrees.
    static func parentShift(lon: Double, lat: Double) -> (Double, Double) {
        (-(-0.3 + 0.02 * -lon) / 3600, (0.5 + 0.01 * lat) / 3600)
    }
}

/// Distance in metres between two lon/lat points a few metres apart (local flat earth).
func metresApart(_ a: (lon: Double, lat: Double), _ b: (lon: Double, lat: Double)) -> Double {
    let dy = (a.lat - b.lat) * 111_320
    let dx = (a.lon - b.lon) * 111_320 * cos(a.lat * .pi / 180)
    return (dx * dx + dy * dy).squareRoot()
}

@Suite("Datum transformations: grids, Helmert, proj.db selection")
struct DatumTransformationTests {
    static let projDB = ProjData.projDB
    static let projDir = ProjData.projDir
    static var haveProjData: Bool { ProjData.haveProjData }

    // MARK: NTv2

    @Test(arguments: [false, true]) func syntheticNTv2ParentAndChild(bigEndian: Bool) throws {
        let dir = TemporaryDirectory()
        let path = try dir.write(
            "synthetic.gsb", NTv2Fixture.bytes([NTv2Fixture.parent, NTv2Fixture.child], bigEndian: bigEndian))
        let grid = try ShiftGridCache.load(path: path)
        #expect(grid.subgrids.count == 2)
        #expect(grid.subgrids[1].parent == 0)
        #expect(grid.subgrids[0].columns == 9 && grid.subgrids[0].rows == 9)
        #expect(abs(grid.subgrids[0].west - 9) < 1e-12 && abs(grid.subgrids[0].east - 11) < 1e-12)
        // Outside the child: bilinear of a linear field is the field.
        for (lon, lat) in [(9.1, 49.2), (10.83, 50.91), (11, 51), (9, 49), (10.3, 49.7)] {
            let d = try #require(grid.shift(lon: lon, lat: lat))
            let want = NTv2Fixture.parentShift(lon: lon, lat: lat)
            #expect(abs(d.dLon - want.0) < 1e-9 && abs(d.dLat - want.1) < 1e-9, "at \(lon),\(lat)")
        }
        // Inside the child: its constant shift (lon positive west −3″ → east +3″).
        let d = try #require(grid.shift(lon: 9.7, lat: 49.8))
        #expect(abs(d.dLon - 3.0 / 3600) < 1e-12 && abs(d.dLat - 2.0 / 3600) < 1e-12)
        #expect(grid.shift(lon: 8.9, lat: 50) == nil)
        #expect(grid.forward(lon: 12, lat: 50) == nil)
        // Inverse round trip.
        for (lon, lat) in [(9.3, 49.4), (9.75, 49.75), (10.99, 50.5)] {
            let f = try #require(grid.forward(lon: lon, lat: lat))
            let back = try #require(grid.inverse(lon: f.lon, lat: f.lat))
            #expect(abs(back.lon - lon) < 1e-11 && abs(back.lat - lat) < 1e-11)
        }
    }

    /// PROJ 9.1 (`cct +proj=hgridshift +grids=G`, forward and `-I`) at points in each grid.
    static let projHGridShift:
        [(grid: String, lon: Double, lat: Double, outLon: Double, outLat: Double, inverse: Bool)] = [
            ("BETA2007.gsb", 10.0, 50.0, 9.998811455579, 49.998857302765, false),
            ("BETA2007.gsb", 13.5, 52.5, 13.498240837963, 52.498595410617, false),
            ("BETA2007.gsb", 10.0, 50.0, 10.001188743208, 50.001142815686, true),
            ("CHENYX06_etrs.gsb", 7.5, 47.0, 7.499040456076, 46.998672932472, false),
            ("CHENYX06_etrs.gsb", 8.6, 46.2, 8.598885831436, 46.198770263085, false),
            ("CHENYX06_etrs.gsb", 7.5, 47.0, 7.500959697889, 47.001327205815, true),
            ("nzgd2kgrid0005.gsb", 174.76, -36.85, 174.760191646721, -36.848196690654, false),
            ("nzgd2kgrid0005.gsb", 170.5, -45.87, 170.500098018417, -45.868380939926, false),
            ("nzgd2kgrid0005.gsb", 174.76, -36.85, 174.759808349121, -36.851803272787, true),
            ("ntf_r93.gsb", 2.35, 48.85, 2.349295593686, 48.849933562569, false),
            ("ntf_r93.gsb", 5.4, 43.3, 5.399467586098, 43.300023844446, false),
            ("ntf_r93.gsb", 2.35, 48.85, 2.350704373033, 48.850066438018, true),
        ]

    @Test(.enabled(if: haveProjData)) func debianNTv2GridsMatchPROJ() throws {
        for c in Self.projHGridShift {
            let grid = try ShiftGridCache.grid(path: Self.projDir + "/" + c.grid)
            #expect(!grid.subgrids.isEmpty)
            let out = try #require(
                c.inverse ? grid.inverse(lon: c.lon, lat: c.lat) : grid.forward(lon: c.lon, lat: c.lat))
            let e = metresApart(out, (c.outLon, c.outLat))
            #expect(e < 0.001, "\(c.grid) \(c.inverse ? "inverse" : "forward") at \(c.lon),\(c.lat): \(e) m from PROJ")
        }
        // CHENYX06 and ntf_r93 are single grids, nzgd2kgrid0005 and BETA2007 too; the cache
        // hands out one instance per path.
        let a = try ShiftGridCache.grid(path: Self.projDir + "/BETA2007.gsb")
        let b = try ShiftGridCache.grid(path: Self.projDir + "/BETA2007.gsb")
        #expect(a === b)
    }

    // MARK: Corrupt grids

    func gridError(_ bytes: [UInt8], name: String = "bad.gsb") throws -> DatumGridError {
        let dir = TemporaryDirectory()
        let path = try dir.write(name, bytes)
        do {
            _ = try ShiftGridCache.grid(path: path)
        } catch {
            #expect(error.description.hasPrefix(path + ": "))
            #expect(!error.description.contains("\n"))
            return error
        }
        Issue.record("\(name) was accepted")
        return DatumGridError(path: path, code: .unsupported, detail: "accepted")
    }

    @Test func corruptNTv2FilesAreOneLineErrors() throws {
        let good = NTv2Fixture.bytes([NTv2Fixture.parent, NTv2Fixture.child])
        #expect(try gridError(Array(good.prefix(100))).code == .truncated)
        #expect(try gridError(Array(good.prefix(176 + 176 + 500))).code == .truncated)
        var badMagic = good
        badMagic[0] = UInt8(ascii: "X")
        #expect(try gridError(badMagic).code == .badHeader)
        var badCount = good
        badCount[8] = 12  // NUM_OREC 12
        #expect(try gridError(badCount).code == .badHeader)
        #expect(try gridError(NTv2Fixture.bytes([NTv2Fixture.parent], numFile: 1_000_000)).code == .badHeader)
        // Huge dimensions: a 1e-6″ step over 2° would be billions of nodes — refused before
        // allocating. LAT_INC and LONG_INC are records 8 and 9 of the subgrid header.
        var patched = NTv2Fixture.bytes([NTv2Fixture.parent])
        let tiny = (1e-6).bitPattern
        for record in [8, 9] {
            for i in 0..<8 { patched[176 + 16 * record + 8 + i] = UInt8((tiny >> (8 * UInt64(i))) & 255) }
        }
        #expect(try gridError(patched).code == .tooLarge)
        var count = NTv2Fixture.parent
        count.gsCount = 80
        #expect(try gridError(NTv2Fixture.bytes([count])).code == .badHeader)
        var nan = NTv2Fixture.parent
        nan.shift = { lat, _ in lat == 50 * 3600 ? (.nan, 0) : (0, 0) }
        #expect(try gridError(NTv2Fixture.bytes([nan])).code == .badValue)
        var inverted = NTv2Fixture.parent
        inverted.north = 48 * 3600
        #expect(try gridError(NTv2Fixture.bytes([inverted])).code == .badHeader)
        var orphan = NTv2Fixture.child
        orphan.parent = "NOSUCH"
        #expect(try gridError(NTv2Fixture.bytes([NTv2Fixture.parent, orphan])).code == .badHeader)
        #expect(try gridError(good, name: "grid.dat").code == .unsupported)
        #expect(try gridError(Array("not a tiff at all".utf8), name: "bad.tif").code == .badHeader)
    }

    @Test func fifoGridFailsWithoutHanging() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("fifo.gsb")
        #expect(mkfifo(path, 0o600) == 0)
        #expect(throws: DatumGridError.self) { try ShiftGridCache.grid(path: path) }
    }

    // MARK: GeoTIFF grids

    /// A PROJ-profile GeoTIFF grid, 5 × 4 nodes at 0.5° from (9°E, 51°N) down to 49.5°N,
    /// PixelIsArea, float32, with the same linear field as the NTv2 parent.
    func writeGeoTIFFGrid(_ dir: TemporaryDirectory, positiveWest: Bool = false, nan: Bool = false) throws -> String {
        let path = dir.file("grid.tif")
        var o = GeoTIFFWriter.Options(width: 5, height: 4, samplesPerPixel: 2, sampleType: .float32)
        o.blockWidth = 16
        o.blockHeight = 16
        // Corner-based: node centres at 9 + 0.5·i, 51 − 0.5·j.
        o.geoTransform = GeoTransform([8.75, 0.5, 0, 51.25, 0, -0.5])
        o.geoKeys = GeoKeyDirectory(
            version: [1, 1, 0],
            entries: [
                (GeoKey.gtModelType, .shorts([2])), (GeoKey.gtRasterType, .shorts([1])),
                (GeoKey.geographicType, .shorts([4326])),
            ])
        var items = [
            GDALMetadata.Item(name: "TYPE", value: "HORIZONTAL_OFFSET"),
            GDALMetadata.Item(name: "DESCRIPTION", value: "latitude_offset", sample: 0, role: "description"),
            GDALMetadata.Item(name: "DESCRIPTION", value: "longitude_offset", sample: 1, role: "description"),
            GDALMetadata.Item(name: "UNITTYPE", value: "arc-second", sample: 0, role: "unittype"),
            GDALMetadata.Item(name: "UNITTYPE", value: "arc-second", sample: 1, role: "unittype"),
        ]
        if positiveWest { items.append(GDALMetadata.Item(name: "positive_value", value: "west", sample: 1)) }
        o.gdalMetadata = GDALMetadata(items: items)
        let writer = try GeoTIFFWriter(path: path, options: o)
        _ = try writer.write { _, _, block in
            for j in 0..<4 {
                for i in 0..<5 {
                    let lon = 9 + 0.5 * Double(i), lat = 51 - 0.5 * Double(j)
                    let want = NTv2Fixture.parentShift(lon: lon, lat: lat)
                    let dLat = Float(want.1 * 3600), dLon = Float(want.0 * 3600) * (positiveWest ? -1 : 1)
                    let o = (j * 16 + i) * 8
                    let a = (nan && i == 2 && j == 1 ? Float.nan : dLat).bitPattern, b = dLon.bitPattern
                    for k in 0..<4 {
                        block[o + k] = UInt8((a >> (8 * UInt32(k))) & 255)
                        block[o + 4 + k] = UInt8((b >> (8 * UInt32(k))) & 255)
                    }
                }
            }
        }
        return path
    }

    @Test(arguments: [false, true]) func geoTIFFGridReadsLikeNTv2(positiveWest: Bool) throws {
        let dir = TemporaryDirectory()
        let grid = try ShiftGridCache.load(path: try writeGeoTIFFGrid(dir, positiveWest: positiveWest))
        #expect(grid.subgrids.count == 1)
        let g = grid.subgrids[0]
        #expect(g.columns == 5 && g.rows == 4 && abs(g.west - 9) < 1e-12 && abs(g.south - 49.5) < 1e-12)
        for (lon, lat) in [(9.1, 49.6), (10.9, 50.95), (11, 51), (9, 49.5)] {
            let d = try #require(grid.shift(lon: lon, lat: lat))
            let want = NTv2Fixture.parentShift(lon: lon, lat: lat)
            #expect(abs(d.dLon - want.0) < 1e-9 && abs(d.dLat - want.1) < 1e-9)
        }
        #expect(grid.shift(lon: 11.2, lat: 50) == nil)
    }

    @Test func geoTIFFGridWithNaNIsAnError() throws {
        let dir = TemporaryDirectory()
        let path = try writeGeoTIFFGrid(dir, nan: true)
        #expect(throws: DatumGridError.self) { try ShiftGridCache.load(path: path) }
    }

    // MARK: Helmert conventions

    @Test(.enabled(if: haveProjData)) func coordinateFrameRowsLoadAsPositionVector() throws {
        let db = try SQLiteConnection(path: Self.projDB, mode: .readOnly)
        let selector = ProjDBDatumSelector(db: db, gridDirectories: [])
        let all = try selector.helmertCandidates(source: 4314, targets: try selector.wgs84Frames())
        // EPSG:1673 DHDN to WGS 84 (1) is coordinate frame (9607): rx −1.04″ ry −0.35″ rz 3.08″.
        let cf = try #require(all.first { $0.code == 1673 })
        guard case let .helmert(.helmert(h, source, target)) = cf.kind else {
            Issue.record("EPSG:1673 is not a forward Helmert step")
            return
        }
        #expect(abs(h.rx - 1.04) < 1e-12 && abs(h.ry - 0.35) < 1e-12 && abs(h.rz + 3.08) < 1e-12)
        #expect(abs(h.ppm - 8.3) < 1e-9 && h.tx == 582)
        #expect(source.semiMajorAxis == 6_377_397.155 && target.semiMajorAxis == 6_378_137)
        // PROJ 9.1: cct with `projinfo -k operation EPSG:1673` (+convention=coordinate_frame).
        let step = DatumTransformation.Step.helmert(h, source: source, target: target)
        for (lon, lat, outLon, outLat) in [
            (10.0, 50.0, 9.998820502578, 49.998861496031), (13.5, 52.5, 13.498254410972, 52.498604454478),
        ] {
            let out = try #require(step.forward(lon: lon, lat: lat))
            #expect(metresApart(out, (outLon, outLat)) < 0.001)
        }
        // The same rotations read as position vector would be metres off.
        let wrong = try #require(Helmert([582, 105, 414, -1.04, -0.35, 3.08, 8.3]))
        let off = try #require(
            DatumTransformation.Step.helmert(wrong, source: source, target: target).forward(lon: 10, lat: 50))
        #expect(metresApart(off, (9.998820502578, 49.998861496031)) > 10)
    }

    // MARK: proj.db selection

    func best(_ code: Int, dirs: [String] = [projDir], area: GeoBounds? = nil) throws -> DatumTransformation? {
        let db = try SQLiteConnection(path: Self.projDB, mode: .readOnly)
        return try DatumTransformation.best(fromGeodeticCRS: code, in: db, gridDirectories: dirs, areaOfInterest: area)
    }

    /// PROJ 9.1 `cs2cs EPSG:src EPSG:4326` (the operation it picks with Debian's grids).
    static let projCS2CS: [(crs: Int, lon: Double, lat: Double, outLon: Double, outLat: Double)] = [
        (4314, 10.0, 50.0, 9.998811455579, 49.998857302765),  // BETA2007
        (4277, -0.12, 51.5, -0.121606885616, 51.500511301179),  // EPSG:1314 Helmert
        (4277, -4.0, 56.0, -4.001322211032, 55.999925751104),
        (4150, 7.45, 46.95, 7.449047528575, 46.948677590341),  // EPSG:1676
        (4275, 2.35, 48.85, 2.349295593686, 48.849933562569),  // ntf_r93
        // Per point, the more accurate operation whose area holds it: S-JTSK to WGS 84 (5)
        // in Czechia and (4) in Slovakia, not (3) over both; ED50 to WGS 84 (28) in Madrid,
        // (7) at Bergen (the offshore (18) and (24) hold the point but never displace an
        // onshore one), (25) in Copenhagen, not (1) over Europe.
        (4156, 16.5, 49.7, 16.498646608626, 49.699332553938),
        (4156, 18.7, 48.9, 18.698413126429, 48.899505056810),
        (4230, -3.7, 40.4, -3.701305137979, 40.398818911771),
        (4230, 5.3, 60.4, 5.298429826120, 60.399506930293),
        (4230, 12.5, 55.7, 12.498812140115, 55.699402625804),
    ]

    @Test(.enabled(if: haveProjData)) func selectionMatchesPROJ() throws {
        let dhdn = try #require(try best(4314))
        #expect(dhdn.code == "EPSG:15949" && dhdn.gridNames == ["BETA2007.gsb"] && dhdn.note == nil)
        #expect(dhdn.accuracy == 1 && dhdn.target.isWGS84)
        #expect(dhdn.summary == "DHDN to WGS 84 (4) [EPSG:15949, BETA2007.gsb, 1 m]")
        // EPSG:1673 is superseded by EPSG:1777, which covers the former West Germany.
        #expect(dhdn.fallback?.code == "EPSG:1777")

        let ch = try #require(try best(4149))
        // CH1903 to CHTRS95 (1) and to ETRS89 (2) tie (0.25 m + a 1 m null step, better than
        // CH1903 to WGS 84 (3)'s 1.5 m, same grid); the lower code wins.
        #expect(ch.gridNames == ["CHENYX06_etrs.gsb"] && ch.code == "EPSG:7673")
        #expect(ch.target.name == "CHTRS95" && ch.target.accuracyToWGS84 == 1 && ch.accuracyToWGS84 == 1.25)
        #expect(ch.summary == "CH1903 to CHTRS95 (1) [EPSG:7673, CHENYX06_etrs.gsb, 0.25 m, CHTRS95 as WGS 84 ±1 m]")

        let nz = try #require(try best(4272))
        #expect(nz.code == "EPSG:1670" && nz.gridNames == ["nzgd2kgrid0005.gsb"])

        let ntf = try #require(try best(4807))
        #expect(ntf.code == "EPSG:15960" && ntf.gridNames == ["ntf_r93.gsb"])
        #expect(ntf.name == "NTF (Paris) to NTF (1) + Inverse of WGS 84 to NTF (3)")
        #expect(ntf.steps == [.gridShift(try ShiftGridCache.grid(path: Self.projDir + "/ntf_r93.gsb"), inverse: false)])

        let osgb = try #require(try best(4277))
        #expect(osgb.code == "EPSG:1314" && osgb.gridNames.isEmpty && osgb.accuracy == 2)
        #expect(
            osgb.note
                == "grid OSTN15_NTv2_OSGBtoETRS.gsb not found: Helmert EPSG:1314 used (accuracy 2 m instead of 1 m)")

        let ch95 = try #require(try best(4150))
        #expect(ch95.code == "EPSG:1676" && ch95.accuracy == 1)

        for code in [4326, 4258, 4167, 4171, 4283, 4269] { #expect(try best(code) == nil) }

        for c in Self.projCS2CS {
            let t = try #require(try best(c.crs))
            let out = t.toWGS84(lon: c.lon, lat: c.lat)
            let e = metresApart(out, (c.outLon, c.outLat))
            #expect(e < (t.gridNames.isEmpty ? 0.001 : 0.01), "EPSG:\(c.crs) \(t.code): \(e) m from PROJ")
            let back = t.fromWGS84(lon: out.lon, lat: out.lat)
            #expect(metresApart(back, (c.lon, c.lat)) < (t.gridNames.isEmpty ? 0.005 : 1e-6))
        }
    }

    @Test(.enabled(if: haveProjData)) func sJTSKListsTheRegionalOperationsInPROJOrder() throws {
        let t = try #require(try best(4156))
        #expect(t.code == "EPSG:15965" && t.accuracy == 6)
        // PROJ 9.1 lists 15965, 5239, 1623, 4836 (projinfo -s EPSG:4156 -t EPSG:4326); 5239
        // before 1623 by its greater name. The S-JTSK to ETRS89 ones follow (+1 m null step).
        #expect(t.alternatives.filter(\.target.isWGS84).map(\.code) == ["EPSG:5239", "EPSG:1623", "EPSG:4836"])
        #expect(
            t.summary.hasPrefix(
                "S-JTSK to WGS 84 (3) [EPSG:15965, Helmert, 6 m]; inside their areas EPSG:5239 (1 m), EPSG:1623 (1 m)"))
        // Outside every area but the main one's box test: the main operation answers.
        let far = t.toWGS84(lon: 30, lat: 30)
        #expect(far.lon.isFinite && far.lat.isFinite)
    }

    @Test func perPointChoiceFollowsPROJ() throws {
        func helmert(_ tx: Double) throws -> [DatumTransformation.Step] {
            [.helmert(try #require(Helmert([tx, 0, 0, 0, 0, 0, 0])), source: .wgs84, target: .wgs84)]
        }
        func box(_ w: Double, _ s: Double, _ e: Double, _ n: Double) -> DatumTransformation.AreaOfUse {
            .init(west: w, south: s, east: e, north: n)
        }
        func alt(
            _ code: Int, _ accuracy: Double?, _ areas: [DatumTransformation.AreaOfUse], tx: Double
        ) throws -> DatumTransformation.Alternative {
            .init(
                name: "T (\(code))", code: "EPSG:\(code)", accuracy: accuracy, steps: try helmert(tx), target: .wgs84,
                areas: areas)
        }
        let t = DatumTransformation(
            name: "T (1)", code: "EPSG:1", accuracy: 6, steps: try helmert(100), areas: [box(0, 0, 20, 20)],
            alternatives: [
                try alt(2, 1, [box(0, 0, 10, 10)], tx: 200),  // better inside its box
                try alt(3, 1, [box(0, 0, 10, 10)], tx: 300),  // same accuracy, same box: the first stays
                try alt(4, 1, [box(1, 1, 9, 9)], tx: 400),  // same accuracy, strictly inside: wins
                try alt(5, nil, [box(0, 0, 20, 20)], tx: 500),  // unknown accuracy: never over a known one
                try alt(6, 2, [box(30, 30, 40, 40)], tx: 600),  // the only one holding its box
            ])
        // Which operation ran: the result equals that Helmert's alone.
        func metres(_ p: (lon: Double, lat: Double), _ lon: Double, _ lat: Double) -> Double {
            metresApart(p, (lon, lat))
        }
        let inInner = t.toWGS84(lon: 5, lat: 5), inOuter = t.toWGS84(lon: 0.5, lat: 5)
        let inMain = t.toWGS84(lon: 15, lat: 15), inSix = t.toWGS84(lon: 35, lat: 35),
            nowhere = t.toWGS84(lon: -50, lat: -50)
        func through(_ tx: Double, _ lon: Double, _ lat: Double) throws -> (lon: Double, lat: Double) {
            let h = try #require(Helmert([tx, 0, 0, 0, 0, 0, 0]))
            return DatumTransformation(
                name: "", code: "", accuracy: nil, steps: [.helmert(h, source: .wgs84, target: .wgs84)]
            )
            .toWGS84(lon: lon, lat: lat)
        }
        #expect(metres(inInner, try through(400, 5, 5).lon, try through(400, 5, 5).lat) < 1e-9)
        #expect(metres(inOuter, try through(200, 0.5, 5).lon, try through(200, 0.5, 5).lat) < 1e-9)
        #expect(metres(inMain, try through(100, 15, 15).lon, try through(100, 15, 15).lat) < 1e-9)
        #expect(metres(inSix, try through(600, 35, 35).lon, try through(600, 35, 35).lat) < 1e-9)
        // In no area: the first operation that needs no grid, the main one.
        #expect(metres(nowhere, try through(100, -50, -50).lon, try through(100, -50, -50).lat) < 1e-9)
        // The inverse picks by the WGS 84 point and undoes the same operation.
        let back = t.fromWGS84(lon: inInner.lon, lat: inInner.lat)
        #expect(metresApart(back, (5, 5)) < 0.005)  // a 2D Helmert drops the height it gives
        #expect(t.fallback == nil)
        #expect(
            t.summary
                == """
                T (1) [EPSG:1, Helmert, 6 m]; inside their areas EPSG:2 (1 m), EPSG:3 (1 m), EPSG:4 (1 m), EPSG:6 \
                (2 m)
                """
        )
    }

    @Test(.enabled(if: haveProjData)) func missingGridFallsBackWithNote() throws {
        let empty = TemporaryDirectory()
        let t = try #require(try best(4314, dirs: [empty.path]))
        #expect(t.gridNames.isEmpty)
        #expect(t.note?.hasPrefix("grid BETA2007.gsb not found: Helmert EPSG:") == true)
        #expect(t.note?.hasSuffix("instead of 1 m)") == true)
        // Over the former West Germany only, EPSG:1777 (3 m) covers the area.
        let west = try #require(
            try best(4314, dirs: [empty.path], area: GeoBounds(west: 7.5, south: 48, east: 10.5, north: 53)))
        #expect(west.code == "EPSG:1777")
        #expect(west.note == "grid BETA2007.gsb not found: Helmert EPSG:1777 used (accuracy 3 m instead of 1 m)")
    }

    @Test(.enabled(if: haveProjData)) func corruptChosenGridIsAnErrorNotAFallBack() throws {
        let dir = TemporaryDirectory()
        _ = try dir.write("BETA2007.gsb", Array(NTv2Fixture.bytes([NTv2Fixture.parent]).prefix(300)))
        do {
            _ = try best(4314, dirs: [dir.path])
            Issue.record("a truncated BETA2007.gsb was accepted")
        } catch let error as DatumGridError {
            #expect(error.subject == dir.file("BETA2007.gsb") && error.code == .truncated)
        }
    }

    @Test func gridDirectoriesFollowPROJ() {
        #expect(DatumTransformation.gridDirectories(projDBPath: "/opt/proj/proj.db", environment: [:]) == ["/opt/proj"])
        #expect(
            DatumTransformation.gridDirectories(
                projDBPath: "proj.db", environment: ["PROJ_DATA": "/a:/b", "PROJ_LIB": "/c"]) == [".", "/a", "/b"])
        #expect(
            DatumTransformation.gridDirectories(projDBPath: "/a/proj.db", environment: ["PROJ_LIB": "/a:/c"]) == [
                "/a", "/c",
            ])
    }

    // MARK: CRS integration

    @Test func crsAppliesTheTransformationBothWays() throws {
        let dir = TemporaryDirectory()
        let grid = try ShiftGridCache.load(
            path: try dir.write("synthetic.gsb", NTv2Fixture.bytes([NTv2Fixture.parent, NTv2Fixture.child])))
        let helmert = try #require(Helmert([598.1, 73.7, 418.2, 0.202, 0.045, -2.455, 6.7]))
        let t = DatumTransformation(
            name: "TEST to WGS 84", code: "EPSG:99999", accuracy: 0.5, steps: [.gridShift(grid, inverse: false)],
            alternatives: [
                .init(
                    name: "TEST to WGS 84 (Helmert)", code: "EPSG:99998", accuracy: 3,
                    steps: [.helmert(helmert, source: .bessel1841, target: .wgs84)], target: .wgs84)
            ],
            note: "grid X not found")
        let dhdn = try #require(Datum.epsg(6314))
        let base = CRS(geographic: "TEST", epsg: 4314, datum: dhdn)
        let crs = base.with(datumTransformation: t)
        #expect(crs.datumTransformation == t && base.datumTransformation == nil && crs != base)
        #expect(crs.datumNote == "grid X not found")
        #expect(crs.description.contains("datum transformation TEST to WGS 84 [EPSG:99999, synthetic.gsb, 0.5 m]"))
        #expect(crs.datumTransformSummary == "TEST to WGS 84 [EPSG:99999, synthetic.gsb, 0.5 m]")
        let inGrid = crs.lonLat(x: 10.3, y: 49.7)
        let want = NTv2Fixture.parentShift(lon: 10.3, lat: 49.7)
        #expect(abs(inGrid.lon - (10.3 + want.0)) < 1e-9 && abs(inGrid.lat - (49.7 + want.1)) < 1e-9)
        let back = crs.coordinate(lon: inGrid.lon, lat: inGrid.lat)
        #expect(abs(back.x - 10.3) < 1e-10 && abs(back.y - 49.7) < 1e-10)
        // Outside the grid: the Helmert fallback, and its exact inverse.
        let outside = crs.lonLat(x: 13, y: 52)
        #expect(metresApart(outside, (13, 52)) > 50)
        let round = crs.coordinate(lon: outside.lon, lat: outside.lat)
        // A Helmert in 2D drops the height it gives the point (PROJ's 2D pipeline too): the
        // round trip is good to a millimetre, not exact.
        #expect(metresApart((round.x, round.y), (13, 52)) < 0.005)
        // Without a transformation: today's behaviour.
        #expect(base.datumTransformSummary == "none (Deutsches Hauptdreiecksnetz treated as WGS 84)")
        #expect(CRS(geographic: "WGS 84", epsg: 4326, datum: .wgs84).datumTransformSummary == "none (WGS 84)")
    }
}
