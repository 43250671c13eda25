import Foundation
import Testing
import TilePackTestSupport

/// The exit statuses `tilepack --help` documents, through the built binary: 2 for every
/// command's missing input and for an output whose directory is missing (naming it), 2 for
/// a render with nothing to draw (no picture written), 64 for usage; `render --archive` and
/// `build --each`.
@Suite("CLI: exit statuses, render --archive, build --each")
struct CLIExitStatusTests {
    typealias Run = TilepackBinary.Run

    static func tilepack(_ arguments: [String], in dir: TemporaryDirectory) throws -> Run {
        // A home of its own: no default trust file or ledger of the machine is read.
        try TilepackBinary.tilepack(
            arguments,
            environment: ["HOME": dir.path, "XDG_CONFIG_HOME": dir.file("config"), "XDG_DATA_HOME": dir.file("data")])
    }

    /// Every command that reads an input file or folder, given one that does not exist.
    static let missingInputs: [[String]] = [
        ["build", "missing.tif"],
        ["build", "--each", "missing.tif"],
        ["info", "missing.tif"],
        ["merge", "missing.mbtiles", "-o", "m.mbtiles"],
        ["verify", "missing.mbtiles"],
        ["stress", "missing.mbtiles"],
        ["query", "45.9", "6.87", "12", "--archive", "missing.mbtiles"],
        ["query", "45.9", "6.87", "12", "--library", "missing"],
        ["render", "45.9", "6.87", "12", "--archive", "missing.mbtiles"],
        ["render", "45.9", "6.87", "12", "--library", "missing"],
        ["serve", "--library", "missing", "--port", "0"],
        ["codec", "encode", "missing.tif", "-o", "o.pvr"],
        ["codec", "decode", "missing.pvr", "--format", "pvrtc4", "--size", "8x8", "-o", "o.png"],
        ["catalog", "sign", "missing.json", "--key", "missing.jwk"],
        ["pack", "--library", "missing", "--output", "packs", "--key", "missing.jwk"],
        ["store", "verify", "missing.jws", "--trust", "missing.json"],
    ]

