import TilePackCore

/// Runs an `async` function to completion on the calling thread, for synchronous APIs built on
/// async libraries (swift-certificates' `Verifier.validate` is async but never waits on I/O
/// when no OCSP policy is set).
///
/// The task is created with this executor as its preference, so every job of it, including
/// code of default actors it calls, is enqueued here and run by the caller's loop in
/// ``run(_:)``. No other thread is needed: unlike blocking on a semaphore while a detached
/// task runs on the cooperative pool, it cannot starve that pool when the caller is itself
/// one of the pool's (2 on this machine) threads.
///
/// `@unchecked Sendable`: the job list and flag are only touched under `lock`.
/// - Cost: one task and one lock round trip per job: about 0.5 µs for a body that does not
///   suspend (measured on the development machine).
final class CallerThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let lock = ConditionLock()
    private var jobs: [UnownedJob] = []
    private var finished = false

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        lock.withLock {
            jobs.append(job)
            lock.broadcast()
        }
    }

    private func finish() {
        lock.withLock {
            finished = true
            lock.broadcast()
        }
    }

    /// Runs jobs on this thread until the task that `body` runs in has finished.
    private func drain() {
        while true {
            lock.lock()
            while jobs.isEmpty && !finished { lock.wait() }
            if jobs.isEmpty {
                lock.unlock()
                return
            }
            let job = jobs.removeFirst()
            lock.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// The value of `body`, computed on the calling thread.
    static func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let executor = CallerThreadExecutor()
        let result = Locked<T?>(nil)
        Task(executorPreference: executor) {
            let value = await body()
            result.withLock { $0 = value }
            executor.finish()
        }
        executor.drain()
        guard let value = result.withLock({ $0 }) else {
            preconditionFailure("CallerThreadExecutor: the task finished without a result")
        }
        return value
    }
}
