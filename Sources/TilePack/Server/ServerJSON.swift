import TilePackCore
import TilePackStore
import TilePackRegions

/// The JSON bodies `tilepack serve` answers, each a Codable value encoded the house way
/// (``JSONOutput``: sorted keys, shortest numbers) with `<` escaped, so a body pasted into an
/// HTML `<script>` cannot close it. Field names are the routes' documented keys.
extension ServedResponse {
    /// `value` as a JSON body.
    /// - Cost: one `JSONEncoder` pass over `value`.
    static func json(encoding value: some Encodable, status: Int = 200, cache: String = "no-cache") -> ServedResponse {
        do {
            var text = ""
            for c in try JSONOutput.string(value) { text += c == "<" ? "\\u003c" : String(c) }
            return .json(text, status: status, cache: cache)
        } catch {
            // Only a non-Encodable corner (a value JSONEncoder refuses) lands here: say so.
            return .json(#"{"error":"internal","message":"cannot encode the answer","status":500}"#, status: 500)
        }
    }
}

/// `{"error": KIND, "message": TEXT, "status": N}`, and for a locked tile the region, the tile
/// and the offers that unlock it.
struct ErrorBody: Encodable {
    var error: String
    var message: String
    var status: Int
    var locked: LockedTile?

    struct LockedTile: Encodable {
        var region: String
        var tile: String
        var unlock: [ProductOffer]
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(error, forKey: .error)
        try c.encode(message, forKey: .message)
        try c.encode(status, forKey: .status)
        if let locked {
            try c.encode(locked.region, forKey: .region)
            try c.encode(locked.tile, forKey: .tile)
            try c.encode(locked.unlock, forKey: .unlock)
        }
    }

    enum Key: String, CodingKey { case error, message, status, region, tile, unlock }
}

/// `/tiles/REGION.json`: TileJSON 3.0.0 with tilepack's own keys.
struct TileJSONDocument: Encodable {
    var name: String
    var tiles: [String]
    var attribution: String
    var region: String
    var codec: String
    var payloadTiles: [String]
    var terrainTiles: [String]?
    var minzoom: Int?
    var maxzoom: Int?
    var bounds: [Double]?
    var center: [Double]?

    enum CodingKeys: String, CodingKey {
        case tilejson, name, scheme, tiles, attribution, minzoom, maxzoom, bounds, center
        case region = "tilepack:region", codec = "tilepack:codec", payloadTiles = "tilepack:payload_tiles"
        case terrainTiles = "tilepack:terrain_tiles", terrainEncoding = "tilepack:terrain_encoding"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode("3.0.0", forKey: .tilejson)
        try c.encode(name, forKey: .name)
        try c.encode("xyz", forKey: .scheme)
        try c.encode(tiles, forKey: .tiles)
        try c.encode(attribution, forKey: .attribution)
        try c.encode(region, forKey: .region)
        try c.encode(codec, forKey: .codec)
        try c.encode(payloadTiles, forKey: .payloadTiles)
        if let terrainTiles {
            try c.encode(terrainTiles, forKey: .terrainTiles)
            try c.encode("terrarium", forKey: .terrainEncoding)
        }
        try c.encodeIfPresent(minzoom, forKey: .minzoom)
        try c.encodeIfPresent(maxzoom, forKey: .maxzoom)
        try c.encodeIfPresent(bounds, forKey: .bounds)
        try c.encodeIfPresent(center, forKey: .center)
    }
}

/// `/regions`: what the viewer draws.
struct RegionsListing: Encodable {
    struct Region: Encodable {
        var region: String
        var name: String
        var codec: String
        var elevation: Bool
        var bounds: [Double]?
        var minzoom: Int?
        var maxzoom: Int?
    }

    struct Area: Encodable {
        var id: String
        var title: String
        /// Rings of `[lon, lat]` pairs.
        var rings: [[[Double]]]
    }

    var regions: [Region]
    var areas: [Area]
    var attribution: String
    var viewMinzoom: Int
    var viewMaxzoom: Int

    enum CodingKeys: String, CodingKey {
        case regions, areas, attribution, viewMinzoom = "view_minzoom", viewMaxzoom = "view_maxzoom"
    }
}

/// `/store`: the library's kind, its catalog's state and the products on sale.
struct StoreListing: Encodable {
    var library: String
    var catalog: Bool
    var catalogProblem: String?
    var freeMaxZoom: Int?
    var products: [ProductListing]
    /// Absent when serve was started without `--packs`.
    var packs: Int?

    enum CodingKeys: String, CodingKey {
        case library, catalog, catalogProblem = "catalog_problem", freeMaxZoom = "free_max_zoom", products, packs
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(library, forKey: .library)
        try c.encode(catalog, forKey: .catalog)
        try c.encodeOrNull(catalogProblem, forKey: .catalogProblem)
        try c.encodeOrNull(freeMaxZoom, forKey: .freeMaxZoom)
        try c.encode(products, forKey: .products)
        try c.encodeIfPresent(packs, forKey: .packs)
    }
}

/// `POST /store/buy`'s answer.
struct PurchaseReply: Encodable {
    var productID: String
    var alreadyOwned: Bool
    var transactionID: String?

    enum CodingKeys: String, CodingKey {
        case productID = "product_id", alreadyOwned = "already_owned", transactionID = "transaction_id"
    }
}

/// `/query`: the answers of the archives covering the point, or the one uncovered object.
enum QueryReply: Encodable {
    case answers([PointAnswer])
    case uncovered(UncoveredPointAnswer)

    func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .answers(let answers): try c.encode(answers)
        case .uncovered(let uncovered): try c.encode([uncovered])
        }
    }
}
