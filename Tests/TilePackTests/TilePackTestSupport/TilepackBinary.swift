import Foundation
import Testing

/// The built `tilepack` binary, run as a subprocess (the CLI tests and the integration tests).
package enum TilepackBinary {
    /// The `tilepack` binary next to this test bundle (both are products of the same build).
    package static let path: String = {
        let exe =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
        // On Darwin the tests live in a .xctest bundle: Contents/MacOS/<name>.
        while dir.path.contains(".xctest") { dir = dir.deletingLastPathComponent() }
        return dir.appendingPathComponent("tilepack").path
    }()

    package struct Run {
        package var status: Int32
        package var stdout: String
        package var stderr: String
    }

    /// Runs the built `tilepack` with `arguments`; `environment` entries are added to ours.
    package static func tilepack(_ arguments: [String], environment: [String: String] = [:]) throws -> Run {
        let scratch = TemporaryDirectory()
        let outPath = scratch.file("stdout"), errPath = scratch.file("stderr")
        _ = FileManager.default.createFile(atPath: outPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: outPath))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = out
        process.standardError = err
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        return Run(
            status: process.terminationStatus,
            stdout: try String(contentsOfFile: outPath, encoding: .utf8),
            stderr: try String(contentsOfFile: errPath, encoding: .utf8))
    }

    package static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }
}
