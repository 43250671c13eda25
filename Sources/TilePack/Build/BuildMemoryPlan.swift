import TilePackCore
import TilePackGeoTIFF

/// Where a build's bytes go, and how a ``MemoryBudget`` (`tilepack build --memory`, 512 MiB
/// by default) is shared between them. The build adapts to the budget — fewer block levels
/// (smaller batches of max-zoom tiles), then fewer workers, a smaller source block cache and
/// SQLite page cache — and never to the image size: nothing below grows with the source.
///
/// The model (docs/BUILDING.md "Building tiles", "Memory"), each term an upper estimate:
///
/// | term | bytes |
/// |---|---|
/// | ``fixedBytes`` | the process itself: code, Swift runtime, SQLite, zlib, thread stacks, malloc slack |
/// | ``sourceCacheBytes`` | decoded source blocks kept for neighbouring tiles (budget / 8, 4–64 MiB) |
/// | ``sqliteCacheBytes`` | SQLite page cache; dirty pages beyond it spill to the WAL (budget / 32, 2–16 MiB) |
/// | workers × ``workerBytes`` | resample workspace, the tile's source window (raw and as floats), its RGBA, the
/// encoder's scratch: ``perWorkerBytes(for:)`` of the source's ``SourceFootprint`` (bands × sample size) |
/// | ``blockBytes`` | one block: its 4^k max-zoom tiles finished (buffer + encoded bytes) while the 4^(k−1) parents are
/// made, and the previous block's upper levels made beside them |
/// | ``pendingBytes`` | the pyramid above the block zoom: up to four finished siblings per zoom waiting for a parent |
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
    /// One worker's scratch for this source (``perWorkerBytes(for:)``).
    public let workerBytes: Int
    /// The source the plan was made for.
    public let source: SourceFootprint

    /// The process before any tile work: measured as the peak RSS of a build of a 256² source
    /// (≈ 30 MiB), rounded up.
    public static let fixedBytes = 40 << 20
    /// One worker's scratch for sources of up to 4 bytes per pixel (RGBA8, one float band):
    /// from ``ResampleWorkspace`` (coordinates 16 B/pixel, samples 4 B/pixel/band), a source
    /// window of up to 2× the tile per side as raw samples and floats, the colourised RGBA and
    /// the encoder: ≈ 6 MiB for RGB, rounded up. The floor of ``perWorkerBytes(for:)``.
    public static let perWorkerBytes = 8 << 20
    /// A worker's scratch that does not grow with bands: coordinates (16 B/pixel), validity,
    /// the RGBA tile and the encoder's buffers.
    static let workerBaseBytes = 2 << 20
    /// Pixels of the resampled grid (a tile) and of the source window read for it (up to 2× the
    /// tile per side): the two per-band buffers of a worker.
    static let gridPixels = WebMercator.tileSize * WebMercator.tileSize
    static let windowPixels = 4 * gridPixels

    /// One worker's scratch for `source`: the resampled grid (4 B per pixel and band), the
    /// window as the file's samples and as floats for every decoded band (a selection adds
    /// its own float copy of the picked bands), and two decoded blocks (the compressed bytes
    /// and the samples) while a block is copied out; never below ``perWorkerBytes``.
    /// Each term is linear in the band count: 65,535 float bands need 147 GiB, which is why
    /// bands are capped (``TIFFLimits/maxBands``) and a source that cannot fit is refused.
    /// - Cost: arithmetic only; saturates instead of overflowing.
    public static func perWorkerBytes(for source: SourceFootprint) -> Int {
        let grid = source.bands.multipliedReportingOverflow(by: gridPixels * 4)
        let window = source.decodedBands.multipliedReportingOverflow(by: windowPixels * (4 + source.sampleBytes))
        let selected =
            source.decodedBands == source.bands
            ? (partialValue: 0, overflow: false) : source.bands.multipliedReportingOverflow(by: windowPixels * 4)
        let blocks = source.blockBytes.multipliedReportingOverflow(by: 2)
        guard !grid.overflow, !window.overflow, !selected.overflow, !blocks.overflow else { return .max }
        var total = workerBaseBytes
        for term in [grid.partialValue, window.partialValue, selected.partialValue, blocks.partialValue] {
            let (sum, overflow) = total.addingReportingOverflow(term)
            guard !overflow else { return .max }
            total = sum
        }
        return max(perWorkerBytes, total)
    }
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
    public static func minimumBudget(
        elevation: Bool, levelsAboveBlock: Int = 0, source: SourceFootprint = .assumed
    ) -> Int {
        let tile = tileBytes(elevation: elevation)
        let (core, overflow) =
            (fixedBytes + blockBytes(tileBytes: tile, levels: 0)
            + pendingBytes(tileBytes: tile, levelsAboveBlock: max(0, levelsAboveBlock))).addingReportingOverflow(
                perWorkerBytes(for: source))
        guard !overflow, core < Int.max / 2 else { return .max }
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
    ///   - source: what the source makes each worker hold (bands, sample size, block size).
    /// - Throws: ``BuildError/sourceExceedsBudget(needed:budget:source:)`` when this source
    ///   needs more than the budget even with one worker, ``BuildError/invalidOption(_:)`` when
    ///   the budget is below ``minimumBudget(elevation:levelsAboveBlock:source:)`` for any source.
    public init(
        budget: Int, workers: Int, blockLevels: Int, elevation: Bool, levelsAboveBlock: Int,
        sourceCacheBytes: Int? = nil, source: SourceFootprint = .assumed
    ) throws {
        try Self.checkFits(budget: budget, elevation: elevation, levelsAboveBlock: levelsAboveBlock, source: source)
        self.budget = budget
        self.source = source
        self.workerBytes = Self.perWorkerBytes(for: source)
        self.tileBytes = Self.tileBytes(elevation: elevation)
        self.sourceCacheBytes = sourceCacheBytes ?? Self.sourceCacheBytes(budget: budget)
        self.sqliteCacheBytes = Self.sqliteCacheBytes(budget: budget)
        let fixed =
            Self.fixedBytes + self.sourceCacheBytes + sqliteCacheBytes
            + Self.pendingBytes(tileBytes: tileBytes, levelsAboveBlock: max(0, levelsAboveBlock))
        // Shrink the block first (it only costs parallel grain), then the workers.
        var chosen: (workers: Int, levels: Int)? = nil
        search: for w in stride(from: max(1, workers), through: 1, by: -1) {
            for k in stride(from: max(0, blockLevels), through: 0, by: -1)
            where fixed + w * workerBytes + Self.blockBytes(tileBytes: tileBytes, levels: k) <= budget {
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

    /// Refuses a budget the smallest build of `source` does not fit: with the source named
    /// (``BuildError/sourceExceedsBudget(needed:budget:source:)``) when its bands are what
    /// does not fit, as a bad `--memory` otherwise. Cheap: call it before reading any pixel.
    /// - Cost: arithmetic only.
    public static func checkFits(budget: Int, elevation: Bool, levelsAboveBlock: Int, source: SourceFootprint) throws {
        let minimum = minimumBudget(elevation: elevation, levelsAboveBlock: levelsAboveBlock, source: source)
        guard budget < minimum else { return }
        if perWorkerBytes(for: source) > perWorkerBytes {
            throw BuildError.sourceExceedsBudget(needed: minimum, budget: budget, source: source.description)
        }
        throw BuildError.invalidOption(
            "memory budget \(ByteSize.format(budget)) is below the \(ByteSize.format(minimum)) the smallest build needs"
        )
    }

    /// Peak bytes of one block of `levels` levels: every max-zoom tile finished (buffer and
    /// encoded bytes) and the next level's 4^(levels−1) being made, plus the previous block's
    /// upper levels ((4^levels − 1)/3 tiles), which are still being made beside it.
    public static func blockBytes(tileBytes: Int, levels: Int) -> Int {
        let n = 1 << (2 * levels)
        return (n + max(1, n / 4) + (n - 1) / 3) * (tileBytes + encodedTileBytes)
    }

    /// The pyramid above the block zoom: up to four finished siblings per zoom (the fourth
    /// may arrive while their parent from the previous four is still being made beside the
    /// next block), plus the four children a parent is made from.
    public static func pendingBytes(tileBytes: Int, levelsAboveBlock: Int) -> Int {
        (4 * levelsAboveBlock + 4) * tileBytes
    }

    public var blockBytes: Int { Self.blockBytes(tileBytes: tileBytes, levels: blockLevels) }
    public var pendingBytes: Int { Self.pendingBytes(tileBytes: tileBytes, levelsAboveBlock: levelsAboveBlock) }

    /// The model's estimate of the build's peak.
    public var estimatedPeakBytes: Int {
        Self.fixedBytes + sourceCacheBytes + sqliteCacheBytes + workers * workerBytes + blockBytes + pendingBytes
    }

    public var description: String {
        """
        budget \(ByteSize.format(budget)): \(workers) workers (\(ByteSize.format(workerBytes)) each for \
        \(source)), blocks of 4^\(blockLevels) tiles 
        """
            + "(\(ByteSize.format(blockBytes))), source cache \(ByteSize.format(sourceCacheBytes)), "
            + "SQLite cache \(ByteSize.format(sqliteCacheBytes)), estimated peak \(ByteSize.format(estimatedPeakBytes))"
    }
}

/// What a source makes each build worker hold, beyond a tile's fixed buffers: the bands it
/// resamples, the bands each read decodes, the bytes of one stored sample and of one decoded
/// block. ``BuildMemoryPlan/perWorkerBytes(for:)`` turns it into bytes.
public struct SourceFootprint: Sendable, Equatable, CustomStringConvertible {
    /// Bands the build resamples (after any band selection).
    public var bands: Int
    /// Bands each read decodes (all the file's, under a selection).
    public var decodedBands: Int
    /// Bytes of one sample as read (1 for 8-bit, 4 for float32, …).
    public var sampleBytes: Int
    /// Bytes of the largest decoded block (0 when unknown or blockless).
    public var blockBytes: Int

    public init(bands: Int, decodedBands: Int, sampleBytes: Int, blockBytes: Int) {
        self.bands = max(1, bands)
        self.decodedBands = max(self.bands, decodedBands)
        self.sampleBytes = max(1, sampleBytes)
        self.blockBytes = max(0, blockBytes)
    }

    /// The footprint of `source` as the build reads it.
    public init(source: any RasterSource) {
        self.init(
            bands: source.bands, decodedBands: source.decodedBands, sampleBytes: source.sampleType.byteWidth,
            blockBytes: source.decodedBlockBytes)
    }

    /// What the plan assumed before it knew the source: 4 bands of 8 bits (RGBA), no blocks.
    public static let assumed = SourceFootprint(bands: 4, decodedBands: 4, sampleBytes: 1, blockBytes: 0)

    /// "65535 bands of 1 byte" (and the decoded bands when a selection reads more).
    public var description: String {
        let decoded = decodedBands == bands ? "" : " (\(decodedBands) decoded)"
        return "\(bands) band\(bands == 1 ? "" : "s")\(decoded) of \(sampleBytes) byte\(sampleBytes == 1 ? "" : "s")"
    }
}
