import Logging
import NIOCore
#if canImport(Glibc)
import Glibc
#endif

/// Stops `accept` for ``pause`` when it fails for lack of descriptors or memory (EMFILE,
/// ENFILE, ENOBUFS, ENOMEM), on the server channel, first in its pipeline.
///
/// Why not NIO's own `AcceptBackoffHandler` (which ServerBootstrap installs): when the first
/// `accept` of a round fails, NIO's server channel keeps its read pending and stays registered
/// for readability, and the listening socket, its backlog full, stays readable: epoll wakes the
/// event loop at once, over and over (18,000 failing `accept4` calls in 2 s, a core busy, with
/// `ulimit -n 256` and 400 clients). Turning `autoRead` off unregisters the socket from epoll;
/// on again after the pause, `accept` is tried once more. A line is logged at most once per pause.
///
/// Confined to the server channel's event loop. Cost: nothing until an accept fails.
final class AcceptBackoff: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = Any
    typealias InboundOut = Any

    /// How long accepting stops: descriptors come back as connections close (the header and
    /// idle timeouts bound that), and NIO's own backoff waits the same.
    static let pause = TimeAmount.seconds(1)

    private let logger: Logger
    private var paused = false

    init(logger: Logger) {
        self.logger = logger
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let io = error as? IOError, [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(io.errnoCode), !paused,
            let options = context.channel.syncOptions
        {
            paused = true
            logger.warning(
                "accept failed: \(io.description); not accepting for 1 s (raise ulimit -n, or lower --max-connections)")
            try? options.setOption(ChannelOptions.autoRead, value: false)
            let channel = context.channel
            context.eventLoop.assumeIsolated().scheduleTask(in: Self.pause) { [weak self] in
                self?.paused = false
                try? channel.syncOptions?.setOption(ChannelOptions.autoRead, value: true)
            }
        }
        context.fireErrorCaught(error)
    }
}
