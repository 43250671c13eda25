import Synchronization
import TilePackCore

/// Runs connection setups one at a time until one of them has completed, then lets them run
/// at once: ``GuardedHTTP1Channel`` passes its pipeline construction through one per process.
///
/// Why: a connection's first setup instantiates the generic type metadata of the pipeline's
/// handlers from their mangled names (`ByteToMessageHandler<HTTPRequestDecoder>`,
/// `HTTPPart<…>`, the async channel's handlers). When two event loops set up their first
/// connections at the same moment, the Swift 6.3.1 runtime can crash: one thread, checking a
/// conformance of `ByteToMessageHandler`'s generic argument, passes a null metadata to
/// `swift_checkMetadataState` while the other is completing `HTTPPart`'s metadata
/// (SIGSEGV in `isCanonicalStaticallySpecializedGenericMetadata`, both threads in
/// `GuardedHTTP1Channel.setup`). A debug build of `serve` died so in a CI run and twice in
/// about 6,700 starts on a loaded 2-core machine with 2–8 clients connecting at once; the
/// clients' first requests were reset. Once a setup has completed, the metadata is cached and
/// concurrent setups only read it.
///
/// Thread-safe. Cost: one atomic load per setup once a setup has completed; before that, a lock.
final class FirstSetupGate: Sendable {
    private let completed = Atomic<Bool>(false)
    private let serial = Locked(())

    init() {}

    /// Runs `setup`: alone until a setup has returned without throwing, then without waiting.
    /// - Throws: what `setup` throws (that setup does not count as completed).
    func run(_ setup: () throws -> Void) throws {
        if completed.load(ordering: .acquiring) {
            try setup()
            return
        }
        try serial.withLock { (_: inout Void) throws -> Void in
            try setup()
            completed.store(true, ordering: .releasing)
        }
    }
}
