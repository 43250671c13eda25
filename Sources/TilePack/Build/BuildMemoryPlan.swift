import TilePackCore
import TilePackGeoTIFF

/// Where a build's bytes go, and how a ``MemoryBudget`` (`tilepack build --memory`, 512 MiB
/// by default) is shared between them. The build adapts to the budget — fewer block levels
/// (smaller batches of max-zoom tiles), then fewer workers, a smaller source block cache and
/// SQLite page cache — and never to the image size: nothing below grows with the source.
///
/// The model (README "Building tiles", "Memory"), each term an upper estimate:
///
/// | term | bytes |
/// |---|---|
/// | ``fixedBytes`` | the process itself: code, Swift runtime, SQLite, zlib, thread stacks, malloc slack |
/// | ``sourceCacheBytes`` | decoded source blocks kept for neighbouring tiles (budget / 8, 4–64 MiB) |
/// | ``sqliteCacheBytes`` | SQLite page cache; dirty pages beyond it spill to the WAL (budget / 32, 2–16 MiB) |
/// | workers × ``perWorkerBytes`` | resample workspace, the tile's source window (raw and as floats), its RGBA, the encoder's scratch |
/// | ``blockBytes`` | one block: its 4^k max-zoom tiles finished (buffer + encoded bytes) while the 4^(k−1) parents are made |
/// | ``pendingBytes`` | the pyramid above the block zoom: three finished siblings per zoom waiting for the fourth |
///
/// A tile buffer is 256·256·4 bytes of RGBA, plus 256·256·4 of metres for elevation sources;
/// an encoded tile is bounded by the same 256 KiB (PNG of noise; PVRTC/ASTC are 8–32 KiB).
///
/// Cost: arithmetic only.
public struct BuildMemoryPlan: Sendable, Equatable, CustomStringConvertible {
    /// The ceiling the plan keeps under.
    public let budget: Int
    /// Worker threads the build may use (at most the requested number).
    public let workers: Int
    /// Levels below the block zoom: a block holds 4^blockLevels max-zoom tiles.
    public let blockLevels: Int
    public let sourceCacheBytes: Int
    public let sqliteCacheBytes: Int
    /// Bytes of one kept tile (RGBA, plus metres for elevation).
    public let tileBytes: Int

    /// The process before any tile work: measured as the peak RSS of a build of a 256² source
    /// (≈ 30 MiB), rounded up.
    public static let fixedBytes = 40 << 20
    /// One worker's scratch, from ``ResampleWorkspace`` (coordinates 16 B/pixel, samples
    /// 4 B/pixel/band), a source window of up to 2× the tile per side as raw samples and floats,
    /// the colourised RGBA and the encoder: ≈ 6 MiB for RGB, rounded up.
    public static let perWorkerBytes = 8 << 20
    /// Bound on one encoded tile.
    public static let encodedTileBytes = WebMercator.tileSize * WebMercator.tileSize * 4
    /// The smallest source block cache worth having: a tile's window touches up to 3×3 blocks
    /// of 256² RGB (≈ 1.7 MiB); twice that keeps the row above for the next tile.
    public static let minimumSourceCacheBytes = 4 << 20
    /// What a source cache larger than this buys is not measurable (tiles are made block by block).
    public static let maximumSourceCacheBytes = 64 << 20
    public static let minimumSQLiteCacheBytes = 2 << 20
    public static let maximumSQLiteCacheBytes = 16 << 20
    /// The default `--memory`.
    public static let defaultBudget = 512 << 20

    /// The source block cache a budget allows (budget / 8, 4–64 MiB); needed before the source
    /// is opened, so it depends on the budget alone.
    public static func sourceCacheBytes(budget: Int) -> Int {
        min(maximumSourceCacheBytes, max(minimumSourceCacheBytes, budget / 8))
    }

    /// The SQLite page cache a budget allows (budget / 32, 2–16 MiB).
    public static func sqliteCacheBytes(budget: Int) -> Int {
        min(maximumSQLiteCacheBytes, max(minimumSQLiteCacheBytes, budget / 32))
    }

    /// The smallest budget a build with `levelsAboveBlock` zooms above its blocks fits: one
    /// worker, one tile per block, the caches the budget itself allows (they scale with it).
    public static func minimumBudget(elevation: Bool, levelsAboveBlock: Int = 0) -> Int {
        let tile = tileBytes(elevation: elevation)
        let core = fixedBytes + perWorkerBytes + blockBytes(tileBytes: tile, levels: 0)
            + pendingBytes(tileBytes: tile, levelsAboveBlock: max(0, levelsAboveBlock))
        // The caches grow with the budget (by 1/8 + 1/32 of it at most), so iterate to the
        // fixed point: a few steps.
        var budget = core + minimumSourceCacheBytes + minimumSQLiteCacheBytes
        while core + sourceCacheBytes(budget: budget) + sqliteCacheBytes(budget: budget) > budget {
            budget = core + sourceCacheBytes(budget: budget) + sqliteCacheBytes(budget: budget)
        }
        return budget
    }

