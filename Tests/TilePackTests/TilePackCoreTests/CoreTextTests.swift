import Testing
@testable import TilePackCore
import TilePackTestSupport

/// The one trimming helper every layer uses (option values, metadata lists, HTTP fields).
@Suite("Core: trimming")
struct CoreTextTests {
    @Test func trimsEveryKindOfWhitespaceAtBothEndsOnly() {
        #expect(" \t 3, 2 \r\n".trimmingWhitespace() == "3, 2")
        #expect("\u{00A0}bytes=0-9\u{2003}".trimmingWhitespace() == "bytes=0-9")
        #expect(Substring("  a b  ").trimmingWhitespace() == "a b")
        #expect(" \n\t ".trimmingWhitespace().isEmpty && "".trimmingWhitespace().isEmpty)
        #expect("x".trimmingWhitespace() == "x")
        // A list split and trimmed, as metadata bounds and --bands are read.
        #expect("1 , 2,\t3".split(separator: ",").map { String($0.trimmingWhitespace()) } == ["1", "2", "3"])
    }
}
