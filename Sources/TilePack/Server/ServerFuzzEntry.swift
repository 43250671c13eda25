import Dispatch
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOPosix
import TilePackArchive
import TilePackCodec
import TilePackCore
import TilePackEncoders
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the `fuzz-route` target (Fuzz/) does with one input, here so that
/// `FuzzCrashReplayTests` replays saved crashes through the same code: the input is one
/// request — `METHOD TARGET` on the first line, then `Name: value` header lines — answered
/// by `serve`'s own router (``TileServer/router(_:actions:logRequests:)``: route matching,
/// path parameters, query strings, the tile, terrain, view, query, asset, catalog and pack
/// handlers, the middlewares) over a library of one small archive, `fuzz.mbtiles`.
///
/// Invariant: every input ends in a response (a thrown `HTTPResponseError` is one: Hummingbird
/// sends its status); any other error is rethrown, a trap is a bug.
public enum ServerFuzzEntry {
    /// The router's responder and a channel for the request contexts, made once per process.
    struct Setup: Sendable {
        let responder: any HTTPResponder<TileRequestContext>
        let channel: any Channel
        let logger: Logger
    }

    /// Made on first use: a temporary library (`$TMPDIR/tilepack-fuzz-route-XXXXXX/`, removed
    /// at exit: ``ProcessScratchDirectory``) holding one
    /// 16 px PNG archive with tiles 0/0/0 and 1/0/0…1/1/1 and elevation at 1/0/0; nil when it
    /// cannot be made (then no input is tried: a fuzzer without its library tests nothing).
    static let setup: Setup? = {
        guard let dir = ProcessScratchDirectory.make(prefix: "fuzz-route") else { return nil }
        do {
            let side = 16
            let path = dir + "/fuzz.mbtiles"
            let metadata = MBTilesMetadata(
                name: "fuzz", format: "png", codec: TileCodecChoice.png.rawValue,
                bounds: GeoBounds(west: -180, south: -85, east: 180, north: 85),
                minZoom: 0, maxZoom: 1, tileSize: side)
            let writer = try MBTilesWriter(path: path, metadata: metadata)
            let ids = [
                TileID(z: 0, x: 0, y: 0), TileID(z: 1, x: 0, y: 0), TileID(z: 1, x: 1, y: 0),
                TileID(z: 1, x: 0, y: 1), TileID(z: 1, x: 1, y: 1),
            ].compactMap { $0 }
            for (n, id) in ids.enumerated() {
                let rgba = (0..<(side * side * 4)).map { i in UInt8(truncatingIfNeeded: i % 4 == 3 ? 255 : i &* (n + 3))
                }
                try writer.write(try PNGEncoder().encode(rgba: rgba, width: side, height: side), for: id)
            }
            if let first = ids.dropFirst().first {
                let values = (0..<(side * side)).map { Float($0 % 29) * 10 }
                try writer.writeElevation(ElevationTile(width: side, height: side, values: values), for: first)
            }
            try writer.finish()
            var options = TileService.Options()
            options.libraryDirectory = dir
            let service = try TileService(options)
            let responder = TileServer.router(service, logRequests: false).buildResponder()
            // A real channel (one end of a socket pair) only for the contexts' event loop: the
            // router never reads or writes it.
            var fds: [Int32] = [-1, -1]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { return nil }
            close(fds[1])
            let channel = try NIOPipeBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .takingOwnershipOfDescriptor(inputOutput: fds[0]).wait()
            var logger = Logger(label: "fuzz-route")
            logger.logLevel = .critical
            return Setup(responder: responder, channel: channel, logger: logger)
        } catch {
            return nil
        }
    }()

    /// The largest input tried: a request line and headers past `serve`'s header limit never
    /// reach the router.
    public static let maxInputBytes = 16 << 10

    /// Answers the request the input describes (see the type). Inputs whose method, header
    /// names or target HTTP cannot carry are not requests and return at once.
    /// - Cost: one routed request, waited for on the calling thread (libFuzzer's): never call
    ///   it from a task, whose thread the request's own task may need (tests use their own thread).
    public static func route(_ bytes: [UInt8]) throws {
        guard bytes.count <= maxInputBytes, let setup else { return }
        var lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
        guard !lines.isEmpty else { return }
        let first = lines.removeFirst()
        let method: HTTPRequest.Method, target: Substring
        if let space = first.firstIndex(of: " ") {
            guard let m = HTTPRequest.Method(String(first[..<space])) else { return }
            method = m
            target = first[first.index(after: space)...]
        } else {
            method = .get
            target = first
        }
        // What an HTTP/1.1 parser lets through as a request target: visible ASCII.
        guard !target.isEmpty, target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return }
        var headers = HTTPFields()
        var authority = "127.0.0.1:8080"
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":"), let name = HTTPField.Name(String(line[..<colon])) else {
                return
            }
            let value = String(line[line.index(after: colon)...].drop(while: { $0 == " " }))
            guard HTTPField.isValidValue(value) else { return }
            if name.canonicalName == "host" {
                authority = value
            } else {
                headers.append(HTTPField(name: name, value: value))
            }
        }
        let head = HTTPRequest(
            method: method, scheme: "http", authority: authority, path: String(target), headerFields: headers)
        let request = Request(head: head, body: RequestBody(buffer: ByteBuffer()))
        let context = TileRequestContext(
            source: ApplicationRequestContextSource(channel: setup.channel, logger: setup.logger))
        let outcome = Locked<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                let response = try await setup.responder.respond(to: request, context: context)
                try await response.body.write(DiscardingBodyWriter())
            } catch let error as any HTTPResponseError {
                _ = error.status  // what Hummingbird would send
            } catch {
                outcome.withLock { $0 = error }
            }
            done.signal()
        }
        done.wait()
        if let error = outcome.withLock({ $0 }) { throw error }
    }
}

/// A response body writer that drops what it is given (the fuzz target reads every body so
/// that streamed bodies run, but keeps none).
struct DiscardingBodyWriter: ResponseBodyWriter {
    mutating func write(_ buffer: ByteBuffer) async throws {}
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}
