import TilePackCore
import TilePackStore

/// The access policy of a library with installed packs: a pack's tiles are whole (its edge
/// tiles were masked when it was cut) and shown when the pack is open to this account; every
/// other archive is answered by `base` (the catalog's per-pixel policy for master archives).
///
/// A pack is open when:
/// - it is `free`, or the tile's zoom is in the catalog's free tier;
/// - an entitled product's closure (a bundle's regions, a subscription's bundles) holds its
///   product;
/// - or a **lapsed** subscription's closure holds it and the pack version's signed
///   `released_at` is before the subscription's signed `expiresDate`: what was bought stays
///   bought, decided offline from signed dates alone.
/// Without a trusted catalog (failing closed) only `free` and the last accepted catalog's free
/// zooms are open.
///
/// Cost: a pack tile is one dictionary lookup of the archive name, one generation read and,
/// after an entitlement change, one pass over the installed packs.
public final class PackAccessPolicy: AccessPolicy {
    /// What decides one pack: its product and the version's release date.
    public struct Gate: Sendable, Equatable {
        public var packID: String
        public var productID: String?
        public var releasedAt: Int64

        public init(packID: String, productID: String?, releasedAt: Int64) {
            self.packID = packID; self.productID = productID; self.releasedAt = releasedAt
        }
    }

    private let base: any AccessPolicy
    private let catalog: Catalog?
    private let source: (any EntitlementSource)?
    /// Archive name (as the tile store names it) → gate.
    private let gates: [String: Gate]
    private let open: Locked<(generation: UInt64?, packs: Set<String>)> = Locked((nil, []))

    /// `layers` maps each pack layer's ``TileArchive/accessName`` (`<pack file>/<archive>`,
    /// which no file can be named) to its gate.
    public init(
        base: any AccessPolicy, catalog: Catalog?, entitlements: (any EntitlementSource)?, layers: [String: Gate]
    ) {
        self.base = base
        self.catalog = catalog
        self.source = entitlements
        self.gates = layers
    }

    public func access(_ tile: TileID) -> TileAccess { base.access(tile) }

    public func access(_ tile: TileID, archive: String) -> TileAccess {
        access(tile, archive: archive, tileSize: WebMercator.tileSize)
    }

    public func access(_ tile: TileID, archive: String, tileSize: Int) -> TileAccess {
        guard let gate = gates[archive] else { return base.access(tile, archive: archive, tileSize: tileSize) }
        if gate.productID == nil { return .allowed }
        if let catalog, tile.z <= catalog.freeMaxZoom { return .allowed }
        if openPacks().contains(gate.packID) { return .allowed }
        return .denied(unlockedBy: base.access(tile).offers)
    }

    /// Whether pack `packID` is open now (for `library list`'s `owned`).
    public func isOpen(packID: String) -> Bool {
        gates.values.contains { $0.packID == packID && $0.productID == nil } || openPacks().contains(packID)
    }

    private func openPacks() -> Set<String> {
        let generation = source?.generation ?? 0
        if let hit = open.withLock({ $0.generation == generation ? $0.packs : nil }) { return hit }
        var packs: Set<String> = []
        if let catalog, let source {
            let owned = catalog.entitlementClosure(of: source.entitledProductIDs())
            let lapsed = source.lapsedSubscriptions()
            for gate in gates.values {
                guard let product = gate.productID else { packs.insert(gate.packID); continue }
                if owned.contains(product) {
                    packs.insert(gate.packID)
                } else if lapsed.contains(where: {
                    $0.value > gate.releasedAt && catalog.entitlementClosure(of: [$0.key]).contains(product)
                }) {
                    packs.insert(gate.packID)
                }
            }
        }
        open.withLock { $0 = (generation, packs) }
        return packs
    }
}
