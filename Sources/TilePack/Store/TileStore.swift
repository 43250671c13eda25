import TilePackCore
import TilePackCodec
import TilePackArchive
import Histogram
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Tiles of one or more region archives, loaded lazily and kept under a hard byte budget:
/// what an app that shows downloaded regions links.
///
/// ```swift
/// let store = try TileStore(archives: [try MBTilesReader(path: "alps.mbtiles")],
///                           budget: try MemoryBudget(parsing: "8MiB"))
/// if let words = try store.tile(TileID(z: 12, x: 2118, y: 1461)!) {
///     words.withUnsafeBytes { upload($0) }     // PVRTC words, ready for the GPU
/// }                                             // lease released here
/// store.handleMemoryPressure(.warning)          // from the app's memory-warning handler
/// ```
///
/// - **Budget.** The bytes the store holds — every cached payload, decoded buffer and
///   elevation grid by its allocation size, idle pooled buffers, and a fixed overhead per
///   entry — never exceed ``budget`` at any instant: room is made (idle buffers dropped,
///   unleased entries evicted by the ``EvictionPolicy``) *before* memory is allocated. When
///   leases and loads in flight alone fill it, the load throws ``TileStoreError`` with
///   `budgetExhausted` instead of overshooting.
/// - **Leases.** ``tile(_:archive:)`` and ``pixels(_:archive:)`` return a ``TileLease`` that
///   pins the bytes until it goes out of scope.
/// - **Single flight.** Concurrent requests for the same missing tile wait for one load.
/// - **Reuse.** Buffers come from a pool by capacity class, zlib states and PVRTC decoders are
///   pooled: a steady-state load of a PVRTC tile allocates nothing.
/// - **Memory pressure.** ``handleMemoryPressure(_:)`` is safe from any thread at any time.
///
/// Threads: `Sendable`; one lock guards the index. Cost of a hit: one lock, one hash lookup,
/// one policy update (O(1)). Cost of a miss: one archive read outside the lock, plus the
/// inflate or decode.
public final class TileStore: Sendable {
    /// Fixed bytes counted per cached entry (index slot, policy links, bookkeeping).
    public static let entryOverhead = 128
    /// Failed loads remembered (key → error), so a damaged or hostile row costs one read and
    /// one refused decode, not one per request: 1,024, oldest forgotten first. Outside the
    /// budget, bounded by this count (an error is a few hundred bytes: ≤ 0.5 MiB in all).
    public static let rememberedFailures = 1024

    /// Most bytes a stored tile of a `tileSize`-pixel archive may hold: twice the raw RGBA
    /// (no codec tilepack reads stores a tile larger than its pixels; zlib and PNG add < 1 %)
    /// plus 64 KiB of headers. 576 KiB for 256-pixel tiles. Larger rows are refused unread.
    public static func maxStoredTileBytes(tileSize: Int) -> Int {
        let side = min(max(tileSize, 1), 4096)
        return 2 * side * side * 4 + 65_536
    }

    /// The archives in search order, as opened.
    public let archives: [TileArchiveSummary]
    /// Their paths, in the same order.
    public let archivePaths: [String]
    public let budget: MemoryBudget
    public let options: TileStoreOptions

    // Internal, not private: TileStore+Overzoom.swift makes tiles from other zooms with them.
    let sources: [Source]
    let lock = ConditionLock()
    /// Guarded by `lock`.
    nonisolated(unsafe) var state: State

    /// - Throws: ``TileStoreError`` (`invalidOptions`) when the budget cannot hold one tile
    ///   of some archive, or an archive's tile size does not suit its codec.
    public init(archives: [any TileArchive], budget: MemoryBudget, options: TileStoreOptions = TileStoreOptions())
        throws(TileStoreError) {
        var sources: [Source] = []
        for archive in archives {
            let summary = archive.summary
            var payload: TilePayloadCodec?
            if let codec = summary.codec {
                do { payload = try TilePayloadCodec(codec: codec, tileSize: summary.tileSize) } catch {
                    throw TileStoreError(.invalidOptions, subject: archive.path, detail: "tile size \(summary.tileSize) does not suit \(codec.rawValue): \(error.description)")
                }
                // The smallest useful budget holds one payload (pixels() needs room for a
                // decoded tile too, and says budgetExhausted when there is none).
                let one = Self.entryOverhead + TileBuffer.capacityClass(for: payload?.fixedPayloadByteCount ?? 4096) + TileBuffer.objectOverhead
                if budget.bytes < one {
                    throw TileStoreError(.invalidOptions, subject: archive.path,
                                         detail: "a budget of \(budget) cannot hold one \(codec.rawValue) tile (\(ByteSize.format(one)))")
                }
            }
            let name = archive.accessName
            sources.append(Source(archive: archive, summary: summary, payload: payload, name: name))
        }
        if case .every(let n)? = options.simulatedWarnings, n < 1 {
            throw TileStoreError(.invalidOptions, subject: "tile store", detail: "simulated warnings every \(n) loads: N must be at least 1")
        }
        self.sources = sources
        self.archives = sources.map(\.summary)
        self.archivePaths = sources.map(\.archive.path)
        self.budget = budget
        self.options = options
        state = State(budget: budget.bytes, options: options)
    }

    // MARK: - Tiles

