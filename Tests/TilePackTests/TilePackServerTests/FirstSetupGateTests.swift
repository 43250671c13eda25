import Foundation
import Testing
import TilePackCore
@testable import TilePackServer
import TilePackTestSupport

/// ``FirstSetupGate``: connection setups run one at a time until one completed (two event loops
/// instantiating the pipeline's type metadata at once crashed the Swift runtime), and at once after.
@Suite("Server: the first connection setups run one at a time", .tags(.concurrent))
struct FirstSetupGateTests {
    /// Records how many setups run at the same moment, and the most at once. (``Locked``, not a
    /// bare `Mutex`: this suite runs under ThreadSanitizer too.)
    final class Overlap: Sendable {
        private let state = Locked((now: 0, most: 0))
        func enter() {
            state.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
        }
        func leave() { state.withLock { $0.now -= 1 } }
        var most: Int { state.withLock { $0.most } }
    }

    struct SetupFailed: Error {}

    /// Runs `body` on `count` threads started together; returns when all have returned.
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let done = DispatchGroup()
        for index in 0..<count {
            done.enter()
            Thread {
                body(index)
                done.leave()
            }.start()
        }
        done.wait()
    }

    @Test func untilOneCompletedSetupsNeverOverlap() {
        let gate = FirstSetupGate()
        let overlap = Overlap()
        // Every setup fails, so none completes and all eight stay serialised; each lasts 20 ms,
        // so eight threads without the gate would overlap.
        Self.onThreads(8) { _ in
            #expect(throws: SetupFailed.self) {
                try gate.run {
                    overlap.enter()
                    defer { overlap.leave() }
                    Thread.sleep(forTimeInterval: 0.02)
                    throw SetupFailed()
                }
            }
        }
        #expect(overlap.most == 1)
    }

    /// Two setups that each wait (up to 5 s) inside the gate for the other to enter.
    final class Meeting: @unchecked Sendable {  // semaphores and a mutex: safe from any thread
        let entered = [DispatchSemaphore(value: 0), DispatchSemaphore(value: 0)]
        private let seen = Locked([false, false])
        func arrive(_ index: Int) {
            entered[index].signal()
            let other = entered[1 - index].wait(timeout: .now() + 5) == .success
            seen.withLock { $0[index] = other }
        }
        var bothSawTheOther: Bool { seen.withLock { $0 == [true, true] } }
    }

    @Test func afterOneCompletedSetupsRunAtOnce() throws {
        let gate = FirstSetupGate()
        try gate.run {}
        // Only setups that run at once both see the other.
        let meeting = Meeting()
        Self.onThreads(2) { index in
            try? gate.run { meeting.arrive(index) }
        }
        #expect(meeting.bothSawTheOther)
    }
}
