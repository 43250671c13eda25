import Testing
import TilePackArchive
@testable import TilePackBuild
import TilePackCore
import TilePackTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A build stopped by a ``BuildInterruption`` (what Ctrl-C sets in the CLI): it throws
/// ``BuildInterrupted`` with the committed tiles, keeps the temporary archive, and `--resume`
/// ends with the uninterrupted build's archive; the resumed summary counts the whole archive.
@Suite("Build: interruption and the resumed summary")
struct BuildInterruptionTests {
    @Test func interruptedBuildKeepsItsWorkAndResumesToTheSameArchive() throws {
        let dir = TemporaryDirectory()
        let reference = try BuildResumeShardTests.build(BuildResumeShardTests.request(dir.file("ref.mbtiles")))
        let expected = try ArchiveContents(reference.outputPath)
        let total = reference.report.tilesWritten
        let out = dir.file("x.mbtiles")
        var request = BuildResumeShardTests.request(out)
        let interruption = BuildInterruption()
        request.interruption = interruption
        var build = RegionBuild(request)
        build.writerOptions.batchTiles = 2
        let stop = #expect(throws: BuildInterrupted.self) {
            _ = try build.run { progress in
                if progress.done >= total / 2 { interruption.interrupt(signal: SIGINT) }
            }
        }
        let interrupted = try #require(stop)
        #expect(interrupted.signal == SIGINT && interruption.signal == SIGINT)
        #expect(!fileExists(out), "no archive under its name before it is whole")
        let left = try #require(MBTilesWriter.interrupted(target: out).first)
        #expect(left.path == interrupted.subject && fileExists(left.path))
        #expect(interrupted.tilesDone > 0 && interrupted.tilesDone < total)
        #expect(!MBTilesWriter.committedRoots(path: left.path).isEmpty)
        #expect(interrupted.description == "\(left.path): interrupted (\(interrupted.tilesDone) tiles done)")

        var resume = BuildResumeShardTests.request(out)
        resume.resume = true
        let resumed = try BuildResumeShardTests.build(resume)
        #expect(resumed.report.resumedTiles == interrupted.tilesDone, "the message said what the resume skips")
        #expect(try ArchiveContents(out) == expected)
        // The summary's figures: the whole archive, and what this run added.
        #expect(resumed.archive.tiles == reference.archive.tiles)
        #expect(resumed.archive.tilesPerZoom == reference.report.perZoom)
        #expect(resumed.report.tilesWritten < total && resumed.report.resumedTiles > 0)
    }

    @Test func theFirstReasonIsKept() {
        let interruption = BuildInterruption()
        #expect(interruption.signal == nil)
        interruption.interrupt(signal: SIGTERM)
        interruption.interrupt(signal: SIGINT)
        #expect(interruption.signal == SIGTERM)
    }
}
