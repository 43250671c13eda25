import NIOCore
import TilePackCore
import TilePackCodec
import TilePackArchive
import TilePackStore
import TilePackRegions
import TilePackRender
import TilePackEncoders
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The JSON routes: point queries, the storefront's catalog and the regions listing.
///
/// Cost: each answer is built from tables held since start, plus one point query per archive
/// for `/query`.
extension TileService {
    /// `/query?lat=&lon=&zoom=`: a JSON array of `tilepack query --json` objects, one per
    /// region that covers the point (one "uncovered" object when none does).
    public func query(lat: String?, lon: String?, zoom: String?) -> ServedResponse {
        guard let latText = lat, let lonText = lon, let zoomText = zoom else {
            return .error(
                400, kind: "invalidArgument", message: "give lat, lon and zoom, e.g. /query?lat=45.85&lon=6.88&zoom=12")
        }
        guard let la = Self.decimal(latText), let lo = Self.decimal(lonText) else {
            return .error(400, kind: "invalidArgument", message: "lat and lon must be decimal degrees")
        }
        guard let z = Self.integer(zoomText[...]), z <= TileID.maxZoom else {
            return .error(400, kind: "invalidArgument", message: "zoom must be an integer 0…\(TileID.maxZoom)")
        }
        do {
            let q = try TileQuery(lat: la, lon: lo, zoom: z)
            let answers = try PointQuery.answer(q, store: store)
            let objects =
                answers.isEmpty
                ? [try uncoveredPointJSON(q, searched: "this server's library")] : try answers.map { try $0.json }
            return .json("[" + objects.joined(separator: ",") + "]")
        } catch {
            return .from(error)
        }
    }

    /// `/store`: `{"library": "store"|"open", "catalog": bool, "catalog_problem": text|null,
    /// "free_max_zoom": N|null, "products": [store list --json objects], "packs": N}`.
    /// A store library whose catalog failed closed lists no products and says why. `packs`
    /// counts the packs `/packs` offers; absent when serve was started without `--packs`.
    public func storeListing() -> ServedResponse {
        _ = library.entitlements?.generation  // sees a purchase made since (data_version, at most every 5 ms)
        let kind = "\"library\":\(jsonString(library.kind.rawValue))"
        let packCount = packs.map { ",\"packs\":\($0.count)" } ?? ""
        let problem = "\"catalog_problem\":" + (library.catalogProblem.map { jsonString($0.description) } ?? "null")
        guard let catalog = library.catalog, library.catalogProblem == nil else {
            let free =
                library.catalog.map { "\($0.freeMaxZoom)" }
                ?? (library.kind == .store ? "\(RegionLibrary.failClosedMaxZoom)" : "null")
            return .json("{\(kind),\"catalog\":false,\(problem),\"free_max_zoom\":\(free),\"products\":[]\(packCount)}")
        }
        do {
            let products = try library.listings().map { try JSONOutput.string($0) }
            return .json(
                "{\(kind),\"catalog\":true,\(problem),\"free_max_zoom\":\(catalog.freeMaxZoom),\"products\":["
                    + products.joined(separator: ",") + "]\(packCount)}")
        } catch {
            return .from(error)
        }
    }

    /// `/regions`: each region's name, title, bounds, zooms, codec and whether it has elevation,
    /// and the catalog products' polygons: what the viewer draws.
    public func regionsListing() -> ServedResponse {
        var regions: [String] = []
        for (i, name) in regionNames.enumerated() {
            let s = store.archives[i]
            var f = [
                "\"region\":\(jsonString(name))", "\"name\":\(jsonString(s.name))",
                "\"codec\":\(jsonString(s.codecName))",
                "\"elevation\":\(s.valueKind?.isMetres == true)",
            ]
            if let b = s.bounds { f.append("\"bounds\":[\(b.west),\(b.south),\(b.east),\(b.north)]") }
            if let z = s.zoomRange { f += ["\"minzoom\":\(z.lowerBound)", "\"maxzoom\":\(z.upperBound)"] }
            regions.append("{" + f.joined(separator: ",") + "}")
        }
        var areas: [String] = []
        for p in library.catalog?.products ?? [] {
            guard let area = p.area else { continue }
            let rings = area.rings.map { ring in "[" + ring.map { "[\($0.lon),\($0.lat)]" }.joined(separator: ",") + "]"
            }
            areas.append(
                "{\"id\":\(jsonString(p.id)),\"title\":\(jsonString(p.title)),\"rings\":[\(rings.joined(separator: ","))]}"
            )
        }
        return .json(
            "{\"regions\":[\(regions.joined(separator: ","))],\"areas\":[\(areas.joined(separator: ","))],"
                + "\"attribution\":\(jsonString(layers.attribution)),\(viewZooms)}")
    }

    /// `"view_minzoom":N,"view_maxzoom":N`: the zooms `/view` draws something at, which the
    /// viewer's map follows: from ``Overzoom/maxUnderzoomLevels`` below the coarsest archive's
    /// min zoom to ``Overzoom/maxZoom`` (or a finer archive's max); 0…18 without archives.
    var viewZooms: String {
        let reaches = store.archives.compactMap(\.zoomRange).map(Overzoom.reach(of:))
        guard let lo = reaches.map(\.lowerBound).min(), let hi = reaches.map(\.upperBound).max() else {
            return "\"view_minzoom\":0,\"view_maxzoom\":18"
        }
        return "\"view_minzoom\":\(lo),\"view_maxzoom\":\(min(hi, TileID.maxZoom))"
    }
}
