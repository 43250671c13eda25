#if canImport(FoundationEssentials)
import FoundationEssentials
#endif
import Foundation
import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh directory under /tmp for one test, removed with everything in it when dropped.
/// The scratch-directory helper of one test; a fixture shared by a suite's tests takes
/// ``processTemporaryDirectory(_:)``.
package final class TemporaryDirectory {
    package let path: String

    package init() {
        var template = Array("/tmp/tilepack-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
    }

    package func file(_ name: String) -> String { "\(path)/\(name)" }

    /// Writes `bytes` to `name` and returns the full path.
    package func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let p = file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: p))
        return p
    }

    /// Names in the directory, sorted, without . and ..
    package func listing() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted()
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A directory under /tmp for a suite's lazily built fixture, which lives as long as the test
/// process (not one test) and is removed when it exits (``ProcessScratchDirectory``).
package func processTemporaryDirectory(_ prefix: String) -> String {
    guard let dir = ProcessScratchDirectory.make(prefix: prefix) else { preconditionFailure("mkdtemp failed") }
    return dir
}

package func fileExists(_ path: String) -> Bool { access(path, F_OK) == 0 }

package func writeFile(_ path: String, _ bytes: [UInt8]) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    precondition(fd >= 0)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

package func readFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY)
    precondition(fd >= 0)
    defer { close(fd) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n <= 0 { break }
        out.append(contentsOf: chunk[0..<n])
    }
    return out
}

/// Deterministic bytes for tests (xorshift64*), so failures reproduce.
package struct TestRandom {
    package var state: UInt64
    package init(seed: UInt64) { state = seed | 1 }
    package mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2_685_821_657_736_338_717
    }
    package mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in UInt8(truncatingIfNeeded: next() >> 32) }
    }
}
