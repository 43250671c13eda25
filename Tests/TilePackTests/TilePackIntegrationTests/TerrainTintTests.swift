import Foundation
import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
import TilePackTestSupport

/// Absolute terrain styling (issue 25): the ramp in metres, `--tint-range`, colour files,
/// hillshade against the analytic formula, and the CLI's one-line errors.
@Suite struct TerrainTintTests {
    /// The colour of a flat pixel of `metres` (flat: the shade factor is exactly 1) drawn by
    /// a colorizer made for `source` with `terrain`.
    static func flatColour(
        _ metres: Float, source: FunctionSource, terrain: TerrainStyle = TerrainStyle(),
        mode: ColorMode = .elevation
    ) throws -> [UInt8] {
        let c = try Colorizer(source: source, mode: mode, terrain: terrain)
        let grid = MapFrame(zoom: 14, originX: 8000, originY: 5000, width: 3, height: 3)
        var rgba = [UInt8](repeating: 0, count: 4)
        _ = c.colorize(
            values: [Float](repeating: metres, count: 9), valid: [UInt8](repeating: 1, count: 9), grid: grid,
            into: &rgba)
        return rgba
    }

    static func expected(_ tint: HypsometricTint, _ m: Double) -> [UInt8] {
        let c = tint.color(metres: m)
        return [c.r, c.g, c.b, c.a].map { Colorizer.byte(Float($0)) }
    }

