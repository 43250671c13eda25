import Hummingbird
import HTTPTypes

/// Which other origins may read `serve`'s responses (`serve --cors ORIGIN`, repeatable;
/// `--cors '*'` for a public server). Default none: no `Access-Control-Allow-Origin` at all,
/// so only the server's own pages (the viewer: same origin) read tiles, and a page elsewhere
/// cannot read a user's paid tiles through the browser.
///
/// A request whose `Origin` is listed gets `Access-Control-Allow-Origin: ORIGIN` (`*` when
/// `*` is listed) and the exposed tile headers; a listed origin's preflight (`OPTIONS`) gets
/// 204 with the methods and headers. Nothing is granted to anything else.
public struct CORSPolicy: Sendable, Equatable {
    /// Origins as given (`scheme://host[:port]`, compared case-insensitively), or `*`.
    public let origins: [String]
    public init(origins: [String] = []) { self.origins = origins }

    public var isEmpty: Bool { origins.isEmpty }

    /// The `Access-Control-Allow-Origin` value for a request's `Origin`, nil for none.
    public func allowOrigin(for origin: String?) -> String? {
        if origins.contains("*") { return "*" }
        guard let origin, origin != "null", origin.utf8.count <= 255 else { return nil }
        let lower = origin.lowercased()
        return origins.contains { $0.lowercased() == lower } ? origin : nil
    }

    static let allowHeaders = "Accept, Content-Type, Origin, If-None-Match, Authorization, Range, If-Range"
    static let allowMethods = "GET, HEAD, OPTIONS"
    static let exposedHeaders =
        "ETag, X-Tile-Format, X-Tile-Size, X-Tile-Overzoom, Content-Range, Accept-Ranges, Content-Length"
}

/// ``CORSPolicy`` as router middleware (added only when origins are given).
struct CORSPolicyMiddleware<Context: RequestContext>: RouterMiddleware {
    let policy: CORSPolicy
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard let origin = request.headers[.origin], let allowed = policy.allowOrigin(for: origin) else {
            return try await next(request, context)
        }
        var response: Response
        if request.method == .options {
            response = Response(status: .noContent)
            response.headers[.accessControlAllowMethods] = CORSPolicy.allowMethods
            response.headers[.accessControlAllowHeaders] = CORSPolicy.allowHeaders
            response.headers[.accessControlMaxAge] = "86400"
        } else {
            response = try await next(request, context)
            response.headers[.accessControlExposeHeaders] = CORSPolicy.exposedHeaders
        }
        response.headers[.accessControlAllowOrigin] = allowed
        if allowed != "*" { response.headers.append(HTTPField(name: .vary, value: "Origin")) }
        return response
    }
}
