import Hummingbird
import HTTPTypes

/// The store actions' routes on Hummingbird (``StorefrontActions``): the POSTs behind the viewer's
/// Buy, Restore, Download and Update buttons, each refused unless addressed to this server by
/// its own page (``StorefrontActions/refusal(origin:host:)``), and the two GETs the panel polls.
extension TileServer {
    static func addStoreRoutes(_ router: Router<TileRequestContext>, _ actions: StorefrontActions) {
        /// `body`'s answer, or the refusal of a request from elsewhere.
        @Sendable func guarded(_ request: Request, _ body: () -> ServedResponse) -> Response {
            if let refused = actions.refusal(origin: request.headers[.origin], host: request.head.authority) {
                return response(refused)
            }
            return response(body())
        }
        router.post("/store/buy/{product}") { request, context in
            guarded(request) { actions.buy(context.parameters.get("product") ?? "") }
        }
        router.post("/store/restore") { request, _ in
            guarded(request) { actions.restore() }
        }
        router.post("/packs/{id}/install") { request, context in
            guarded(request) { actions.startDownload(context.parameters.get("id") ?? "", update: false) }
        }
        router.post("/packs/{id}/update") { request, context in
            guarded(request) { actions.startDownload(context.parameters.get("id") ?? "", update: true) }
        }
        router.get("/store/downloads") { _, _ in response(actions.downloadsListing()) }
        router.get("/store/installed") { _, _ in response(actions.installed()) }
    }
}
