import Foundation
import Testing
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Crypto
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

/// `serve --packs`: the catalog, the pack list, and the pack and delta files, in-process
/// through the Hummingbird router — who may download (no token, a forged one, another
/// product's, a refunded one, a lapsed subscription), ranges that resume a download, and
/// requests that try to leave the packs directory.
@Suite("Server: pack delivery", .tags(.concurrent))
struct ServerPackTests {
    static let regionA = RegionsLibraryFixture.regionA
    static let regionB = RegionsLibraryFixture.regionB
    static let t0ms = RegionsFixture.ms(RegionsFixture.t0)
    static let dayMs = Int64(RegionsFixture.day * 1000)

    /// Deterministic stand-in bytes (the server never opens a pack as SQLite).
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
    }

    static func manifest(
        _ id: String, product: String?, version: Int = 2, releasedAt: Int64, bytes: [UInt8]
    ) -> PackManifest {
        PackManifest(
            packID: id, productID: product, version: version, releasedAt: releasedAt, minReaderVersion: 1,
            archives: [
                .init(
                    name: "a.mbtiles", sha256: String(repeating: "a", count: 64), minzoom: 9, maxzoom: 12, codec: "png")
            ],
            bounds: [6.8, 45.9, 6.86, 45.95], perZoom: [.init(z: 9, tiles: 1, bytes: bytes.count)],
            totalBytes: Int64(bytes.count), sha256: SHA256.hash(data: bytes).hexString,
            tileIndexSHA256: String(repeating: "b", count: 64), attribution: "test", license: "CC0")
    }

    /// A store library (RegionsLibraryTests' catalog: regions A and B, a bundle of both, a
    /// monthly subscription including the bundle), its test App Store, and a packs directory:
    /// A (300 KB, released the day before t0, a delta from version 1), B (released 35 days
    /// after t0), `free`, and two that must be skipped (foreign signature, wrong size).
    struct Shop {
        let lib: RegionsLibraryFixture.Library
        let packA: [UInt8], packB: [UInt8], free: [UInt8], delta: [UInt8]
        let skipped = ThreadFailures()
        var packsPath: String { lib.dir.file("packs") }

        init() throws {
            lib = try RegionsLibraryFixture.Library()
            packA = ServerPackTests.bytes(300_000, seed: 1)
            packB = ServerPackTests.bytes(40_000, seed: 2)
            free = ServerPackTests.bytes(20_000, seed: 3)
            delta = ServerPackTests.bytes(12_345, seed: 4)
            let dir = lib.dir.file("packs")
            #expect(mkdir(dir, 0o755) == 0)
            let key = try RegionsFixture.publisher.privateKey(source: "publisher")
            func put(_ m: PackManifest, _ bytes: [UInt8], key: Curve25519.Signing.PrivateKey) throws {
                writeFile(dir + "/" + PackManifest.packFileName(m.packID), bytes)
                writeFile(
                    dir + "/" + PackManifest.manifestFileName(m.packID),
                    Array(try SignedPackManifest.sign(m, key: key).utf8))
            }
            let t0 = ServerPackTests.t0ms, day = ServerPackTests.dayMs
            try put(
                ServerPackTests.manifest(
                    ServerPackTests.regionA, product: ServerPackTests.regionA, releasedAt: t0 - day, bytes: packA),
                packA, key: key)
            try put(
                ServerPackTests.manifest(
                    ServerPackTests.regionB, product: ServerPackTests.regionB, releasedAt: t0 + 35 * day, bytes: packB),
                packB, key: key)
            try put(
                ServerPackTests.manifest("free", product: nil, version: 1, releasedAt: t0 - day, bytes: free), free,
                key: key)
            writeFile(dir + "/" + PackManifest.deltaFileName(ServerPackTests.regionA, from: 1, to: 2), delta)
            // Skipped: signed by a key the trust anchors do not name; a file shorter than its manifest.
            try put(
                ServerPackTests.manifest("t.foreign", product: ServerPackTests.regionA, releasedAt: t0, bytes: free),
                free,
                key: Curve25519.Signing.PrivateKey())
            try put(
                ServerPackTests.manifest("t.short", product: ServerPackTests.regionA, releasedAt: t0, bytes: packB),
                Array(packB.prefix(100)), key: key)
            // A delta leading past the pack's version is not offered either.
            writeFile(dir + "/" + PackManifest.deltaFileName(ServerPackTests.regionA, from: 2, to: 3), delta)
        }

        /// `serve --library … --packs …` opened as the CLI opens it (read-only); `online`
        /// false: no store (`--simulator`) to ask.
        func service(online: Bool = true, trusted: Bool = true) throws -> TileService {
            var options = TileService.Options()
            options.libraryDirectory = lib.libraryPath
            options.library =
                trusted
                ? try lib.open(online: online, readOnly: true)
                : try RegionLibrary(directory: lib.libraryPath, trust: nil)
            options.packsDirectory = packsPath
            let skipped = self.skipped
            options.packReport = { line in skipped.add(line) }
            return try TileService(options)
        }

        func app(_ service: TileService) -> some ApplicationProtocol {
            Application(router: TileServer.router(service, logRequests: false))
        }

        func sell(_ product: String, type: AppStoreProductType = .nonConsumable, period: String? = nil) throws -> String
        {
            try lib.shop.sell(product, type: type, period: period)
        }
    }

    static func bearer(_ token: String, _ more: HTTPFields = [:]) -> HTTPFields {
        var headers = more
        headers[.authorization] = "Bearer " + token
        return headers
    }

    static func body(_ r: TestResponse) -> [UInt8] { Array(r.body.readableBytesView) }

    static func errorKind(_ r: TestResponse) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(body(r)))).flatMap { $0 as? [String: Any] }?["error"] as? String
    }

    // MARK: - Listing and catalog

    @Test func listsVerifiedPacksWithSizesAndSkipsTheRest() async throws {
        let shop = try Shop()
        let service = try shop.service()
        let packA = shop.packA, catalogJWS = readFile(shop.lib.libraryPath + "/catalog.jws")
        try await shop.app(service).test(.router) { client in
            try await client.execute(uri: "/packs", method: .get) { r in
                #expect(r.status == .ok)
                let object = try #require(try JSONSerialization.jsonObject(with: Data(Self.body(r))) as? [String: Any])
                let packs = try #require(object["packs"] as? [[String: Any]])
                #expect(packs.map { $0["pack_id"] as? String } == ["free", Self.regionA, Self.regionB])
                let a = packs[1]
                #expect(a["total_bytes"] as? Int == 300_000)
                #expect(a["product_id"] as? String == Self.regionA)
                #expect(a["sha256"] as? String == SHA256.hash(data: packA).hexString)
                #expect(a["url"] as? String == "/packs/\(Self.regionA)")
                #expect(a["released_at"] as? Int == Int(Self.t0ms - Self.dayMs))
                let jws = try #require(a["manifest"] as? String)
                let manifest = try SignedPackManifest.verify(
                    jws, publisherKeys: [RegionsFixture.publisher.publicJWK], source: "listing")
                #expect(manifest.packID == Self.regionA && manifest.totalBytes == 300_000)
                let deltas = try #require(a["deltas"] as? [[String: Any]])
                #expect(deltas.count == 1)
                #expect(deltas.first?["from"] as? Int == 1)
                #expect(deltas.first?["url"] as? String == "/packs/\(Self.regionA)/deltas/1")
                #expect(deltas.first?["bytes"] as? Int == 12_345)
                #expect(packs[0]["product_id"] == nil)
            }
            try await client.execute(uri: "/store", method: .get) { r in
                #expect(String(decoding: Self.body(r), as: UTF8.self).contains("\"packs\":3"))
            }
            try await client.execute(uri: "/catalog", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "application/jose")
                #expect(Self.body(r) == catalogJWS)
            }
        }
        let lines = shop.skipped.all
        #expect(
            lines.contains {
                $0.contains("t.foreign.manifest.jws") && $0.contains("not signed by a trusted publisher key")
            })
        #expect(lines.contains { $0.contains("t.short.mbtiles") && $0.contains("total_bytes") })
        #expect(lines.contains { $0.contains("v2-v3.delta.mbtiles") && $0.contains("past version 2") })
        #expect(lines.count == 3)
    }

    @Test func catalogIs404WithoutOne() async throws {
        let shop = try Shop()
        unlink(shop.lib.libraryPath + "/catalog.jws")
        try await shop.app(try shop.service(trusted: false)).test(.router) { client in
            try await client.execute(uri: "/catalog", method: .get) { r in
                #expect(r.status == .notFound)
                #expect(Self.errorKind(r) == "notFound")
            }
        }
    }

    // MARK: - Who may download

    @Test func paidPackNeedsAVerifiedTransactionOfAProductThatIncludesIt() async throws {
        let shop = try Shop()
        let bought = try shop.sell(Self.regionA)
        let other = try shop.sell(Self.regionB)
        let bundle = try shop.lib.shop.sell(RegionsLibraryFixture.bundleID, account: RegionsFixture.otherAccount)
        // The same product signed by another test App Store (a CA the trust does not pin).
        let elsewhere = TemporaryDirectory()
        let foreign = try TestAppStore(directory: elsewhere.path, clock: shop.lib.clock)
            .purchase(shop.lib.shop.request(Self.regionA)).jws
        var bytes = Array(bought.utf8)
        bytes[bytes.count - 5] = bytes[bytes.count - 5] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let tampered = String(decoding: bytes, as: UTF8.self)
        let uri = "/packs/\(Self.regionA)"
        let packA = shop.packA, free = shop.free
        try await shop.app(try shop.service()).test(.router) { client in
            for headers: HTTPFields in [
                [:], [.authorization: "Bearer"], [.authorization: "Basic dXNlcjpwYXNz"],
                [.authorization: "Bearer not-a-jws"],
            ] {
                try await client.execute(uri: uri, method: .get, headers: headers) { r in
                    #expect(r.status == .unauthorized)
                    #expect(Self.errorKind(r) == "missingTransaction")
                    #expect(r.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true)
                }
            }
            for token in [tampered, foreign] {
                try await client.execute(uri: uri, method: .get, headers: Self.bearer(token)) { r in
                    #expect(r.status == .unauthorized)
                    #expect(Self.errorKind(r) == "invalidTransaction")
                }
            }
            try await client.execute(uri: uri, method: .get, headers: Self.bearer(other)) { r in
                #expect(r.status == .forbidden)
                #expect(Self.errorKind(r) == "notEntitled")
            }
            try await client.execute(uri: uri, method: .get, headers: Self.bearer(bought)) { r in
                #expect(r.status == .ok)
                #expect(Self.body(r) == packA)
                #expect(r.headers[.contentLength] == "300000")
                #expect(r.headers[.acceptRanges] == "bytes")
                #expect(r.headers[.eTag] == "\"\(SHA256.hash(data: packA).hexString)\"")
            }
            // A bundle includes region A (another account's token: the bearer is what counts).
            try await client.execute(uri: uri, method: .get, headers: Self.bearer(bundle)) { r in
                #expect(r.status == .ok)
                #expect(Self.body(r).count == 300_000)
            }
            // The free pack needs nothing.
            try await client.execute(uri: "/packs/free", method: .get) { r in
                #expect(r.status == .ok)
                #expect(Self.body(r) == free)
            }
        }
    }

    @Test func aRefundLocksTheOldTokenOut() async throws {
        let shop = try Shop()
        let bought = try shop.sell(Self.regionA)
        let uri = "/packs/\(Self.regionA)"
        let store = shop.lib.store, id = try shop.lib.shop.transactionID(bought)
        try await shop.app(try shop.service()).test(.router) { client in
            try await client.execute(uri: uri, method: .head, headers: Self.bearer(bought)) { r in
                #expect(r.status == .ok)
            }
            _ = try store.refund(transactionID: id, reason: 0)
            for method: HTTPRequest.Method in [.get, .head] {
                try await client.execute(uri: uri, method: method, headers: Self.bearer(bought)) { r in
                    #expect(r.status == .forbidden)
                    if method == .get { #expect(Self.errorKind(r) == "revoked") }
                }
            }
            try await client.execute(uri: uri + "/deltas/1", method: .get, headers: Self.bearer(bought)) { r in
                #expect(r.status == .forbidden)
                #expect(Self.errorKind(r) == "revoked")
            }
        }
    }

    @Test func aLapsedSubscriptionKeepsWhatWasReleasedBeforeItEnded() async throws {
        let shop = try Shop()
        let subscription = try shop.sell(RegionsLibraryFixture.subscriptionID, type: .autoRenewable, period: "P1M")
        let service = try shop.service()
        let movable = shop.lib.clock, packA = shop.packA, packB = shop.packB
        try await shop.app(service).test(.router) { client in
            movable.set(RegionsFixture.t0 + 36 * RegionsFixture.day)
            // P1M from 2024-01-01 ends 2024-02-01 (31 days): lapsed 36 days on.
            try await client.execute(uri: "/packs/\(Self.regionA)", method: .get, headers: Self.bearer(subscription)) {
                r in
                #expect(r.status == .ok)
                #expect(Self.body(r) == packA)
            }
            try await client.execute(uri: "/packs/\(Self.regionB)", method: .get, headers: Self.bearer(subscription)) {
                r in
                #expect(r.status == .forbidden)
                #expect(Self.errorKind(r) == "expired")
            }
            movable.set(RegionsFixture.t0 + 10 * RegionsFixture.day)
            try await client.execute(uri: "/packs/\(Self.regionB)", method: .get, headers: Self.bearer(subscription)) {
                r in
                #expect(r.status == .ok)
                #expect(Self.body(r) == packB)
            }
        }
    }

    @Test func withoutAStoreOrTrustPaidPacksStayClosed() async throws {
        let shop = try Shop()
        let bought = try shop.sell(Self.regionA)
        let offline = try shop.service(online: false)
        #expect(offline.packs?.salesProblem?.contains("no store") == true)
        try await shop.app(offline).test(.router) { client in
            try await client.execute(uri: "/packs/\(Self.regionA)", method: .get, headers: Self.bearer(bought)) { r in
                #expect(r.status == .serviceUnavailable)
                #expect(Self.errorKind(r) == "unavailable")
            }
            try await client.execute(uri: "/packs/free", method: .get) { r in #expect(r.status == .ok) }
        }
        let free = shop.free
        let open = try shop.service(trusted: false)
        #expect(open.packs?.salesProblem?.contains("open") == true)
        try await shop.app(open).test(.router) { client in
            try await client.execute(uri: "/packs/\(Self.regionA)", method: .get, headers: Self.bearer(bought)) { r in
                #expect(r.status == .forbidden)
                #expect(Self.errorKind(r) == "notEntitled")
            }
            try await client.execute(uri: "/packs/free", method: .get) { r in
                #expect(r.status == .ok)
                #expect(Self.body(r) == free)
            }
        }
    }

    // MARK: - Ranges, HEAD, deltas

    @Test func rangesResumeADownload() async throws {
        let shop = try Shop()
        let bought = try shop.sell(Self.regionA)
        let uri = "/packs/\(Self.regionA)"
        let etag = "\"\(SHA256.hash(data: shop.packA).hexString)\""
        let a = shop.packA, delta = shop.delta
        try await shop.app(try shop.service()).test(.router) { client in
            try await client.execute(uri: uri, method: .get, headers: Self.bearer(bought, [.range: "bytes=1000-1999"]))
            { r in
                #expect(r.status == .partialContent)
                #expect(Self.body(r) == Array(a[1000...1999]))
                #expect(r.headers[.contentRange] == "bytes 1000-1999/300000")
                #expect(r.headers[.contentLength] == "1000")
            }
            try await client.execute(uri: uri, method: .get, headers: Self.bearer(bought, [.range: "bytes=-700"])) {
                r in
                #expect(r.status == .partialContent)
                #expect(Self.body(r) == Array(a.suffix(700)))
                #expect(r.headers[.contentRange] == "bytes 299300-299999/300000")
            }
            // Resuming from the last byte received, past the first read piece (PackService.chunkBytes).
            try await client.execute(
                uri: uri, method: .get,
                headers: Self.bearer(bought, [.range: "bytes=\(PackService.chunkBytes + 1000)-", .ifRange: etag])
            ) { r in
                #expect(r.status == .partialContent)
                #expect(Self.body(r) == Array(a[(PackService.chunkBytes + 1000)...]))
            }
            // The file changed (another ETag): the whole file, not a splice.
            try await client.execute(
                uri: uri, method: .get,
                headers: Self.bearer(
                    bought, [.range: "bytes=1000-", .ifRange: "\"\(String(repeating: "0", count: 64))\""])
            ) { r in
                #expect(r.status == .ok)
                #expect(Self.body(r) == a)
            }
            try await client.execute(uri: uri, method: .get, headers: Self.bearer(bought, [.range: "bytes=300000-"])) {
                r in
                #expect(r.status == .rangeNotSatisfiable)
                #expect(r.headers[.contentRange] == "bytes */300000")
                #expect(Self.errorKind(r) == "rangeNotSatisfiable")
            }
            try await client.execute(uri: uri, method: .get, headers: Self.bearer(bought, [.range: "bytes=0-9,20-29"]))
            { r in
                #expect(r.status == .ok)
                #expect(Self.body(r).count == 300_000)
            }
            try await client.execute(uri: uri, method: .get, headers: Self.bearer(bought, [.ifNoneMatch: etag])) { r in
                #expect(r.status == .notModified)
                #expect(Self.body(r).isEmpty)
            }
            try await client.execute(uri: uri, method: .head, headers: Self.bearer(bought)) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentLength] == "300000")
                #expect(r.headers[.eTag] == etag)
                #expect(Self.body(r).isEmpty)
            }
            try await client.execute(uri: uri, method: .head) { r in
                #expect(r.status == .unauthorized)
            }
            try await client.execute(uri: uri + "/deltas/1", method: .get, headers: Self.bearer(bought)) { r in
                #expect(r.status == .ok)
                #expect(Self.body(r) == delta)
                #expect(r.headers[.eTag] == "\"\(SHA256.hash(data: delta).hexString)\"")
            }
            try await client.execute(
                uri: uri + "/deltas/1", method: .get, headers: Self.bearer(bought, [.range: "bytes=10-19"])
            ) { r in
                #expect(r.status == .partialContent)
                #expect(Self.body(r) == Array(delta[10...19]))
            }
            try await client.execute(uri: uri + "/deltas/1", method: .get) { r in
                #expect(r.status == .unauthorized)
            }
            for from in ["2", "0", "x", "99999999999"] {
                try await client.execute(uri: uri + "/deltas/\(from)", method: .get, headers: Self.bearer(bought)) {
                    r in
                    #expect(r.status == .notFound)
                }
            }
        }
    }

    @Test func noRequestReachesAFileOutsideThePacks() async throws {
        let shop = try Shop()
        // A file beside the packs directory that a traversal would reach.
        writeFile(shop.lib.dir.file("secret.mbtiles"), Array("secret".utf8))
        writeFile(shop.lib.dir.file("secret.manifest.jws"), Array("secret".utf8))
        try await shop.app(try shop.service()).test(.router) { client in
            for uri in [
                "/packs/..", "/packs/..%2Fsecret", "/packs/%2e%2e%2fsecret", "/packs/../secret", "/packs/free.mbtiles",
                "/packs/free.manifest.jws", "/packs/.hidden", "/packs/a%2Fb", "/packs/free/deltas/..%2F..%2Fsecret",
                "/packs/" + String(repeating: "x", count: 300), "/packs/t.foreign", "/packs/t.short",
            ] {
                try await client.execute(uri: uri, method: .get) { r in
                    #expect(r.status == .notFound || r.status == .badRequest, "\(uri)")
                    #expect(Self.body(r) != Array("secret".utf8), "\(uri)")
                    #expect(Self.body(r).count < 1000, "\(uri)")
                }
            }
        }
    }

    @Test func aPackReplacedOnDiskIsReadAgain() async throws {
        let shop = try Shop()
        let service = try shop.service()
        let packs = try #require(service.packs)
        #expect(packs.directory.pack("free")?.file.size == 20_000)
        // A new free pack renamed in (the publisher's atomic replace): the directory changes.
        let key = try RegionsFixture.publisher.privateKey(source: "publisher")
        let newer = Self.bytes(30_000, seed: 9)
        let m = Self.manifest("free", product: nil, version: 2, releasedAt: Self.t0ms, bytes: newer)
        writeFile(shop.packsPath + "/tmp-free", newer)
        #expect(rename(shop.packsPath + "/tmp-free", shop.packsPath + "/free.mbtiles") == 0)
        writeFile(shop.packsPath + "/tmp-manifest", Array(try SignedPackManifest.sign(m, key: key).utf8))
        #expect(rename(shop.packsPath + "/tmp-manifest", shop.packsPath + "/free.manifest.jws") == 0)
        try await shop.app(service).test(.router) { client in
            try await client.execute(uri: "/packs/free", method: .get) { r in
                #expect(r.status == .ok)
                #expect(Self.body(r) == newer)
            }
        }
    }

    // MARK: - Pieces

    @Test func rangeHeaderRules() {
        let e = "\"abc\""
        func r(_ range: String?, _ ifRange: String? = nil, size: Int64 = 100) -> PackRange {
            PackRange.resolve(range: range, ifRange: ifRange, size: size, etag: e)
        }
        #expect(r(nil) == .whole)
        #expect(r("bytes=0-0") == .partial(first: 0, last: 0))
        #expect(r("bytes=10-500") == .partial(first: 10, last: 99))
        #expect(r("bytes=99-") == .partial(first: 99, last: 99))
        #expect(r("bytes=100-") == .unsatisfiable)
        #expect(r("bytes=-0") == .unsatisfiable)
        #expect(r("bytes=-1000") == .partial(first: 0, last: 99))
        #expect(r("BYTES = 5-6") == .partial(first: 5, last: 6))
        #expect(r("bytes=6-5") == .whole)
        #expect(r("bytes=a-b") == .whole)
        #expect(r("bytes=-") == .whole)
        #expect(r("items=0-1") == .whole)
        #expect(r("bytes=0-1,3-4") == .whole)
        #expect(r("bytes=99999999999999999999-") == .whole)
        #expect(r("bytes=5-6", e) == .partial(first: 5, last: 6))
        #expect(r("bytes=5-6", "W/\"abc\"") == .whole)
        #expect(r("bytes=5-6", "Tue, 01 Jan 2030 00:00:00 GMT") == .whole)
    }

    @Test func deltaNamesParseExactly() {
        func parsed(_ name: String) -> String? { ServedPacks.parseDeltaName(name).map { "\($0.0) \($0.1)" } }
        #expect(parsed("t.region.a.v1-v2.delta.mbtiles") == "t.region.a 1")
        #expect(parsed("com.x.v2.alps.v9-v10.delta.mbtiles") == "com.x.v2.alps 9")
        #expect(ServedPacks.parseDeltaName("a.v1-v3.delta.mbtiles") == nil)
        #expect(ServedPacks.parseDeltaName("a.v01-v2.delta.mbtiles") == nil)
        #expect(ServedPacks.parseDeltaName("a.v0-v1.delta.mbtiles") == nil)
        #expect(ServedPacks.parseDeltaName("..v1-v2.delta.mbtiles") == nil)
        #expect(ServedPacks.parseDeltaName("a.v1-v2.delta.mbtiles.part") == nil)
    }
}
