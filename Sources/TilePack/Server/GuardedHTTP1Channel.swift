import TilePackCore
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
#if canImport(Glibc)
import Glibc
#endif

/// Hummingbird's HTTP/1 child channel with ``ConnectionLimits`` enforced: a connection over
/// `maxConnections` is closed as soon as it is accepted; the others get a receive buffer of at
/// most ``ConnectionLimits/maxReadBuffer``, NIO's decoder limited to `maxHeaderBytes` (431
/// above), and a ``ConnectionGuard`` (timeouts 408/close, body limit 413).
///
/// Pipeline: ConnectionGuard.RawSide, HTTPResponseEncoder, HTTPRequestDecoder,
/// ConnectionGuard.HTTPSide, HTTP1ToHTTPServerCodec, HTTPConnectionStateHandler (graceful
/// shutdown), NIOAsyncChannel. Hummingbird's own `HTTP1Channel` cannot take a handler before
/// its decoder, where the header timer must see bytes arrive.
struct GuardedHTTP1Channel: ServerChildChannel, HTTPChannelHandler {
    /// A connection: its channel, and the async wrapper Hummingbird serves (nil: refused).
    struct Connection: ServerChildChannelValue {
        let channel: any Channel
        let http: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>?
    }

    let responder: HTTPChannelHandler.Responder
    let limits: ConnectionLimits
    let counter: ConnectionCounter
    /// Every server of the process shares it: type metadata is per process.
    static let firstSetups = FirstSetupGate()

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Connection> {
        channel.eventLoop.makeCompletedFuture {
            guard counter.admit(logger: logger) else {
                // Closed at once: the descriptor is free again before the next accept.
                channel.close(promise: nil)
                return Connection(channel: channel, http: nil)
            }
            let counter = self.counter
            channel.closeFuture.whenComplete { _ in counter.release() }
            // One at a time until one has completed (FirstSetupGate: the runtime's metadata race).
            var http: NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>?
            try Self.firstSetups.run {
                let sync = channel.pipeline.syncOperations
                try channel.syncOptions?.setOption(
                    ChannelOptions.recvAllocator,
                    value: AdaptiveRecvByteBufferAllocator(
                        minimum: 64, initial: 1024, maximum: ConnectionLimits.maxReadBuffer))
                var decoderLimits = NIOHTTPDecoderLimitConfiguration()
                decoderLimits.maxHeaderFieldSize = limits.maxHeaderBytes
                decoderLimits.maxHeaderListSize = limits.maxHeaderBytes
                decoderLimits.maxHeaderFieldCount = 1000
                let guards = ConnectionGuard.handlers(limits)
                try sync.addHandler(guards.raw)
                try sync.addHandler(HTTPResponseEncoder(configuration: .init()))
                // Keep-alive and pipelined requests: Hummingbird answers one at a time, and the
                // async channel's back-pressure stops reading while it does.
                try sync.addHandler(
                    ByteToMessageHandler(
                        HTTPRequestDecoder(leftOverBytesStrategy: .dropBytes, limitConfiguration: decoderLimits)))
                try sync.addHandler(guards.http)
                try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                try sync.addHandler(HTTPConnectionStateHandler(idleTimeout: nil, logger: logger))
                http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                    wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
            }
            return Connection(channel: channel, http: http)
        }
    }

    func handle(value: Connection, logger: Logger) async {
        guard let http = value.http else { return }
        await handleHTTP(asyncChannel: http, logger: logger)
    }
}

/// The open connections of one server, against its limit; a refusal is logged at most once a
/// second (with how many there were), and when a flood has drained glibc's free heap memory
/// goes back to the system (`malloc_trim`), so RSS returns near its idle figure.
///
/// Thread-safe (a mutex; taken for O(1) work per accept and per close).
final class ConnectionCounter: Sendable {
    private struct State {
        var open = 0
        var peak = 0
        var refused = 0
        var lastLog: ContinuousClock.Instant?
        /// The trim at a quarter of the peak was done.
        var drainTrimmed = false
    }
    private let state = Locked(State())
    let limit: Int
    /// A flood is this many connections: smaller peaks leave little to give back.
    static let trimPeak = 256
    /// Connections left when a flood counts as over: a viewer's few, kept alive.
    static let trimIdle = 8

    init(limit: Int) {
        self.limit = limit
    }

    var open: Int { state.withLock { $0.open } }

    /// Counts a new connection, or refuses it (false) when `limit` are open.
    func admit(logger: Logger) -> Bool {
        let now = ContinuousClock.now
        let (admitted, report): (Bool, Int?) = state.withLock { s in
            guard s.open >= limit else {
                s.open += 1
                s.peak = max(s.peak, s.open)
                return (true, nil)
            }
            s.refused += 1
            if let last = s.lastLog, now - last < .seconds(1) { return (false, nil) }
            s.lastLog = now
            defer { s.refused = 0 }
            return (false, s.refused)
        }
        if let report {
            logger.warning("refused \(report) connection\(report == 1 ? "" : "s") over --max-connections \(limit)")
        }
        return admitted
    }

    /// A connection closed. After a flood (a peak of ``trimPeak`` or more) free heap memory goes
    /// back to the system twice: when the connections have fallen to a quarter of the peak (the
    /// flood is draining) and when at most ``trimIdle`` remain (it is over; the peak resets).
    func release() {
        let trim: Bool = state.withLock { s in
            s.open -= 1
            guard s.peak >= Self.trimPeak else { return false }
            if s.open <= Self.trimIdle {
                s.peak = s.open
                s.drainTrimmed = false
                return true
            }
            guard !s.drainTrimmed, s.open <= s.peak / 4 else { return false }
            s.drainTrimmed = true
            return true
        }
        if trim { Self.trimHeap() }
    }

    /// glibc's `malloc_trim(0)`: frees the top of every arena and the whole free pages inside
    /// them (looked up by name: malloc.h is not in Swift's Glibc module). Does nothing elsewhere.
    /// Cost: a walk of the free lists, about a millisecond per 100 MB of heap.
    static func trimHeap() {
        #if canImport(Glibc)
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "malloc_trim") else { return }
        typealias MallocTrim = @convention(c) (Int) -> Int32
        _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        #endif
    }
}
