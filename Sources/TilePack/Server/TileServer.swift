import Hummingbird
import HummingbirdCore
import HTTPTypes
import Logging
import NIOCore
import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tilepack serve` on Hummingbird 2: the routes of ``TileService`` with request logging,
/// the Host check (421) and CORS grants of ``Configuration``, HEAD (Hummingbird answers it
/// from GET), every connection bounded by ``ConnectionLimits`` (``GuardedHTTP1Channel``), and
/// graceful shutdown on SIGINT/SIGTERM (swift-service-lifecycle, `Application.runService`).
public enum TileServer {
    /// Where `serve` listens and what it allows clients.
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        public var port = 8080
        public var limits = ConnectionLimits()
        /// Other origins that may read responses (none by default).
        public var cors = CORSPolicy()
        /// Names besides the loopback ones a loopback server answers to (``HostCheck``).
        public var allowedHosts: [String] = []
        public init(host: String = "127.0.0.1", port: Int = 8080) {
            self.host = host
            self.port = port
        }
        public var hostCheck: HostCheck { HostCheck(bindHost: host, allowed: allowedHosts) }
    }

    /// The router over `service`: what the application runs and what tests drive in-process.
    /// With `actions`, also the viewer's store actions (buy, restore, install, update). With
    /// `hostCheck`, a request addressed to another name gets 421 before any route; `cors`
    /// grants other origins (none by default: no CORS headers at all).
    public static func router(
        _ service: TileService, actions: StorefrontActions? = nil, logRequests: Bool = true,
        cors: CORSPolicy = CORSPolicy(), hostCheck: HostCheck? = nil
    ) -> Router<TileRequestContext> {
        let router = Router(context: TileRequestContext.self, options: .autoGenerateHeadEndpoints)
        if logRequests { router.middlewares.add(RequestLogMiddleware()) }
        if let hostCheck, !hostCheck.names.isEmpty { router.middlewares.add(HostCheckMiddleware(check: hostCheck)) }
        if !cors.isEmpty { router.middlewares.add(CORSPolicyMiddleware(policy: cors)) }
        router.middlewares.add(ErrorBodyMiddleware())

        router.get("/") { _, _ in response(service.viewerPage()) }
        router.get("/regions") { _, _ in response(service.regionsListing()) }
        router.get("/store") { _, _ in response(service.storeListing()) }
        router.get("/query") { request, _ in
            let q = request.uri.queryParameters
            return response(
                service.query(
                    lat: q["lat"].map(String.init), lon: q["lon"].map(String.init), zoom: q["zoom"].map(String.init)))
        }
        // One parameter name per position: Hummingbird's trie refuses `{file}` beside `{region}`.
        router.get("/tiles/{region}") { request, context in
            response(
                service.tileJSON(file: context.parameters.get("region") ?? "", base: baseURL(request.head.authority)))
        }
        router.get("/tiles/{region}/{z}/{x}/{y}") { request, context in
            let p = context.parameters
            return response(
                service.tile(
                    region: p.get("region") ?? "", z: p.get("z") ?? "", x: p.get("x") ?? "",
                    y: p.get("y") ?? "", ifNoneMatch: request.headers[.ifNoneMatch]))
        }
        router.get("/terrain/{region}/{z}/{x}/{y}") { request, context in
            let p = context.parameters
            return response(
                service.terrain(
                    region: p.get("region") ?? "", z: p.get("z") ?? "", x: p.get("x") ?? "",
                    y: p.get("y") ?? "", ifNoneMatch: request.headers[.ifNoneMatch]))
        }
        router.get("/view/{z}/{x}/{y}") { request, context in
            let p = context.parameters
            return response(
                service.view(
                    z: p.get("z") ?? "", x: p.get("x") ?? "", y: p.get("y") ?? "",
                    ifNoneMatch: request.headers[.ifNoneMatch]))
        }
        addPackRoutes(router, service)
        for head in [false, true] {
            router.on("/{archive}.pmtiles", method: head ? .head : .get) { request, context in
                response(
                    eventLoop: context.eventLoop,
                    service.archiveFile(
                        name: (context.parameters.get("archive") ?? "") + ".pmtiles", head: head,
                        range: request.headers[.range], ifRange: request.headers[.ifRange],
                        ifNoneMatch: request.headers[.ifNoneMatch]))
            }
        }
        if let actions { addStoreRoutes(router, actions) }
        router.get("/leaflet/{file}") { request, context in
            response(service.asset(context.parameters.get("file") ?? "", ifNoneMatch: request.headers[.ifNoneMatch]))
        }
        router.get("/leaflet/{file}/{image}") { request, context in
            let p = context.parameters
            return response(
                service.asset(
                    (p.get("file") ?? "") + "/" + (p.get("image") ?? ""), ifNoneMatch: request.headers[.ifNoneMatch]))
        }
        return router
    }

    /// The application `run` runs (tests run it live): the router, and ``GuardedHTTP1Channel``
    /// with `configuration.limits` on `configuration.host`:`port`.
    public static func application(
        _ service: TileService, actions: StorefrontActions? = nil, configuration: Configuration, logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        let limits = configuration.limits
        let counter = ConnectionCounter(limit: limits.maxConnections)
        // Request lines are logged at info; above that the middleware would only cost time.
        return Application(
            router: router(
                service, actions: actions, logRequests: logger.logLevel <= .info,
                cors: configuration.cors, hostCheck: configuration.hostCheck),
            server: HTTPServerBuilder { responder in
                GuardedHTTP1Channel(responder: responder, limits: limits, counter: counter)
            },
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "tilepack",
                backlog: ConnectionLimits.listenBacklog),
            onServerRunning: { channel in
                // NIO's accept backoff does not stop epoll waking the loop (AcceptBackoff).
                try? await channel.eventLoop.submit {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoff(logger: logger), position: .first)
                }.get()
                let bound = channel.localAddress?.port ?? configuration.port
                actions?.serverRunning(port: bound)
                await onRunning(bound)
            },
            logger: logger)
    }

    /// Runs the server until SIGINT or SIGTERM, then lets requests in flight finish. `actions`
    /// learn the bound port before `onRunning` is called, and are shut down at the end.
    /// - Throws: ``ServerStartError`` when the port is in use or the host is no local address.
    public static func run(
        _ service: TileService, actions: StorefrontActions? = nil, configuration: Configuration, logger: Logger,
        onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let app = application(
            service, actions: actions, configuration: configuration, logger: logger, onRunning: onRunning)
        do {
            try await app.runService()
        } catch let error as IOError where error.errnoCode == EADDRINUSE || error.errnoCode == EADDRNOTAVAIL {
            await actions?.shutdown()
            let host = configuration.host, port = configuration.port
            throw error.errnoCode == EADDRINUSE
                ? ServerStartError(.portInUse, detail: "port \(port) is in use (on \(host))", cause: error)
                : ServerStartError(
                    .cannotBind, detail: "cannot listen on \(host):\(port): no such local address", cause: error)
        } catch {
            await actions?.shutdown()
            throw error
        }
        await actions?.shutdown()
    }

    /// `http://AUTHORITY` when the request's Host is a plain host[:port] (letters, digits,
    /// `.-:[]`, at most 255 characters), else "" (root-relative tile URLs).
    static func baseURL(_ authority: String?) -> String {
        guard let a = authority, !a.isEmpty, a.utf8.count <= 255,
            a.unicodeScalars.allSatisfy({
                ($0.properties.isASCIIHexDigit || ("a"..."z").contains($0) || ("A"..."Z").contains($0)
                    || ("0"..."9").contains($0) || ".-:[]".unicodeScalars.contains($0))
            })
        else { return "" }
        return "http://" + a
    }

    static func response(_ served: ServedResponse) -> Response {
        var headers = HTTPFields()
        if !served.contentType.isEmpty { headers[.contentType] = served.contentType }
        for (name, value) in served.headers {
            if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
        }
        headers[.contentLength] = "\(served.bodyCount)"
        let body: ResponseBody =
            if let shared = served.shared {
                ResponseBody(byteBuffer: shared)
            } else if served.bodyCount == 0 {
                ResponseBody()
            } else {
                ResponseBody(byteBuffer: ByteBuffer(bytes: served.body))
            }
        return Response(status: HTTPResponse.Status(code: served.status), headers: headers, body: body)
    }
}

/// Hummingbird's basic context plus the connection's event loop, which a streamed file body
/// waits on between pieces (``TileServer/fileBody(_:first:length:eventLoop:)``).
public struct TileRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The event loop of the request's connection.
    public let eventLoop: any EventLoop

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        eventLoop = source.channel.eventLoop
    }
}

/// Hummingbird's own errors (no route matched, a bad request) as the same JSON bodies the
/// routes send, so every 4xx of the server reads alike.
struct ErrorBodyMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            let kind = error.status == .notFound ? "notFound" : "http"
            let message = error.status == .notFound ? "no such resource" : (error.body ?? error.status.reasonPhrase)
            return TileServer.response(.error(error.status.code, kind: kind, message: message))
        } catch let error as any HTTPResponseError {
            return TileServer.response(.error(error.status.code, kind: "http", message: error.status.reasonPhrase))
        }
    }
}
