import Dispatch
import Synchronization

/// The one way tilepack spreads independent items over cores: `body(index, worker)` for every
/// index in `0..<count` on up to `workers` threads, results in index order. (A build's
/// pyramid, whose parents wait for their children, runs on Build's `TileJobScheduler`.)
///
/// Each thread pulls the next index from a shared counter, so cheap items do not leave a core
/// idle, and passes its own `worker` number (0..<workers) so callers can give each thread its
/// own scratch. The first error stops the other threads from taking new items and is rethrown.
///
/// Cost: one allocation of `count` result slots; `workers` threads (one runs inline).
package func parallelMap<T>(
    count: Int, workers: Int,
    _ body: @Sendable (_ index: Int, _ worker: Int) throws -> T
) throws -> [T] {
    precondition(count >= 0 && workers >= 1, "parallelMap needs a count ≥ 0 and at least one worker")
    let threads = min(workers, count)
    if threads <= 1 {
        return try (0..<count).map { try body($0, 0) }
    }
    let slots = UnsafeMutableBufferPointer<T?>.allocate(capacity: count)
    slots.initialize(repeating: nil)
    defer {
        slots.deinitialize()
        slots.deallocate()
    }
    let shared = WorkQueueState()
    let box = ResultSlots(buffer: slots)
    DispatchQueue.concurrentPerform(iterations: threads) { w in
        while !shared.failed {
            let i = shared.next.add(1, ordering: .relaxed).oldValue
            guard i < count else { break }
            do {
                box.buffer[i] = try body(i, w)
            } catch {
                shared.fail(error)
                break
            }
        }
    }
    if let error = shared.error { throw error }
    return slots.map { slot in
        guard let value = slot else { preconditionFailure("parallelMap: slot left empty without an error") }
        return value
    }
}

/// Result slots of one parallel phase: each index is written by exactly one worker and read
/// only after `concurrentPerform` has joined them all, so no two threads touch one slot.
private struct ResultSlots<T>: @unchecked Sendable {
    let buffer: UnsafeMutableBufferPointer<T?>
}

/// The shared counter and first error of one parallel phase.
private final class WorkQueueState: Sendable {
    let next = Atomic<Int>(0)
    private let firstError = Locked<(any Error)?>(nil)
    private let failedFlag = Atomic<Bool>(false)

    var failed: Bool { failedFlag.load(ordering: .relaxed) }
    var error: (any Error)? { firstError.withLock { $0 } }

    func fail(_ error: any Error) {
        firstError.withLock { if $0 == nil { $0 = error } }
        failedFlag.store(true, ordering: .relaxed)
    }
}
