import TilePackCore
import TilePackStore

/// The region store's answer to the tile store's question, per archive and per pixel.
///
/// A tile of archive A at zoom z is **allowed** when z is in the catalog's free tier or every
/// pixel is owned; a pixel is owned when its centre (web mercator, see
/// ``RegionPolygon/ownPixels(of:in:)``) lies inside the area of an entitled product whose
/// zoom range holds z and whose `archives` name A (a bundle or subscription entitles
/// everything it includes). A product's zoom range reaches up without end when it ends at the
/// highest zoom the catalog sells of A, above the zooms A stores: the tile store draws those
/// zooms from a stored one (overzoom), so its owners see them and everyone else is offered it. **Partial** when some
/// pixels are owned (with their
/// ``TileMask``), **denied** when none is. Partial and denied answers name the available
/// products that cover the tile at that zoom in that archive, cheapest first (exact prices;
/// ties by id) — the same list whatever is owned, so a locked pixel reads the same before and
/// after a purchase elsewhere.
///
/// ```swift
/// var options = TileStoreOptions()
/// options.accessPolicy = RegionAccessPolicy(catalog: catalog, entitlements: ledger)
/// policy.access(tile, archive: "montblanc-color.mbtiles", tileSize: 256)
/// ```
///
/// Answers (masks included) are cached per (tile, archive, tile size); the cache is emptied
/// when the entitlement source's ``EntitlementSource/generation`` changes (or on
/// ``invalidate()``), when it reaches ``cacheCapacity`` answers, and when its masks reach
/// ``maskCacheBytes`` (a viewer's working set is far smaller, so a full clear is rare and
/// cheaper to keep than an LRU list).
///
/// Cost: free-tier tiles are O(1) without a lock; a cached tile is one generation read, one
/// lock and one hash lookup (of the tile and the archive name); an uncached tile is O(V) per
/// product area that could cover it (V vertices), plus a scanline fill of side rows for a
/// tile an owned edge crosses, computed outside the lock.
public final class RegionAccessPolicy: AccessPolicy {
    public let catalog: Catalog
    /// Most answers remembered before the cache is cleared.
    public let cacheCapacity: Int
    /// Most bytes of masks remembered before the cache is cleared (a 256-pixel mask is 8 KiB).
    public static let maskCacheBytes = 32 << 20
    private let source: any EntitlementSource
    /// Available products, cheapest first, ties by id: the order of denial offers.
    private let offerOrder: [(index: Int, offer: ProductOffer)]
    /// Per archive name, the highest zoom any product sells of it: above it the map shows that
    /// zoom scaled up (the tile store's overzoom), so the products selling it own those zooms too.
    private let topSoldZoom: [String: Int]
    /// Per archive name, the highest zoom the archive stores
    /// (``init(catalog:entitlements:storedMaxZooms:cacheCapacity:)``).
    private let storedMaxZoom: [String: Int]

    /// One question: `archive` nil for the archive-blind ``access(_:)``.
    private struct Key: Hashable {
        var tile: TileID
        var archive: String?
        var side: Int
    }

    private struct State {
        /// The source generation `entitledAreas` and `cache` belong to; nil forces a rebuild.
        var generation: UInt64?
        /// Indices of products whose area an entitled product covers.
        var entitledAreas: [Int] = []
        var cache: [Key: TileAccess] = [:]
        var maskBytes = 0
    }
    private let state = Locked(State())

    /// `storedMaxZooms`: the highest zoom each archive (by file name) stores, from the archives
    /// the catalog hashed. Only above it does a product reach past its `maxzoom` (the store
    /// then draws scaled-up tiles, never stored ones nobody sells); an archive missing here
    /// gets no such reach (fail closed). `cacheCapacity` is clamped to at least 1.
    public init(
        catalog: Catalog, entitlements: any EntitlementSource, storedMaxZooms: [String: Int] = [:],
        cacheCapacity: Int = 1 << 16
    ) {
        self.catalog = catalog
        self.storedMaxZoom = storedMaxZooms
        self.source = entitlements
        self.cacheCapacity = max(1, cacheCapacity)
        offerOrder = catalog.products.indices
            .filter { catalog.products[$0].isAvailable }
            .sorted { a, b in
                let pa = catalog.products[a], pb = catalog.products[b]
                return pa.price != pb.price ? pa.price < pb.price : pa.id < pb.id
            }
            .map { ($0, catalog.products[$0].offer) }
        var top: [String: Int] = [:]
        for p in catalog.products where p.area != nil {
            guard let zooms = p.zoomRange else { continue }
            for a in p.archives { top[a] = max(top[a] ?? zooms.upperBound, zooms.upperBound) }
        }
        topSoldZoom = top
    }

