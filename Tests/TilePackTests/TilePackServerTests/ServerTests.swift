import Testing
import Foundation
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TilePackArchive
import TilePackCodec
import TilePackCore
import TilePackEncoders
import TilePackRegions
import TilePackRender
import TilePackSQLite
import TilePackStore
import TilePackTools
@testable import TilePackServer
#if canImport(Glibc)
import Glibc
#endif
import TilePackTestSupport

/// `tilepack serve`'s routes, in-process: the plain ``TileService`` functions and the
/// Hummingbird router over them (`app.test(.router)`), hostile input included.
@Suite("Server: routes over the tile and region stores", .tags(.concurrent))
struct ServerTests {
    /// The sample library as a store library, opened read-only as `serve` opens it: its signed
    /// catalog, a test App Store whose root the trust anchors pin (nothing bought), a ledger of
    /// its own that does not exist.
    static let service: TileService = {
        do {
            return try storeService(ledger: SampleLibrary.directory + "-device/ledger.sqlite")
        } catch {
            preconditionFailure("opening the sample library: \(error)")
        }
    }()

    /// The sample library's test App Store (in /tmp for the process, like the library).
    static let store: TestAppStore = {
        let dir = processTemporaryDirectory("samples-store")
        do { return try TestAppStore(directory: dir) } catch {
            preconditionFailure("opening the test App Store: \(error)")
        }
    }()

    /// A read-only store library over `directory` (default: the sample library) and `ledger`.
    static func storeService(directory: String = SampleLibrary.directory, ledger: String) throws -> TileService {
        var options = TileService.Options()
        options.libraryDirectory = directory
        options.library = try storeLibrary(directory: directory, ledger: ledger, readOnly: true)
        return try TileService(options)
    }

    /// `account`: the store account; give a test that buys an account of its own, as the
    /// store is shared and a library syncs its account's purchases at open.
    static func storeLibrary(
        directory: String = SampleLibrary.directory, ledger: String, readOnly: Bool,
        account: String = RegionsFixture.account
    ) throws -> RegionLibrary {
        try RegionLibrary(
            directory: directory, trust: RegionsFixture.trust(store), ledgerPath: ledger,
            account: account, storefront: store, readOnly: readOnly)
    }

    /// The same archives without a catalog (links to the sample library's), in /tmp for the process.
    static let openDirectory: String = {
        let dir = processTemporaryDirectory("samples-open")
        for name in ["montblanc-dem.mbtiles", "montblanc-color.mbtiles"] {
            symlink(SampleLibrary.directory + "/" + name, dir + "/" + name)
        }
        return dir
    }()

    /// A library over ``openDirectory``: everything open.
    static let openService: TileService = {
        var options = TileService.Options()
        options.libraryDirectory = openDirectory
        do { return try TileService(options) } catch { preconditionFailure("opening the open library: \(error)") }
    }()

    static func app(_ service: TileService) -> some ApplicationProtocol {
        Application(router: TileServer.router(service, logRequests: false))
    }

    // A z10 tile inside both samples (free zoom in the catalog) and a z12 one (for sale).
    static let freeTile = "10/531/364"
    static let saleTile = "12/2126/1459"

    @Test func regionsAreTheArchiveFileNames() {
        #expect(Self.service.regionNames == ["montblanc-dem", "montblanc-color"])
    }

