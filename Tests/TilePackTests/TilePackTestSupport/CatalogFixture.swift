import Testing
import TilePackCore
import TilePackRegions

/// Catalogs for the tests: the sample catalog in a scratch library, products and catalogs as
/// JSON (the catalog, signed catalog, access mask and server tests).
package enum CatalogFixture {
    package static let chamonixID = "com.tilepack.samples.montblanc.chamonix"
    package static let courmayeurID = "com.tilepack.samples.montblanc.courmayeur"
    package static let bundleID = "com.tilepack.samples.montblanc.bundle"
    package static let updatesID = "com.tilepack.samples.montblanc.updates"

    /// The sample catalog in a library where both archives exist (as empty files: the
    /// catalog only checks that they are there).
    package static func sampleLibrary() throws -> (TemporaryDirectory, Catalog) {
        let dir = TemporaryDirectory()
        let json = readFile(TestData.sampleRegions + "/catalog.json")
        _ = try dir.write("catalog.json", json)
        _ = try dir.write("montblanc-dem.mbtiles", [])
        _ = try dir.write("montblanc-color.mbtiles", [])
        let catalog = try #require(try Catalog.load(libraryDirectory: dir.path))
        return (dir, catalog)
    }

    package static func tile(_ lon: Double, _ lat: Double, _ z: Int) -> TileID {
        WebMercator.tile(lon: lon, lat: lat, zoom: z)!.tile
    }

    // Points of the sample regions: Chamonix (north-west of the crest), Courmayeur (south-east).
    package static let chamonix = (lon: 6.87, lat: 45.92)
    package static let courmayeur = (lon: 6.97, lat: 45.79)

    /// A square ring, lon/lat degrees, closed.
    package static func square(_ w: Double, _ s: Double, _ e: Double, _ n: Double) -> [[Double]] {
        [[w, s], [e, s], [e, n], [w, n], [w, s]]
    }

    /// One product's JSON, a region unless overridden; a nil override removes the field.
    /// Values are raw JSON.
    package static func product(_ id: String, _ overrides: [String: String?] = [:]) -> String {
        var fields: [String: String] = [
            "id": "\"\(id)\"", "title": "\"Region \(id)\"", "price": "\"1.99\"", "currency": "\"EUR\"",
            "kind": "\"region\"", "area": "[[[0,0],[10,0],[10,10],[0,10],[0,0]]]",
            "minzoom": "9", "maxzoom": "15", "archives": "[\"a.mbtiles\"]",
        ]
        for (key, value) in overrides { fields[key] = value }
        return "{" + fields.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \($0.value)" }.joined(separator: ", ")
            + "}"
    }

    package static func bundle(_ id: String, includes: [String], price: String = "\"2.99\"") -> String {
        product(
            id,
            [
                "kind": "\"bundle\"", "price": price, "area": nil, "minzoom": nil, "maxzoom": nil, "archives": nil,
                "includes": "[" + includes.map { "\"\($0)\"" }.joined(separator: ",") + "]",
            ])
    }

    package static func catalogJSON(
        _ products: [String], top: String = "\"version\": 1, \"free_max_zoom\": 10"
    ) -> [UInt8] {
        Array("{\(top), \"products\": [\(products.joined(separator: ", "))]}".utf8)
    }

    package static func decode(_ json: [UInt8], library: String? = nil) throws(CatalogError) -> Catalog {
        try CatalogError.typed({ try Catalog(json: json, path: "lib/catalog.json", libraryDirectory: library) }) {
            CatalogError(path: "lib/catalog.json", field: nil, code: .malformed, detail: "\($0)")
        }
    }

    /// The tiles of zoom `z` over the lon/lat box west `w`, south `s`, east `e`, north `n`.
    package static func tiles(_ w: Double, _ s: Double, _ e: Double, _ n: Double, z: Int) -> [TileID] {
        let nw = WebMercator.tile(lon: w, lat: n, zoom: z)!.tile, se = WebMercator.tile(lon: e, lat: s, zoom: z)!.tile
        return (nw.y...se.y).flatMap { y in (nw.x...se.x).map { TileID(z: z, x: $0, y: y)! } }
    }
}