    /// Two sources with different value ranges (a lowland and an alpine DEM) give the same
    /// colour for the same metres, and that colour is the ramp's; with the old per-build
    /// percentile stretch they would not (checked, so the test can fail).
    @Test func tintIsAFunctionOfMetresOnly() throws {
        let low = FunctionSource(width: 64, height: 64) { c, r, _ in Float(c * 8 + r) }  // 0…567 m
        let alps = FunctionSource(width: 64, height: 64) { c, r, _ in Float(300 + c * 60 + r * 3) }  // 300…4269 m
        let sea = FunctionSource(width: 64, height: 64) { c, r, _ in Float(-5000 + c * 90) }  // −5000…670 m
        for m: Float in [-3000, -1, 0, 120, 350, 500] {
            let a = try Self.flatColour(m, source: low), b = try Self.flatColour(m, source: alps)
            let s = try Self.flatColour(m, source: sea)
            #expect(a == b && b == s, "\(m) m: \(a) vs \(b) vs \(s)")
            #expect(a == Self.expected(.absolute, Double(m)), "\(m) m")
        }
        // The old behaviour, still available as --tint-range percentile, differs between them.
        let pct = TerrainStyle(range: .percentiles)
        #expect(try Self.flatColour(400, source: low, terrain: pct) != Self.flatColour(400, source: alps, terrain: pct))
        // The same fixed --tint-range gives the same colours whatever the source.
        let fixed = TerrainStyle(range: .metres(0...1000))
        #expect(
            try Self.flatColour(400, source: low, terrain: fixed) == Self.flatColour(400, source: alps, terrain: fixed))
        // --color bathymetry uses the sea ramp; land metres stay the shallows' blue.
        #expect(try Self.flatColour(-2000, source: sea, mode: .bathymetry) == [60, 122, 188, 255])
        #expect(try Self.flatColour(300, source: sea, mode: .bathymetry) == [190, 224, 246, 255])
    }

    /// A DEM with an alpha band: the metres are every other sample.
    @Test func terrainWithAnAlphaBandReadsTheMetresBand() throws {
        let source = FunctionSource(width: 16, height: 16, bands: 2, alphaBand: 1) { c, _, b in
            b == 0 ? Float(c * 100) : 255
        }
        let c = try Colorizer(source: source, mode: .elevation, terrain: TerrainStyle())
        let grid = MapFrame(zoom: 14, originX: 8000, originY: 5000, width: 3, height: 3)
        var rgba = [UInt8](repeating: 0, count: 4)
        let metres = c.colorize(
            values: [Float](repeating: 0, count: 18).enumerated().map { $0.offset % 2 == 0 ? 1500 : 255 },
            valid: [UInt8](repeating: 1, count: 9), grid: grid, into: &rgba)
        #expect(rgba == Self.expected(.absolute, 1500) && metres == [1500])
    }

    @Test func absoluteRampStopsAndLegend() throws {
        let ramp = HypsometricTint.absolute
        #expect(ramp.extent == -11000...8849)
        #expect(zip(ramp.stops, ramp.stops.dropFirst()).allSatisfy { $0.metres < $1.metres })
        for s in ramp.stops { #expect(Self.expected(ramp, s.metres) == [s.r, s.g, s.b, s.a]) }
        // Linear between stops, clamped beyond the ends.
        let mid = ramp.color(metres: 1250)  // halfway 1000 (228,218,160) → 1500 (214,189,130)
        #expect(mid.r == 221 && mid.g == 203.5 && mid.b == 145)
        #expect(Self.expected(ramp, -20000) == [8, 24, 68, 255] && Self.expected(ramp, 9500) == [255, 255, 255, 255])
        #expect(HypsometricTint.land.extent == 0...8849 && HypsometricTint.bathymetry.extent == -11000 ... -1)
        let legend = ramp.legend
        #expect(legend.count == ramp.stops.count)
        #expect(legend.first == LegendEntry(value: -11000, label: "-11000 m", rgba: [8, 24, 68, 255]))
        #expect(legend.last == LegendEntry(value: 8849, label: "8849 m", rgba: [255, 255, 255, 255]))
        let json = try JSONOutput.string(Array(legend.prefix(1)))
        #expect(json.contains("\"value\"") && json.contains("\"label\"") && json.contains("\"rgba\""), "\(json)")
    }

    @Test func tintRangeStretchKeepsSeaLevel() throws {
        let ramp = HypsometricTint.absolute
        // Land only: the land stops spread over 1000…3000 m.
        let land = ramp.stretched(over: 1000...3000)
        #expect(land.extent == 1000...3000)
        #expect(Self.expected(land, 1000) == [112, 153, 89, 255] && Self.expected(land, 3000) == [255, 255, 255, 255])
        // Sea only: -2340..0 spreads the bathymetry stops, deepest at -2340 m.
        let sea = ramp.stretched(over: -2340...0)
        #expect(sea.extent == -2340...0)
        #expect(Self.expected(sea, -2340) == [8, 24, 68, 255] && Self.expected(sea, 0) == [190, 224, 246, 255])
        // Both sides: the coast stays at 0 m.
        let both = ramp.stretched(over: -100...1000)
        #expect(Self.expected(both, 0) == [112, 153, 89, 255] && Self.expected(both, -100) == [8, 24, 68, 255])
        #expect(Self.expected(both, 1000) == [255, 255, 255, 255])
        #expect(Self.expected(both, -0.5)[2] > 200)  // still the shallows' blue just below 0 m
    }

    @Test func tintRangeParses() throws {
        #expect(try TintRange(argument: "-2340..0") == .metres(-2340...0))
        #expect(try TintRange(argument: "1200.5..2900") == .metres(1200.5...2900))
        #expect(try TintRange(argument: "-11000..-10") == .metres(-11000 ... -10))
        #expect(try TintRange(argument: "percentile") == .percentiles)
        for (bad, problem) in [
            ("5..5", "MIN 5 must be below MAX 5"), ("3000..100", "MIN 3000 must be below MAX 100"),
            ("abc", "expected MIN..MAX"), ("..5", "expected MIN..MAX"), ("1..inf", "finite numbers"),
            ("nan..3", "finite numbers"), ("1..2..3", "finite numbers"), ("-1e7..0", "within ±1000000"),
            ("", "expected MIN..MAX"),
        ] {
            #expect {
                try TintRange(argument: bad)
            } throws: { error in
                guard let e = error as? BuildError, e.code == .invalidOption else { return false }
                let text = e.detail
                return text.hasPrefix("--tint-range \(ErrorText.quoted(bad)): ") && text.contains(problem)
                    && !text.contains("\n")
            }
        }
    }

    @Test func colourFileParses() throws {
        let text = """
            # a gdaldem colour file, every separator and form
            -500\t0\t0\t255
            0,70,140,60
            1000 200 180 120 128   # alpha, trailing comment
            50%  white
            2500:255:250:250

            nv 0 0 0 0\r
            """
        let file = try ColorReliefFile(bytes: Array(text.utf8), path: "relief.txt")
        #expect(file.entries.count == 5 && file.nodata == [0, 0, 0, 0] && file.usesPercentages)
        #expect(file.entries[2] == ColorReliefFile.Entry(level: .metres(1000), rgba: [200, 180, 120, 128]))
        #expect(file.entries[3] == ColorReliefFile.Entry(level: .percent(50), rgba: [255, 255, 255, 255]))
        let ramp = file.tint(valueRange: 0...4000)
        #expect(ramp.stops.map(\.metres) == [-500, 0, 1000, 2000, 2500])
        #expect(Self.expected(ramp, 0) == [70, 140, 60, 255] && Self.expected(ramp, 500)[3] == 192)
        // Drawn as it says: a flat pixel at 2000 m (50 % of 0…4000) is white.
        let source = FunctionSource(width: 16, height: 16) { c, r, _ in Float(c * 250 + r) }  // 0…3765 m
        #expect(
            try Self.flatColour(1000, source: source, terrain: TerrainStyle(tint: .file(file))) == [200, 180, 120, 128])
    }

    @Test(arguments: [
        ("0 0 0 255\n100 1 2\n", 2, "found 3 fields"),
        ("0 0 0 255\n# ok\nhigh 1 2 3\n", 3, "elevation \"high\" is not a number"),
        ("0 256 0 0\n", 1, "red \"256\" is not an integer 0…255"),
        ("0 0 -1 0\n", 1, "green \"-1\" is not an integer"),
        ("0 0 0 0 9.5\n", 1, "alpha \"9.5\""),
        ("10 chartreuse\n", 1, "colour \"chartreuse\""),
        ("x% 0 0 0\n", 1, "percentage \"x%\""),
        ("1e999 0 0 0\n", 1, "elevation \"1e999\""),
        ("0 1 2 3 4 5\n", 1, "found 6 fields"),
    ])
    func colourFileRejectsBadLines(text: String, line: Int, problem: String) {
        #expect {
            try ColorReliefFile(bytes: Array(text.utf8), path: "bad.txt")
        } throws: { error in
            guard let e = error as? ColorReliefFileError else { return false }
            return e.subject == "--tint bad.txt:\(line)" && e.description.hasPrefix("--tint bad.txt:\(line): ")
                && e.description.contains(problem)
                && !e.description.contains("\n") && e.category == .invalidArgument
        }
        #expect(throws: ColorReliefFileError(path: "e.txt", line: nil, problem: "has no colour entries")) {
            try ColorReliefFile(bytes: Array("# nothing\nnv 0 0 0\n".utf8), path: "e.txt")
        }
        #expect(throws: ColorReliefFileError.self) {
            try ColorReliefFile(bytes: [0x30, 0x20, 0xff, 0xfe], path: "bin")
        }
    }

    /// Renders a plane v(i, j) = α·i + β·j (metres per pixel step) with `hillshade` in
    /// `--color hillshade` and returns the grey bytes with the ground resolution per row.
    static func shadePlane(
        alpha: Double, beta: Double, hillshade: Hillshade = Hillshade(), zoom: Int = 12,
        originY: Int = 1400 * 1
    ) throws -> [(grey: UInt8, res: Double)] {
        let n = 6, grid = MapFrame(zoom: zoom, originX: 2100, originY: originY, width: n, height: n)
        var values = [Float](repeating: 0, count: n * n)
        for j in 0..<n { for i in 0..<n { values[j * n + i] = Float(alpha * Double(i) + beta * Double(j)) } }
        let source = FunctionSource(width: 8, height: 8) { _, _, _ in 0 }
        let c = try Colorizer(source: source, mode: .hillshade, terrain: TerrainStyle(hillshade: hillshade))
        var rgba = [UInt8](repeating: 0, count: (n - 2) * (n - 2) * 4)
        _ = c.colorize(values: values, valid: [UInt8](repeating: 1, count: n * n), grid: grid, into: &rgba)
        return (0..<(n - 2) * (n - 2)).map { k in
            let row = k / (n - 2) + 1
            #expect(rgba[k * 4] == rgba[k * 4 + 1] && rgba[k * 4] == rgba[k * 4 + 2] && rgba[k * 4 + 3] == 255)
            return (rgba[k * 4], WebMercator.resolution(zoom: zoom) * cos(grid.lat(row: row) * .pi / 180))
        }
    }

    /// Horn's gradient of a plane is exact, so every pixel must be gdaldem's byte of the
    /// analytic shade, with the ground pixel size of its row.
    @Test func hillshadeOfAPlaneIsTheAnalyticFormula() throws {
        let az = 315.0 * .pi / 180, alt = 45.0 * .pi / 180
        for (alpha, beta) in [(0.0, 0.0), (3.0, 0.0), (0.0, -7.5), (12.0, 4.0), (-20.0, 20.0), (1.5, 2.5)] {
            for (grey, res) in try Self.shadePlane(alpha: alpha, beta: beta) {
                let p = alpha / res, q = -beta / res  // rows grow southwards
                let shade = max(0, sin(alt) - cos(alt) * (q * cos(az) + p * sin(az))) / (1 + p * p + q * q).squareRoot()
                #expect(
                    grey == UInt8((1 + 254 * shade).rounded()), "α \(alpha) β \(beta): \(grey) vs \(1 + 254 * shade)")
            }
        }
        // Facing the sun (normal along the light): full light, 255. Facing away: 1. Flat: 181.
        let res = try Self.shadePlane(alpha: 0, beta: 0)[0].res
        let facing = try Self.shadePlane(alpha: 0.5.squareRoot() * res, beta: 0.5.squareRoot() * res)
        #expect(facing.allSatisfy { abs(Int($0.grey) - 255) <= 1 }, "\(facing.map(\.grey))")
        #expect(try Self.shadePlane(alpha: -5 * res, beta: -5 * res).allSatisfy { $0.grey == 1 })
        #expect(try Self.shadePlane(alpha: 0, beta: 0).allSatisfy { $0.grey == 181 })
        // z-factor 2 equals a plane twice as steep; another azimuth lights it differently.
        #expect(
            try Self.shadePlane(alpha: 6, beta: 2, hillshade: Hillshade(zFactor: 2)).map(\.grey)
                == Self.shadePlane(alpha: 12, beta: 4).map(\.grey))
        #expect(
            try Self.shadePlane(alpha: 6, beta: 2, hillshade: Hillshade(azimuth: 90)).map(\.grey)
                != Self.shadePlane(alpha: 6, beta: 2).map(\.grey))
    }

    /// gdaldem -multidirectional: a slope facing east is lit by the 225°/270°/315° lights in
    /// proportions 1/2 : 1 : 1/2 (weights sin²(aspect − az)); flat is sin(alt).
    @Test func multidirectionalHillshade() throws {
        let multi = Hillshade(multidirectional: true)
        #expect(try Self.shadePlane(alpha: 0, beta: 0, hillshade: multi).allSatisfy { $0.grey == 181 })
        let alt = 45.0 * .pi / 180
        for (grey, res) in try Self.shadePlane(alpha: -4, beta: 0, hillshade: multi) {
            let p = -4 / res  // falls to the east: faces east
            let v225 = max(0, sin(alt) + 0.5.squareRoot() * cos(alt) * p), v270 = max(0, sin(alt) + cos(alt) * p)
            let v315 = max(0, sin(alt) + 0.5.squareRoot() * cos(alt) * p)
            let shade = (0.5 * v225 + v270 + 0.5 * v315) / 2 / (1 + p * p).squareRoot()
            #expect(grey == UInt8((1 + 254 * shade).rounded()))
        }
    }

    @Test func hillshadeOptionsAreChecked() {
        #expect(throws: BuildError.self) { try Hillshade(altitude: 0).validate() }
        #expect(throws: BuildError.self) { try Hillshade(altitude: 91).validate() }
        #expect(throws: BuildError.self) { try Hillshade(zFactor: 0).validate() }
        #expect(throws: BuildError.self) { try Hillshade(azimuth: .nan).validate() }
        #expect(throws: Never.self) { try Hillshade(azimuth: -45, altitude: 90, zFactor: 3).validate() }
    }

    /// A build writes the mode and the ramp's stops to the archive's metadata.
    @Test func buildRecordsColourModeAndLegend() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        try DEMFixture.write(dir + "/dem.tif", type: .int16, nodata: -32768, width: 120, height: 100)
        var request = RegionBuild.Request(sourcePath: dir + "/dem.tif")
        request.outputPath = dir + "/dem.mbtiles"
        request.codec = .png
        request.options.elevationRange = 500...3000
        let result = try RegionBuild(request).run()
        #expect(result.report.tint == "absolute ramp stretched over 500…3000 m (--tint-range)")
        let rows = try MBTilesReader(path: result.outputPath).metadata
        #expect(rows["tilepack:color_mode"] == "elevation")
        let legend = try #require(rows["tilepack:legend"])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(legend.utf8)) as? [[String: Any]])
        #expect(entries.count == HypsometricTint.land.stops.count)
        #expect(entries.first?["value"] as? Double == 500 && entries.last?["value"] as? Double == 3000)
        #expect(
            (entries.last?["rgba"] as? [Int]) == [255, 255, 255, 255] && entries.first?["label"] as? String == "500 m")
    }
}

