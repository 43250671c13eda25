import Foundation
import Testing
import TilePackCore

@Suite("Core: process scratch directories")
struct CoreProcessScratchDirectoryTests {
    /// Made private (0700) under the prefix, and gone with its files once removed (what the
    /// exit handler does for each registered directory).
    @Test func aScratchDirectoryIsPrivateAndRemovedWithItsFiles() throws {
        let dir = try #require(ProcessScratchDirectory.make(prefix: "scratch-test"))
        #expect(dir.contains("/tilepack-scratch-test-"))
        let attributes = try FileManager.default.attributesOfItem(atPath: dir)
        #expect((attributes[.posixPermissions] as? Int) == 0o700)
        try FileManager.default.createDirectory(atPath: dir + "/inner", withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir + "/inner/file"))
        ProcessScratchDirectory.remove(dir)
        #expect(!FileManager.default.fileExists(atPath: dir))
    }
}
