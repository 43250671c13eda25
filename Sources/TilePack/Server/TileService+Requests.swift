import TilePackCore
import TilePackStore

/// What every route shares: checking values from the URL (region names looked up, numbers
/// parsed from at most ten ASCII digits), ETag matching, and the error responses.
///
/// Cost: O(length of the value) per check.
extension TileService {
    enum Located { case success((Int, TileID)), failure(ServedResponse) }

    /// The archive of `region` and the tile z/x/y, or the 404/400 to answer.
    func locate(region: String, z: String, x: String, y: Substring) -> Located {
        guard let a = regionIndex[region] else { return .failure(unknownRegion(region)) }
        guard let zoom = Self.integer(z[...]), zoom <= TileID.maxZoom else {
            return .failure(
                .error(
                    400, kind: "invalidArgument", message: "zoom \(Self.shown(z)) is not an integer 0…\(TileID.maxZoom)"
                ))
        }
        guard let col = Self.integer(x[...]), let row = Self.integer(y), let id = TileID(z: zoom, x: col, y: row) else {
            return .failure(
                .error(
                    400, kind: "invalidArgument",
                    message:
                        """
                        tile \(zoom)/\(Self.shown(x))/\(Self.shown(String(y))) is not a tile: x and y are \
                        integers 0…2^zoom − 1
                        """
                ))
        }
        return .success((a, id))
    }

    /// A non-negative integer of at most ten ASCII digits, else nil.
    static func integer(_ s: Substring) -> Int? {
        guard !s.isEmpty, s.utf8.count <= 10, s.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(s)
    }

    /// A finite decimal number of at most 32 characters (digits, sign, point, exponent), else nil.
    static func decimal(_ s: String) -> Double? {
        guard !s.isEmpty, s.utf8.count <= 32,
            s.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 43 || $0 == 46 || $0 == 101 || $0 == 69 }),
            let v = Double(s), v.isFinite
        else { return nil }
        return v
    }

    /// A request value as it may appear in a message: at most 64 characters.
    static func shown(_ s: String) -> String { s.count > 64 ? String(s.prefix(64)) + "…" : s }

    /// Whether an `If-None-Match` value names `etag` (or is `*`).
    static func matches(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch, ifNoneMatch.utf8.count <= 8192 else { return false }
        for part in ifNoneMatch.split(separator: ",") {
            var tag = part.trimmingWhitespace()
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag == "*" || tag == etag[...] { return true }
        }
        return false
    }

    // MARK: - Responses

    func tileHeaders(_ etag: String) -> [(String, String)] {
        [("ETag", etag), ("Cache-Control", Self.tileCacheControl)]
    }

    func notModified(
        _ etag: String, cache: String = TileService.tileCacheControl, extra: [(String, String)] = []
    ) -> ServedResponse {
        ServedResponse(
            status: 304, contentType: "", headers: [("ETag", etag), ("Cache-Control", cache)] + extra, body: [])
    }

    func unknownRegion(_ region: String) -> ServedResponse {
        .error(
            404, kind: "notFound",
            message: "no region \(Self.shown(region)) in this library (regions: \(regionNames.joined(separator: ", ")))"
        )
    }

    func notFound(_ region: String, _ id: TileID) -> ServedResponse {
        .error(404, kind: "notFound", message: "region \(region) has no tile \(id)")
    }

    /// 403 with the products that unlock a locked tile (kind `locked`), or of a partly owned
    /// tile's payload (kind `partialTile`); other store errors by category.
    func tileError(_ error: TileStoreError, region: String, id: TileID) -> ServedResponse {
        let buy =
            error.offers.first.map { "buy \($0.title) (\($0.price) \($0.currency))" } ?? "no product on sale unlocks it"
        switch error.code {
        case .locked:
            return .locked(
                kind: "locked", message: "tile \(id) of \(region) is locked: " + buy, region: region, tile: id,
                unlock: error.offers)
        case .partialTile:
            return .locked(
                kind: "partialTile",
                message: "tile \(id) of \(region) is partly locked: its payload cannot be served masked; "
                    + "ask /tiles/\(region)/\(id).png for the owned pixels, or " + buy,
                region: region, tile: id, unlock: error.offers)
        default:
            return .from(error)
        }
    }

}
