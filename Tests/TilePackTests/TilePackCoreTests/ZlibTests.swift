import Testing
@testable import TilePackCore
import TilePackTestSupport

@Suite struct ZlibTests {
    @Test func roundTripsAndReportsTruncation() throws {
        let input = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 * 7 / 13) }
        let packed = try Zlib.deflate(input)
        #expect(packed.count < input.count)
        #expect(try Zlib.inflate(packed, limit: 1 << 20) == input)

        var out = [UInt8](repeating: 0, count: input.count)
        let n = try packed.withUnsafeBytes { src in
            try out.withUnsafeMutableBytes { dst in try Zlib.inflate(src, into: dst) }
        }
        #expect(n == input.count && out == input)

        let truncated = Array(packed.prefix(packed.count / 2))
        #expect(throws: Zlib.Failure.self) { try Zlib.inflate(truncated, limit: 1 << 20) }
        #expect(throws: Zlib.Failure.self) { try Zlib.inflate(input.map { $0 ^ 0x5a }, limit: 1 << 20) }
    }

    @Test func refusesToInflatePastTheLimit() throws {
        let zeros = [UInt8](repeating: 0, count: 1 << 20)
        let packed = try Zlib.deflate(zeros)
        #expect(throws: Zlib.Failure.self) { try Zlib.inflate(packed, limit: 1000) }
    }
}
