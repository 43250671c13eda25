import Testing
import TilePackArchive
import TilePackCore
import TilePackEncoders
import TilePackRegions
import TilePackTools

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A region library for the region store's and the server's tests: two regions, a bundle, a
/// subscription and a missing region, their archives, a signed catalog and a test App Store.
package enum RegionsLibraryFixture {
    package static let regionA = "t.region.a"
    package static let regionB = "t.region.b"
    package static let bundleID = "t.bundle"
    package static let subscriptionID = "t.updates"
    package static let missingID = "t.region.missing"

    /// Interior points of the two regions (north-west A, south-east B; far enough apart that
    /// no z12 tile of one touches the other).
    package static let pointA = (lon: 6.83, lat: 45.92)
    package static let pointB = (lon: 6.95, lat: 45.79)
    package static let freeMaxZoom = 8

    package static func tile(_ lon: Double, _ lat: Double, _ z: Int) -> TileID {
        WebMercator.tile(lon: lon, lat: lat, zoom: z)!.tile
    }

    /// A closed lon/lat ring (a pentagon-ish shape, not a box) around `(lon, lat)`.
    package static func ring(_ lon: Double, _ lat: Double, _ r: Double = 0.02) -> String {
        let points = [
            (lon - r, lat - r), (lon + r, lat - r), (lon + r * 1.5, lat), (lon + r, lat + r), (lon - r, lat + r),
            (lon - r, lat - r),
        ]
        return "[[" + points.map { "[\($0.0), \($0.1)]" }.joined(separator: ", ") + "]]"
    }

    package static func region(_ id: String, price: String, lon: Double, lat: Double, archive: String) -> String {
        """
        {"id": "\(id)", "title": "Region \(id)", "price": "\(price)", "currency": "EUR", "kind": "region",
         "area": \(ring(lon, lat)), "minzoom": 9, "maxzoom": 12, "archives": ["\(archive)"]}
        """
    }

    /// A solid 256² PNG.
    package static func png(_ r: UInt8, _ g: UInt8, _ b: UInt8) throws -> [UInt8] {
        var rgba = [UInt8](repeating: 255, count: 256 * 256 * 4)
        for i in 0..<(256 * 256) { rgba[i * 4] = r; rgba[i * 4 + 1] = g; rgba[i * 4 + 2] = b }
        return try PNGEncoder().encode(rgba: rgba, width: 256, height: 256)
    }

    /// An archive of solid PNG tiles covering the square `±r` around the point at zooms
    /// `freeMaxZoom - 1 … 12` (free and sold zooms).
    package static func writeArchive(_ path: String, lon: Double, lat: Double, r: Double = 0.03, colour: [UInt8]) throws
    {
        let writer = try MBTilesWriter(path: path, metadata: MBTilesMetadata(name: path, format: "png", codec: "png"))
        let payload = try png(colour[0], colour[1], colour[2])
        for z in (freeMaxZoom - 1)...12 {
            let nw = tile(lon - r, lat + r, z), se = tile(lon + r, lat - r, z)
            for x in nw.x...se.x {
                for y in nw.y...se.y { try writer.write(payload, for: TileID(z: z, x: x, y: y)!) }
            }
        }
        try writer.finish()
    }

    /// The catalog's JSON: regions A (2.99) and B (1.99) each in its own archive, a bundle of
    /// both (3.99), a monthly subscription including the bundle (0.99), and a region whose
    /// archive is missing (unavailable; its hash given, as the publisher had the file).
    package static func catalogJSON(
        serial: Int, freeMaxZoom: Int = RegionsLibraryFixture.freeMaxZoom, extraProducts: [String] = []
    ) -> [UInt8] {
        let products =
            [
                region(regionA, price: "2.99", lon: pointA.lon, lat: pointA.lat, archive: "a.mbtiles"),
                region(regionB, price: "1.99", lon: pointB.lon, lat: pointB.lat, archive: "b.mbtiles"),
                """
                {"id": "\(bundleID)", "title": "Both", "price": "3.99", "currency": "EUR", "kind": "bundle",
                 "includes": ["\(regionA)", "\(regionB)"]}
                """,
                """
                {"id": "\(subscriptionID)", "title": "Updates", "price": "0.99", "currency": "EUR", "kind": "subscription",
                 "period": "P1M", "includes": ["\(bundleID)"]}
                """,
                region(missingID, price: "0.49", lon: 7.5, lat: 46.5, archive: "missing.mbtiles"),
            ] + extraProducts
        let hashes = "{\"missing.mbtiles\": \"\(String(repeating: "0", count: 64))\"}"
        return Array(
            """
            {"version": 2, "serial": \(serial), "free_max_zoom": \(freeMaxZoom), "archive_sha256": \(hashes),
             "products": [\(products.joined(separator: ",\n"))]}
            """.utf8)
    }

    /// A library whose catalog (serial 2) is signed by the publisher, a test App Store whose
    /// root the trust anchors pin, and the device's ledger path (not created yet).
    package struct Library {
        package let shop: TestStoreFixture
        package var dir: TemporaryDirectory { shop.dir }
        package var libraryPath: String { dir.file("library") }
        package var ledgerPath: String { dir.file("device/ledger.sqlite") }
        package var store: TestAppStore { shop.store }
        package var clock: MovableClock { shop.clock }
        package var trust: TrustAnchors { shop.trust }
        package let extraProducts: [String]

        package init(extraProducts: [String] = [], prepareStore: (String) throws -> Void = { _ in }) throws {
            shop = try TestStoreFixture(prepare: prepareStore)
            self.extraProducts = extraProducts
            let lib = shop.dir.file("library")
            #expect(mkdir(lib, 0o755) == 0 && mkdir(shop.dir.file("device"), 0o755) == 0)
            try writeArchive(lib + "/a.mbtiles", lon: pointA.lon, lat: pointA.lat, colour: [200, 10, 10])
            try writeArchive(lib + "/b.mbtiles", lon: pointB.lon, lat: pointB.lat, colour: [10, 10, 200])
            writeFile(lib + "/catalog.json", catalogJSON(serial: 2, extraProducts: extraProducts))
            try sign(serial: 2)
        }

        /// Signs the catalog again with `serial` (and `key`), as the publisher ships an edition.
        @discardableResult
        package func sign(
            serial: Int, freeMaxZoom: Int = RegionsLibraryFixture.freeMaxZoom, key: JWK = RegionsFixture.publisher
        ) throws -> String {
            try RegionsFixture.signCatalog(
                libraryDirectory: libraryPath,
                json: catalogJSON(serial: serial, freeMaxZoom: freeMaxZoom, extraProducts: extraProducts), key: key)
        }

        /// Opens the library as a device does. `online` false: no store to sync with.
        package func open(
            ledger: String? = nil, account: String? = RegionsFixture.account, online: Bool = true,
            readOnly: Bool = false, upgrading: Bool = false, trust: TrustAnchors?? = nil
        ) throws -> RegionLibrary {
            try RegionLibrary(
                directory: libraryPath, trust: trust ?? shop.trust, ledgerPath: ledger ?? ledgerPath, account: account,
                storefront: online ? shop.store : nil, clock: shop.clock, readOnly: readOnly,
                upgradingLegacyLedger: upgrading)
        }

        package var archives: [String] { [libraryPath + "/a.mbtiles", libraryPath + "/b.mbtiles"] }

        /// What the store still redelivers to the account.
        package func unfinished(account: String = RegionsFixture.account) throws -> [String] {
            try store.unfinishedTransactions(account: account, bundleID: RegionsFixture.bundleID)
        }
    }

    /// Longer than ``LedgerEntitlements/checkInterval`` (5 ms) plus a tick of the coarse
    /// monotonic clock it reads (4 ms here, 10 ms on a 100 Hz kernel): another process's change
    /// shows after it.
    package static func waitForTheCheckInterval() { usleep(20_000) }
}