    @Test func pngTilesRawPayloadsAndTerrain() async throws {
        try await Self.app(Self.openService).test(.router) { client in
            var etag = ""
            try await client.execute(uri: "/tiles/montblanc-dem/\(Self.saleTile).png", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "image/png")
                #expect(Array(r.body.readableBytesView.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
                #expect(r.headers[.cacheControl]?.contains("max-age") == true)
                etag = r.headers[.eTag] ?? ""
            }
            #expect(etag.hasPrefix("\""))
            try await client.execute(
                uri: "/tiles/montblanc-dem/\(Self.saleTile).png", method: .get,
                headers: [.ifNoneMatch: etag]
            ) { r in
                #expect(r.status == .notModified)
                #expect(r.body.readableBytes == 0)
            }
            try await client.execute(uri: "/tiles/montblanc-dem/\(Self.saleTile)", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "application/octet-stream")
                #expect(r.headers[HTTPField.Name("X-Tile-Format")!] == "png")
            }
            try await client.execute(uri: "/tiles/montblanc-dem/\(Self.saleTile).png", method: .head) { r in
                #expect(r.status == .ok)
                #expect(r.body.readableBytes == 0)
            }
            try await client.execute(uri: "/terrain/montblanc-dem/\(Self.saleTile).png", method: .get) { r in
                #expect(r.status == .ok && r.headers[.contentType] == "image/png")
            }
            try await client.execute(uri: "/terrain/montblanc-color/\(Self.saleTile).png", method: .get) { r in
                #expect(r.status == .notFound)
            }
            try await client.execute(uri: "/view/\(Self.saleTile).png", method: .get) { r in
                #expect(r.status == .ok && r.headers[.contentType] == "image/png")
            }
        }
    }

    @Test func terrariumDecodesToTheQueryElevation() throws {
        let r = Self.openService.terrain(region: "montblanc-dem", z: "12", x: "2126", y: "1459.png")
        #expect(r.status == 200)
        let rgba = try PNGDecoder().decode(r.body).pixels
        let centre = (128 * 256 + 128) * 4
        let metres = Terrarium.decode(rgba[centre], rgba[centre + 1], rgba[centre + 2])
        #expect(metres > 500 && metres < 5000)
    }

    @Test func lockedTilesAre403WithTheProductsThatUnlockThem() async throws {
        try await Self.app(Self.service).test(.router) { client in
            try await client.execute(uri: "/tiles/montblanc-dem/\(Self.saleTile).png", method: .get) { r in
                #expect(r.status == .forbidden)
                let body = String(buffer: r.body)
                #expect(body.contains("\"error\":\"locked\"") && body.contains("\"unlock\":[{"))
                #expect(body.contains("4.99") || body.contains("3.99"))
                #expect(r.headers[.cacheControl] == "no-store")
            }
            try await client.execute(uri: "/tiles/montblanc-dem/\(Self.freeTile).png", method: .get) { r in
                #expect(r.status == .ok)
            }
            try await client.execute(uri: "/store", method: .get) { r in
                let body = String(buffer: r.body)
                #expect(r.status == .ok && body.contains("\"owned\":false") && body.contains("\"price\":\"6.99\""))
            }
        }
    }

    /// `/store` says which kind of library it serves: a store library (trust anchors given)
    /// or an open one; a store library whose catalog cannot be trusted lists nothing and
    /// serves nothing above zoom 0.
    @Test func storeSaysWhetherTheLibraryIsAStoreOrOpen() throws {
        let store = String(decoding: Self.service.storeListing().body, as: UTF8.self)
        #expect(Self.service.library.kind == .store)
        #expect(
            store.hasPrefix(
                #"{"catalog":true,"catalog_problem":null,"free_max_zoom":10,"library":"store","products":[{"#))
        let open = String(decoding: Self.openService.storeListing().body, as: UTF8.self)
        #expect(
            open == #"{"catalog":false,"catalog_problem":null,"free_max_zoom":null,"library":"open","products":[]}"#)

        // The open library's archives (no catalog.jws there) with trust anchors: failing closed.
        _ = Self.openService
        let scratch = TemporaryDirectory()
        let closed = try Self.storeService(
            directory: Self.openDirectory, ledger: scratch.file("ledger.sqlite"))
        let listing = String(decoding: closed.storeListing().body, as: UTF8.self)
        #expect(listing.hasPrefix(#"{"catalog":false,"catalog_problem":""#))
        #expect(listing.hasSuffix(#","free_max_zoom":0,"library":"store","products":[]}"#))
        let parts = Self.freeTile.split(separator: "/").map(String.init)
        #expect(closed.tile(region: "montblanc-dem", z: parts[0], x: parts[1], y: parts[2] + ".png").status == 403)
        #expect(closed.tile(region: "montblanc-dem", z: "0", x: "0", y: "0.png").status != 403)
        #expect(
            Self.openService.tile(region: "montblanc-dem", z: parts[0], x: parts[1], y: parts[2] + ".png").status == 200
        )
        #expect(!fileExists(scratch.file("ledger.sqlite")))
    }

    /// A purchase and a refund made by other processes (`store buy`, `store refund`) show in a
    /// running server within the ledger's check interval, on the tile routes and `/store` alike.
    @Test func aRunningServerFollowsPurchasesAndRefunds() throws {
        let scratch = TemporaryDirectory()
        let ledger = scratch.file("ledger.sqlite")
        // An account of its own: the shared test App Store must not hand this purchase to the
        // other tests' libraries, which sync their account at open.
        let account = AccountToken.random()
        let buyer = try Self.storeLibrary(ledger: ledger, readOnly: false, account: account)
        var options = TileService.Options()
        options.library = try Self.storeLibrary(ledger: ledger, readOnly: true, account: account)
        let server = try TileService(options)
        let sale = Self.saleTile.split(separator: "/").map(String.init)
        func status() -> Int {
            server.tile(region: "montblanc-dem", z: sale[0], x: sale[1], y: sale[2] + ".png").status
        }
        func owned() -> Bool { String(decoding: server.storeListing().body, as: UTF8.self).contains(#""owned":true"#) }
        #expect(status() == 403 && !owned())

        guard case .bought(let bought) = try buyer.buy(CatalogFixture.bundleID) else {
            Issue.record("the bundle was not bought")
            return
        }
        RegionsLibraryFixture.waitForTheCheckInterval()
        #expect(status() == 200 && owned())
        _ = try Self.storeLibrary(ledger: ledger, readOnly: false, account: account).refund(bought.transactionID)
        RegionsLibraryFixture.waitForTheCheckInterval()
        #expect(status() == 403 && !owned())
    }

    @Test func tileJSONQueryAndCORS() async throws {
        try await Self.app(Self.openService).test(.router) { client in
            try await client.execute(uri: "/tiles/montblanc-dem.json", method: .get) { r in
                let body = String(buffer: r.body)
                #expect(
                    r.status == .ok && body.contains("\"tilejson\":\"3.0.0\"")
                        && body.contains("/tiles/montblanc-dem/{z}/{x}/{y}.png"))
                #expect(body.contains("\"bounds\":[") && body.contains("\"minzoom\":"))
            }
            try await client.execute(
                uri: "/query?lat=45.85&lon=6.88&zoom=12", method: .get,
                headers: [.origin: "http://example.test"]
            ) { r in
                let body = String(buffer: r.body)
                #expect(r.status == .ok && body.hasPrefix("[{") && body.contains("\"elevation_m\":"))
                // No CORS grant by default (issue 27): only `serve --cors ORIGIN` adds one.
                #expect(r.headers[.accessControlAllowOrigin] == nil)
            }
            try await client.execute(uri: "/query?lat=10&lon=10&zoom=12", method: .get) { r in
                #expect(r.status == .ok && String(buffer: r.body).contains("\"archive\":null"))
            }
        }
    }

    /// Every JSON body is Codable-encoded with `<` escaped: a region name echoed in an error
    /// cannot close a `<script>` the body is pasted into, and the body still parses.
    @Test func jsonBodiesEscapeAngleBrackets() throws {
        let reply = Self.service.tile(region: "</script><b>", z: "1", x: "0", y: "0")
        let text = String(decoding: reply.body, as: UTF8.self)
        #expect(reply.status == 404 && !text.contains("<") && text.contains(#"\u003c/script>"#))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any])
        #expect(object["error"] as? String == "notFound" && object["status"] as? Int == 404)
        #expect((object["message"] as? String)?.contains("</script><b>") == true)
    }

    /// Hostile and malformed input: always a 4xx with a JSON body, never a crash or a 5xx.
    @Test func hostileInputIs4xx() async throws {
        let long = String(repeating: "9", count: 5000)
        let cases: [(String, HTTPResponse.Status)] = [
            ("/tiles/nowhere/1/0/0.png", .notFound),
            ("/tiles/montblanc-dem/99/0/0.png", .badRequest),
            ("/tiles/montblanc-dem/25/0/0", .badRequest),
            ("/tiles/montblanc-dem/-1/0/0.png", .badRequest),
            ("/tiles/montblanc-dem/3/8/0.png", .badRequest),
            ("/tiles/montblanc-dem/3/0/-1.png", .badRequest),
            ("/tiles/montblanc-dem/3/a/b.png", .badRequest),
            ("/tiles/montblanc-dem/99999999999999999999999/0/0.png", .badRequest),
            ("/tiles/montblanc-dem/12/\(long)/1.png", .badRequest),
            ("/tiles/montblanc-dem/12/1/1e3.png", .badRequest),
            ("/tiles/montblanc-dem/12/0/0.png", .notFound),
            ("/tiles/..%2F..%2Fetc%2Fpasswd/1/0/0.png", .notFound),
            ("/tiles/../../etc/passwd", .notFound),
            ("/tiles/..%2Fmontblanc-dem.json", .notFound),
            ("/tiles/nowhere.json", .notFound),
            ("/tiles/montblanc-dem.txt", .notFound),
            ("/terrain/montblanc-dem/12/0/0", .notFound),
            ("/leaflet/..%2F..%2F..%2Fetc%2Fpasswd", .notFound),
            ("/leaflet/images/../../../../etc/passwd", .notFound),
            ("/view/30/0/0.png", .badRequest),
            ("/query", .badRequest),
            ("/query?lat=abc&lon=6&zoom=3", .badRequest),
            ("/query?lat=nan&lon=6&zoom=3", .badRequest),
            ("/query?lat=inf&lon=6&zoom=3", .badRequest),
            ("/query?lat=1e999&lon=6&zoom=3", .badRequest),
            ("/query?lat=89.9&lon=6&zoom=3", .badRequest),
            ("/query?lat=45&lon=6&zoom=-1", .badRequest),
            ("/query?lat=45&lon=6&zoom=25", .badRequest),
            ("/query?lat=45&lon=6&zoom=\(long)", .badRequest),
            ("/query?lat=45&lon=6000&zoom=3", .badRequest),
            ("/" + String(repeating: "a/", count: 2000), .notFound),
            ("/nothing-here", .notFound),
        ]
        try await Self.app(Self.openService).test(.router) { client in
            for (uri, status) in cases {
                try await client.execute(uri: uri, method: .get) { r in
                    #expect(r.status == status, "\(uri.prefix(80))")
                    #expect(r.status.code < 500)
                }
            }
        }
    }

    /// A seeded fuzz loop over the plain route functions: random and extreme segments.
    @Test func fuzzedRouteValuesNeverFailTheServer() {
        var rng = SplitMix64(seed: 13)
        let pieces = [
            "", "0", "1", "12", "-1", "24", "25", "4294967296", "99999999999", "1.5", "1e3", "0x10", "..", "../..",
            "%00", "montblanc-dem", "montblanc-color", "montblanc-dem.json", "2126", "1459", "1459.png", ".png",
            String(repeating: "7", count: 300), "é", "\u{0}", " 1", "+1", "nan", "inf", "-0", "00000000012",
        ]
        func pick() -> String { pieces[Int(rng.next() % UInt64(pieces.count))] }
        let s = Self.openService
        for _ in 0..<3000 {
            for r in [
                s.tile(
                    region: pick(), z: pick(), x: pick(), y: pick(), ifNoneMatch: rng.next() % 4 == 0 ? pick() : nil),
                s.terrain(region: pick(), z: pick(), x: pick(), y: pick()),
                s.view(z: pick(), x: pick(), y: pick()),
                s.tileJSON(file: pick(), base: ""),
                s.query(lat: pick(), lon: pick(), zoom: pick()),
                s.asset(pick()),
            ] {
                #expect(r.status == 200 || r.status == 304 || (400..<500).contains(r.status), "status \(r.status)")
            }
        }
    }

    @Test func errorCategoriesMapToStatuses() {
        #expect(ServedResponse.status(for: .invalidArgument) == 400)
        #expect(ServedResponse.status(for: .notFound) == 404)
        #expect(ServedResponse.status(for: .locked) == 403)
        #expect(ServedResponse.status(for: .budgetExhausted) == 503)
        #expect(ServedResponse.status(for: .invalidInput) == 500)
    }

    @Test func viewerPageAndMissingLeafletPage() {
        var options = TileService.Options()
        options.libraryDirectory = Self.openDirectory
        options.leafletDirectory = "/nonexistent/leaflet"
        guard let missing = try? TileService(options) else { Issue.record("opening"); return }
        let page = missing.viewerPage()
        #expect(page.status == 503 && String(decoding: page.body, as: UTF8.self).contains("libjs-leaflet"))
        #expect(missing.asset("leaflet.js").status == 404)
    }
}