/// `tilepack build --tint …/--tint-range …` through the binary: a negative MIN parses
/// unquoted, bad input is one line on stderr with the usage status (64).
@Suite struct CLITerrainTintTests {
    @Test func negativeTintRangeParsesUnquoted() throws {
        let run = try CLIBuildProgressTests.build(["--quiet", "--tint-range", "-2340..0"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(
            run.stdout.contains(
                """
                ; tint: absolute ramp stretched over -2340…0 m (--tint-range); hillshade azimuth 315°, altitude \
                45°, z 1\n
                """
            ),
            "\(run.stdout)")
        let defaults = try CLIBuildProgressTests.build(["--quiet", "--multidirectional", "--z-factor", "2"])
        #expect(
            defaults.stdout.contains(
                "; tint: absolute ramp -11000…8849 m; hillshade multidirectional, altitude 45°, z 2\n"),
            "\(defaults.stdout)")
    }

    @Test func badTintRangeIsOneUsageLine() throws {
        let run = try CLIBuildProgressTests.build(["--quiet", "--tint-range", "3000..-5"])
        #expect(run.status == 64)
        #expect(run.stderr == "error: --tint-range \"3000..-5\": MIN 3000 must be below MAX -5\n", "\(run.stderr)")
        let contradiction = try CLIBuildProgressTests.build(["--quiet", "--color", "hillshade", "--no-hillshade"])
        #expect(
            contradiction.status == 64
                && contradiction.stderr == "error: --no-hillshade contradicts --color hillshade\n")
        // A tint for a mode that draws none is nonsense, not a silent no-op.
        let untinted = try CLIBuildProgressTests.build(["--quiet", "--color", "stretch", "--tint", "land"])
        #expect(
            untinted.status == 64
                && untinted.stderr == "error: --tint and --tint-range colour terrain; --color stretch draws no tint\n",
            "\(untinted.stderr)")
        // The summary says what step elevation was kept to, and why it is coarser than asked.
        let fine = try CLIBuildProgressTests.build(["--quiet", "--elevation-precision", "0.1"])
        #expect(
            fine.status == 0
                && fine.stdout.contains(
                    """
                    (quantised to steps of 1, the source's own step: --elevation-precision 0.1 is finer than the \
                    source holds)
                    """
                ),
            "\(fine.stdout)")
        let altitude = try CLIBuildProgressTests.build(["--quiet", "--hillshade-altitude", "0"])
        #expect(
            altitude.status == 64 && altitude.stderr.hasPrefix("error: --hillshade-altitude 0")
                && altitude.stderr.filter { $0 == "\n" }.count == 1,
            "\(altitude.stderr)")
    }

    @Test func colourFilesThroughTheCLI() throws {
        let scratch = TemporaryDirectory()
        defer { withExtendedLifetime(scratch) {} }
        let good = scratch.file("good.txt"), bad = scratch.file("bad.txt")
        try "0 20 60 20\n2000 250 250 250\nnv 0 0 0 0\n".write(toFile: good, atomically: true, encoding: .utf8)
        try "0 20 60 20\n\n2000 250 two 250\n".write(toFile: bad, atomically: true, encoding: .utf8)
        let ok = try CLIBuildProgressTests.build(["--quiet", "--tint", good])
        #expect(
            ok.status == 0 && ok.stdout.contains("; tint: colour file \(good) 0…2000 m;"), "\(ok.stdout)\(ok.stderr)")
        let refused = try CLIBuildProgressTests.build(["--quiet", "--tint", bad])
        #expect(refused.status == 64)
        #expect(
            refused.stderr == "error: --tint \(bad):3: green \"two\" is not an integer 0…255\n", "\(refused.stderr)")
        let missing = try CLIBuildProgressTests.build(["--quiet", "--tint", "relief"])
        #expect(
            missing.status == 64 && missing.stderr.hasPrefix("error: --tint relief: ")
                && missing.stderr.contains("(presets: absolute, land, bathymetry)"), "\(missing.stderr)")
    }
}
