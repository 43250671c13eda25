import Foundation
import Testing
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TilePackArchive
import TilePackCodec
@testable import TilePackCore
import TilePackEncoders
@testable import TilePackRegions
import TilePackRender
import TilePackSQLite
import TilePackStore
@testable import TilePackTools
@testable import TilePackServer
import TilePackTestSupport

/// The viewer's store actions (`POST /store/buy/{product}`, `/store/restore`,
/// `/packs/{id}/install`), in-process through the Hummingbird router: a purchase unlocks for
/// the served (read-only) library at once, errors keep the server's JSON shape, and a POST from
/// another origin or addressed to another host acts on nothing. (Installing over loopback needs
/// a listening server: checks/test_viewer_check.py drives it in a browser.)
@Suite("Server: store actions", .tags(.concurrent))
struct ServerStorefrontActionTests {
    static let regionA = RegionsLibraryFixture.regionA
    static let regionB = RegionsLibraryFixture.regionB

    /// The router test client addresses requests to `localhost` (no port: 80).
    static let port = 80

    struct Setup {
        let shop: ServerPackTests.Shop
        let service: TileService
        let actions: StorefrontActions

        /// `serve --trust … --simulator … --packs …` as the CLI starts it: the served library
        /// read-only, the actions' library read-write on the same files; `online` false: no store.
        init(online: Bool = true, running: Bool = true) throws {
            shop = try ServerPackTests.Shop()
            // serve creates a missing ledger before opening the library read-only (a read-only
            // open of a missing file stays empty).
            _ = try EntitlementLedger(
                path: shop.lib.ledgerPath, verifier: AppStoreVerifier(anchors: shop.lib.trust),
                account: RegionsFixture.account)
            service = try shop.service(online: online)
            let (path, trust, ledger, store, clock) = (
                shop.lib.libraryPath, shop.lib.trust, shop.lib.ledgerPath, shop.lib.store, shop.lib.clock
            )
            actions = StorefrontActions(
                service: service,
                options: .init(
                    host: "127.0.0.1",
                    openForWriting: {
                        try RegionLibrary(
                            directory: path, trust: trust, ledgerPath: ledger, account: RegionsFixture.account,
                            storefront: online ? store : nil, clock: clock)
                    }))
            if running { actions.serverRunning(port: ServerStorefrontActionTests.port) }
        }

        func app() -> some ApplicationProtocol {
            Application(router: TileServer.router(service, actions: actions, logRequests: false))
        }
    }

    /// `/store`'s `owned` of `product` as the served library answers it.
    static func owned(_ product: String, _ client: some TestClientProtocol) async throws -> Bool? {
        try await client.execute(uri: "/store", method: .get) { r in
            let object = try JSONSerialization.jsonObject(with: Data(ServerPackTests.body(r))) as? [String: Any]
            let products = object?["products"] as? [[String: Any]] ?? []
            return products.first { $0["id"] as? String == product }?["owned"] as? Bool
        }
    }

