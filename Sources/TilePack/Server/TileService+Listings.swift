import TilePackCore
import TilePackStore
import TilePackRegions

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
            let reply: QueryReply =
                answers.isEmpty
                ? .uncovered(UncoveredPointAnswer(query: q, searched: "this server's library")) : .answers(answers)
            return .json(encoding: reply)
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
        var listing = StoreListing(
            library: library.kind.rawValue, catalog: false, catalogProblem: library.catalogProblem?.description,
            freeMaxZoom: library.catalog?.freeMaxZoom
                ?? (library.kind == .store ? RegionLibrary.failClosedMaxZoom : nil),
            products: [], packs: packs?.count)
        guard let catalog = library.catalog, library.catalogProblem == nil else { return .json(encoding: listing) }
        do {
            listing.catalog = true
            listing.freeMaxZoom = catalog.freeMaxZoom
            listing.products = try library.listings()
            return .json(encoding: listing)
        } catch {
            return .from(error)
        }
    }

    /// `/regions`: each region's name, title, bounds, zooms, codec and whether it has elevation,
    /// and the catalog products' polygons: what the viewer draws.
    public func regionsListing() -> ServedResponse {
        let regions = regionNames.enumerated().map { i, name in
            let s = store.archives[i]
            return RegionsListing.Region(
                region: name, name: s.name, codec: s.codecName, elevation: s.hasElevationMetres,
                bounds: s.bounds.map { [$0.west, $0.south, $0.east, $0.north] }, minzoom: s.zoomRange?.lowerBound,
                maxzoom: s.zoomRange?.upperBound)
        }
        let areas = (library.catalog?.products ?? []).compactMap { p in
            p.area.map { area in
                RegionsListing.Area(id: p.id, title: p.title, rings: area.rings.map { $0.map { [$0.lon, $0.lat] } })
            }
        }
        let zooms = viewZooms
        return .json(
            encoding: RegionsListing(
                regions: regions, areas: areas, attribution: layers.attribution, viewMinzoom: zooms.lowerBound,
                viewMaxzoom: zooms.upperBound))
    }

    /// The zooms `/view` draws something at, which the viewer's map follows: from
    /// ``Overzoom/maxUnderzoomLevels`` below the coarsest archive's min zoom to
    /// ``Overzoom/maxZoom`` (or a finer archive's max); 0…18 without archives.
    var viewZooms: ClosedRange<Int> {
        let reaches = store.archives.compactMap(\.zoomRange).map(Overzoom.reach(of:))
        guard let lo = reaches.map(\.lowerBound).min(), let hi = reaches.map(\.upperBound).max() else { return 0...18 }
        return lo...max(lo, min(hi, TileID.maxZoom))
    }
}
