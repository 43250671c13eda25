import NIOCore
import NIOHTTP1
import TilePackCore

/// One HTTP/1 connection's timers and limits (``ConnectionLimits``), shared by its two
/// pipeline handlers: ``RawSide`` before the HTTP decoder (sees bytes arrive, writes refusals
/// straight to the socket) and ``HTTPSide`` after it (sees request and response parts).
///
/// Phases: `.receiving` from a request's first byte (or from accept) until its end was read,
/// under the header timeout (→ 408 and close when no response is owed, else close);
/// `.responding` until every request read has its response written (no read timer: NIO's
/// back-pressure stops reading); `.idle` between requests, under the idle timeout (→ close).
/// A response the client does not read (the channel unwritable) for the idle timeout → close.
/// A head over `maxHeaderBytes` → 431, a body over `maxBodyBytes` → 413, each written when no
/// other response is owed (else after the one in progress) and followed by a lingering close:
/// the write side is shut, input is discarded for at most ``lingerSeconds``, then the socket
/// closes (closing with unread input would send a reset that can destroy the refusal).
///
/// Confined to the connection's event loop (the handlers' callbacks); never shared.
/// Cost: O(1) per read, per part and per timer.
final class ConnectionGuard {
    /// How long a refused connection's input is read and discarded before the socket closes.
    static let lingerSeconds = 2.0

    enum Phase { case receiving, responding, idle, closing }

    let limits: ConnectionLimits
    private var raw: ChannelHandlerContext?
    private(set) var phase = Phase.receiving
    /// Request heads read, request ends read, response ends written.
    private var headsRead = 0, requestEnds = 0, responseEnds = 0
    /// A response head was written and its end not yet.
    private var responseStarted = false
    /// Body bytes of the request being read.
    private var bodyBytes = 0
    /// When set, nothing more is read: after the response in progress ends, this status (if
    /// any) is written and the connection closes.
    private var refusal: Int??
    /// When the phase's timeout (header or idle) expires; `.distantFuture` while responding.
    private var deadline = NIODeadline.distantFuture
    /// The pending wake-up that checks ``deadline``. Why a lazy wake-up and not a timer per
    /// phase: re-arming one costs a schedule and a cancel at each phase change, four per
    /// request (a heap insert, a promise, a heap removal each), which showed in the raw-tile
    /// rate on loopback; moving a deadline costs a clock read. Wake-ups come at most
    /// min(header, idle timeout) apart, and every deadline is set at least that far ahead, so
    /// none is missed; a connection wakes every such step only while a deadline is set.
    private var wakeUp: Scheduled<Void>?
    /// The lingering close's end (``closeWith(_:)``).
    private var lingerTimer: Scheduled<Void>?
    private var stallTimer: Scheduled<Void>?

    init(limits: ConnectionLimits) {
        self.limits = limits
    }

    /// The two handlers, in pipeline order around the HTTP decoder.
    static func handlers(_ limits: ConnectionLimits) -> (raw: RawSide, http: HTTPSide) {
        let shared = ConnectionGuard(limits: limits)
        return (RawSide(shared), HTTPSide(shared))
    }

    var isRefusing: Bool { refusal != nil || phase == .closing }

    // MARK: events

    /// The connection is open: its first request must arrive within the header timeout.
    func started(_ context: ChannelHandlerContext) {
        guard raw == nil else { return }
        raw = context
        arm(after: limits.headerTimeout)
    }

    /// Bytes arrived (before decoding): an idle connection starts a request.
    func bytesArrived() {
        guard phase == .idle else { return }
        phase = .receiving
        arm(after: limits.headerTimeout)
    }

    /// What ``HTTPSide`` does with a request part: forward it, drop it, or refuse the request.
    func requestPart(_ part: HTTPServerRequestPart) -> Bool {
        guard !isRefusing else { return false }
        switch part {
        case .head(let head):
            headsRead += 1
            bodyBytes = 0
            if let declared = head.headers.first(name: "content-length").flatMap({ Int($0) }),
                declared > limits.maxBodyBytes
            {
                refuse(413, headRead: true)
                return false
            }
        case .body(let buffer):
            bodyBytes += buffer.readableBytes
            if bodyBytes > limits.maxBodyBytes {
                refuse(413, headRead: true)
                return false
            }
        case .end:
            requestEnds += 1
            settle()
        }
        return true
    }

