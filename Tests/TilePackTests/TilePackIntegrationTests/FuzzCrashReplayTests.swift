import Foundation
import Testing
import TilePack
import TilePackServer
import TilePackTestSupport

/// Replays every input the libFuzzer targets saved (Fuzz/crashes/TARGET/, written by
/// Scripts/fuzz) through the same entry the target calls: each must now end in success or a
/// typed error (a ``TilePackError``, or for the router a Hummingbird status it sends). A trap
/// kills the test process, which fails the run. A directory with no files replays nothing;
/// ``everyTargetHasAnEntry`` keeps the table and the directories in step.
@Suite struct FuzzCrashReplayTests {
    /// Each target of Fuzz/Package.swift and the public entry its `main.swift` passes to the driver.
    static let entries: [String: @Sendable ([UInt8]) throws -> Void] = [
        "fuzz-tiff": GeoTIFFFuzzEntry.tiff,
        "fuzz-vrt": GeoTIFFFuzzEntry.vrt,
        "fuzz-mbtiles": ArchiveFuzzEntry.mbtiles,
        "fuzz-png": CodecFuzzEntry.png,
        "fuzz-pvrtc": CodecFuzzEntry.pvrtc,
        "fuzz-astc": CodecFuzzEntry.astc,
        "fuzz-jws": RegionsFuzzEntry.jws,
        "fuzz-catalog": RegionsFuzzEntry.catalog,
        "fuzz-route": ServerFuzzEntry.route,
    ]

    static var fuzzDirectory: URL { TestData.fuzzDirectory }

    /// The saved inputs of `target`, sorted by name.
    static func crashes(_ target: String) -> [URL] {
        let dir = fuzzDirectory.appendingPathComponent("crashes").appendingPathComponent(target)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { dir.appendingPathComponent($0) }
    }

    @Test func everyTargetHasAnEntry() throws {
        let sources = Self.fuzzDirectory.appendingPathComponent("Sources")
        let targets = try FileManager.default.contentsOfDirectory(atPath: sources.path).filter { $0.hasPrefix("fuzz-") }
        #expect(Set(targets) == Set(Self.entries.keys))
        for target in targets {
            let main = try String(
                contentsOf: sources.appendingPathComponent(target).appendingPathComponent("main.swift"), encoding: .utf8
            )
            #expect(
                main.contains("runFuzzer(") && main.contains("LLVMFuzzerTestOneInput"),
                "\(target)/main.swift does not run an entry")
        }
    }

    /// Inputs every entry must refuse (or take) without a trap and with a typed error: empty,
    /// one byte, 64 bytes of 0xFF, and text that is half of several formats.
    static let garbage: [[UInt8]] = [
        [], [0], [UInt8](repeating: 0xFF, count: 64),
        Array("GET /tiles/fuzz/1/0/0.png\nIf-None-Match: \"x\"\n".utf8),
        Array("II*\u{0}\u{8}\u{0}\u{0}\u{0}<VRTDataset rasterXSize=\"1\">{\"version\":2}eyJhbGciOiJFUzI1NiJ9..".utf8),
    ]

    @Test(arguments: [
        "fuzz-tiff", "fuzz-vrt", "fuzz-mbtiles", "fuzz-png", "fuzz-pvrtc", "fuzz-astc",
        "fuzz-jws", "fuzz-catalog", "fuzz-route",
    ])
    func entriesDeclineGarbage(target: String) throws {
        let entry = try #require(Self.entries[target])
        for (i, bytes) in Self.garbage.enumerated() {
            do {
                try entry(bytes)
            } catch let error as any TilePackError {
                #expect(!error.description.contains("\n"), "input \(i): multi-line error")
            } catch {
                Issue.record("\(target) input \(i): not a TilePackError: \(type(of: error)): \(error)")
            }
        }
    }

    @Test(arguments: [
        "fuzz-tiff", "fuzz-vrt", "fuzz-mbtiles", "fuzz-png", "fuzz-pvrtc", "fuzz-astc",
        "fuzz-jws", "fuzz-catalog", "fuzz-route",
    ])
    func savedCrashesNoLongerCrash(target: String) throws {
        let entry = try #require(Self.entries[target])
        for file in Self.crashes(target) {
            let bytes = [UInt8](try Data(contentsOf: file))
            do {
                try entry(bytes)
            } catch let error as any TilePackError {
                #expect(!error.description.contains("\n"), "\(file.lastPathComponent): multi-line error")
            } catch {
                Issue.record("\(target)/\(file.lastPathComponent): not a TilePackError: \(type(of: error)): \(error)")
            }
        }
    }
}
