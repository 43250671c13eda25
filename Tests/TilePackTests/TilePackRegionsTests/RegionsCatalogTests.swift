import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackStore
@testable import TilePackRegions
import TilePackTestSupport

/// The region catalog (loading, every validation error, availability), the polygon/tile
/// geometry, exact prices and periods, and the access policy over the sample catalog.
@Suite(.tags(.concurrent)) struct RegionsCatalogTests {
    // MARK: - Fixtures

    /// The repository's SampleRegions directory.
    static let sampleDirectory = TestData.sampleRegions

    static let chamonixID = CatalogFixture.chamonixID
    static let courmayeurID = CatalogFixture.courmayeurID
    static let bundleID = CatalogFixture.bundleID
    static let updatesID = CatalogFixture.updatesID

    static func sampleLibrary() throws -> (TemporaryDirectory, Catalog) { try CatalogFixture.sampleLibrary() }
    static func tile(_ lon: Double, _ lat: Double, _ z: Int) -> TileID { CatalogFixture.tile(lon, lat, z) }
    static let chamonix = CatalogFixture.chamonix
    static let courmayeur = CatalogFixture.courmayeur
    static func square(_ w: Double, _ s: Double, _ e: Double, _ n: Double) -> [[Double]] {
        CatalogFixture.square(w, s, e, n)
    }
    static func product(_ id: String, _ overrides: [String: String?] = [:]) -> String {
        CatalogFixture.product(id, overrides)
    }
    static func bundle(_ id: String, includes: [String], price: String = "\"2.99\"") -> String {
        CatalogFixture.bundle(id, includes: includes, price: price)
    }
    static func catalogJSON(_ products: [String], top: String = "\"version\": 1, \"free_max_zoom\": 10") -> [UInt8] {
        CatalogFixture.catalogJSON(products, top: top)
    }
    static func decode(_ json: [UInt8], library: String? = nil) throws(CatalogError) -> Catalog {
        try CatalogFixture.decode(json, library: library)
    }

    // MARK: - Loading

    @Test func sampleCatalogLoads() throws {
        let catalog = try #require(try Catalog.load(libraryDirectory: Self.sampleDirectory))
        #expect(catalog.version == 2 && catalog.serial == 1)
        #expect(catalog.freeMaxZoom == 10)
        #expect(catalog.products.map(\.kind) == [.region, .region, .bundle, .subscription])
        let chamonix = try #require(catalog.product(id: Self.chamonixID))
        #expect(chamonix.price == (try Price(parsing: "4.99", minorUnits: 2)))
        #expect(chamonix.archives == ["montblanc-dem.mbtiles", "montblanc-color.mbtiles"])
        #expect(chamonix.area?.contains(lon: Self.chamonix.lon, lat: Self.chamonix.lat) == true)
        #expect(chamonix.area?.contains(lon: Self.courmayeur.lon, lat: Self.courmayeur.lat) == false)
        #expect(catalog.product(id: Self.updatesID)?.period == SubscriptionPeriod(iso8601: "P1Y"))
        #expect(
            catalog.entitlementClosure(of: [Self.updatesID])
                == [Self.updatesID, Self.bundleID, Self.chamonixID, Self.courmayeurID])
        #expect(catalog.bounds(of: Self.bundleID) == GeoBounds(west: 6.72, south: 45.74, east: 7.04, north: 45.98))
        #expect(catalog.zoomRange(of: Self.updatesID) == 9...13)
        // Both archives the build writes, and nothing else, are named.
        #expect(Set(catalog.products.flatMap(\.archives)) == ["montblanc-dem.mbtiles", "montblanc-color.mbtiles"])
    }

    @Test func libraryWithoutCatalogIsOpen() throws {
        let dir = TemporaryDirectory()
        #expect(try Catalog.load(libraryDirectory: dir.path) == nil)
        let library = try RegionLibrary(directory: dir.path, trust: nil)
        #expect(library.kind == .open && library.catalog == nil && library.accessPolicy() is OpenAccess)
        #expect(throws: CatalogError.self) { try Catalog(contentsOf: dir.file("catalog.json")) }
        do {
            _ = try Catalog(contentsOf: dir.file("catalog.json"))
        } catch let error as CatalogError {
            #expect(error.code == .notFound && error.category == .notFound)
            #expect(error.description == dir.file("catalog.json") + ": no such file")
        }
    }

    @Test func encodesBackToTheSameCatalog() throws {
        let (_, catalog) = try Self.sampleLibrary()
        let text = try JSONOutput.string(catalog)
        let again = try Self.decode(Array(text.utf8))
        #expect(again.products.map(\.id) == catalog.products.map(\.id))
        #expect(again.products.map(\.area) == catalog.products.map(\.area))
        #expect(again.products.map(\.price.description) == ["4.99", "3.99", "6.99", "9.99"])
        #expect(try JSONOutput.string(again) == text)
    }

    /// A tile shared by two regions: the tile names both, cheapest first; a point names only
    /// the region holding it (buying the other would not unlock it), and a bundle of both.
    @Test func aPointIsOfferedOnlyTheProductsHoldingIt() throws {
        func area(_ w: Double, _ e: Double) -> String {
            "[\(Self.square(w, 45.0, e, 45.2).map { "[\($0[0]), \($0[1])]" }.joined(separator: ", "))]"
        }
        let catalog = try Self.decode(
            Self.catalogJSON([
                Self.product("west", ["area": "[\(area(5.0, 5.01))]", "price": "\"0.99\""]),
                Self.product("east", ["area": "[\(area(5.01, 5.2))]", "price": "\"4.99\""]),
                Self.bundle("both", includes: ["west", "east"], price: "\"5.49\""),
            ]))
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements())
        let west = try #require(catalog.product(id: "west")).offer,
            east = try #require(catalog.product(id: "east")).offer
        let bundle = try #require(catalog.product(id: "both")).offer
        let located = try #require(WebMercator.tile(lon: 5.05, lat: 45.1, zoom: 12))
        let tile = located.tile
        #expect(policy.access(tile, archive: "a.mbtiles", tileSize: 256).offers == [west, east, bundle])
        let pixel = (x: Int(located.pixelX), y: Int(located.pixelY))
        #expect(policy.offers(for: tile, archive: "a.mbtiles", tileSize: 256, pixel: pixel) == [east, bundle])
        // The tile's west edge at 5.009°… holds a pixel of "west" (5.0–5.01): it is offered there.
        #expect(policy.offers(for: tile, archive: "a.mbtiles", tileSize: 256, pixel: (0, pixel.y)) == [west, bundle])
    }

    @Test func missingArchiveMakesTheProductUnavailable() throws {
        let dir = TemporaryDirectory()
        _ = try dir.write(
            "catalog.json",
            Self.catalogJSON([
                Self.product("a", ["archives": "[\"a.mbtiles\"]"]),
                Self.product("b", ["archives": "[\"a.mbtiles\", \"b.mbtiles\"]", "price": "\"0.99\""]),
                Self.bundle("ab", includes: ["a", "b"]),
            ]))
        _ = try dir.write("a.mbtiles", [])
        let catalog = try Catalog(contentsOf: dir.file("catalog.json"))
        #expect(catalog.product(id: "a")?.isAvailable == true)
        #expect(
            catalog.product(id: "b")?.availability
                == .unavailable(reason: "archive \"b.mbtiles\" is not in the library"))
        #expect(catalog.product(id: "ab")?.availability == .unavailable(reason: "includes \"b\", which is unavailable"))
        // Unavailable products are never offered, however cheap.
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements())
        #expect(policy.access(Self.tile(5, 5, 12)) == .denied(unlockedBy: [catalog.product(id: "a")!.offer]))
        // A directory is not an archive.
        try FileManager.default.createDirectory(atPath: dir.file("b.mbtiles"), withIntermediateDirectories: false)
        #expect(try Catalog(contentsOf: dir.file("catalog.json")).product(id: "b")?.isAvailable == false)
        // Without a library, nothing is checked.
        #expect(try Self.decode(readFile(dir.file("catalog.json"))).products.allSatisfy(\.isAvailable))
    }

    // MARK: - Validation errors

    struct BadCatalog: CustomTestStringConvertible, Sendable {
        let label: String
        let json: [UInt8]
        let kind: CatalogError.Code
        let field: String?
        /// The whole text after "lib/catalog.json: FIELD ", or a part of it.
        let detail: String
        var testDescription: String { label }
    }

    static let badCatalogs: [BadCatalog] = {
        let p = product, c = { (products: [String]) in catalogJSON(products) }
        return [
            BadCatalog(
                label: "negative price", json: c([p("a", [:]), p("b", [:]), p("c", ["price": "\"-1.00\""])]),
                kind: .negativePrice, field: "products[2].price", detail: "\"-1.00\" is negative"),
            BadCatalog(
                label: "price as a number", json: c([p("a", ["price": "4.99"])]),
                kind: .badPrice, field: "products[0].price",
                detail: "must be a decimal string such as \"4.99\", not a number"),
            BadCatalog(
                label: "too many decimals", json: c([p("a", ["price": "\"4.999\""])]),
                kind: .badPrice, field: "products[0].price",
                detail: "\"4.999\" has more than 2 decimals (EUR's minor units)"),
            BadCatalog(
                label: "malformed price", json: c([p("a", ["price": "\"4,99\""])]),
                kind: .badPrice, field: "products[0].price", detail: "\"4,99\" is not a decimal"),
            BadCatalog(
                label: "bad currency", json: c([p("a", ["currency": "\"eur\""])]),
                kind: .badCurrency, field: "products[0].currency", detail: "\"eur\" is not an ISO 4217 code"),
            BadCatalog(
                label: "two currencies", json: c([p("a", [:]), p("b", ["currency": "\"USD\""])]),
                kind: .badCurrency, field: "products[1].currency", detail: "\"USD\" differs from products[0]'s \"EUR\""),
            BadCatalog(
                label: "duplicate id", json: c([p("a", [:]), p("b", [:]), p("a", [:])]),
                kind: .duplicateID, field: "products[2].id", detail: "\"a\" is already the id of products[0]"),
            BadCatalog(
                label: "bad id", json: c([p("has space", [:])]),
                kind: .invalidValue, field: "products[0].id", detail: "\"has space\" must be 1…100 characters"),
            BadCatalog(
                label: "unknown product field", json: c([p("a", ["minZoom": "3"])]),
                kind: .unknownField, field: "products[0].minZoom", detail: "is not a field of the catalog schema"),
            BadCatalog(
                label: "unknown top-level field",
                json: catalogJSON([], top: "\"version\": 1, \"free_max_zoom\": 3, \"extra\": 1"),
                kind: .unknownField, field: "extra", detail: "is not a field"),
            BadCatalog(
                label: "version 3", json: catalogJSON([], top: "\"version\": 3, \"free_max_zoom\": 3"),
                kind: .unsupportedVersion, field: "version",
                detail: "3 is not supported (this tilepack reads versions 1 and 2)"),
            BadCatalog(
                label: "version 2 without serial", json: catalogJSON([], top: "\"version\": 2, \"free_max_zoom\": 3"),
                kind: .malformed, field: "serial", detail: "is missing"),
            BadCatalog(
                label: "version 2 serial zero",
                json: catalogJSON([], top: "\"version\": 2, \"serial\": 0, \"free_max_zoom\": 3"),
                kind: .invalidValue, field: "serial", detail: "0 is outside 1…2^53"),
            BadCatalog(
                label: "serial in version 1",
                json: catalogJSON([], top: "\"version\": 1, \"serial\": 4, \"free_max_zoom\": 3"),
                kind: .unknownField, field: "serial", detail: "is not a field"),
            BadCatalog(
                label: "archive hash not hex",
                json: catalogJSON(
                    [],
                    top:
                        """
                        \"version\": 2, \"serial\": 1, \"archive_sha256\": {\"a.mbtiles\": \"XYZ\"}, \
                        \"free_max_zoom\": 3
                        """
                ),
                kind: .invalidValue, field: "archive_sha256[\"a.mbtiles\"]",
                detail: "\"XYZ\" is not 64 lowercase hex digits"),
            BadCatalog(
                label: "free zoom out of range", json: catalogJSON([], top: "\"version\": 1, \"free_max_zoom\": 30"),
                kind: .badZoomRange, field: "free_max_zoom", detail: "30 is outside 0…24"),
            BadCatalog(
                label: "zoom range inverted", json: c([p("a", ["minzoom": "12", "maxzoom": "10"])]),
                kind: .badZoomRange, field: "products[0].maxzoom", detail: "10 is below minzoom 12"),
            BadCatalog(
                label: "zoom too high", json: c([p("a", ["maxzoom": "25"])]),
                kind: .badZoomRange, field: "products[0].maxzoom", detail: "25 is outside 0…24"),
            BadCatalog(
                label: "polygon not closed", json: c([p("a", ["area": "[[[0,0],[1,0],[1,1],[0,1]]]"])]),
                kind: .badPolygon, field: "products[0].area[0]", detail: "is not closed"),
            BadCatalog(
                label: "too few points", json: c([p("a", ["area": "[[[0,0],[1,0],[0,0]]]"])]),
                kind: .badPolygon, field: "products[0].area[0]", detail: "has 3 points (a closed ring needs at least 4)"
            ),
            BadCatalog(
                label: "self-intersecting", json: c([p("a", ["area": "[[[0,0],[1,1],[1,0],[0,1],[0,0]]]"])]),
                kind: .badPolygon, field: "products[0].area[0]", detail: "intersects itself (edge 0 meets edge 2)"),
            BadCatalog(
                label: "edge folding back", json: c([p("a", ["area": "[[[0,0],[2,0],[1,0],[1,1],[0,0]]]"])]),
                kind: .badPolygon, field: "products[0].area[0]", detail: "intersects itself"),
            BadCatalog(
                label: "longitude out of range", json: c([p("a", ["area": "[[[0,0],[200,0],[1,1],[0,0]]]"])]),
                kind: .badPolygon, field: "products[0].area[0][1]", detail: "[200.0, 0.0] is outside lon −180…180"),
            BadCatalog(
                label: "latitude beyond web mercator", json: c([p("a", ["area": "[[[0,0],[1,0],[1,89],[0,0]]]"])]),
                kind: .badPolygon, field: "products[0].area[0][2]", detail: "[1.0, 89.0] is outside"),
            BadCatalog(
                label: "point not a pair", json: c([p("a", ["area": "[[[0,0],[1,0,5],[1,1],[0,0]]]"])]),
                kind: .badPolygon, field: "products[0].area[0][1]", detail: "must be [lon, lat] (3 numbers)"),
            BadCatalog(
                label: "hole outside",
                json: c([p("a", ["area": "[[[0,0],[1,0],[1,1],[0,1],[0,0]], [[5,5],[6,5],[6,6],[5,5]]]"])]),
                kind: .badPolygon, field: "products[0].area[1]", detail: "is a hole outside the outer ring"),
            BadCatalog(
                label: "rings crossing",
                json: c([p("a", ["area": "[[[0,0],[4,0],[4,4],[0,4],[0,0]], [[1,1],[5,1],[5,2],[1,1]]]"])]),
                kind: .badPolygon, field: "products[0].area[1]", detail: "crosses or touches ring 0"),
            BadCatalog(
                label: "area not an array of rings", json: c([p("a", ["area": "[0, 0]"])]),
                kind: .badPolygon, field: "products[0].area", detail: "must be an array of rings"),
            BadCatalog(
                label: "empty archives", json: c([p("a", ["archives": "[]"])]),
                kind: .badArchives, field: "products[0].archives", detail: "is empty"),
            BadCatalog(
                label: "archive outside the library", json: c([p("a", ["archives": "[\"../x.mbtiles\"]"])]),
                kind: .badArchives, field: "products[0].archives[0]",
                detail: "\"../x.mbtiles\" is not a file name in the library"),
            BadCatalog(
                label: "missing title", json: c([p("a", ["title": nil])]),
                kind: .malformed, field: "products[0].title", detail: "is missing"),
            BadCatalog(
                label: "zoom as a string", json: c([p("a", ["minzoom": "\"9\""])]),
                kind: .malformed, field: "products[0].minzoom", detail: "must be an integer"),
            BadCatalog(
                label: "unknown kind", json: c([p("a", ["kind": "\"pack\""])]),
                kind: .invalidValue, field: "products[0].kind", detail: "\"pack\" is not region, bundle or subscription"
            ),
            BadCatalog(
                label: "bundle naming an unknown product",
                json: c([p("a", [:]), bundle("b", includes: ["a", "nope"])]),
                kind: .unknownProduct, field: "products[1].includes[1]",
                detail: "\"nope\" is not a product in the catalog"),
            BadCatalog(
                label: "bundle naming itself", json: c([p("a", [:]), bundle("b", includes: ["b"])]),
                kind: .cycle, field: "products[1].includes[0]", detail: "\"b\" is the bundle itself"),
            BadCatalog(
                label: "bundle cycle",
                json: c([p("a", [:]), bundle("b", includes: ["a", "c"]), bundle("c", includes: ["b"])]),
                kind: .cycle, field: "products[1].includes", detail: "\"b\" → \"c\" → \"b\" form a cycle"),
            BadCatalog(
                label: "bundle listing a product twice", json: c([p("a", [:]), bundle("b", includes: ["a", "a"])]),
                kind: .duplicateID, field: "products[1].includes[1]", detail: "\"a\" is listed twice"),
            BadCatalog(
                label: "empty bundle", json: c([bundle("b", includes: [])]),
                kind: .malformed, field: "products[0].includes", detail: "is missing or empty"),
            BadCatalog(
                label: "bundle with an area",
                json: c([p("a", [:]), p("b", ["kind": "\"bundle\"", "includes": "[\"a\"]"])]),
                kind: .unknownField, field: "products[1].area", detail: "is not allowed for a bundle"),
            BadCatalog(
                label: "region with includes", json: c([p("a", [:]), p("b", ["includes": "[\"a\"]"])]),
                kind: .unknownField, field: "products[1].includes", detail: "is not allowed for a region"),
            BadCatalog(
                label: "bundle including a subscription",
                json: c([
                    p("a", [:]), p("s", ["kind": "\"subscription\"", "period": "\"P1M\""]),
                    bundle("b", includes: ["s"]),
                ]),
                kind: .invalidValue, field: "products[2].includes[0]", detail: "\"s\" is a subscription"),
            BadCatalog(
                label: "subscription without a period", json: c([p("s", ["kind": "\"subscription\""])]),
                kind: .malformed, field: "products[0].period", detail: "is missing (a subscription needs one)"),
            BadCatalog(
                label: "subscription with an hourly period",
                json: c([p("s", ["kind": "\"subscription\"", "period": "\"PT1H\""])]),
                kind: .invalidValue, field: "products[0].period", detail: "\"PT1H\" is not an ISO 8601 duration"),
            BadCatalog(
                label: "period on a region", json: c([p("a", ["period": "\"P1M\""])]),
                kind: .unknownField, field: "products[0].period", detail: "is only for subscriptions"),
            BadCatalog(
                label: "not JSON", json: Array("{\"version\": 1,".utf8),
                kind: .malformed, field: nil, detail: "is not valid JSON"),
        ]
    }()

    @Test(arguments: badCatalogs)
    func refusesABadCatalog(_ bad: BadCatalog) {
        do throws(CatalogError) {
            let catalog = try Self.decode(bad.json)
            Issue.record("accepted: \(catalog.products.map(\.id))")
        } catch {
            #expect(error.code == bad.kind, "\(error)")
            #expect(error.field == bad.field, "\(error)")
            #expect(error.detail.contains(bad.detail), "\(error)")
            let prefix = "lib/catalog.json: " + (bad.field.map { $0 + " " } ?? "")
            #expect(error.description.hasPrefix(prefix + bad.detail) || bad.field == nil, "\(error)")
            #expect(error.description.hasPrefix("lib/catalog.json: "))
            #expect(!error.description.contains("\n"))
            #expect(error.category == (bad.kind == .unsupportedVersion ? .unsupported : .invalidInput))
        }
    }

    @Test func errorTextFromTheFileStaysOnOneLine() {
        let json = Self.catalogJSON([Self.product("a", ["title": "\"T\"", "price": "\"4\\n99\""])])
        do throws(CatalogError) {
            _ = try Self.decode(json)
            Issue.record("accepted")
        } catch {
            #expect(
                error.description == "lib/catalog.json: products[0].price \"4\\n99\" is not a decimal such as \"4.99\"")
        }
        let key = Array("{\"version\": 1, \"free_max_zoom\": 3, \"products\": [], \"a\\nb\": 1}".utf8)
        do throws(CatalogError) {
            _ = try Self.decode(key)
            Issue.record("accepted")
        } catch {
            #expect(error.code == .unknownField)
            #expect(error.description == "lib/catalog.json: [\"a\\nb\"] is not a field of the catalog schema")
        }
    }

    // MARK: - Prices and periods

    @Test func pricesParseExactly() throws {
        let p499 = try Price(parsing: "4.99", minorUnits: 2)
        #expect(p499.units == 499 && p499.scale == 2 && p499.description == "4.99")
        let zero = try Price(parsing: "0", minorUnits: 2)
        #expect(zero.units == 0 && zero.description == "0")
        let p105 = try Price(parsing: "10.5", minorUnits: 2)
        #expect(p105.units == 105 && p105.scale == 1 && p105.description == "10.5")
        #expect(try Price(parsing: "0.05", minorUnits: 2).description == "0.05")
        // By value, not by text: 10.5 > 4.99 (as strings it would not be); 4.9 == 4.90.
        #expect(p499 < p105)
        #expect(try Price(parsing: "4.9", minorUnits: 2) == (try Price(parsing: "4.90", minorUnits: 2)))
        // Up to the currency's minor units.
        #expect(throws: Price.ParseProblem.tooManyDecimals(allowed: 2)) { try Price(parsing: "4.999", minorUnits: 2) }
        #expect(try Price(parsing: "4.999", minorUnits: Price.minorUnits(ofCurrency: "KWD")).units == 4999)
        #expect(throws: Price.ParseProblem.tooManyDecimals(allowed: 0)) {
            try Price(parsing: "1.5", minorUnits: Price.minorUnits(ofCurrency: "JPY"))
        }
        #expect(try Price(parsing: "480", minorUnits: 0).description == "480")
        #expect(throws: Price.ParseProblem.negative) { try Price(parsing: "-1.00", minorUnits: 2) }
        for bad in ["", ".5", "5.", "1e3", " 4", "4 ", "+4", "4,99", "4.9.9", "٤"] {
            #expect(throws: Price.ParseProblem.malformed, "\(bad)") { try Price(parsing: bad, minorUnits: 2) }
        }
        #expect(throws: Price.ParseProblem.tooLarge) { try Price(parsing: "1234567890123", minorUnits: 2) }
        let largest = try Price(parsing: "999999999999.9999", minorUnits: 4)
        #expect(largest > (try Price(parsing: "999999999999", minorUnits: 0)))
        #expect(try Price(parsing: "000000000000004.99", minorUnits: 2) == p499)
    }

    @Test func subscriptionPeriods() throws {
        #expect(SubscriptionPeriod(iso8601: "P1M")?.months == 1)
        #expect(SubscriptionPeriod(iso8601: "P1Y")?.years == 1)
        #expect(SubscriptionPeriod(iso8601: "P2W")?.days == 14)
        #expect(SubscriptionPeriod(iso8601: "P1Y6M")?.description == "P1Y6M")
        for bad in ["", "P", "1M", "PT1H", "P1DT1H", "P0M", "P1M1Y", "P1.5M", "P1m", "P10000D", "p1M"] {
            #expect(SubscriptionPeriod(iso8601: bad) == nil, "\(bad)")
        }
        // UTC calendar arithmetic, days clamped to the month: 31 Jan + 1 month = 29 Feb 2024.
        let month = try #require(SubscriptionPeriod(iso8601: "P1M"))
        #expect(month.expiry(after: 1_706_659_200) == 1_709_164_800)
        #expect(month.expiry(after: 1_706_659_200 + 3600.5) == 1_709_164_800 + 3600.5)
        let year = try #require(SubscriptionPeriod(iso8601: "P1Y"))
        #expect(year.expiry(after: 1_678_838_400) == 1_710_460_800)
        #expect(year.expiry(after: 1_709_164_800) == 1_740_700_800)
        #expect(SubscriptionPeriod(iso8601: "P2W")?.expiry(after: 1_735_084_800) == 1_736_294_400)
        #expect(year.expiry(after: .nan) == nil)
    }

    // MARK: - Geometry

    static func polygon(_ rings: [[Double]]...) throws -> RegionPolygon {
        try RegionPolygon(rings: rings)
    }

    @Test func polygonTileIntersection() throws {
        let square = try Self.polygon(Self.square(0, 0, 10, 10))
        #expect(square.bounds == GeoBounds(west: 0, south: 0, east: 10, north: 10))
        // Inside, outside, straddling an edge (z8 tiles are 1.40625° wide).
        #expect(square.intersects(Self.tile(5, 5, 8)))
        #expect(square.intersects(Self.tile(5, 5, 16)))
        #expect(!square.intersects(Self.tile(20, 20, 8)))
        #expect(!square.intersects(Self.tile(-5, 5, 8)))
        let straddling = Self.tile(10, 5, 8)
        #expect(WebMercator.bounds(of: straddling).west < 10 && WebMercator.bounds(of: straddling).east > 10)
        #expect(square.intersects(straddling))
        // The world tile contains the whole polygon.
        #expect(square.intersects(TileID(z: 0, x: 0, y: 0)!))

        // A concave U: the notch between the arms is outside, the base and arms inside.
        let u = try Self.polygon([
            [0, 0], [10, 0], [10, 10], [7, 10], [7, 3], [3, 3], [3, 10], [0, 10], [0, 0],
        ])
        #expect(!u.intersects(Self.tile(5, 7, 8)))
        #expect(u.intersects(Self.tile(5, 1.5, 8)))
        #expect(u.intersects(Self.tile(8.5, 8, 8)))
        #expect(u.intersects(Self.tile(5, 7, 4)))  // a big tile over the notch reaches the arms

        // A tiny triangle wholly inside one tile: no tile corner is in it, only its vertices are in the tile.
        let tiny = try Self.polygon([[5.1, 5.1], [5.3, 5.1], [5.2, 5.3], [5.1, 5.1]])
        #expect(tiny.intersects(Self.tile(5.2, 5.2, 6)))
        #expect(!tiny.intersects(Self.tile(7, 5.2, 6)))

        // A hole: tiles inside it are not covered, tiles over its edge are.
        let framed = try Self.polygon(Self.square(0, 0, 10, 10), Self.square(3, 3, 7, 7))
        #expect(!framed.intersects(Self.tile(5, 5, 8)))
        #expect(framed.intersects(Self.tile(1, 1, 8)))
        #expect(framed.intersects(Self.tile(7, 5, 8)))
        #expect(!framed.contains(lon: 5, lat: 5) && framed.contains(lon: 1, lat: 5))
    }

    @Test func touchingATileAlongItsEdgeIsNotOverlapping() throws {
        // A polygon exactly on one tile's outline covers that tile, not its east neighbour.
        let t = TileID(z: 10, x: 528, y: 360)!
        let b = WebMercator.bounds(of: t)
        let outline = try Self.polygon(Self.square(b.west, b.south, b.east, b.north))
        #expect(outline.intersects(t))
        #expect(!outline.intersects(TileID(z: 10, x: 529, y: 360)!))
        #expect(!outline.intersects(TileID(z: 10, x: 527, y: 360)!))
        // A triangle whose vertex is the tile's corner only touches the diagonal neighbour.
        let corner = try Self.polygon([
            [b.east, b.north], [b.east + 1, b.north], [b.east + 1, b.north + 1], [b.east, b.north],
        ])
        #expect(!corner.intersects(t))
    }

    @Test func polygonValidation() {
        func problem(_ rings: [[[Double]]]) -> RegionPolygon.Problem.Code? {
            do { _ = try RegionPolygon(rings: rings); return nil } catch let error as RegionPolygon.Problem {
                return error.code
            } catch {
                Issue.record("\(error)")
                return nil
            }
        }
        #expect(problem([]) == .noRings)
        #expect(problem([[[0, 0], [1, 0], [0, 0]]]) == .tooFewPoints)
        #expect(problem([[[0, 0], [1, 0], [1, 1], [0, 1]]]) == .notClosed)
        #expect(problem([[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]) == .selfIntersecting)
        #expect(problem([[[0, 0], [1, 0], [1, 0], [1, 1], [0, 0]]]) == .repeatedPoint)
        #expect(problem([[[0, 0], [1, 0], [2, 0], [0, 0]]]) == .selfIntersecting)  // folds back onto itself
        #expect(problem([[[0, 0], [.nan, 0], [1, 1], [0, 0]]]) == .outOfRange)
        // A figure eight through one vertex touches itself.
        #expect(problem([[[0, 0], [2, 2], [2, 0], [0, 2], [-1, 1], [0, 0]]]) == .selfIntersecting)
        #expect(problem([Self.square(0, 0, 4, 4), Self.square(1, 1, 2, 2)]) == nil)
        #expect(problem([Self.square(0, 0, 4, 4), Self.square(0, 1, 2, 2)]) == .ringsCross)  // hole touches the outline
        let many = (0..<RegionPolygon.maxPoints).map { i in [Double(i % 100) / 100, 0] }
        #expect(problem([many + [[0, 0]]]) == .tooManyPoints)
        // A big valid ring (a circle of 5,000 points) validates quickly.
        let circle = (0...5000).map { i -> [Double] in
            let a = Double(i % 5000) / 5000 * 2 * .pi
            return [10 + 5 * cos(a), 10 + 5 * sin(a)]
        }
        #expect(problem([circle]) == nil)
    }

    // MARK: - Access policy

    @Test func freeZoomsAreOpenAndPaidZoomsLocked() throws {
        let (_, catalog) = try Self.sampleLibrary()
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements())
        for z in 0...10 {
            #expect(policy.access(Self.tile(Self.chamonix.lon, Self.chamonix.lat, z)) == .allowed)
            #expect(policy.access(Self.tile(2.35, 48.85, z)) == .allowed)  // Paris: free tier is everywhere
        }
        // The DEM's z11–12 (and the colour's deeper zooms) are locked without a purchase.
        for z in 11...15 {
            #expect(!policy.access(Self.tile(Self.chamonix.lon, Self.chamonix.lat, z)).isAllowed)
        }
        // A z11 tile reaches over the crest (both regions would unlock it); at z12 only one.
        let offers = [Self.chamonixID, Self.bundleID, Self.updatesID].map { catalog.product(id: $0)!.offer }
        #expect(policy.access(Self.tile(Self.chamonix.lon, Self.chamonix.lat, 12)) == .denied(unlockedBy: offers))
        // Nothing on sale covers Paris.
        #expect(policy.access(Self.tile(2.35, 48.85, 12)) == .denied(unlockedBy: []))
    }

    @Test func deniedTilesListOffersCheapestFirst() throws {
        let (_, catalog) = try Self.sampleLibrary()
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements())
        guard case .denied(let south) = policy.access(Self.tile(Self.courmayeur.lon, Self.courmayeur.lat, 13)) else {
            Issue.record("allowed"); return
        }
        #expect(south.map(\.id) == [Self.courmayeurID, Self.bundleID, Self.updatesID])
        #expect(south.map(\.price) == ["3.99", "6.99", "9.99"])
        #expect(south.allSatisfy { $0.currency == "EUR" })
        // On the crest both regions unlock the tile: the cheaper one first.
        guard case .denied(let crest) = policy.access(Self.tile(6.865, 45.833, 12)) else {
            Issue.record("allowed"); return
        }
        #expect(crest.map(\.id) == [Self.courmayeurID, Self.chamonixID, Self.bundleID, Self.updatesID])

        // Exact comparison, ties by id: "10.50" is dearer than "9.99"; "2.0" and "2.00" tie.
        let json = Self.catalogJSON([
            Self.product("z", ["price": "\"10.50\""]), Self.product("b", ["price": "\"2.00\""]),
            Self.product("a", ["price": "\"2.0\""]), Self.product("m", ["price": "\"9.99\""]),
        ])
        let tied = RegionAccessPolicy(catalog: try Self.decode(json), entitlements: FixedEntitlements())
        guard case .denied(let order) = tied.access(Self.tile(5, 5, 12)) else { Issue.record("allowed"); return }
        #expect(order.map(\.id) == ["a", "b", "m", "z"])
    }

    @Test func anEntitledRegionOpensItsAreaAndZoomsOnly() throws {
        let (_, catalog) = try Self.sampleLibrary()
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements([Self.chamonixID]))
        for z in 11...13 {
            // At z11 the tile reaches over the crest: only the Chamonix side's pixels are owned.
            let here = policy.access(Self.tile(Self.chamonix.lon, Self.chamonix.lat, z))
            #expect(z == 11 ? here.mask?.isEmpty == false : here == .allowed, "z\(z)")
            // Courmayeur's tile reaches the crest at z11, and so the Chamonix valley: per pixel,
            // that shows only Chamonix's side of it.
            #expect(!policy.access(Self.tile(Self.courmayeur.lon, Self.courmayeur.lat, z)).isAllowed)
        }
        // Outside the region's zooms: denied, and nothing on sale covers z14.
        #expect(policy.access(Self.tile(Self.chamonix.lon, Self.chamonix.lat, 14)) == .denied(unlockedBy: []))
        // Outside every polygon (west of the regions).
        #expect(!policy.access(Self.tile(6.5, 45.9, 12)).isAllowed)
    }

    @Test func bundlesAndSubscriptionsOpenEveryRegionTheyInclude() throws {
        let (_, catalog) = try Self.sampleLibrary()
        for id in [Self.bundleID, Self.updatesID] {
            let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements([id]))
            for z in 11...13 {
                // At z11 the tiles reach past the massif: everything inside it is owned.
                for point in [Self.chamonix, Self.courmayeur] {
                    let here = policy.access(Self.tile(point.lon, point.lat, z))
                    #expect(here == .allowed || (z == 11 && here.mask?.isEmpty == false), "\(id) z\(z)")
                }
            }
            #expect(!policy.access(Self.tile(2.35, 48.85, 12)).isAllowed)
        }
        // A subscription with an area of its own opens that area.
        let json = Self.catalogJSON([Self.product("s", ["kind": "\"subscription\"", "period": "\"P1M\""])])
        let own = RegionAccessPolicy(catalog: try Self.decode(json), entitlements: FixedEntitlements(["s"]))
        #expect(own.access(Self.tile(5, 5, 12)) == .allowed)
        #expect(!own.access(Self.tile(15, 5, 12)).isAllowed)
    }

    @Test func cachedAnswersFollowEntitlementChanges() throws {
        let (_, catalog) = try Self.sampleLibrary()
        let entitlements = FixedEntitlements()
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: entitlements)
        let t = Self.tile(Self.chamonix.lon, Self.chamonix.lat, 12)
        #expect(!policy.access(t).isAllowed)
        #expect(policy.cachedTileCount == 1)
        entitlements.grant(Self.chamonixID)  // a purchase
        #expect(policy.access(t) == .allowed)
        entitlements.revoke(Self.chamonixID)  // a refund
        #expect(!policy.access(t).isAllowed)
        entitlements.set([Self.bundleID])
        #expect(policy.access(t) == .allowed)

        // A source that cannot count its changes: invalidate() is the way.
        final class Silent: EntitlementSource, @unchecked Sendable {
            // Only the test's thread touches `ids`.
            var ids: Set<String> = []
            func entitledProductIDs() -> Set<String> { ids }
            var generation: UInt64 { 0 }
        }
        let silent = Silent()
        let stale = RegionAccessPolicy(catalog: catalog, entitlements: silent)
        #expect(!stale.access(t).isAllowed)
        silent.ids = [Self.chamonixID]
        #expect(!stale.access(t).isAllowed)  // cached
        stale.invalidate()
        #expect(stale.cachedTileCount == 0)
        #expect(stale.access(t) == .allowed)
    }

    @Test func theCacheIsBounded() throws {
        let (_, catalog) = try Self.sampleLibrary()
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements(), cacheCapacity: 8)
        let base = Self.tile(Self.chamonix.lon, Self.chamonix.lat, 14)
        for dx in 0..<20 {
            _ = policy.access(TileID(z: 14, x: base.x + dx, y: base.y)!)
            #expect(policy.cachedTileCount <= 8)
        }
        // Free tiles never enter the cache.
        _ = policy.access(TileID(z: 3, x: 4, y: 2)!)
        #expect(policy.cachedTileCount <= 8)
    }

    @Test func concurrentChecksAgree() throws {
        let (_, catalog) = try Self.sampleLibrary()
        let entitlements = FixedEntitlements([Self.courmayeurID])
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: entitlements, cacheCapacity: 64)
        let base = Self.tile(Self.chamonix.lon, Self.chamonix.lat, 13)
        let tiles = (0..<16).flatMap { dx in
            (0..<16).map { dy in TileID(z: 13, x: base.x + dx - 8, y: base.y + dy - 8)! }
        }
        let expected = tiles.map { RegionAccessPolicy(catalog: catalog, entitlements: entitlements).access($0) }
        let mismatches = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for round in 0..<20 {
                for (i, t) in tiles.enumerated() where (i + thread + round) % 3 == 0 {
                    if policy.access(t) != expected[i] { mismatches.withLock { $0 += 1 } }
                }
            }
        }
        #expect(mismatches.withLock { $0 } == 0)
    }

    /// Sanity bound only (debug build, shared machine): the real figure is a benchmark.
    @Test func cachedChecksAreCheap() throws {
        let (_, catalog) = try Self.sampleLibrary()
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements([Self.chamonixID]))
        let base = Self.tile(Self.chamonix.lon, Self.chamonix.lat, 13)
        let tiles = (0..<64).map { TileID(z: 13, x: base.x + $0 % 8, y: base.y + $0 / 8)! }
        for t in tiles { _ = policy.access(t) }
        let rounds = 2000
        var allowed = 0
        let elapsed = ContinuousClock().measure {
            for _ in 0..<rounds { for t in tiles where policy.access(t).isAllowed { allowed += 1 } }
        }
        let perCheck = elapsed / (rounds * tiles.count)
        #expect(allowed > 0)
        #expect(perCheck < .microseconds(20), "\(perCheck) per cached check")
    }
}
