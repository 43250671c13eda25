import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value that threads share behind a `Mutex`, with the lock made visible to ThreadSanitizer.
///
/// Why not `Mutex` alone: on Linux, `Synchronization.Mutex` is a priority-inheritance futex.
/// Under contention the kernel hands the lock to the waiter (`FUTEX_UNLOCK_PI`), so no
/// user-space atomic orders the two critical sections and TSan, which sees only atomics and the
/// pthread calls it intercepts, reports every contended access to the protected value as a race
/// (`Scripts/sanitize thread` found 40 such reports in the tile store, TIFF block cache, ledger
/// and access policy). `Locked` tells TSan what the kernel did, as the Swift runtime does for
/// its own futex-based `swift_once`: `__tsan_release` before unlocking, `__tsan_acquire` after
/// locking, on an address that is this lock's own.
///
/// - Cost: `Mutex.withLock` plus one predictable branch per lock and unlock when TSan is not
///   in the process (the annotation functions are looked up once, with `dlsym`); one small
///   object per lock for the address.
package struct Locked<Value>: ~Copyable, Sendable {
    private let mutex: Mutex<Value>
    private let identity = LockIdentity()

    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with exclusive access to the value.
    public borrowing func withLock<Result, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let address = UnsafeRawPointer(Unmanaged.passUnretained(identity).toOpaque())
        return try mutex.withLock { (value: inout sending Value) throws(E) -> sending Result in
            ThreadSanitizerAnnotation.acquire?(address)
            defer { ThreadSanitizerAnnotation.release?(address) }
            return try body(&value)
        }
    }
}

/// The object whose address names one ``Locked`` to ThreadSanitizer.
private final class LockIdentity: Sendable {}

/// `__tsan_acquire` and `__tsan_release` when the process runs under ThreadSanitizer, nil
/// otherwise. Looked up at run time, so one binary serves both.
enum ThreadSanitizerAnnotation {
    typealias Function = @convention(c) (UnsafeRawPointer?) -> Void
    nonisolated(unsafe) static let acquire: Function? = lookUp("__tsan_acquire")
    nonisolated(unsafe) static let release: Function? = lookUp("__tsan_release")

    private static func lookUp(_ name: String) -> Function? {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, name) else { return nil }
        return unsafeBitCast(symbol, to: Function.self)
    }
}
