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
    func entriesDeclineGarbage(target: String) async throws {
        let entry = try #require(Self.entries[target])
        for (i, error) in try await Self.outcomes(of: Self.garbage, through: entry).enumerated() {
            Self.check(error, "\(target) input \(i)")
        }
    }

    @Test(arguments: [
        "fuzz-tiff", "fuzz-vrt", "fuzz-mbtiles", "fuzz-png", "fuzz-pvrtc", "fuzz-astc",
        "fuzz-jws", "fuzz-catalog", "fuzz-route",
    ])
    func savedCrashesNoLongerCrash(target: String) async throws {
        let entry = try #require(Self.entries[target])
        let files = Self.crashes(target)
        let inputs = try files.map { [UInt8](try Data(contentsOf: $0)) }
        for (file, error) in zip(files, try await Self.outcomes(of: inputs, through: entry)) {
            Self.check(error, "\(target)/\(file.lastPathComponent)")
        }
    }

    /// What `entry` makes of each input: nil when it succeeds, else its error. On a thread of
    /// its own (``onOwnThread(_:)``): `fuzz-route`'s entry waits on its calling thread for a
    /// task of the cooperative pool, which a test's own pool thread must not do.
    static func outcomes(
        of inputs: [[UInt8]], through entry: @escaping @Sendable ([UInt8]) throws -> Void
    ) async throws -> [(any Error)?] {
        try await onOwnThread {
            inputs.map { bytes in
                do {
                    try entry(bytes)
                    return nil
                } catch {
                    return error
                }
            }
        }
    }

    /// Success, or a one-line ``TilePackError``; anything else is recorded against `input`.
    static func check(_ error: (any Error)?, _ input: String) {
        switch error {
        case nil: break
        case let error as any TilePackError:
            #expect(!error.description.contains("\n"), "\(input): multi-line error")
        case let error?:
            Issue.record("\(input): not a TilePackError: \(type(of: error)): \(error)")
        }
    }
}