    @Test(arguments: missingInputs) func aMissingInputExits2(_ arguments: [String]) throws {
        let dir = TemporaryDirectory()
        let run = try Self.tilepack(arguments.map { $0.hasPrefix("missing") ? dir.file($0) : $0 }, in: dir)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        // One line naming the file (`--each` adds its closing "built 0 of 1 archives" line).
        let lines = run.stderr.split(separator: "\n")
        #expect(lines.count == (arguments.contains("--each") ? 2 : 1), "\(run.stderr)")
        #expect(
            lines.allSatisfy { $0.hasPrefix("error: ") } && lines.first?.contains(dir.path) == true, "\(run.stderr)")
    }

    /// Every command that writes a file, into a directory that does not exist: exit 2 at once,
    /// the line naming the directory.
    static let missingOutputDirectories: [[String]] = [
        ["build", "SOURCE", "-o", "OUT/x.mbtiles"],
        ["build", "--each", "SOURCE", "-o", "OUT"],
        ["merge", "a.mbtiles", "-o", "OUT/m.mbtiles"],
        ["render", "45.9", "6.87", "12", "--archive", "ARCHIVE", "-o", "OUT/v.png"],
        ["codec", "encode", "SOURCE", "-o", "OUT/o.pvr"],
        ["codec", "decode", "in.pvr", "--format", "pvrtc4", "--size", "8x8", "-o", "OUT/o.png"],
        ["catalog", "keygen", "-o", "OUT/k.jwk"],
        ["catalog", "sign", "catalog.json", "--key", "k.jwk", "-o", "OUT/catalog.jws"],
    ]

    @Test(arguments: missingOutputDirectories) func anOutputIntoAMissingDirectoryNamesIt(_ arguments: [String]) throws {
        let dir = TemporaryDirectory()
        let out = dir.file("out")
        let run = try Self.tilepack(
            arguments.map {
                $0 == "SOURCE"
                    ? TestData.sampleRegions + "/montblanc-color.tif"
                    : $0 == "ARCHIVE"
                        ? SampleLibrary.directory + "/montblanc-color.mbtiles"
                        : $0.replacingOccurrences(of: "OUT", with: out)
            }, in: dir)
        #expect(run.status == 2, "\(arguments): \(run.stderr)")
        #expect(run.stderr.hasSuffix("directory \(out) does not exist\n"), "\(arguments): \(run.stderr)")
    }

    @Test func renderArchiveDrawsOneArchiveWithoutALibrary() throws {
        let dir = TemporaryDirectory()
        let archive = SampleLibrary.directory + "/montblanc-color.mbtiles"
        let run = try Self.tilepack(
            ["render", "45.85", "6.88", "11", "--size", "64x64", "--archive", archive, "-o", dir.file("v.png")], in: dir
        )
        #expect(run.status == 0 && fileExists(dir.file("v.png")), "\(run.stderr)")
        #expect(run.stdout.hasPrefix("wrote \(dir.file("v.png")) (64x64, zoom 11): "), "\(run.stdout)")
        let both = try Self.tilepack(
            ["render", "45.85", "6.88", "11", "--archive", archive, "--library", "x"], in: dir)
        #expect(both.status == 64 && both.stderr.contains("give --archive or --library, not both"), "\(both.stderr)")
    }

    @Test func renderWithNothingToDrawWritesNoPictureAndExits2() throws {
        let dir = TemporaryDirectory()
        let archive = SampleLibrary.directory + "/montblanc-color.mbtiles"
        let nowhere = try Self.tilepack(
            ["render", "10", "10", "11", "--archive", archive, "-o", dir.file("n.png")], in: dir)
        #expect(nowhere.status == 2 && !fileExists(dir.file("n.png")), "\(nowhere.stderr)")
        #expect(
            nowhere.stderr == "error: \(archive): nothing covers 10 10 11 (1 archive searched): no picture written\n",
            "\(nowhere.stderr)")
        let empty = dir.file("empty")
        #expect(mkdir(empty, 0o755) == 0)
        let none = try Self.tilepack(
            ["render", "45.85", "6.88", "11", "--library", empty, "-o", dir.file("e.png")], in: dir)
        #expect(none.status == 2 && !fileExists(dir.file("e.png")), "\(none.stderr)")
        #expect(none.stderr.contains("\(empty): no region archives"), "\(none.stderr)")
    }

    /// `build --each` of a folder: one archive per GeoTIFF, named after it; with a missing file
    /// beside a good one, the good one is built, the missing one named, exit 2.
    @Test func buildEachMakesOneArchivePerInput() throws {
        let dir = TemporaryDirectory()
        let zooms = ["--codec", "png", "--min-zoom", "8", "--max-zoom", "8", "--quiet"]
        let all = try Self.tilepack(["build", "--each", TestData.sampleRegions, "-o", dir.path] + zooms, in: dir)
        #expect(all.status == 0, "\(all.stderr)")
        #expect(fileExists(dir.file("montblanc-color.mbtiles")) && fileExists(dir.file("montblanc-dem.mbtiles")))
        #expect(all.stdout.components(separatedBy: "wrote ").count == 3, "\(all.stdout)")

        let out = dir.file("partial")
        #expect(mkdir(out, 0o755) == 0)
        let missing = dir.file("missing.tif")
        let partial = try Self.tilepack(
            ["build", "--each", TestData.sampleRegions + "/montblanc-dem.tif", missing, "-o", out] + zooms, in: dir)
        #expect(partial.status == 2, "\(partial.stderr)")
        #expect(fileExists(out + "/montblanc-dem.mbtiles") && !fileExists(out + "/missing.mbtiles"))
        #expect(partial.stderr.hasSuffix("error: built 1 of 2 archives; failed: \(missing)\n"), "\(partial.stderr)")
    }

    /// `--rdo`: a λ that is not a number from 0 to 1000, or one given with PNG or PVRTC, is a
    /// usage error (64) naming `--rdo`, before anything is built; likewise for `codec encode`.
    @Test(arguments: [
        ["--rdo=-1"], ["--rdo", "nan"], ["--rdo", "inf"], ["--rdo", "5000"], ["--codec", "png", "--rdo", "1"],
        ["--codec", "pvrtc4", "--rdo", "0"],
    ])
    func aBadRDOIsAUsageError(_ options: [String]) throws {
        let dir = TemporaryDirectory()
        let out = dir.file("x.mbtiles")
        let run = try Self.tilepack(
            ["build", TestData.sampleRegions + "/montblanc-color.tif", "-o", out, "--quiet"] + options, in: dir)
        #expect(run.status == 64 && !fileExists(out), "\(options): \(run.stderr)")
        #expect(run.stderr.hasPrefix("error: --rdo") && run.stderr.split(separator: "\n").count == 1, "\(run.stderr)")
        let encode = try Self.tilepack(
            [
                "codec", "encode", TestData.sampleRegions + "/montblanc-color.tif", "--format", "pvrtc4", "--rdo", "1",
                "-o", dir.file("o.pvr"),
            ], in: dir)
        #expect(encode.status == 64 && encode.stderr.hasPrefix("error: --rdo"), "\(encode.stderr)")
    }
}