    /// The tile in any archive a product names, 256 pixels a side: what
    /// ``access(_:archive:tileSize:)`` answers for an archive every product lists. For
    /// callers that ask about a place rather than an archive; the tile store never asks it.
    public func access(_ tile: TileID) -> TileAccess {
        answer(Key(tile: tile, archive: nil, side: WebMercator.tileSize))
    }

    public func access(_ tile: TileID, archive: String) -> TileAccess {
        answer(Key(tile: tile, archive: archive, side: WebMercator.tileSize))
    }

    /// See the type's rule. A `tileSize` outside 1…``TileMask/maxSide`` cannot be masked: a
    /// tile that would be partial is denied.
    public func access(_ tile: TileID, archive: String, tileSize: Int) -> TileAccess {
        answer(Key(tile: tile, archive: archive, side: tileSize))
    }

    private func answer(_ key: Key) -> TileAccess {
        if key.tile.z <= catalog.freeMaxZoom { return .allowed }
        // Read before the entitlements themselves: a change in between then costs one extra
        // rebuild, never a stale answer filed under the new generation.
        let generation = source.generation
        let lookup: Lookup = state.withLock { s in
            if s.generation != generation {
                s.entitledAreas = entitledAreas()
                s.cache.removeAll(keepingCapacity: true)
                s.maskBytes = 0
                s.generation = generation
            }
            if let hit = s.cache[key] { return .hit(hit) }
            return .miss(entitledAreas: s.entitledAreas)
        }
        let areas: [Int]
        switch lookup {
        case .hit(let answer): return answer
        case .miss(let entitled): areas = entitled
        }
        let answer = decide(key, entitledAreas: areas)
        let bytes = answer.mask?.byteCount ?? 0
        state.withLock { s in
            // An invalidation while we computed: the answer may be stale, do not keep it.
            guard s.generation == generation else { return }
            if s.cache.count >= cacheCapacity || s.maskBytes + bytes > Self.maskCacheBytes {
                s.cache.removeAll(keepingCapacity: true)
                s.maskBytes = 0
            }
            if s.cache.updateValue(answer, forKey: key) == nil { s.maskBytes += bytes }
        }
        return answer
    }

    /// Forgets every cached answer and re-reads the entitlements on the next check (for a
    /// source that cannot bump its generation, or after replacing the archives).
    public func invalidate() {
        state.withLock {
            $0.generation = nil; $0.cache.removeAll(); $0.maskBytes = 0
        }
    }

    /// Answers currently cached (tests, statistics).
    public var cachedTileCount: Int { state.withLock { $0.cache.count } }

    // MARK: - Private

    /// A cached answer, or what the lock hands out to compute one without holding it.
    private enum Lookup { case hit(TileAccess), miss(entitledAreas: [Int]) }

    private func entitledAreas() -> [Int] {
        let ids = catalog.entitlementClosure(of: source.entitledProductIDs())
        // An unavailable product (its archive missing, or not the file the signed catalog
        // hashed) opens nothing, owned or not.
        return catalog.products.indices.filter {
            catalog.products[$0].area != nil && catalog.products[$0].isAvailable
                && ids.contains(catalog.products[$0].id)
        }
    }

