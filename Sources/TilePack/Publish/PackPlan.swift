import TilePackCore
import TilePackStore
import TilePackRegions

/// What one pack holds, decided from the signed catalog alone: its layers (master archives,
/// in drawing order), its zooms, and the areas that cut its tiles.
///
/// - A **region** pack: the region's archives and zooms, cut by its polygon.
/// - A **bundle** pack: the union of its regions — each region's archives and zooms, cut by the
///   union of the polygons that sell the tile's zoom in the tile's archive, so no tile is
///   half-masked where two members meet.
/// - The **free** pack (`free`): every archive a product names, zooms up to `free_max_zoom`,
///   whole tiles (the free tier has no polygon).
/// - A subscription has no pack of its own: a subscriber downloads the packs of what it
///   includes (the server accepts its transaction for them).
public struct PackPlan: Sendable {
    /// An area that sells some zooms of some archives.
    public struct Area: Sendable {
        public var polygon: RegionPolygon
        public var zooms: ClosedRange<Int>
        public var archives: Set<String>
    }

    public var packID: String
    /// nil for `free`.
    public var productID: String?
    /// Master archive names, in drawing order (the first at the bottom).
    public var layers: [String]
    /// Every zoom any layer may hold.
    public var zooms: ClosedRange<Int>
    /// nil: whole tiles (the free pack). Otherwise the areas; a tile no area covers is left out.
    public var areas: [Area]?
    public var bounds: GeoBounds?

    /// The plans for `catalog`: `free` first, then every region and bundle in catalog order.
    /// - Throws: ``PackError`` (`invalidInput`) naming a product that is unavailable (an
    ///   archive missing or not the one the catalog hashed).
    public static func plans(for catalog: Catalog, catalogPath: String) throws(PackError) -> [PackPlan] {
        var plans: [PackPlan] = []
        var drawingOrder: [String] = []
        for p in catalog.products { for a in p.archives where !drawingOrder.contains(a) { drawingOrder.append(a) } }
        if !drawingOrder.isEmpty {
            plans.append(
                PackPlan(
                    packID: PackManifest.freePackID, productID: nil, layers: drawingOrder,
                    zooms: 0...max(0, catalog.freeMaxZoom), areas: nil, bounds: nil))
        }
        for product in catalog.products where product.kind != .subscription {
            if case .unavailable(let reason) = product.availability {
                throw PackError(
                    .invalidInput, subject: catalogPath,
                    "product \(ErrorText.quoted(product.id)) cannot be packed: \(reason)")
            }
            let members = catalog.areaProducts(of: product.id)
            let areas: [Area] = members.compactMap { m in
                guard let polygon = m.area, let zooms = m.zoomRange else { return nil }
                return Area(polygon: polygon, zooms: zooms, archives: Set(m.archives))
            }
            guard let lo = areas.map(\.zooms.lowerBound).min(), let hi = areas.map(\.zooms.upperBound).max() else {
                continue
            }
            let layers = drawingOrder.filter { name in areas.contains { $0.archives.contains(name) } }
            plans.append(
                PackPlan(
                    packID: product.id, productID: product.id, layers: layers, zooms: lo...hi,
                    areas: areas, bounds: catalog.bounds(of: product.id)))
        }
        return plans
    }

    /// How tile `tile` of layer `archive` goes into the pack.
    public enum Cut: Sendable, Equatable {
        /// Not in the pack.
        case omit
        /// As stored in the master.
        case whole
        /// Only the mask's owned pixels: the rest transparent (elevation: nodata).
        case masked(TileMask)
    }

    /// The cut of `tile` in `archive` for tiles `side` pixels wide.
    /// - Cost: O(V) per area that may cover it; a scanline fill for a tile an edge crosses.
    public func cut(_ tile: TileID, archive: String, side: Int) -> Cut {
        guard zooms.contains(tile.z) else { return .omit }
        guard let areas else { return .whole }
        let selling = areas.filter { $0.zooms.contains(tile.z) && $0.archives.contains(archive) }
        var edges: [RegionPolygon] = []
        for area in selling {
            switch area.polygon.cover(tile) {
            case .inside: return .whole
            case .edge: edges.append(area.polygon)
            case .outside: break
            }
        }
        guard !edges.isEmpty, side >= 1, side <= TileMask.maxSide else { return .omit }
        var builder = TileMask.Builder(side: side)
        for polygon in edges { polygon.ownPixels(of: tile, in: &builder) }
        let mask = builder.build()
        if mask.isEmpty { return .omit }
        return mask.isFull ? .whole : .masked(mask)
    }
}
