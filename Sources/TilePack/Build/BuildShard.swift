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
/// Deterministic from the plan, N and the source file, so every shard agrees without
/// talking: the shard zoom is the first zoom with at least 8·N planned tiles (the max zoom
/// if none has), and its tiles, in the build's depth-first order, are cut into N runs of
/// about equal estimated work. A tile's work is its planned max-zoom descendants, plus, when
/// a ``ShardWorkEstimate`` is given, the detail of the source under it (a quarter of the
/// total then follows tile counts, three quarters detail): encode time follows content
/// (ASTC `quality` stops early on flat blocks), and equal tile counts left shards 1.6× apart
/// in CPU time. A run is quadtree-local, so a shard's lower zooms are complete inside it.
/// The merge needs only the zoom (plan and N): it reads who built what from the shards.
/// - Cost: O(tiles at the shard zoom), at most ~32·N plus the plan's edges, plus the
///   estimate's (one pass over the source blocks under each tile).
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

    public init(plan: TilePlan, count: Int, work estimate: ShardWorkEstimate? = nil) {
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
        let weights = Self.weights(order, plan: plan, estimate: estimate)
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

    /// Each shard-zoom tile's work in integers (so every machine cuts the same runs): its
    /// planned max-zoom tiles, times a third of the mean detail per max-zoom tile, plus its
    /// detail, scaled so the total stays under 2^50 (the cut multiplies by N ≤ 4096).
    static func weights(_ order: [TileID], plan: TilePlan, estimate: ShardWorkEstimate?) -> [Int] {
        let tiles = order.map { max(1, plan.plannedTiles(under: $0, atZoom: plan.maxZoom)) }
        guard let estimate else { return tiles }
        var detail = order.map { estimate.detail(of: $0) }
        // Keep every sum below 2^48: each detail below 2^48 / (tiles at the shard zoom).
        let limitBits = 48 - (UInt64(max(1, detail.count)).bitWidth - UInt64(max(1, detail.count)).leadingZeroBitCount)
        let widest = detail.max() ?? 0
        let shift = max(0, (widest.bitWidth - widest.leadingZeroBitCount) - limitBits)
        if shift > 0 { detail = detail.map { $0 >> UInt64(shift) } }
        let detailTotal = detail.reduce(0, +), tileTotal = tiles.reduce(0, +)
        guard detailTotal > 0 else { return tiles }
        let perTile = max(1, detailTotal / UInt64(3 * tileTotal))
        return zip(tiles, detail).map { Int($0.1) + $0.0 * Int(perTile) }
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

/// How much encode work the source puts under a tile, from where its compressed bytes lie
/// (``RasterSource/storedBytes``): the tile's footprint on the source (its corners and edge
/// middles projected, boxed) summed over the source blocks it covers, each pixel counting the
/// square of its block's stored bytes per pixel. Squared because encode time grows faster
/// than detail: on a 3072-row colour sample cut into 16 shards, this predicted each shard's
/// CPU time (ASTC 6×6 `quality`) with correlation 0.97, bytes alone 0.96, tile counts 0.30.
/// Integers throughout (saturating), so every shard of a cluster computes the same split.
public struct ShardWorkEstimate: Sendable {
    let map: StoredByteMap
    let georeference: any SourceGeoreference
    let width: Int, height: Int
    /// Per block: (stored bytes per pixel in 1/64ths, at most 16383)².
    let blockDetail: [UInt64]

    /// Nil when the source has no byte map (not a single TIFF) or no pixels.
    public init?(source: any RasterSource, georeference: any SourceGeoreference) {
        guard let map = source.storedBytes, source.width > 0, source.height > 0 else { return nil }
        let (area, overflow) = map.blockWidth.multipliedReportingOverflow(by: map.blockHeight)
        guard !overflow else { return nil }
        self.map = map
        self.georeference = georeference
        self.width = source.width
        self.height = source.height
        blockDetail = map.bytes.map { bytes in
            // The counts are the file's claims: bound them before scaling.
            let perPixel = min(min(bytes, 1 << 40) * 64 / UInt64(area), 16383)
            return perPixel * perPixel
        }
    }

    /// The detail under `tile`: Σ over covered source pixels of their block's weight.
    /// - Cost: 9 projections plus one step per source block the footprint touches.
    public func detail(of tile: TileID) -> UInt64 {
        let b = WebMercator.bounds(of: tile)
        var c0 = Double.infinity, c1 = -Double.infinity, r0 = Double.infinity, r1 = -Double.infinity
        for lat in [b.north, (b.north + b.south) / 2, b.south] {
            for lon in [b.west, (b.west + b.east) / 2, b.east] {
                guard let p = georeference.sourcePixel(lon: lon, lat: lat), p.col.isFinite, p.row.isFinite else {
                    continue
                }
                c0 = min(c0, p.col); c1 = max(c1, p.col); r0 = min(r0, p.row); r1 = max(r1, p.row)
            }
        }
        guard c0 <= c1, r0 <= r1 else { return 0 }
        func pixel(_ v: Double, _ limit: Int) -> Int { Int(min(max(v, 0), Double(limit))) }
        let x0 = pixel(c0.rounded(.down), width), x1 = pixel(c1.rounded(.up), width)
        let y0 = pixel(r0.rounded(.down), height), y1 = pixel(r1.rounded(.up), height)
        guard x0 < x1, y0 < y1 else { return 0 }
        var total: UInt64 = 0
        for by in (y0 / map.blockHeight)...min(map.blocksDown - 1, (y1 - 1) / map.blockHeight) {
            let rows = min(y1, (by + 1) * map.blockHeight) - max(y0, by * map.blockHeight)
            for bx in (x0 / map.blockWidth)...min(map.blocksAcross - 1, (x1 - 1) / map.blockWidth) {
                let cols = min(x1, (bx + 1) * map.blockWidth) - max(x0, bx * map.blockWidth)
                let (term, o1) = blockDetail[by * map.blocksAcross + bx].multipliedReportingOverflow(
                    by: UInt64(rows * cols))
                let (sum, o2) = total.addingReportingOverflow(term)
                total = o1 || o2 ? .max : sum
            }
        }
        return total
    }
}