    /// Whether product `k`'s area may hold pixels of `key`'s tile in its archive.
    private func sells(_ k: Int, _ key: Key) -> Bool {
        let tile = key.tile
        let p = catalog.products[k]
        guard p.area != nil, let zooms = p.zoomRange, tile.z >= zooms.lowerBound else { return false }
        if tile.z <= zooms.upperBound {
            if let archive = key.archive { return p.archives.contains(archive) }
            return true
        }
        // Beyond the highest zoom the catalog sells of an archive, and beyond what the
        // archive stores, the map is that zoom scaled up: whoever owns it there owns the
        // zooms above (and nobody else does). Stored zooms nobody sells stay unsold.
        let names = key.archive.map { p.archives.contains($0) ? [$0] : [] } ?? p.archives
        return names.contains { a in
            guard topSoldZoom[a] == zooms.upperBound, let stored = storedMaxZoom[a] else { return false }
            return tile.z > stored
        }
    }

    /// The products that would unlock pixel `pixel` (column, row from the top left) of
    /// `tile` as `archive` holds it at `tileSize`, cheapest first: those of
    /// ``access(_:archive:tileSize:)``'s offers whose area (or an included product's) holds
    /// that pixel's centre. What a locked point names: a product that covers the tile but not
    /// the point would not unlock it. Advice only; it decides no access.
    /// - Cost: one scanline fill of `tileSize` rows per product selling the tile; not cached.
    public func offers(for tile: TileID, archive: String, tileSize: Int, pixel: (x: Int, y: Int)) -> [ProductOffer] {
        guard tile.z > catalog.freeMaxZoom, (1...TileMask.maxSide).contains(tileSize),
            (0..<tileSize).contains(pixel.x), (0..<tileSize).contains(pixel.y)
        else { return access(tile, archive: archive, tileSize: tileSize).offers }
        let key = Key(tile: tile, archive: archive, side: tileSize)
        var known: [Int: Bool] = [:]
        func holdsPixel(_ k: Int) -> Bool {
            if let hit = known[k] { return hit }
            var builder = TileMask.Builder(side: tileSize)
            catalog.products[k].area?.ownPixels(of: tile, in: &builder)
            let held = builder.build().isOwned(x: pixel.x, y: pixel.y)
            known[k] = held
            return held
        }
        var reaches = [Bool](repeating: false, count: catalog.products.count)
        for k in catalog.includedFirst {
            reaches[k] = (sells(k, key) && holdsPixel(k)) || catalog.children[k].contains { reaches[$0] }
        }
        return offerOrder.compactMap { reaches[$0.index] ? $0.offer : nil }
    }

    private func decide(_ key: Key, entitledAreas: [Int]) -> TileAccess {
        let tile = key.tile
        func sells(_ k: Int) -> Bool { self.sells(k, key) }
        // Regions, bundles and subscriptions share areas: place each area at most once.
        var known: [Int: RegionPolygon.TileCover] = [:]
        func cover(_ k: Int) -> RegionPolygon.TileCover {
            if let hit = known[k] { return hit }
            let c = catalog.products[k].area?.cover(tile) ?? .outside
            known[k] = c
            return c
        }
        func offers() -> [ProductOffer] {
            // The products that reach an area selling this tile, in one pass over the includes
            // graph (each product after what it includes): O(products + includes).
            var reaches = [Bool](repeating: false, count: catalog.products.count)
            for k in catalog.includedFirst {
                reaches[k] = (sells(k) && cover(k) != .outside) || catalog.children[k].contains { reaches[$0] }
            }
            return offerOrder.compactMap { reaches[$0.index] ? $0.offer : nil }
        }
        let owned = entitledAreas.filter { sells($0) && cover($0) != .outside }
        if owned.isEmpty { return .denied(unlockedBy: offers()) }
        if owned.contains(where: { cover($0) == .inside }) { return .allowed }
        guard key.side >= 1, key.side <= TileMask.maxSide else { return .denied(unlockedBy: offers()) }
        var builder = TileMask.Builder(side: key.side)
        for k in owned { catalog.products[k].area?.ownPixels(of: tile, in: &builder) }
        let mask = builder.build()
        if mask.isFull { return .allowed }
        if mask.isEmpty { return .denied(unlockedBy: offers()) }
        return .partial(mask, unlockedBy: offers())
    }
}
