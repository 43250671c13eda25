import Testing
import Foundation
@testable import TilePack
@testable import TilePackGeoTIFF
import TilePackTestSupport

/// `tilepack build --progress …` through the built binary (the CLI target cannot be
/// imported): stderr redirected to a file, as in CI logs.
@Suite("CLI: build progress on a terminal, in a log, as JSON")
struct CLIBuildProgressTests {
    /// The `tilepack` binary next to this test bundle.
    static let binary = TilepackBinary.path

    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `tilepack build` on a small uint16 DEM with stderr going to a file.
    static func build(_ arguments: [String]) throws -> Run {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        try DEMFixture.write(dir + "/dem.tif", type: .uint16, nodata: 65535, width: 200, height: 160)
        let errPath = dir + "/stderr.txt", outPath = dir + "/stdout.txt"
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments =
            ["build", dir + "/dem.tif", "-o", dir + "/dem.mbtiles", "--codec", "png", "--workers", "2"] + arguments
        process.standardError = err
        process.standardOutput = out
        try process.run()
        process.waitUntilExit()
        try err.close()
        try out.close()
        return Run(
            status: process.terminationStatus,
            stdout: try String(contentsOfFile: outPath, encoding: .utf8),
            stderr: try String(contentsOfFile: errPath, encoding: .utf8))
    }

    @Test func binaryIsBuilt() {
        #expect(FileManager.default.isExecutableFile(atPath: Self.binary), "no tilepack binary at \(Self.binary)")
    }

    /// `z12 812/1243 tiles 65% 143 tiles/s ETA 0:03` (lines) or the same after a bar.
    static func isProgressLine(_ line: Substring, bar: Bool) -> Bool {
        let pattern =
            bar
            ? #/^z\d+ \[[#-]{24}\] \d+/\d+ tiles \d+% \d+(\.\d)? tiles/s ETA ((\d+:)?\d+:\d\d|-:--) *$/#
            : #/^z\d+ \d+/\d+ tiles \d+% \d+(\.\d)? tiles/s ETA ((\d+:)?\d+:\d\d|-:--)$/#
        return line.wholeMatch(of: pattern) != nil
    }

    @Test func aRedirectedStderrGetsPlainLinesWithoutCarriageReturns() throws {
        let run = try Self.build([])  // --progress auto: stderr is a file, so lines
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("\r"))
        let lines = run.stderr.split(separator: "\n")
        #expect(!lines.isEmpty && lines.allSatisfy { Self.isProgressLine($0, bar: false) }, "\(run.stderr)")
        let last = try #require(lines.last)
        let counts = try #require(last.firstMatch(of: #/ (\d+)/(\d+) tiles 100% /#), "\(last)")
        #expect(counts.1 == counts.2)
        #expect(run.stdout.contains("  colour: elevation (single-band uint16, values "), "\(run.stdout)")
    }

    struct Record: Decodable {
        let done: Int
        let total: Int
        let zoom: Int
        let tiles_per_second: Double
        let eta_seconds: Double?
        let elapsed_seconds: Double
    }

    @Test func jsonProgressIsOneDecodableObjectPerLine() throws {
        let run = try Self.build(["--progress", "json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("\r"))
        let lines = run.stderr.split(separator: "\n")
        #expect(!lines.isEmpty)
        var records: [Record] = []
        for line in lines {
            let data = Data(line.utf8)
            records.append(try JSONDecoder().decode(Record.self, from: data))
            let keys = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]).keys
            #expect(Set(keys) == ["done", "total", "zoom", "tiles_per_second", "eta_seconds", "elapsed_seconds"])
        }
        let last = try #require(records.last)
        #expect(last.done == last.total && last.total > 0 && last.eta_seconds == 0)
        #expect(
            records.allSatisfy { (0...24).contains($0.zoom) && $0.elapsed_seconds >= 0 && $0.tiles_per_second >= 0 })
        #expect(zip(records, records.dropFirst()).allSatisfy { $0.done < $1.done })
    }

    @Test func aBarRedrawsInPlaceAndEndsItsLine() throws {
        let run = try Self.build(["--progress", "bar"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.hasPrefix("\r") && run.stderr.hasSuffix("\n"))
        let frames = run.stderr.dropLast().split(separator: "\r")
        #expect(frames.allSatisfy { Self.isProgressLine($0, bar: true) }, "\(run.stderr)")
        #expect(frames.last?.contains("[########################]") == true)
    }

    @Test func quietAndNonePrintNoProgress() throws {
        let quiet = try Self.build(["--quiet"])
        #expect(quiet.status == 0 && quiet.stderr.isEmpty)
        let none = try Self.build(["--progress", "none"])
        #expect(none.status == 0 && none.stderr.isEmpty)
        let both = try Self.build(["--quiet", "--progress", "json"])
        #expect(both.status == 64 && both.stderr.contains("--quiet"))
    }
}
