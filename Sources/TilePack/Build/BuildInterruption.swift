import TilePackCore
import Synchronization

/// A request, from outside the build (a signal handler's queue, a GUI's Cancel button), to stop
/// a running ``RegionBuild`` the way a kill would but tidily: the build stops handing tiles to
/// the archive at its next tile, rolls back the open batch, keeps the temporary archive with
/// its journal for `--resume`, and throws ``BuildInterrupted``.
///
/// Setting it is one atomic store, so it may be called from any thread; it is never called in
/// a signal handler itself (the CLI's handler is a `DispatchSource`'s event, on a queue).
/// - Cost: one relaxed atomic load per tile written.
public final class BuildInterruption: Sendable {
    private let signalNumber = Atomic<Int32>(0)

    public init() {}

    /// Asks the build to stop; `signal` is why (SIGINT, SIGTERM), kept for the exit status.
    /// Later calls keep the first reason.
    public func interrupt(signal: Int32) {
        _ = signalNumber.compareExchange(expected: 0, desired: signal, ordering: .relaxed)
    }

    /// The signal that asked the build to stop, nil while it may go on.
    public var signal: Int32? {
        let s = signalNumber.load(ordering: .relaxed)
        return s == 0 ? nil : s
    }
}

/// A build stopped by a ``BuildInterruption``: its temporary archive is kept for `--resume`.
/// `description` is `PATH: interrupted (N tiles done)`; the CLI prints its own words and exits
/// 128 + the signal (130 for SIGINT, 143 for SIGTERM).
public struct BuildInterrupted: TilePackError, Equatable {
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// Stopped on request (the only code).
        public static let interrupted = Code("interrupted")
    }

    public let code = Code.interrupted
    /// The temporary archive kept for `--resume`.
    public let subject: String
    public var detail: String { "interrupted (\(tilesDone) tiles done)" }
    public var cause: (any Error)? { nil }
    /// Not the input's fault nor the machine's: the person or the system asked.
    public var category: TilePackErrorCategory { .environment }
    /// The signal that asked (``BuildInterruption/interrupt(signal:)``).
    public let signal: Int32
    /// Planned tiles (empty ones included) a resume will not redo: those under the roots the
    /// journal committed as finished, this run's and any earlier run's it resumed.
    public let tilesDone: Int

    public init(temporaryPath: String, signal: Int32, tilesDone: Int) {
        self.subject = temporaryPath
        self.signal = signal
        self.tilesDone = tilesDone
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.subject == rhs.subject && lhs.signal == rhs.signal && lhs.tilesDone == rhs.tilesDone
    }
}
