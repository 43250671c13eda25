import Foundation

/// Runs `body` on a thread of its own and returns (or throws) what it does, suspending the
/// calling task meanwhile instead of blocking its thread.
///
/// Why: Swift Testing runs the tests as tasks on the cooperative pool, which has one thread a
/// core. A test that blocks its pool thread on work that itself needs the pool (a blocking
/// socket read against a server in this process, or `ServerFuzzEntry.route`, which waits on
/// its calling thread for a task) holds one of the pool's threads until the pool gets round to
/// that work; on 2 cores the replay of the fuzz targets' inputs held one of two threads for
/// the whole suite (212 s), and `swift test` ran on one core.
/// - Cost: one thread started and joined.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let outcome: Result<T, any Error> = await withCheckedContinuation { done in
        Thread { done.resume(returning: Result { try body() }) }.start()
    }
    return try outcome.get()
}
