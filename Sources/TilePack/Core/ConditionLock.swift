#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with one condition variable: what a blocking single-flight cache needs and
/// `Synchronization.Mutex` lacks (a thread waiting for another thread's load).
///
/// `@unchecked Sendable` because the pthread objects are made for sharing between threads;
/// the state it guards lives in the caller, which touches it only between ``lock()`` and
/// ``unlock()`` (or inside ``withLock(_:)``).
/// - Cost: an uncontended lock/unlock pair is two atomic operations (~20 ns); no allocation
///   after `init`.
package final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        let a = pthread_mutex_init(mutex, nil), b = pthread_cond_init(condition, nil)
        precondition(a == 0 && b == 0, "pthread mutex/condition initialisation failed")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() { pthread_mutex_lock(mutex) }
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Waits for ``broadcast()``; call with the lock held (it is held again on return).
    /// Callers re-check their condition in a loop: wake-ups may be spurious.
    package func wait() { pthread_cond_wait(condition, mutex) }

    /// Wakes every waiter.
    package func broadcast() { pthread_cond_broadcast(condition) }

    package func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}