    static func json(_ r: TestResponse) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(ServerPackTests.body(r)))) as? [String: Any] ?? [:]
    }

    static func origin(_ value: String) -> HTTPFields {
        var headers = HTTPFields()
        headers[.origin] = value
        return headers
    }

    @Test func buyingUnlocksForTheServedLibraryAndASecondBuyChargesNothing() async throws {
        let setup = try Setup()
        let served = setup.service.library
        try await setup.app().test(.router) { client in
            #expect(try await Self.owned(Self.regionA, client) == false)
            let transaction = try await client.execute(
                uri: "/store/buy/\(Self.regionA)", method: .post,
                headers: Self.origin("http://localhost")
            ) { r in
                #expect(r.status == .ok)
                let object = Self.json(r)
                #expect(object["product_id"] as? String == Self.regionA)
                #expect(object["already_owned"] as? Bool == false)
                return object["transaction_id"] as? String
            }
            #expect(transaction?.isEmpty == false)
            // The served library (read-only, another connection to the ledger) owns it now.
            #expect(served.entitlements?.entitledProductIDs().contains(Self.regionA) == true)
            #expect(try await Self.owned(Self.regionA, client) == true)
            #expect(try await Self.owned(Self.regionB, client) == false)
            #expect(served.transactionForPack(productID: Self.regionA) != nil)
            try await client.execute(uri: "/store/buy/\(Self.regionA)", method: .post) { r in
                #expect(r.status == .ok)
                #expect(Self.json(r)["already_owned"] as? Bool == true)
                #expect(Self.json(r)["transaction_id"] == nil)
            }
        }
        #expect(try setup.shop.lib.shop.storeCount() == 1)
    }

    @Test func anUnknownProductIs404AndNoStoreIs503() async throws {
        let setup = try Setup()
        try await setup.app().test(.router) { client in
            try await client.execute(uri: "/store/buy/t.nothing", method: .post) { r in
                #expect(r.status == .notFound)
                #expect(ServerPackTests.errorKind(r) == "notFound")
            }
            try await client.execute(uri: "/store/buy/" + String(repeating: "x", count: 300), method: .post) { r in
                #expect(r.status == .notFound)
            }
        }
        let offline = try Setup(online: false)
        try await offline.app().test(.router) { client in
            for uri in ["/store/buy/\(Self.regionA)", "/store/restore"] {
                try await client.execute(uri: uri, method: .post) { r in
                    #expect(r.status == .serviceUnavailable)
                    #expect(ServerPackTests.errorKind(r) == "unavailable")
                }
            }
        }
        #expect(try offline.shop.lib.shop.storeCount() == 0)
    }

    @Test func restoreImportsWhatTheAccountBoughtElsewhere() async throws {
        let setup = try Setup()
        // Bought at the store by this account on another device, after serve started.
        _ = try setup.shop.lib.shop.sell(Self.regionB)
        try await setup.app().test(.router) { client in
            #expect(try await Self.owned(Self.regionB, client) == false)
            try await client.execute(uri: "/store/restore", method: .post, headers: Self.origin("http://localhost:80"))
            { r in
                #expect(r.status == .ok)
                let object = Self.json(r)
                let counted = ["inserted", "replaced", "unchanged"].compactMap { object[$0] as? Int }
                #expect(counted.count == 3 && counted.reduce(0, +) == 1)
            }
            #expect(try await Self.owned(Self.regionB, client) == true)
        }
    }

    @Test func aPostFromAnotherOriginActsOnNothing() async throws {
        let setup = try Setup()
        try await setup.app().test(.router) { client in
            for origin in [
                "http://evil.example", "null", "http://localhost:8080", "https://localhost",
                "http://localhost.evil.example",
            ] {
                for uri in ["/store/buy/\(Self.regionA)", "/store/restore", "/packs/free/install"] {
                    try await client.execute(uri: uri, method: .post, headers: Self.origin(origin)) { r in
                        #expect(r.status == .forbidden, "\(origin) \(uri)")
                        #expect(ServerPackTests.errorKind(r) == "forbiddenOrigin")
                    }
                }
            }
            // Only POST acts: a GET (what an <img> or a link can send) is no route.
            try await client.execute(uri: "/store/buy/\(Self.regionA)", method: .get) { r in
                #expect(r.status.code >= 400)
            }
            #expect(try await Self.owned(Self.regionA, client) == false)
            #expect(try await Self.owned(Self.regionB, client) == false)
            // The downloads list stays empty: no install was started.
            try await client.execute(uri: "/store/downloads", method: .get) { r in
                #expect((Self.json(r)["downloads"] as? [Any])?.isEmpty == true)
            }
        }
        #expect(try setup.shop.lib.shop.storeCount() == 0)
    }

    @Test func hostAndOriginMustNameThisServer() throws {
        let setup = try Setup(running: false)
        let actions = setup.actions
        // Before the port is known, nothing acts.
        #expect(actions.refusal(origin: nil, host: "127.0.0.1:8080")?.status == 503)
        actions.serverRunning(port: 8080)
        #expect(actions.refusal(origin: nil, host: "127.0.0.1:8080") == nil)
        #expect(actions.refusal(origin: "http://127.0.0.1:8080", host: "127.0.0.1:8080") == nil)
        #expect(actions.refusal(origin: "http://LOCALHOST:8080", host: "localhost:8080") == nil)
        #expect(actions.refusal(origin: "http://[::1]:8080", host: "[::1]:8080") == nil)
        // DNS rebinding: a foreign name resolving to 127.0.0.1 sends its name in both.
        #expect(actions.refusal(origin: "http://evil.example:8080", host: "evil.example:8080")?.status == 403)
        #expect(actions.refusal(origin: nil, host: nil)?.status == 403)
        #expect(actions.refusal(origin: nil, host: "127.0.0.1:8081")?.status == 403)
        #expect(actions.refusal(origin: nil, host: "127.0.0.1")?.status == 403)  // port 80
        #expect(actions.refusal(origin: "http://127.0.0.1:8080", host: "localhost:8080")?.status == 403)
        #expect(actions.refusal(origin: "http://127.0.0.1:8080/x", host: "127.0.0.1:8080")?.status == 403)
        #expect(actions.refusal(origin: "http://u@127.0.0.1:8080", host: "127.0.0.1:8080")?.status == 403)
        #expect(actions.refusal(origin: nil, host: "127.0.0.1:99999999")?.status == 403)
        #expect(StorefrontActions.authority("[::1]") == "[::1]:80")
        #expect(StorefrontActions.authority("a:b:c") == nil)
        #expect(StorefrontActions.authority(":80") == nil)
    }

    @Test func installStartsOnlyForOfferedPacksAndListsTheInstalledOnes() async throws {
        let setup = try Setup()
        try await setup.app().test(.router) { client in
            try await client.execute(uri: "/packs/t.nothing/install", method: .post) { r in
                #expect(r.status == .notFound)
                #expect(ServerPackTests.errorKind(r) == "notFound")
            }
            try await client.execute(uri: "/packs/..%2Fcatalog/update", method: .post) { r in
                #expect(r.status == .notFound)
            }
            try await client.execute(uri: "/store/installed", method: .get) { r in
                #expect(r.status == .ok)
                #expect((Self.json(r)["packs"] as? [Any])?.isEmpty == true)
            }
        }
    }
}
