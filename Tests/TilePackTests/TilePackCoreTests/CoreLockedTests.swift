import Testing
import Dispatch
@testable import TilePackCore
import TilePackTestSupport

@Suite(.tags(.concurrent)) struct CoreLockedTests {
    /// Eight threads incrementing one counter and appending to one array: every update lands
    /// (under `Scripts/sanitize thread`, also without a race report).
    @Test func everyUpdateFromManyThreadsLands() {
        let state = Locked((count: 0, log: [Int]()))
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for i in 0..<5_000 {
                state.withLock { s in
                    s.count += 1
                    if i % 1_000 == 0 { s.log.append(worker) }
                }
            }
        }
        let (count, log) = state.withLock { ($0.count, $0.log) }
        #expect(count == 40_000)
        #expect(log.count == 40 && Set(log) == Set(0..<8))
    }

    /// A typed error thrown inside the critical section comes out typed, and the lock is free after.
    @Test func aThrowingBodyReleasesTheLock() {
        struct Refused: Error, Equatable {}
        let state = Locked(1)
        #expect(throws: Refused()) { try state.withLock { (_: inout Int) throws(Refused) in throw Refused() } }
        #expect(
            state.withLock {
                $0 += 1; return $0
            } == 2)
    }
}