    /// A response part is about to be written.
    func responsePart(_ part: HTTPServerResponsePart) {
        switch part {
        case .head(let head):
            // 1xx heads precede the real one; they neither start nor end a response.
            if head.status.code >= 200 { responseStarted = true }
        case .body:
            break
        case .end:
            responseStarted = false
            responseEnds += 1
        }
    }

    /// A response's end was written: refuse what was pending, or wait for the next request.
    func responseEnded() {
        if let pending = refusal {
            refusal = nil
            closeWith(pending)
            return
        }
        settle()
    }

    /// The phase after a request's end was read or a response's end written: still reading a
    /// request (its timer keeps running, or starts for a head that came while responding),
    /// owing a response (no timer), or idle (the idle timer).
    private func settle() {
        guard phase != .closing else { return }
        if requestEnds < headsRead {
            if phase != .receiving {
                phase = .receiving
                arm(after: limits.headerTimeout)
            }
        } else if responseEnds < headsRead {
            phase = .responding
            disarm()
        } else {
            phase = .idle
            arm(after: limits.idleTimeout)
        }
    }

    /// The decoder found the head too large (431) or malformed (nil: Hummingbird answers 400).
    func headOverflowed() {
        refuse(431, headRead: false)
    }

    /// The socket's send buffer filled (the client does not read) or drained.
    func writabilityChanged(_ writable: Bool) {
        stallTimer?.cancel()
        stallTimer = nil
        guard !writable, let raw else { return }
        stallTimer = raw.eventLoop.assumeIsolated().scheduleTask(in: Self.amount(limits.idleTimeout)) { [weak self] in
            self?.stallTimer = nil
            self?.raw?.close(promise: nil)
        }
    }

    func stopped() {
        disarm()
        wakeUp?.cancel()
        wakeUp = nil
        lingerTimer?.cancel()
        lingerTimer = nil
        stallTimer?.cancel()
        stallTimer = nil
        raw = nil
    }

    // MARK: refusing

    /// Refuses the request being read with `status`: at once when no other response is owed,
    /// else after the one in progress (then without a status when the refused request's own
    /// head was read, as the server already answers it).
    private func refuse(_ status: Int, headRead: Bool) {
        guard !isRefusing else { return }
        let owedBefore = headsRead - responseEnds - (headRead ? 1 : 0)
        if owedBefore == 0 && !responseStarted {
            closeWith(status)
        } else {
            refusal = .some(headRead ? nil : status)
        }
    }

    /// Writes `status` (if any) as a one-shot response, shuts the write side, discards input
    /// for at most ``lingerSeconds``, then closes.
    private func closeWith(_ status: Int?) {
        guard let raw, phase != .closing else { return }
        phase = .closing
        disarm()
        if let status {
            var buffer = raw.channel.allocator.buffer(capacity: 256)
            buffer.writeBytes(Self.refusalBytes(status))
            raw.writeAndFlush(NIOAny(IOData.byteBuffer(buffer)), promise: nil)
        }
        raw.close(mode: .output, promise: nil)
        lingerTimer = raw.eventLoop.assumeIsolated().scheduleTask(in: Self.amount(Self.lingerSeconds)) { [weak self] in
            self?.lingerTimer = nil
            self?.raw?.close(promise: nil)
        }
    }

    /// A whole HTTP/1.1 response with the server's JSON error body and `Connection: close`.
    static func refusalBytes(_ status: Int) -> [UInt8] {
        let (kind, reason, message): (String, String, String) =
            switch status {
            case 408: ("requestTimeout", "Request Timeout", "the request was not received within the header timeout")
            case 413: ("payloadTooLarge", "Content Too Large", "the request body is larger than this server accepts")
            case 431:
                (
                    "headersTooLarge", "Request Header Fields Too Large",
                    "the request line and headers are larger than this server accepts"
                )
            default: ("http", "Error", "the request was refused")
            }
        let body = ServedResponse.error(status, kind: kind, message: message).body
        let head =
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(head.utf8) + body
    }

