import Synchronization
import TilePackCore
import TilePackStore

/// The region store's answer to the tile store's question: a tile is shown when its zoom is
/// in the catalog's free tier, or when it overlaps the area of an entitled product within
/// that product's zoom range (a bundle or subscription entitles everything it includes).
/// Otherwise it is denied, naming the available products that would unlock it, cheapest
/// first (exact prices; ties by id).
///
/// ```swift
/// var options = TileStoreOptions()
/// options.accessPolicy = RegionAccessPolicy(catalog: catalog, entitlements: ledger)
/// ```
///
/// Answers are cached per tile; the cache is emptied when the entitlement source's
/// ``EntitlementSource/generation`` changes (or on ``invalidate()``) and when it reaches
/// ``cacheCapacity`` tiles (a viewer's working set is far smaller, so a full clear is rare
/// and cheaper to keep than an LRU list).
///
/// Cost: free-tier tiles are O(1) without a lock; a cached tile is one generation read, one
/// lock and one hash lookup; an uncached tile is O(V) per product area that could cover it
/// (V vertices), computed outside the lock.
public final class RegionAccessPolicy: AccessPolicy {
    public let catalog: Catalog
    /// Most tiles remembered before the cache is cleared.
    public let cacheCapacity: Int
    private let source: any EntitlementSource
    /// Available products, cheapest first, ties by id: the order of denial offers.
    private let offerOrder: [(index: Int, offer: ProductOffer)]

    private struct State {
        /// The source generation `entitledAreas` and `cache` belong to; nil forces a rebuild.
        var generation: UInt64?
        /// Indices of products whose area an entitled product covers.
        var entitledAreas: [Int] = []
        var cache: [TileID: TileAccess] = [:]
    }
    private let state = Mutex(State())

    /// `cacheCapacity` is clamped to at least 1.
    public init(catalog: Catalog, entitlements: any EntitlementSource, cacheCapacity: Int = 1 << 16) {
        self.catalog = catalog
        self.source = entitlements
        self.cacheCapacity = max(1, cacheCapacity)
        offerOrder = catalog.products.indices
            .filter { catalog.products[$0].isAvailable }
            .sorted { a, b in
                let pa = catalog.products[a], pb = catalog.products[b]
                return pa.price != pb.price ? pa.price < pb.price : pa.id < pb.id
            }
            .map { ($0, catalog.products[$0].offer) }
    }

    public func access(_ tile: TileID) -> TileAccess {
        if tile.z <= catalog.freeMaxZoom { return .allowed }
        // Read before the entitlements themselves: a change in between then costs one extra
        // rebuild, never a stale answer filed under the new generation.
        let generation = source.generation
        let lookup: Lookup = state.withLock { s in
            if s.generation != generation {
                s.entitledAreas = entitledAreas()
                s.cache.removeAll(keepingCapacity: true)
                s.generation = generation
            }
            if let hit = s.cache[tile] { return .hit(hit) }
            return .miss(entitledAreas: s.entitledAreas)
        }
        let areas: [Int]
        switch lookup {
        case .hit(let answer): return answer
        case .miss(let entitled): areas = entitled
        }
        let answer = decide(tile, entitledAreas: areas)
        state.withLock { s in
            // An invalidation while we computed: the answer may be stale, do not keep it.
            guard s.generation == generation else { return }
            if s.cache.count >= cacheCapacity { s.cache.removeAll(keepingCapacity: true) }
            s.cache[tile] = answer
        }
        return answer
    }

    /// Forgets every cached answer and re-reads the entitlements on the next check (for a
    /// source that cannot bump its generation, or after replacing the archives).
    public func invalidate() {
        state.withLock { $0.generation = nil; $0.cache.removeAll() }
    }

    /// Tiles currently cached (tests, statistics).
    public var cachedTileCount: Int { state.withLock { $0.cache.count } }

    // MARK: - Private

    /// A cached answer, or what the lock hands out to compute one without holding it.
    private enum Lookup { case hit(TileAccess), miss(entitledAreas: [Int]) }

    private func entitledAreas() -> [Int] {
        let ids = catalog.entitlementClosure(of: source.entitledProductIDs())
        // An unavailable product (its archive missing, or not the file the signed catalog
        // hashed) opens nothing, owned or not.
        return catalog.products.indices.filter {
            catalog.products[$0].area != nil && catalog.products[$0].isAvailable && ids.contains(catalog.products[$0].id)
        }
    }

    private func decide(_ tile: TileID, entitledAreas: [Int]) -> TileAccess {
        // Regions, bundles and subscriptions share areas: test each area at most once.
        var known: [Int: Bool] = [:]
        func covers(_ k: Int) -> Bool {
            let p = catalog.products[k]
            guard let area = p.area, let zooms = p.zoomRange, zooms.contains(tile.z) else { return false }
            if let hit = known[k] { return hit }
            let hit = area.intersects(tile)
            known[k] = hit
            return hit
        }
        if entitledAreas.contains(where: covers) { return .allowed }
        return .denied(unlockedBy: offerOrder.compactMap { entry in
            catalog.coverage[entry.index].contains(where: covers) ? entry.offer : nil
        })
    }
}
