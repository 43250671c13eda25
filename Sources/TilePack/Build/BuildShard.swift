import TilePackCore

/// `--shard K/N`: part K (counted from 0, like Kubernetes' `JOB_COMPLETION_INDEX`) of a
/// build split into N parts that run anywhere and are joined by ``ShardMerge``.
public struct BuildShard: Sendable, Equatable, CustomStringConvertible {
    /// Most parts a build splits into.
    public static let maxCount = 4096

    public let index: Int
    public let count: Int

    public init?(index: Int, count: Int) {
        guard (1...Self.maxCount).contains(count), (0..<count).contains(index) else { return nil }
        self.index = index
        self.count = count
    }

    /// Parses `K/N`.
    public init?(argument: String) {
        let parts = argument.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]) else { return nil }
        self.init(index: k, count: n)
    }

    public var description: String { "\(index)/\(count)" }
}

/// How a plan splits into N shards: a *shard zoom* and, for each planned tile there, the
/// shard that builds it and everything below it. A tile above the shard zoom whose
/// shard-zoom tiles all belong to one shard is built by that shard too (``upperOwner``);
/// only the tiles that span shards are left to the merge, which makes them from the pixels
/// the shards kept (a few per boundary between runs, instead of a third of the shard zoom).
///
/// Deterministic from the plan and N alone, so every shard and the merge agree without
/// talking: the shard zoom is the first zoom with at least 8·N planned tiles (the max zoom
/// if none has), and its tiles, in the build's depth-first order, are cut into N runs of
/// about equal max-zoom work (each tile weighted by its planned max-zoom descendants). A
/// run is quadtree-local, so a shard's lower zooms are complete inside it.
/// - Cost: O(tiles at the shard zoom), at most ~32·N plus the plan's edges.
public struct ShardPartition: Sendable {
    public let zoom: Int
    public let count: Int
    /// The shard of every planned tile at ``zoom``.
    public let owner: [TileID: Int]
    /// The tiles at ``zoom`` in build order.
    public let order: [TileID]
    /// Planned tiles above ``zoom`` whose planned shard-zoom descendants all belong to one
    /// shard, with that shard: it builds them. The others span shards: the merge builds them.
    public let upperOwner: [TileID: Int]

    public init(plan: TilePlan, count: Int) {
        precondition(count >= 1)
        var zoom = plan.maxZoom
        for z in plan.minZoom...plan.maxZoom where (plan.range(atZoom: z)?.count ?? 0) >= 8 * count {
            zoom = z
            break
        }
        var order: [TileID] = []
        func visit(_ tile: TileID) {
            guard plan.contains(tile) else { return }
            if tile.z == zoom { order.append(tile); return }
            for child in tile.children { visit(child) }
        }
        for root in plan.ranges[0].tiles { visit(root) }
        let weights = order.map { max(1, plan.plannedTiles(under: $0, atZoom: plan.maxZoom)) }
        let total = weights.reduce(0, +)
        var owner: [TileID: Int] = [:]
        var before = 0
        for (tile, w) in zip(order, weights) {
            // The shard whose equal share of the work holds this tile's middle.
            owner[tile] = min(count - 1, ((2 * before + w) * count) / (2 * total))
            before += w
        }
        // Bottom-up: a tile is one shard's when every planned child is that shard's.
        var upperOwner: [TileID: Int] = [:]
        var level = Set(order.compactMap(\.parent))
        for z in stride(from: zoom - 1, through: plan.minZoom, by: -1) {
            var next = Set<TileID>()
            for tile in level where tile.z == z && plan.contains(tile) {
                let shards = Set(tile.children.filter(plan.contains).map { z + 1 == zoom ? owner[$0] : upperOwner[$0] })
                if shards.count == 1, let only = shards.first, let shard = only { upperOwner[tile] = shard }
                if let parent = tile.parent { next.insert(parent) }
            }
            level = next
        }
        self.zoom = zoom
        self.count = count
        self.owner = owner
        self.order = order
        self.upperOwner = upperOwner
    }

    /// Shard `index`'s tiles at ``zoom``, in build order.
    public func tiles(of index: Int) -> [TileID] { order.filter { owner[$0] == index } }

    /// The shard that builds `tile` (at or above ``zoom``); nil when it spans shards (the
    /// merge builds it) or is not planned.
    public func builder(of tile: TileID) -> Int? {
        tile.z == zoom ? owner[tile] : upperOwner[tile]
    }
}

extension TilePlan {
    /// Planned tiles at zoom `z` (≥ `tile.z`) under `tile`. O(1).
    public func plannedTiles(under tile: TileID, atZoom z: Int) -> Int {
        guard let r = range(atZoom: z), z >= tile.z else { return 0 }
        let s = z - tile.z
        let x0 = max(r.minX, tile.x << s), x1 = min(r.maxX, ((tile.x + 1) << s) - 1)
        let y0 = max(r.minY, tile.y << s), y1 = min(r.maxY, ((tile.y + 1) << s) - 1)
        guard x0 <= x1, y0 <= y1 else { return 0 }
        return (x1 - x0 + 1) * (y1 - y0 + 1)
    }

    /// Planned tiles in `tile`'s subtree, itself included. O(zooms).
    public func plannedSubtree(_ tile: TileID) -> Int {
        guard tile.z <= maxZoom else { return 0 }
        return (tile.z...maxZoom).reduce(0) { $0 + plannedTiles(under: tile, atZoom: $1) }
    }
}