    static func tileBytes(elevation: Bool) -> Int {
        WebMercator.tileSize * WebMercator.tileSize * (elevation ? 8 : 4)
    }

    /// Plans a build.
    /// - Parameters:
    ///   - budget: the ceiling in bytes.
    ///   - workers: the requested worker threads.
    ///   - blockLevels: the requested (largest) block levels.
    ///   - elevation: whether tiles keep metres beside RGBA.
    ///   - levelsAboveBlock: zooms from the min zoom to the block zoom (each holds up to three
    ///     finished siblings); use the plan's zoom span when unknown.
    ///   - sourceCacheBytes: the cache the source was opened with (nil: ``sourceCacheBytes(budget:)``).
    /// - Throws: ``BuildError/invalidOption(_:)`` when the budget is below ``minimumBudget(elevation:levelsAboveBlock:)``.
    public init(budget: Int, workers: Int, blockLevels: Int, elevation: Bool, levelsAboveBlock: Int,
                sourceCacheBytes: Int? = nil) throws {
        let minimum = Self.minimumBudget(elevation: elevation, levelsAboveBlock: levelsAboveBlock)
        guard budget >= minimum else {
            throw BuildError.invalidOption(
                "memory budget \(ByteSize.format(budget)) is below the \(ByteSize.format(minimum)) the smallest build needs")
        }
        self.budget = budget
        self.tileBytes = Self.tileBytes(elevation: elevation)
        self.sourceCacheBytes = sourceCacheBytes ?? Self.sourceCacheBytes(budget: budget)
        self.sqliteCacheBytes = Self.sqliteCacheBytes(budget: budget)
        let fixed = Self.fixedBytes + self.sourceCacheBytes + sqliteCacheBytes
            + Self.pendingBytes(tileBytes: tileBytes, levelsAboveBlock: max(0, levelsAboveBlock))
        // Shrink the block first (it only costs parallel grain), then the workers.
        var chosen: (workers: Int, levels: Int)? = nil
        search: for w in stride(from: max(1, workers), through: 1, by: -1) {
            for k in stride(from: max(0, blockLevels), through: 0, by: -1)
            where fixed + w * Self.perWorkerBytes + Self.blockBytes(tileBytes: tileBytes, levels: k) <= budget {
                chosen = (w, k)
                break search
            }
        }
        // Nothing fits only when the caller's source cache is larger than the budget's share
        // (a mosaic's file pool): then the least memory the build can do.
        self.workers = chosen?.workers ?? 1
        self.blockLevels = chosen?.levels ?? 0
        self.levelsAboveBlock = max(0, levelsAboveBlock)
    }

    let levelsAboveBlock: Int

    /// Peak bytes of one block of `levels` levels: every max-zoom tile finished (buffer and
    /// encoded bytes) and the next level's 4^(levels−1) being made.
    public static func blockBytes(tileBytes: Int, levels: Int) -> Int {
        let n = 1 << (2 * levels)
        return (n + max(1, n / 4)) * (tileBytes + encodedTileBytes)
    }

    /// The pyramid above the block zoom: up to three finished siblings per zoom, plus the four
    /// children a parent is made from.
    public static func pendingBytes(tileBytes: Int, levelsAboveBlock: Int) -> Int {
        (3 * levelsAboveBlock + 4) * tileBytes
    }

    public var blockBytes: Int { Self.blockBytes(tileBytes: tileBytes, levels: blockLevels) }
    public var pendingBytes: Int { Self.pendingBytes(tileBytes: tileBytes, levelsAboveBlock: levelsAboveBlock) }

    /// The model's estimate of the build's peak.
    public var estimatedPeakBytes: Int {
        Self.fixedBytes + sourceCacheBytes + sqliteCacheBytes + workers * Self.perWorkerBytes + blockBytes + pendingBytes
    }

    public var description: String {
        "budget \(ByteSize.format(budget)): \(workers) workers, blocks of 4^\(blockLevels) tiles "
            + "(\(ByteSize.format(blockBytes))), source cache \(ByteSize.format(sourceCacheBytes)), "
            + "SQLite cache \(ByteSize.format(sqliteCacheBytes)), estimated peak \(ByteSize.format(estimatedPeakBytes))"
    }
}
