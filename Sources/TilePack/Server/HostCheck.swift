import Hummingbird
import HTTPTypes

/// The DNS-rebinding defence (`serve --allowed-host NAME`): a server bound to loopback
/// answers only requests addressed to it by a loopback name — `127.0.0.1` (any 127/8
/// literal it is bound to), `localhost`, `[::1]` — or by a name the operator allowed; any
/// other `Host` gets 421 Misdirected Request. A page on `evil.example` whose name the attacker
/// re-points at 127.0.0.1 still sends `Host: evil.example`, so it reads nothing.
///
/// The port is not compared: the attack needs the attacker's name, and a proxy on this
/// machine may forward with its own port. A request without `Host` (HTTP/1.0, a local program)
/// is not a browser's and passes. On a non-loopback bind there is no check unless names are
/// allowed (then the bound address is allowed too).
public struct HostCheck: Sendable, Equatable {
    /// Lower-case host names (IPv6 literals in brackets) that pass; empty: no check.
    public let names: Set<String>

    public init(bindHost: String, allowed: [String]) {
        let bound = Self.bracketed(bindHost.lowercased())
        let loopback = Self.isLoopback(bound)
        guard loopback || !allowed.isEmpty else { names = []; return }
        var names = Set(allowed.map { Self.bracketed(Self.trimmingDot($0.lowercased())) })
        if loopback { names.formUnion(["127.0.0.1", "localhost", "[::1]"]) }
        if !["0.0.0.0", "[::]", ""].contains(bound) { names.insert(bound) }
        self.names = names
    }

    /// Whether a bind address is a loopback one (127/8, ::1, localhost).
    static func isLoopback(_ host: String) -> Bool {
        let h = bracketed(host.lowercased())
        return h == "localhost" || h == "[::1]" || h.hasPrefix("127.")
    }

    static func bracketed(_ host: String) -> String {
        host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host
    }

    static func trimmingDot(_ host: String) -> String {
        host.hasSuffix(".") ? String(host.dropLast()) : host
    }

    /// The name of a `Host` value without its port, lower case; nil when it is not a plain
    /// `name[:port]` (StorefrontActions.authority's grammar).
    public static func name(ofHost value: String) -> String? {
        guard value.utf8.count <= 255, let authority = StorefrontActions.authority(value),
            let colon = authority.lastIndex(of: ":")
        else { return nil }
        return trimmingDot(String(authority[..<colon]))
    }

    /// Nil when a request with this raw `Host` may be answered, else the 421.
    /// Cost: O(length of the value).
    public func refusal(host: String?) -> ServedResponse? {
        guard !names.isEmpty, let host else { return nil }
        if let name = Self.name(ofHost: host), names.contains(name) { return nil }
        return .error(
            421, kind: "misdirectedRequest",
            message:
                """
                this server answers only requests addressed to \(names.sorted().joined(separator: ", ")) (Host: \
                \(TileService.shown(host))); serve --allowed-host NAME adds a name
                """
        )
    }
}

/// ``HostCheck`` as router middleware (before every route, the store actions' own check included).
struct HostCheckMiddleware<Context: RequestContext>: RouterMiddleware {
    let check: HostCheck
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if let refusal = check.refusal(host: request.head.authority) {
            return TileServer.response(refusal)
        }
        return try await next(request, context)
    }
}
