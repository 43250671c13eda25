import Testing
@testable import TilePackCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TilePackTestSupport

/// A file read whole and hashed beside the read (`FileDigest.readWhole`, what a VRT is opened
/// with): the body sees every byte, the digest is the file's at every size around the 4 MiB
/// slices, and a FIFO, an oversized file or a body's error is reported, never waited on.
@Suite("Core: a file read whole with its digest", .tags(.concurrent))
struct CoreFileDigestTests {
    @Test func theDigestIsTheFilesAtEverySliceBoundary() throws {
        let dir = TemporaryDirectory()
        var rng = SplitMix64(seed: 28)
        for size in [0, 1, 4 << 20, (4 << 20) + 1, 9 << 20] {
            let bytes = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let path = try dir.write("f\(size)", bytes)
            let (seen, digest) = try FileDigest.readWhole(path: path, maxBytes: 16 << 20, what: "file") {
                raw in Array(raw)
            }
            #expect(seen == bytes, "size \(size)")
            #expect(digest == (try FileDigest.sha256(path: path)), "size \(size)")
        }
    }

    @Test func fifosOversizedFilesAndTheBodysErrorsAreReported() throws {
        let dir = TemporaryDirectory()
        let fifo = dir.file("fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        #expect(throws: InputFileError.self) {
            _ = try FileDigest.readWhole(path: fifo, maxBytes: 1 << 20, what: "file") { _ in 0 }
        }
        let big = try dir.write("big", [UInt8](repeating: 7, count: 1025))
        do {
            _ = try FileDigest.readWhole(path: big, maxBytes: 1024, what: "VRT") { _ in 0 }
            Issue.record("a file over the limit was read")
        } catch {
            #expect(error.description.contains("VRT is larger than 1024 bytes"))
        }
        do {
            _ = try FileDigest.readWhole(path: big, maxBytes: 1 << 20, what: "file") {
                (_) throws(InputFileError) -> Int in
                throw InputFileError(path: big, detail: "the body refused it")
            }
            Issue.record("the body's error was lost")
        } catch {
            #expect(error.detail == "the body refused it")
        }
    }
}