    // MARK: timers

    /// The phase's timeout runs from now. Cost: a clock read; a schedule only when no
    /// wake-up is pending.
    private func arm(after seconds: Double) {
        guard let raw else { return }
        deadline = .now() + Self.amount(seconds)
        if wakeUp == nil { scheduleWakeUp(raw) }
    }

    /// No timeout while a response is owed (the pending wake-up then finds nothing due).
    private func disarm() {
        deadline = .distantFuture
    }

    private func scheduleWakeUp(_ raw: ChannelHandlerContext) {
        // At least 1 ms: timeouts a library caller set near zero must not spin the loop.
        let step = max(Self.amount(min(limits.headerTimeout, limits.idleTimeout)), .milliseconds(1))
        let at = min(deadline, .now() + step)
        wakeUp = raw.eventLoop.assumeIsolated().scheduleTask(deadline: at) { [weak self] in
            self?.wokeUp()
        }
    }

    private func wokeUp() {
        wakeUp = nil
        guard deadline != .distantFuture, let raw else { return }
        if NIODeadline.now() < deadline {
            scheduleWakeUp(raw)
            return
        }
        deadline = .distantFuture
        timerFired()
    }

    private func timerFired() {
        switch phase {
        case .receiving:
            // 408 only when no response is owed: else a 408 would answer an earlier request.
            let owed = headsRead - responseEnds
            closeWith(owed == 0 && !responseStarted ? 408 : nil)
        case .idle:
            phase = .closing
            raw?.close(promise: nil)
        case .responding, .closing:
            break
        }
    }

    static func amount(_ seconds: Double) -> TimeAmount {
        .nanoseconds(Int64(max(0, min(seconds, 1e6)) * 1e9))
    }

    // MARK: handlers

    /// Before the HTTP decoder: bytes in, timers' socket end, refusals out.
    final class RawSide: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = ByteBuffer
        typealias InboundOut = ByteBuffer
        typealias OutboundOut = IOData
        let shared: ConnectionGuard
        init(_ shared: ConnectionGuard) { self.shared = shared }

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { shared.started(context) }
        }
        func channelActive(context: ChannelHandlerContext) {
            shared.started(context)
            context.fireChannelActive()
        }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            // A refused connection's input is only drained (the lingering close).
            guard shared.phase != .closing else { return }
            shared.bytesArrived()
            context.fireChannelRead(data)
        }
        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            // The client closed its side while we linger: nothing more to wait for.
            if shared.phase == .closing, let event = event as? ChannelEvent, event == .inputClosed {
                context.close(promise: nil)
                return
            }
            context.fireUserInboundEventTriggered(event)
        }
        func channelWritabilityChanged(context: ChannelHandlerContext) {
            shared.writabilityChanged(context.channel.isWritable)
            context.fireChannelWritabilityChanged()
        }
        func channelInactive(context: ChannelHandlerContext) {
            shared.stopped()
            context.fireChannelInactive()
        }
        func handlerRemoved(context: ChannelHandlerContext) {
            shared.stopped()
        }
    }

    /// After the HTTP decoder: request parts in (limits), response parts out (phases).
    final class HTTPSide: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias InboundOut = HTTPServerRequestPart
        typealias OutboundIn = HTTPServerResponsePart
        typealias OutboundOut = HTTPServerResponsePart
        let shared: ConnectionGuard
        init(_ shared: ConnectionGuard) { self.shared = shared }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard shared.requestPart(unwrapInboundIn(data)) else { return }
            context.fireChannelRead(data)
        }
        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            if shared.isRefusing { return }
            if let parse = error as? HTTPParserError, parse == .headerOverflow {
                shared.headOverflowed()
                return
            }
            context.fireErrorCaught(error)
        }
        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            let part = unwrapOutboundIn(data)
            shared.responsePart(part)
            context.write(data, promise: promise)
            if case .end = part {
                context.flush()
                shared.responseEnded()
            }
        }
    }
}
