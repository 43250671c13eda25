#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import TilePack

/// SIGINT and SIGTERM turned into a ``BuildInterruption`` while a build runs, so Ctrl-C stops
/// the workers at the next tile and keeps the temporary archive for `--resume` instead of
/// killing the process mid-batch (which `--resume` survives too, but silently).
///
/// The default actions are ignored first and the signals delivered through `DispatchSource`s:
/// their handlers run on a queue, not in signal context, so they may do anything; they only
/// set the flag the build polls. A second signal exits at once (status 128 + signal), as a
/// kill would: the committed batches stay resumable.
final class InterruptSignals {
    private let sources: [any DispatchSourceSignal]

    init(_ interruption: BuildInterruption) {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if interruption.signal != nil { _exit(128 + number) }
                interruption.interrupt(signal: number)
            }
            source.resume()
            return source
        }
    }

    /// Restores the default actions (a signal after the build kills as usual).
    func cancel() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
