#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one client may hold of `serve`: connections, header bytes, body bytes and time
/// (`serve --max-connections --max-header-bytes --max-body-bytes --header-timeout
/// --idle-timeout`; docs/limits.md gives each default and its reason).
///
/// Invariant: every figure is positive. The memory a connection can pin is at most about
/// ``perConnectionBytes`` (its unfinished head, the decoder's copy of it, a read buffer of at
/// most ``maxReadBuffer``), so ``defaultMaxConnections(fileLimit:maxHeaderBytes:)`` connections
/// fit ``connectionMemory`` beside the tile store's budget: the server's documented bound is
/// budget + 64 MiB.
public struct ConnectionLimits: Sendable, Equatable {
    /// Open connections at most; one more is closed right after `accept` (logged at most once a second).
    public var maxConnections: Int
    /// Request line plus header fields, in bytes; more → 431 and close.
    public var maxHeaderBytes: Int
    /// Request body bytes (declared or sent); more → 413 and close.
    public var maxBodyBytes: Int
    /// Seconds from a request's first byte (or from accept) to its last; longer → 408 and close.
    public var headerTimeout: Double
    /// Seconds a kept-alive connection may wait for its next request, and a response may wait
    /// for the client to read; longer → close.
    public var idleTimeout: Double

    /// 16 KiB of request line and headers: a tile request is under 1 KiB, a browser's with
    /// cookies a few KiB; nginx answers 431/400 above 8–32 KiB (large_client_header_buffers).
    public static let defaultMaxHeaderBytes = 16 << 10
    /// 64 KiB of body: only the store actions take a POST, and theirs is empty.
    public static let defaultMaxBodyBytes = 64 << 10
    /// 10 s to send a whole request: a client on a slow link sends 1 KiB in well under a
    /// second; a slow-loris client that trickles headers is dropped after 10 s (nginx: 60 s).
    public static let defaultHeaderTimeout = 10.0
    /// 60 s of keep-alive idleness: a map viewer asks again within seconds while the user
    /// pans; browsers keep idle connections about as long (Chrome 300 s, Firefox 115 s) and
    /// reconnect when the server has closed one.
    public static let defaultIdleTimeout = 60.0
    /// The share of `serve`'s memory bound (budget + 64 MiB) that open connections may pin:
    /// the other 16 MiB are the process itself (code, runtime, event loops, SQLite).
    public static let connectionMemory = 48 << 20
    /// Descriptors kept free of connections: archives, SQLite journals, pack files, epoll,
    /// logging, and the accept that closes a connection over the limit.
    public static let reservedDescriptors = 128
    /// The largest read buffer a connection gets (NIO's adaptive receive allocator grows to it
    /// while reads fill it); NIO's default, 64 KiB, would let an idle connection keep 64 KiB.
    public static let maxReadBuffer = 16 << 10
    /// The queue of connections the kernel completes before `accept` (Hummingbird: 256). A
    /// browser opening its 6 connections and a burst of clients fit; over it the kernel drops SYNs.
    public static let listenBacklog = 1024

    /// The memory one connection may pin: its unfinished head twice (the decoder's buffer and
    /// the header fields it has split off), a full read buffer, and 16 KiB of channel, handler
    /// and task state (measured with checks/test_serve_flood_check.py).
    public static func perConnectionBytes(maxHeaderBytes: Int) -> Int {
        2 * maxHeaderBytes + maxReadBuffer + (16 << 10)
    }

    /// The default connection limit: as many as ``connectionMemory`` holds at
    /// ``perConnectionBytes(maxHeaderBytes:)`` each (768 at the defaults: 64 KiB each), and never more
    /// than the descriptor limit minus ``reservedDescriptors`` (at least 1).
    public static func defaultMaxConnections(fileLimit: Int, maxHeaderBytes: Int) -> Int {
        let byMemory = connectionMemory / max(perConnectionBytes(maxHeaderBytes: maxHeaderBytes), 1)
        let byDescriptors = fileLimit - reservedDescriptors
        return max(1, min(byMemory, byDescriptors))
    }

    /// The soft `RLIMIT_NOFILE` of this process (`ulimit -n`); 1,024 when it cannot be read.
    /// Cost: one getrlimit(2).
    public static func fileDescriptorLimit() -> Int {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        // RLIM_INFINITY and figures beyond Int are "no limit": the memory share decides.
        return Int(exactly: limit.rlim_cur) ?? Int.max / 2
    }

    /// The defaults, with the connection limit from this process's descriptor limit.
    public init() {
        self.init(
            maxConnections: Self.defaultMaxConnections(
                fileLimit: Self.fileDescriptorLimit(),
                maxHeaderBytes: Self.defaultMaxHeaderBytes))
    }

    public init(
        maxConnections: Int, maxHeaderBytes: Int = defaultMaxHeaderBytes, maxBodyBytes: Int = defaultMaxBodyBytes,
        headerTimeout: Double = defaultHeaderTimeout, idleTimeout: Double = defaultIdleTimeout
    ) {
        self.maxConnections = maxConnections
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.headerTimeout = headerTimeout
        self.idleTimeout = idleTimeout
    }

    /// Nil when every figure is usable, else the problem, naming the option.
    public var problem: String? {
        if maxConnections < 1 { return "--max-connections \(maxConnections) must be at least 1" }
        if maxHeaderBytes < 1024 { return "--max-header-bytes \(maxHeaderBytes) must be at least 1024" }
        if maxHeaderBytes > 1 << 20 { return "--max-header-bytes \(maxHeaderBytes) must be at most 1 MiB" }
        if maxBodyBytes < 0 || maxBodyBytes > 1 << 30 {
            return "--max-body-bytes \(maxBodyBytes) must be within 0…1 GiB"
        }
        if !(headerTimeout > 0 && headerTimeout <= 3600) {
            return "--header-timeout \(headerTimeout) must be within (0, 3600] seconds"
        }
        if !(idleTimeout > 0 && idleTimeout <= 86400) {
            return "--idle-timeout \(idleTimeout) must be within (0, 86400] seconds"
        }
        return nil
    }
}