    /// Tile `id`'s GPU-ready payload (PVRTC words, or the PNG bytes of a png archive) from
    /// the first archive that has it and allows it (or from archive number `archive`), leased
    /// until the returned value is dropped; nil when no archive has the tile.
    ///
    /// Each archive is asked of the access policy first: a denied archive throws `locked`
    /// and a partly owned one `partialTile` (a GPU payload cannot be masked without
    /// re-encoding it; read its ``pixels(_:archive:)``), unless a later archive serves the tile.
    /// - Throws: ``TileStoreError``: locked or partial by the access policy, budget
    ///   exhausted, a damaged archive or tile.
    /// - Cost: a hit is O(1) under one lock plus the policy's (cached) answer; a miss reads
    ///   the archive.
    public func tile(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> TileLease? {
        var refused: TileStoreError?
        for a in candidates(for: id, archive: archive) {
            switch access(id, archive: a) {
            case .allowed:
                if let found = try entry(TileKey(archive: a, layer: .payload, tile: id)) {
                    return TileLease(store: self, slot: found.slot, bytes: found.bytes, zoom: id.z, sourceZoom: found.sourceZoom)
                }
            case .partial(let mask, let offers):
                if refused == nil { refused = partialError(id, archive: a, mask: mask, offers: offers) }
            case .denied(let offers):
                if refused == nil { refused = Self.lockedError(id, offers: offers) }
            }
        }
        if let refused { throw refused }
        return nil
    }

    /// The GPU face of overzoom: tile `id`'s payload, or beyond an archive's max zoom the
    /// nearest stored ancestor's, with the part of it `id` covers (``OverzoomedPayload/crop``)
    /// for the renderer to draw with scaled texture coordinates. Access is decided for the
    /// *requested* `id`, exactly as ``tile(_:archive:)`` decides it (denied: `locked`;
    /// partial: `partialTile`, a payload cannot be masked), never for the ancestor, whose
    /// own answer does not matter. Below an archive's min zoom there is no payload to crop:
    /// read ``pixels(_:archive:)``. At a stored zoom the crop is the whole tile.
    /// - Throws: as ``tile(_:archive:)``.
    /// - Cost: as ``tile(_:archive:)``, plus one lookup per zoom between `id`'s and the
    ///   nearest one the archive stores a tile at.
    public func overzoomedTile(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> OverzoomedPayload? {
        var refused: TileStoreError?
        for a in candidates(for: id, archive: archive, reach: true) {
            let summary = sources[a].summary
            guard let zooms = summary.zoomRange, id.z >= zooms.lowerBound else { continue }
            switch access(id, archive: a) {
            case .allowed:
                for z in stride(from: min(id.z, zooms.upperBound), through: zooms.lowerBound, by: -1) {
                    let ancestor = Overzoom.ancestor(of: id, atZoom: z)
                    guard summary.meets(ancestor),
                          let found = try entry(TileKey(archive: a, layer: .payload, tile: ancestor)) else { continue }
                    return OverzoomedPayload(lease: TileLease(store: self, slot: found.slot, bytes: found.bytes, zoom: id.z, sourceZoom: z),
                                             crop: TileCrop(of: id, in: ancestor))
                }
            case .partial(let mask, let offers):
                if refused == nil { refused = partialError(id, archive: a, mask: mask, offers: offers) }
            case .denied(let offers):
                if refused == nil { refused = Self.lockedError(id, offers: offers) }
            }
        }
        if let refused { throw refused }
        return nil
    }

    /// Tile `id` decoded to RGBA8 (tile size² × 4 bytes, rows top first), leased; nil when no
    /// archive has it. The decoded buffer is cached separately from the payload.
    ///
    /// Beyond an archive's max zoom (up to ``Overzoom/maxZoom``) the tile is made from its
    /// nearest stored ancestor, cropped and scaled up; up to ``Overzoom/maxUnderzoomLevels``
    /// zooms below its min zoom, from its descendants at the min zoom, scaled down (see
    /// ``Overzoom``). ``TileLease/sourceZoom`` says which zoom the pixels came from. Such a
    /// tile is cached and counted in the budget like a decoded one. Access is decided for the
    /// *requested* tile, never the ancestor's: a locked tile is `locked` even where a free
    /// ancestor exists, and a partly owned one is masked at the requested tile's pixels. A
    /// tile made from finer zooms shows each child only as the policy allows that child at its
    /// own zoom (masked when partial, transparent when denied): a free coarse zoom never
    /// shows paid detail downsampled.
    ///
    /// A partly owned tile (``TileAccess/partial(_:unlockedBy:)``) comes masked: every pixel
    /// outside the owned mask is 0, 0, 0, 0 (transparent black). The masked copy is cached
    /// under the mask's fingerprint, beside the unmasked decode, which is never handed out.
    /// - Throws: as ``tile(_:archive:)`` (but never `partialTile`), and `undecodable` for
    ///   codecs tilepack cannot decode.
    public func pixels(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> TileLease? {
        var refused: TileStoreError?
        for a in candidates(for: id, archive: archive, reach: true) {
            if let found = try permittedEntry(id, archive: a, whole: .pixels, masked: .maskedPixels, refused: &refused) {
                return TileLease(store: self, slot: found.slot, bytes: found.bytes, zoom: id.z, sourceZoom: found.sourceZoom)
            }
        }
        if let refused { throw refused }
        return nil
    }

    /// Tile `id`'s elevation grid in metres, nil when no archive has one. The grid shares its
    /// storage with the cache (copy-on-write), so holding it costs nothing extra until the
    /// store evicts its copy.
    ///
    /// A partly owned tile's samples outside the owned mask are NaN (no data). A sample is
    /// owned when the mask pixel holding its centre is; a square grid of another side than
    /// the tile's asks the policy for a mask of its own side, so each sample centre is
    /// decided exactly as a pixel centre would be.
    ///
    /// Outside the archive's zooms the grid is made from another zoom as ``pixels(_:archive:)``
    /// makes pixels (bilinear up, the mean of valid samples down, NaN dropped); the grid keeps
    /// the source grid's size. ``zoomedElevation(_:archive:)`` also says which zoom.
    /// - Throws: as ``pixels(_:archive:)``.
    public func elevation(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> ElevationTile? {
        try zoomedElevation(id, archive: archive)?.grid
    }

    /// ``elevation(_:archive:)`` with the zoom the grid came from.
    /// - Cost: as ``elevation(_:archive:)``; a made grid costs one bilinear pass (up) or up to
    ///   4 + 16 + 64 grid reads (down), once, then it is cached.
    public func zoomedElevation(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> ZoomedElevation? {
        var refused: TileStoreError?
        for a in candidates(for: id, archive: archive, reach: true) where sources[a].summary.hasElevation {
            if let found = try permittedEntry(id, archive: a, whole: .elevation, masked: .maskedElevation, refused: &refused) {
                lock.lock()
                let grid = state.entries[found.slot].elevation
                release(found.slot, locked: true)
                lock.unlock()
                if let grid { return ZoomedElevation(grid: grid, zoom: id.z, sourceZoom: found.sourceZoom) }
            }
        }
        if let refused { throw refused }
        return nil
    }

    /// Whether ``pixels(_:archive:)`` and ``elevation(_:archive:)`` may find tile `id` in
    /// archive number `archive`, stored or made from another zoom (``TileArchiveSummary/reaches(_:)``).
    /// - Cost: O(1), no I/O.
    public func reaches(_ id: TileID, archive: Int) -> Bool {
        sources.indices.contains(archive) && sources[archive].summary.reaches(id)
    }

    /// The leased entry of tile `id` in archive `a`: layer `whole` when the tile is allowed,
    /// `masked` (keyed by the mask's fingerprint) when it is partial; nil when the archive has
    /// none, or when the tile is denied, which records the first refusal in `refused` so that a
    /// later archive may still serve the tile.
    private func permittedEntry(_ id: TileID, archive a: Int, whole: TileLayer, masked: TileLayer,
                                refused: inout TileStoreError?) throws(TileStoreError) -> Found? {
        let answer = access(id, archive: a)
        if case .denied(let offers) = answer, refused == nil { refused = Self.lockedError(id, offers: offers) }
        return try entry(id, archive: a, answer: answer, whole: whole, masked: masked, evict: true)
    }

    /// The leased entry of tile `id` in archive `a` as the access answer `answer` lets it be
    /// seen: the whole layer when allowed, the masked one when partial, nil when denied (or
    /// absent). What a requested tile and every child a made tile is built from go through,
    /// so that no pixel or sample reaches a caller unless the policy allows it at its own zoom.
    func entry(_ id: TileID, archive a: Int, answer: TileAccess, whole: TileLayer, masked: TileLayer,
               evict: Bool) throws(TileStoreError) -> Found? {
        switch answer {
        case .allowed:
            return try entry(plainKey(a, whole, id), evict: evict)
        case .partial(let mask, _):
            var key = plainKey(a, masked, id)
            key.mask = Self.mix(key.mask, mask.fingerprint)
            return try entry(key, evict: evict, mask: mask)
        case .denied:
            return nil
        }
    }

    /// The cache key of tile `id`'s `layer` in archive `a`, before any mask. A tile made from
    /// finer zooms (below the archive's min zoom) shows only what the policy allows of its
    /// descendants, so its key carries a fingerprint of those answers
    /// (``descendantAccess(_:_:)``): a purchase or a refund makes a new key, never a stale
    /// picture of what is no longer owned.
    /// - Cost: O(1) at the archive's zooms and above; below, up to 4 + 16 + 64 policy answers.
    func plainKey(_ a: Int, _ layer: TileLayer, _ id: TileID) -> TileKey {
        TileKey(archive: a, layer: layer, tile: id, mask: descendantAccess(a, id))
    }

    /// 0 for a tile at or above the archive's min zoom; below it, a fingerprint of the access
    /// answers of every descendant (within the archive's bounds) down to the min zoom, in
    /// ``TileID/children`` order; a denied child's own descendants are not asked (it
    /// contributes nothing whatever they say).
    func descendantAccess(_ a: Int, _ id: TileID) -> UInt64 {
        // The stored zooms (every hit of a stored tile) first, before anything is copied.
        guard let zooms = sources[a].summary.zoomRange, id.z < zooms.lowerBound else { return 0 }
        let summary = sources[a].summary
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15
        func visit(_ tile: TileID) {
            for child in tile.children where summary.meets(child) {
                switch access(child, archive: a) {
                case .allowed: h = Self.mix(h, 1)
                case .denied: h = Self.mix(h, 2); continue
                case .partial(let mask, _): h = Self.mix(Self.mix(h, 3), mask.fingerprint)
                }
                if child.z < zooms.lowerBound { visit(child) }
            }
        }
        visit(id)
        return h | 1   // never 0, the stored zooms' key
    }

    /// Two 64-bit values combined (SplitMix64's finaliser over their xor-rotation).
    static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var z = (a ^ (b &+ 0x9E37_79B9_7F4A_7C15 &+ (a << 6) &+ (a >> 2)))
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// The access policy's answer for tile `id` in archive number `archive` (asked with the
    /// archive's file name and tile size): what ``tile(_:archive:)``, ``pixels(_:archive:)``
    /// and ``elevation(_:archive:)`` act on. Denied for an archive number the store does not
    /// have. Renderers use it to draw the locked part of a partial tile.
    /// - Cost: the policy's; O(1) for a cached answer.
    public func access(_ id: TileID, archive: Int) -> TileAccess {
        guard sources.indices.contains(archive) else { return .denied(unlockedBy: []) }
        return access(id, archive: archive, tileSize: sources[archive].summary.tileSize)
    }

    private func access(_ id: TileID, archive a: Int, tileSize: Int) -> TileAccess {
        let answer = options.accessPolicy.access(id, archive: sources[a].name, tileSize: tileSize)
        // A tile no mask can fit (a size outside 1…4096) is locked whole rather than shown.
        if case .partial(_, let offers) = answer, !(1...TileMask.maxSide).contains(tileSize) { return .denied(unlockedBy: offers) }
        return answer
    }

    /// The async face of ``tile(_:archive:)``. The load runs on the calling task; a wait for
    /// another thread's load of the same tile blocks for at most that one load.
    public func tile(_ id: TileID, archive: Int? = nil) async throws(TileStoreError) -> TileLease? {
        try tileSync(id, archive: archive)
    }

    /// The async face of ``pixels(_:archive:)``.
    public func pixels(_ id: TileID, archive: Int? = nil) async throws(TileStoreError) -> TileLease? {
        try pixelsSync(id, archive: archive)
    }

    /// The async face of ``elevation(_:archive:)``.
    public func elevation(_ id: TileID, archive: Int? = nil) async throws(TileStoreError) -> ElevationTile? {
        try elevationSync(id, archive: archive)
    }

    /// The async face of ``zoomedElevation(_:archive:)``.
    public func zoomedElevation(_ id: TileID, archive: Int? = nil) async throws(TileStoreError) -> ZoomedElevation? {
        try zoomedElevationSync(id, archive: archive)
    }

    // Named sync forwarders: inside an `async` overload, a call by the same name resolves to
    // the async overload itself (recursion), so the async faces call these.
    private func tileSync(_ id: TileID, archive: Int?) throws(TileStoreError) -> TileLease? { try tile(id, archive: archive) }
    private func pixelsSync(_ id: TileID, archive: Int?) throws(TileStoreError) -> TileLease? { try pixels(id, archive: archive) }
    private func elevationSync(_ id: TileID, archive: Int?) throws(TileStoreError) -> ElevationTile? {
        try elevation(id, archive: archive)
    }
    private func zoomedElevationSync(_ id: TileID, archive: Int?) throws(TileStoreError) -> ZoomedElevation? {
        try zoomedElevation(id, archive: archive)
    }

    /// Loads `ids` (payloads) in the background, only into free budget: a prefetch never
    /// evicts anything, and stops at the first tile that does not fit (the budget is needed
    /// for what the user looks at). Errors are dropped: the tile is loaded again on demand.
    public func prefetch(_ ids: [TileID], archive: Int? = nil) {
        guard !ids.isEmpty else { return }
        Task.detached(priority: .utility) { [self] in
            for id in ids {
                var fits = true
                // Only payloads the policy allows in full: a partial tile's payload is never served.
                for a in candidates(for: id, archive: archive) where access(id, archive: a).isAllowed {
                    do throws(TileStoreError) {
                        if let found = try entry(TileKey(archive: a, layer: .payload, tile: id), evict: false) {
                            release(found.slot)
                            break
                        }
                    } catch {
                        if error.problem == .budgetExhausted { fits = false }
                        break
                    }
                }
                if !fits { return }
            }
        }
    }

    /// The tiles one step ahead of `id` in the direction of travel (`dx`, `dy` in tiles, each
    /// −1, 0 or 1): the row or column a viewer panning that way will need next, centred on
    /// `id`'s row or column and `width` tiles wide (an even width is rounded up to odd).
    public static func neighbours(ahead id: TileID, dx: Int, dy: Int, width: Int = 3) -> [TileID] {
        var out: [TileID] = []
        let half = max(0, width / 2)
        if dx != 0 {
            let x = id.x + dx.signum()
            for dyy in -half...half { if let t = TileID(z: id.z, x: x, y: id.y + dyy) { out.append(t) } }
        }
        if dy != 0 {
            let y = id.y + dy.signum()
            for dxx in -half...half { if let t = TileID(z: id.z, x: id.x + dxx, y: y), !out.contains(t) { out.append(t) } }
        }
        return out
    }

    // MARK: - Memory pressure and statistics

    /// Gives memory back: a `warning` drops idle buffers and evicts unleased tiles until the
    /// store holds at most ``TileStoreOptions/lowWaterFraction`` of the budget; `critical`
    /// keeps only leased tiles and loads in flight. Returns the bytes freed. Safe from any
    /// thread at any moment, mid-load included (a load in flight keeps its reservation).
    /// - Cost: O(entries evicted), under the lock.
    @discardableResult
    public func handleMemoryPressure(_ level: MemoryPressure) -> Int {
        let freed = dropForPressure(level)
        // Freed tile buffers go back to glibc's per-thread arenas, which keep them as
        // resident pages; the system asked for memory, so hand the free pages to the kernel.
        if freed > 0, let trim = Self.mallocTrim { _ = trim(0) }
        return freed
    }

    private func dropForPressure(_ level: MemoryPressure) -> Int {
        lock.lock()
        defer { lock.unlock() }
        let target = level == .critical ? 0 : Int(Double(budget.bytes) * options.lowWaterFraction)
        var freed = state.pool.dropAll()
        state.resident -= freed
        while state.resident > target, let victim = state.policy.victim(where: { state.isEvictable($0) }) {
            freed += state.evict(victim, recycle: false)
        }
        state.memoryWarnings += 1
        state.bytesFreedByPressure += freed
        state.checkInvariants()
        return freed
    }

    /// Counters since the store was made (or since ``resetStatistics()``).
    public var statistics: TileStoreStatistics {
        lock.withLock { state.statistics(budget: budget.bytes) }
    }

    /// Zeroes the counters and the peak (not the cache).
    public func resetStatistics() {
        lock.withLock { state.resetCounters() }
    }

    /// Recomputes the byte accounting from the entries and the pool and checks it against the
    /// running total and the budget; a description of the first mismatch, or nil. For tests
    /// and the stress command: cheap enough to call between operations, O(entries).
    public func accountingProblem() -> String? {
        lock.withLock { state.accountingProblem() }
    }

    // MARK: - Internals

    /// glibc's `malloc_trim`, looked up at run time (Swift's Glibc module does not import
    /// <malloc.h>); nil on other C libraries, where there is nothing to trim.
    private static let mallocTrim: (@convention(c) (Int) -> Int32)? = {
        #if canImport(Glibc)
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
        #else
        return nil
        #endif
    }()

    struct Source: Sendable {
        let archive: any TileArchive
        let summary: TileArchiveSummary
        let payload: TilePayloadCodec?
        /// The archive's file name, as the access policy and a catalog's `archives` name it.
        let name: String
    }

    private static func lockedError(_ id: TileID, offers: [ProductOffer]) -> TileStoreError {
        TileStoreError(.locked, subject: "tile \(id)",
                       detail: offers.isEmpty ? "locked: no product on sale unlocks it" : "locked: unlocked by \(names(offers))",
                       offers: offers)
    }

    private func partialError(_ id: TileID, archive a: Int, mask: TileMask, offers: [ProductOffer]) -> TileStoreError {
        TileStoreError(.partialTile, subject: "tile \(id) of \(sources[a].name)",
                       detail: "partly locked (\(mask.ownedCount) of \(mask.pixelCount) pixels owned): its GPU payload cannot be masked, "
                           + "read its pixels instead" + (offers.isEmpty ? "" : "; the rest is unlocked by \(Self.names(offers))"),
                       offers: offers)
    }

    private static func names(_ offers: [ProductOffer]) -> String {
        offers.map { "\($0.title) (\($0.price) \($0.currency))" }.joined(separator: ", ")
    }

    /// The archives to ask for `id`, in search order. A lazy sequence rather than an `[Int]`:
    /// building the array was one malloc on every request, hit or miss (found with ordo-one's
    /// `--allocation-stacks` on the "TileStore hit" benchmark).
    /// `reach`: also the archives that make `id` from another zoom (pixels, elevation), not
    /// only those that may store it (the payload).
    private func candidates(for id: TileID, archive: Int?, reach: Bool = false) -> Candidates {
        guard let archive else { return Candidates(sources: sources, id: id, index: 0, end: sources.count, filtered: true, reach: reach) }
        let valid = sources.indices.contains(archive)
        return Candidates(sources: sources, id: id, index: valid ? archive : 0, end: valid ? archive + 1 : 0, filtered: false, reach: reach)
    }

    /// Indices `index..<end` of `sources`, those that may contain `id` (or, with `reach`,
    /// make it from another zoom) when `filtered`.
    struct Candidates: Sequence, IteratorProtocol {
        let sources: [Source]
        let id: TileID
        var index: Int
        let end: Int
        let filtered: Bool
        let reach: Bool

        mutating func next() -> Int? {
            while index < end {
                let a = index
                index += 1
                if !filtered { return a }
                let summary = sources[a].summary
                if reach ? summary.reaches(id) : summary.mayContain(id) { return a }
            }
            return nil
        }
    }

    /// Releases one lease on `slot` (called by ``TileLease``'s deinit).
    func release(_ slot: Int, locked: Bool = false) {
        if !locked { lock.lock() }
        state.entries[slot].leases -= 1
        assert(state.entries[slot].leases >= 0, "lease count went negative")
        if !locked { lock.unlock() }
    }

    /// A ready entry for `key`, leased once for the caller, with its bytes (valid while the
    /// lease is held: a leased entry's buffer never changes or leaves); nil when the archive
    /// has no such tile. Loads it on a miss (once, however many threads ask).
    /// `mask` is the mask a masked layer's key names by fingerprint (nil for other layers).
    func entry(_ key: TileKey, evict: Bool = true, mask: TileMask? = nil) throws(TileStoreError) -> Found? {
        lock.lock()
        // Every load's completion wakes every waiter (one condition for all keys), so a request
        // may wait several times for the same load: count it once, as the statistic promises
        // ("misses that joined another thread's load"), not once per wake-up.
        var waited = false
        while true {
            guard let slot = state.index[key] else { break }
            switch state.entries[slot].status {
            case .ready:
                state.hits += 1
                state.policy.accessed(slot)
                state.entries[slot].leases += 1
                let found = Found(slot: slot, bytes: state.entries[slot].bufferBytes, sourceZoom: state.entries[slot].sourceZoom)
                lock.unlock()
                return found
            case .absent:
                state.hits += 1
                state.policy.accessed(slot)
                lock.unlock()
                return nil
            case .loading:
                if !waited { state.singleFlightWaits += 1 }
                waited = true
                lock.wait()
            }
        }
        // A row that failed before fails again, without being read again.
        if let failure = state.failures.error(for: key) {
            state.hits += 1
            lock.unlock()
            throw failure
        }
        // Miss: claim the key with a loading entry (its overhead reserved first), then load
        // outside the lock.
        state.misses += 1
        let slot: Int
        do {
            try state.makeRoom(for: Self.entryOverhead, evict: evict, subject: "tile store")
            slot = state.insertLoading(key)
        } catch {
            lock.unlock()
            throw error
        }
        lock.unlock()

        let started = ContinuousClock.now
        let outcome: Result<Loaded, TileStoreError>
        do throws(TileStoreError) {
            outcome = .success(try load(key, evict: evict, mask: mask))
        } catch {
            outcome = .failure(error)
        }
        let nanos = (ContinuousClock.now - started).nanoseconds

        lock.lock()
        var warn = false
        var bytes = UnsafeRawBufferPointer(start: nil, count: 0)
        var sourceZoom = key.tile.z
        switch outcome {
        case .success(let loaded):
            warn = state.publish(slot, loaded, nanos: nanos)
            bytes = state.entries[slot].bufferBytes
            sourceZoom = state.entries[slot].sourceZoom
        case .failure(let error):
            state.abandon(slot)
            // Only the row's own fault is remembered: a full budget, a lock or a transient
            // archive error may pass.
            if error.problem == .damagedTile { state.failures.remember(key, error) }
        }
        state.checkInvariants()
        lock.broadcast()
        lock.unlock()
        if warn { handleMemoryPressure(.warning) }
        switch outcome {
        case .success(let loaded):
            if case .absent = loaded { return nil }
            return Found(slot: slot, bytes: bytes, sourceZoom: sourceZoom)
        case .failure(let error):
            throw error
        }
    }

    /// A leased entry: its slot, its bytes (empty for a grid) and the zoom its data came from.
    struct Found {
        let slot: Int
        let bytes: UnsafeRawBufferPointer
        let sourceZoom: Int
    }

    /// A load's result. `sourceZoom`: the zoom the data came from (the tile's own, unless it
    /// was made from another zoom).
    enum Loaded {
        case buffer(TileBuffer, sourceZoom: Int)
        case elevation(ElevationTile, bytes: Int, sourceZoom: Int)
        case absent
    }

    private func load(_ key: TileKey, evict: Bool, mask: TileMask?) throws(TileStoreError) -> Loaded {
        let source = sources[key.archive]
        let path = source.archive.path
        switch key.layer {
        case .payload:
            let payload = source.payload
            // The buffer `body` filled, until it is handed out: an archive may still throw after
            // `body` returned (the protocol allows it), and then the reservation must be given
            // back, or its bytes stay counted as "in flight" for good and the budget shrinks.
            var filled: TileBuffer?
            do {
                // The stored size is checked before the archive loads the row: a 100 MB blob
                // costs a lookup, not 100 MB outside the budget.
                let limit = Self.maxStoredTileBytes(tileSize: source.summary.tileSize)
                let buffer: TileBuffer? = try source.archive.withTile(key.tile, maxBytes: limit) { stored -> TileBuffer in
                    let size = payload?.payloadByteCount(storedCount: stored.count) ?? stored.count
                    let buffer = try acquireBuffer(bytes: size, evict: evict)
                    do {
                        if let payload {
                            try payload.unwrap(stored, into: buffer.mutableBytes(size))
                        } else if let from = stored.baseAddress {
                            buffer.mutableBytes(size).copyMemory(from: UnsafeRawBufferPointer(start: from, count: size))
                        }
                    } catch {
                        returnBuffer(buffer)
                        throw TileStoreError(.damagedTile, subject: path, detail: "tile \(key.tile) is damaged: \(error)")
                    }
                    filled = buffer
                    return buffer
                }
                return buffer.map { .buffer($0, sourceZoom: key.tile.z) } ?? .absent
            } catch {
                if let filled { returnBuffer(filled) }
                if let error = error as? TileStoreError { throw error }
                if let error = error as? ArchiveError, error.problem == .damaged {
                    // The row itself is bad (a refused size, a damaged page): remembered as such.
                    throw TileStoreError(.damagedTile, subject: path, detail: Self.detail(of: error, path: path))
                }
                if let error = error as? any TilePackError {
                    throw TileStoreError(.archive, subject: path, detail: Self.detail(of: error, path: path))
                }
                throw TileStoreError(.archive, subject: path, detail: "\(error)")
            }
        case .pixels:
            guard let payload = source.payload else {
                throw TileStoreError(.undecodable, subject: path,
                                     detail: "tiles use codec '\(source.summary.codecName)', which tilepack cannot decode")
            }
            if let zooms = source.summary.zoomRange, !zooms.contains(key.tile.z) {
                return try zoomedPixels(key, zooms: zooms, payload: payload, evict: evict)
            }
            guard let words = try entry(TileKey(archive: key.archive, layer: .payload, tile: key.tile), evict: evict) else {
                return .absent
            }
            defer { release(words.slot) }
            let buffer = try acquireBuffer(bytes: payload.pixelByteCount, evict: evict)
            do {
                try payload.decode(words.bytes, into: buffer.mutableBytes(payload.pixelByteCount))
            } catch {
                returnBuffer(buffer)
                throw TileStoreError(.damagedTile, subject: path, detail: "tile \(key.tile) is damaged: \(error)")
            }
            return .buffer(buffer, sourceZoom: key.tile.z)
        case .maskedPixels:
            guard let mask else { preconditionFailure("a masked layer is loaded with its mask") }
            guard let payload = source.payload else {
                throw TileStoreError(.undecodable, subject: path,
                                     detail: "tiles use codec '\(source.summary.codecName)', which tilepack cannot decode")
            }
            guard let plain = try entry(plainKey(key.archive, .pixels, key.tile), evict: evict) else {
                return .absent
            }
            defer { release(plain.slot) }
            let buffer = try acquireBuffer(bytes: payload.pixelByteCount, evict: evict)
            let out = buffer.mutableBytes(payload.pixelByteCount)
            out.copyMemory(from: UnsafeRawBufferPointer(rebasing: plain.bytes[0..<payload.pixelByteCount]))
            let side = source.summary.tileSize
            let fitted = mask.scaled(toSide: side)
            for y in 0..<side {
                fitted.forEachRun(row: y, owned: false) { run in
                    let from = (y * side + run.lowerBound) * 4
                    UnsafeMutableRawBufferPointer(rebasing: out[from..<(from + run.count * 4)]).initializeMemory(as: UInt8.self, repeating: 0)
                }
            }
            return .buffer(buffer, sourceZoom: plain.sourceZoom)
        case .elevation, .maskedElevation:
            if key.layer == .elevation, let zooms = source.summary.zoomRange, !zooms.contains(key.tile.z) {
                return try zoomedElevation(key, zooms: zooms, evict: evict)
            }
            var grid: ElevationTile?
            var sourceZoom = key.tile.z
            if key.layer == .maskedElevation {
                guard let mask else { preconditionFailure("a masked layer is loaded with its mask") }
                guard let plain = try entry(plainKey(key.archive, .elevation, key.tile), evict: evict) else {
                    return .absent
                }
                // Leased until the masked copy is made: an evicted grid would be uncounted
                // while this load still reads it.
                defer { release(plain.slot) }
                let unmasked = lock.withLock { state.entries[plain.slot].elevation }
                sourceZoom = plain.sourceZoom
                if let unmasked { grid = maskedGrid(unmasked, key: key, mask: mask) }
            } else {
                return try storedElevation(key, source: source, evict: evict)
            }
            guard let grid else { return .absent }
            // The grid was allocated before the store could make room; count it now, and give
            // it up if it cannot fit (the caller gets budgetExhausted).
            let bytes = grid.values.capacity * MemoryLayout<Float>.stride + TileBuffer.objectOverhead
            lock.lock()
            defer { lock.unlock() }
            try state.makeRoom(for: bytes, evict: evict, subject: path)
            state.resident += bytes
            state.inFlightBytes += bytes
            state.notePeak()
            return .elevation(grid, bytes: bytes, sourceZoom: sourceZoom)
        }
    }

    /// The stored grid of `key.tile`. Its row's declared size is checked against the
    /// archive's tile size (a grid is the tile's size; at most twice it a side is accepted)
    /// and its bytes reserved in the budget *before* the archive decodes it: a forged
    /// 20-byte row declaring 4096 × 4096 is refused or counted, never 64 MiB allocated
    /// behind the budget's back.
    /// - Throws: `damagedTile` for a refused size or a row that does not decode;
    ///   `budgetExhausted` when the grid does not fit.
    private func storedElevation(_ key: TileKey, source: Source, evict: Bool) throws(TileStoreError) -> Loaded {
        let path = source.archive.path, tileSize = source.summary.tileSize
        let limit = min(ElevationTile.maxSide, 2 * min(max(tileSize, 1), ElevationTile.maxSide))
        var reserved = 0
        var refusal: TileStoreError?
        let grid: ElevationTile?
        do {
            grid = try source.archive.elevation(key.tile) { width, height throws(ArchiveError) in
                guard (1...limit).contains(width), (1...limit).contains(height) else {
                    throw ArchiveError(path: path, problem: .badElevation,
                                       detail: "elevation tile \(key.tile) declares a \(width)×\(height) grid; tiles are \(tileSize) pixels, "
                                           + "grids at most \(limit) a side")
                }
                do throws(TileStoreError) {
                    reserved = try reserveGrid(width * height, evict: evict, subject: path)
                } catch {
                    refusal = error
                    throw ArchiveError(path: path, problem: .badElevation, detail: error.detail)
                }
            }
        } catch {
            if reserved > 0 { unreserve(reserved) }
            if let refusal { throw refusal }
            throw TileStoreError(.damagedTile, subject: path, detail: Self.detail(of: error, path: path))
        }
        guard let grid else {
            if reserved > 0 { unreserve(reserved) }
            return .absent
        }
        return .elevation(grid, bytes: try trueUp(reserved, grid, evict: evict, subject: path), sourceZoom: key.tile.z)
    }

    /// A copy of `grid` with the samples outside the owned area NaN. A square grid of another
    /// side than the mask's gets the policy's mask at its own side (sample centres decided
    /// exactly); a non-square one takes the mask pixel holding each sample's centre.
    private func maskedGrid(_ grid: ElevationTile, key: TileKey, mask: TileMask) -> ElevationTile {
        let w = grid.width, h = grid.height
        var fitted: TileMask? = mask
        if w == h, w != mask.side {
            switch access(key.tile, archive: key.archive, tileSize: w) {
            case .allowed: fitted = nil
            case .partial(let own, _): fitted = own.scaled(toSide: w)
            case .denied: fitted = TileMask.Builder(side: w).build()
            }
        }
        guard let fitted else { return grid }
        var values = grid.values
        values.withUnsafeMutableBufferPointer { v in
            if fitted.side == w, w == h {
                for y in 0..<h { fitted.forEachRun(row: y, owned: false) { run in for x in run { v[y * w + x] = .nan } } }
            } else {
                for y in 0..<h {
                    let my = (2 * y + 1) * fitted.side / (2 * h)
                    for x in 0..<w where !fitted.isOwned(x: (2 * x + 1) * fitted.side / (2 * w), y: my) { v[y * w + x] = .nan }
                }
            }
        }
        return ElevationTile(width: w, height: h, values: values)
    }

    /// An archive error's message without the path repeated (the store error names it).
    private static func detail(of error: any TilePackError, path: String) -> String {
        let text = error.description
        return text.hasPrefix(path + ": ") ? String(text.dropFirst(path.count + 2)) : text
    }

    /// A buffer of at least `bytes`, its accounted size reserved in the budget first.
    func acquireBuffer(bytes: Int, evict: Bool) throws(TileStoreError) -> TileBuffer {
        let capacity = TileBuffer.capacityClass(for: bytes)
        lock.lock()
        if let reused = state.pool.take(capacity: capacity) {
            // Counted while idle; now counted as a load in flight.
            state.inFlightBytes += reused.accountedBytes
            lock.unlock()
            return reused
        }
        do {
            if let recycled = try state.makeRoom(for: capacity + TileBuffer.objectOverhead, evict: evict,
                                                 subject: "tile store", wantCapacity: capacity) {
                state.inFlightBytes += recycled.accountedBytes
                lock.unlock()
                return recycled
            }
        } catch {
            lock.unlock()
            throw error
        }
        state.resident += capacity + TileBuffer.objectOverhead
        state.inFlightBytes += capacity + TileBuffer.objectOverhead
        state.bufferAllocations += 1
        state.notePeak()
        lock.unlock()
        // Allocated after the reservation: the budget holds at every instant.
        return TileBuffer(capacity: capacity)
    }

    /// Gives back a buffer acquired for a load that failed.
    func returnBuffer(_ buffer: TileBuffer) {
        lock.withLock {
            state.inFlightBytes -= buffer.accountedBytes
            if !state.pool.give(buffer) { state.resident -= buffer.accountedBytes }
        }
    }
}

/// How urgently the system wants memory back.
public enum MemoryPressure: String, Sendable, Codable {
    /// Drop to the low-water mark.
    case warning
    /// Keep only what is leased.
    case critical
}

/// Options of a ``TileStore``.
public struct TileStoreOptions: Sendable {
    /// Which entries go first when room is needed.
    public var policy: EvictionPolicyKind = .lru
    /// A warning leaves at most this share of the budget resident.
    public var lowWaterFraction = 0.5
    /// Idle buffers kept per capacity class.
    public var pooledBuffersPerClass = 8
    /// Test switch: raise memory warnings on a schedule, so every path that uses the store
    /// meets them (`tilepack stress --memory-warnings`, the store's tests).
    package var simulatedWarnings: SimulatedMemoryWarnings?
    /// Asked before every tile is served.
    public var accessPolicy: any AccessPolicy = OpenAccess()

    public init() {}
}

/// A schedule of simulated memory warnings: a test and `tilepack stress` switch, `package`
/// so that an app never sees it (the app raises real ones through
/// ``TileStore/handleMemoryPressure(_:)``).
package enum SimulatedMemoryWarnings: Sendable, Equatable, CustomStringConvertible {
    /// After every N loads.
    case every(Int)
    /// After a load with probability 1/32, from a seeded generator (reproducible).
    case random(seed: UInt64)

    /// Parses `every:N` or `random:SEED`.
    package init(parsing text: String) throws(TileStoreError) {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        if parts.count == 2, parts[0] == "every", let n = Int(parts[1]), n >= 1 {
            self = .every(n)
        } else if parts.count == 2, parts[0] == "random", let seed = UInt64(parts[1]) {
            self = .random(seed: seed)
        } else {
            throw TileStoreError(.invalidOptions, subject: "memory warnings '\(text)'",
                                 detail: "expected every:N (N ≥ 1) or random:SEED")
        }
    }

    package var description: String {
        switch self {
        case .every(let n): "every:\(n)"
        case .random(let seed): "random:\(seed)"
        }
    }
}

/// A pinned tile: its bytes stay valid and in the cache until the lease is dropped.
/// Non-copyable, so exactly one release happens, in `deinit`.
public struct TileLease: ~Copyable, @unchecked Sendable {
    private let store: TileStore
    private let slot: Int
    private let bytes: UnsafeRawBufferPointer
    /// The zoom of the tile asked for.
    public let zoom: Int
    /// The zoom the bytes came from: ``zoom`` for a stored tile, a coarser zoom for a tile
    /// made from an ancestor (overzoomed), a finer one for a tile made from descendants
    /// (underzoomed). ``TileStore/pixels(_:archive:)`` makes tiles (see ``Overzoom``);
    /// ``TileStore/overzoomedTile(_:archive:)`` leases an ancestor's payload as is.
    public let sourceZoom: Int

    init(store: TileStore, slot: Int, bytes: UnsafeRawBufferPointer, zoom: Int, sourceZoom: Int) {
        self.store = store
        self.slot = slot
        self.bytes = bytes
        self.zoom = zoom
        self.sourceZoom = sourceZoom
    }

    /// Made from a coarser zoom (cropped and scaled up).
    public var isOverzoomed: Bool { sourceZoom < zoom }
    /// Made from a finer zoom (scaled down).
    public var isUnderzoomed: Bool { sourceZoom > zoom }

    deinit { store.release(slot) }

    /// Byte count.
    public var count: Int { bytes.count }

    /// Calls `body` with the bytes (valid only during the call). - Cost: O(1).
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(bytes)
    }

    /// A copy of the bytes. - Cost: one allocation and copy.
    public var array: [UInt8] { Array(bytes) }

    /// Byte `i`. - Cost: O(1), bounds-checked.
    public subscript(i: Int) -> UInt8 {
        precondition(i >= 0 && i < bytes.count, "lease index out of range")
        return bytes[i]
    }
}

/// A stored payload (GPU words or PNG bytes) standing in for a finer tile, and the part of
/// it to draw (``TileStore/overzoomedTile(_:archive:)``). The lease pins the bytes.
public struct OverzoomedPayload: ~Copyable {
    /// The payload of the tile at ``sourceZoom``; its ``TileLease/zoom`` is the requested zoom.
    public let lease: TileLease
    /// The requested tile's square inside the payload's tile.
    public let crop: TileCrop

    public var sourceZoom: Int { lease.sourceZoom }
    /// Drawn from a coarser zoom (crop smaller than the whole tile).
    public var isOverzoomed: Bool { lease.isOverzoomed }
}

/// A square part of a tile, as fractions of its side from its top-left corner (texture
/// coordinates): `x`, `y` of the top-left corner, `size` the side.
public struct TileCrop: Sendable, Equatable {
    public let x: Double
    public let y: Double
    public let size: Double

    /// The whole tile.
    public static let full = TileCrop(x: 0, y: 0, size: 1)

    public init(x: Double, y: Double, size: Double) { self.x = x; self.y = y; self.size = size }

    /// The part of `ancestor` that tile `id` covers.
    /// - Precondition: `ancestor` is `id` or an ancestor of it.
    public init(of id: TileID, in ancestor: TileID) {
        precondition(ancestor.z <= id.z && id.x >> (id.z - ancestor.z) == ancestor.x && id.y >> (id.z - ancestor.z) == ancestor.y,
                     "a crop is of a tile inside its ancestor")
        let k = id.z - ancestor.z, scale = Double(1 << k)
        self.init(x: Double(id.x - (ancestor.x << k)) / scale, y: Double(id.y - (ancestor.y << k)) / scale, size: 1 / scale)
    }

    /// The crop in pixels of a tile `side` pixels wide: origin and side (fractional when the
    /// tile is finer than one source pixel).
    public func pixels(side: Int) -> (x: Double, y: Double, size: Double) {
        (x * Double(side), y * Double(side), size * Double(side))
    }
}

/// What the store has done, for dashboards, the stress command and tests.
public struct TileStoreStatistics: Sendable, Equatable, Codable {
    public var hits = 0
    public var misses = 0
    /// Archive reads that found a tile (misses that found nothing are not loads).
    public var loads = 0
    /// Misses that joined another thread's load of the same tile (single flight).
    public var singleFlightWaits = 0
    public var evictions = 0
    public var residentBytes = 0
    public var peakResidentBytes = 0
    public var budgetBytes = 0
    /// Times `resident > budget` was seen after an operation (must stay 0).
    public var budgetViolations = 0
    public var memoryWarnings = 0
    public var bytesFreedByPressure = 0
    /// Buffers allocated (not reused from the pool).
    public var bufferAllocations = 0
    public var cachedEntries = 0
    public var leasedEntries = 0
    public var loadP50Micros = 0.0
    public var loadP99Micros = 0.0

    public var hitRate: Double { hits + misses == 0 ? 0 : Double(hits) / Double(hits + misses) }

    enum CodingKeys: String, CodingKey {
        case hits, misses, loads, evictions
        case singleFlightWaits = "single_flight_waits"
        case residentBytes = "resident_bytes"
        case peakResidentBytes = "peak_resident_bytes"
        case budgetBytes = "budget_bytes"
        case budgetViolations = "budget_violations"
        case memoryWarnings = "memory_warnings"
        case bytesFreedByPressure = "bytes_freed_by_pressure"
        case bufferAllocations = "buffer_allocations"
        case cachedEntries = "cached_entries"
        case leasedEntries = "leased_entries"
        case loadP50Micros = "load_p50_us"
        case loadP99Micros = "load_p99_us"
    }
}

// MARK: - State under the lock

/// What an entry holds. The masked layers are copies of `pixels` and `elevation` with the
/// pixels outside an owned mask cleared, keyed by the mask's fingerprint.
enum TileLayer: UInt8, Sendable { case payload, pixels, elevation, maskedPixels, maskedElevation }

struct TileKey: Hashable, Sendable {
    var archive: Int
    var layer: TileLayer
    var tile: TileID
    /// What else the content depends on: for a tile made from finer zooms the fingerprint of
    /// its descendants' access answers (``TileStore/plainKey(_:_:_:)``), mixed for a masked
    /// layer with the ``TileMask/fingerprint``; 0 for a stored zoom's plain layers.
    var mask: UInt64 = 0
}

extension TileStore {
    struct Entry {
        enum Status { case loading, ready, absent }
        var key: TileKey
        var status: Status
        var buffer: TileBuffer?
        var elevation: ElevationTile?
        /// Accounted bytes: overhead plus buffer or grid.
        var bytes: Int
        var leases: Int32
        /// The zoom the data came from (``TileLease/sourceZoom``).
        var sourceZoom: Int

        var bufferBytes: UnsafeRawBufferPointer {
            buffer?.bytes ?? UnsafeRawBufferPointer(start: nil, count: 0)
        }
    }

    struct State {
        let budget: Int
        var resident = 0
        var peak = 0
        /// Accounted bytes of buffers handed to loads in flight (part of `resident`).
        var inFlightBytes = 0
        var entries: [Entry] = []
        var freeSlots: [Int] = []
        var index: [TileKey: Int] = [:]
        var policy: any EvictionPolicy
        var pool: BufferPool
        var latencies = Histogram<UInt64>(highestTrackableValue: 60_000_000_000, numberOfSignificantValueDigits: .two)
        let warnings: SimulatedMemoryWarnings?
        var warningRandom: SplitMix64
        var loadsSinceWarning = 0

        /// Loads that failed for the row's own fault (``rememberedFailures`` at most).
        var failures = FailureMemory(capacity: TileStore.rememberedFailures)
        var hits = 0, misses = 0, loads = 0, singleFlightWaits = 0, evictions = 0
        var violations = 0, memoryWarnings = 0, bytesFreedByPressure = 0, bufferAllocations = 0

        init(budget: Int, options: TileStoreOptions) {
            self.budget = budget
            policy = options.policy.makePolicy()
            pool = BufferPool(perClass: options.pooledBuffersPerClass)
            warnings = options.simulatedWarnings
            if case .random(let seed)? = options.simulatedWarnings {
                warningRandom = SplitMix64(seed: seed)
            } else {
                warningRandom = SplitMix64(seed: 0)
            }
            entries.reserveCapacity(1024)
            index.reserveCapacity(1024)
        }

        func isEvictable(_ slot: Int) -> Bool {
            entries[slot].leases == 0 && entries[slot].status != .loading
        }

        mutating func notePeak() {
            if resident > peak { peak = resident }
            if resident > budget { violations += 1 }
        }

        /// Makes room for `bytes` more: idle buffers go first, then unleased entries in the
        /// policy's order. With `wantCapacity`, an evicted buffer of exactly that capacity is
        /// handed back for reuse instead (its bytes stay counted; nothing more is needed).
        @discardableResult
        mutating func makeRoom(for bytes: Int, evict allowEviction: Bool, subject: String, wantCapacity: Int? = nil)
            throws(TileStoreError) -> TileBuffer? {
            while resident + bytes > budget {
                if pool.idleBytes > 0 {
                    if let want = wantCapacity, let same = pool.take(capacity: want) { return same }
                    resident -= pool.dropOne(keeping: wantCapacity)
                    continue
                }
                guard allowEviction, let victim = policy.victim(where: { isEvictable($0) }) else {
                    let leased = entries.indices.reduce(0) { $0 + (entries[$1].leases > 0 ? 1 : 0) }
                    throw TileStoreError(.budgetExhausted, subject: subject,
                                         detail: allowEviction
                                            ? "budget of \(ByteSize.format(budget)) exhausted: \(ByteSize.format(resident)) held by \(leased) leased tiles and loads in flight (this one included), \(ByteSize.format(bytes)) more needed"
                                            : "no free budget for a prefetch")
                }
                if let want = wantCapacity, entries[victim].buffer?.capacity == want, let buffer = entries[victim].buffer {
                    entries[victim].buffer = nil
                    entries[victim].bytes -= buffer.accountedBytes
                    evict(victim, recycle: false)
                    return buffer
                }
                evict(victim, recycle: true)
            }
            return nil
        }

        /// Removes an entry; its buffer goes to the pool (`recycle`, still counted) or is
        /// freed. Returns the bytes no longer counted.
        @discardableResult
        mutating func evict(_ slot: Int, recycle: Bool) -> Int {
            var freed = entries[slot].bytes
            if let buffer = entries[slot].buffer, recycle, pool.give(buffer) { freed -= buffer.accountedBytes }
            resident -= freed
            evictions += 1
            remove(slot)
            return freed
        }

        mutating func insertLoading(_ key: TileKey) -> Int {
            let entry = Entry(key: key, status: .loading, buffer: nil, elevation: nil, bytes: TileStore.entryOverhead, leases: 1,
                              sourceZoom: key.tile.z)
            let slot: Int
            if let free = freeSlots.popLast() {
                entries[free] = entry
                slot = free
            } else {
                entries.append(entry)
                slot = entries.count - 1
            }
            index[key] = slot
            resident += TileStore.entryOverhead
            notePeak()
            return slot
        }

        /// Makes a loaded entry visible; true when a simulated warning is due.
        mutating func publish(_ slot: Int, _ loaded: Loaded, nanos: Int64) -> Bool {
            switch loaded {
            case .buffer(let buffer, let sourceZoom):
                inFlightBytes -= buffer.accountedBytes
                entries[slot].sourceZoom = sourceZoom
                entries[slot].buffer = buffer
                entries[slot].bytes += buffer.accountedBytes
                entries[slot].status = .ready
                loads += 1
            case .elevation(let grid, let bytes, let sourceZoom):
                inFlightBytes -= bytes
                entries[slot].sourceZoom = sourceZoom
                entries[slot].elevation = grid
                entries[slot].bytes += bytes
                entries[slot].status = .ready
                loads += 1
            case .absent:
                entries[slot].status = .absent
                entries[slot].leases = 0
            }
            policy.inserted(slot, bytes: entries[slot].bytes)
            _ = latencies.record(UInt64(max(0, nanos)))
            return warningDue()
        }

        /// Drops the loading entry of a failed load.
        mutating func abandon(_ slot: Int) {
            resident -= entries[slot].bytes
            remove(slot)
        }

        private mutating func remove(_ slot: Int) {
            policy.removed(slot)
            index[entries[slot].key] = nil
            entries[slot].buffer = nil
            entries[slot].elevation = nil
            entries[slot].bytes = 0
            entries[slot].leases = 0
            entries[slot].status = .absent
            freeSlots.append(slot)
        }

        private mutating func warningDue() -> Bool {
            switch warnings {
            case nil: return false
            case .every(let n)?:
                loadsSinceWarning += 1
                if loadsSinceWarning >= n { loadsSinceWarning = 0; return true }
                return false
            case .random?:
                return warningRandom.below(32) == 0
            }
        }

        func statistics(budget: Int) -> TileStoreStatistics {
            var s = TileStoreStatistics()
            s.hits = hits; s.misses = misses; s.loads = loads; s.singleFlightWaits = singleFlightWaits
            s.evictions = evictions; s.residentBytes = resident; s.peakResidentBytes = peak; s.budgetBytes = budget
            s.budgetViolations = violations; s.memoryWarnings = memoryWarnings
            s.bytesFreedByPressure = bytesFreedByPressure; s.bufferAllocations = bufferAllocations
            s.cachedEntries = index.count
            s.leasedEntries = index.values.reduce(0) { $0 + (entries[$1].leases > 0 ? 1 : 0) }
            if latencies.totalCount > 0 {
                s.loadP50Micros = Double(latencies.valueAtPercentile(50)) / 1000
                s.loadP99Micros = Double(latencies.valueAtPercentile(99)) / 1000
            }
            return s
        }

        mutating func resetCounters() {
            hits = 0; misses = 0; loads = 0; singleFlightWaits = 0; evictions = 0
            violations = 0; memoryWarnings = 0; bytesFreedByPressure = 0; bufferAllocations = 0
            peak = resident
            latencies.reset()
        }

        func accountingProblem() -> String? {
            var sum = inFlightBytes + pool.recount()
            for slot in index.values { sum += entries[slot].bytes }
            if pool.recount() != pool.idleBytes { return "pool counts \(pool.idleBytes) idle bytes, holds \(pool.recount())" }
            if sum != resident { return "resident \(resident) bytes, entries + pool + loads in flight hold \(sum)" }
            if resident > budget { return "resident \(resident) bytes exceeds the budget of \(budget)" }
            return nil
        }

        /// Debug builds check the whole accounting after every operation (O(entries)).
        func checkInvariants() {
            #if DEBUG
            if let problem = accountingProblem() { assertionFailure("TileStore accounting: \(problem)") }
            #endif
        }
    }
}

/// A bounded map of failed loads, oldest forgotten first: the tile store's negative cache.
/// Cost: O(1) per lookup and insert.
struct FailureMemory {
    let capacity: Int
    private var errors: [TileKey: TileStoreError] = [:]
    private var order: [TileKey] = []
    private var next = 0

    init(capacity: Int) { self.capacity = max(1, capacity) }

    var count: Int { errors.count }

    func error(for key: TileKey) -> TileStoreError? { errors[key] }

    /// Remembers `error` for `key`, forgetting the oldest remembered failure when full.
    mutating func remember(_ key: TileKey, _ error: TileStoreError) {
        if errors.updateValue(error, forKey: key) != nil { return }
        if order.count < capacity {
            order.append(key)
        } else {
            errors[order[next]] = nil
            order[next] = key
            next = (next + 1) % capacity
        }
    }
}
