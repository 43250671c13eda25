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
    public init(
        archives: [any TileArchive], budget: MemoryBudget, options: TileStoreOptions = TileStoreOptions()
    )
        throws
    {
        var sources: [Source] = []
        for archive in archives {
            let summary = archive.summary
            var payload: TilePayloadCodec?
            if let codec = summary.codec {
                do { payload = try TilePayloadCodec(codec: codec, tileSize: summary.tileSize) } catch {
                    throw TileStoreError(
                        .invalidOptions, subject: archive.path,
                        detail: "tile size \(summary.tileSize) does not suit \(codec.rawValue): \(error)")
                }
                // The smallest useful budget holds one payload (pixels() needs room for a
                // decoded tile too, and says budgetExhausted when there is none).
                let one =
                    Self.entryOverhead + TileBuffer.capacityClass(for: payload?.fixedPayloadByteCount ?? 4096)
                    + TileBuffer.objectOverhead
                if budget.bytes < one {
                    throw TileStoreError(
                        .invalidOptions, subject: archive.path,
                        detail: "a budget of \(budget) cannot hold one \(codec.rawValue) tile (\(ByteSize.format(one)))"
                    )
                }
            }
            let name = archive.accessName
            sources.append(Source(archive: archive, summary: summary, payload: payload, name: name))
        }
        if case .every(let n)? = options.simulatedWarnings, n < 1 {
            throw TileStoreError(
                .invalidOptions, subject: "tile store",
                detail: "simulated warnings every \(n) loads: N must be at least 1")
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
    public func tile(_ id: TileID, archive: Int? = nil) throws -> TileLease? { try typedTile(id, archive: archive) }

    /// ``tile(_:archive:)`` with its typed error, for the library's own callers.
    package func typedTile(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> TileLease? {
        var refused: TileStoreError?
        for a in candidates(for: id, archive: archive) {
            switch access(id, archive: a) {
            case .allowed:
                if let found = try entry(TileKey(archive: a, layer: .payload, tile: id)) {
                    return TileLease(
                        store: self, slot: found.slot, bytes: found.bytes, zoom: id.z, sourceZoom: found.sourceZoom)
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
    public func overzoomedTile(_ id: TileID, archive: Int? = nil) throws -> OverzoomedPayload? {
        try typedOverzoomedTile(id, archive: archive)
    }

    /// ``overzoomedTile(_:archive:)`` with its typed error, for the library's own callers.
    package func typedOverzoomedTile(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> OverzoomedPayload? {
        var refused: TileStoreError?
        for a in candidates(for: id, archive: archive, reach: true) {
            let summary = sources[a].summary
            guard let zooms = summary.zoomRange, id.z >= zooms.lowerBound else { continue }
            switch access(id, archive: a) {
            case .allowed:
                for z in stride(from: min(id.z, zooms.upperBound), through: zooms.lowerBound, by: -1) {
                    let ancestor = Overzoom.ancestor(of: id, atZoom: z)
                    guard summary.meets(ancestor),
                        let found = try entry(TileKey(archive: a, layer: .payload, tile: ancestor))
                    else { continue }
                    return OverzoomedPayload(
                        lease: TileLease(store: self, slot: found.slot, bytes: found.bytes, zoom: id.z, sourceZoom: z),
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
    public func pixels(_ id: TileID, archive: Int? = nil) throws -> TileLease? { try typedPixels(id, archive: archive) }

    /// ``pixels(_:archive:)`` with its typed error, for the library's own callers.
    package func typedPixels(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> TileLease? {
        var refused: TileStoreError?
        for a in candidates(for: id, archive: archive, reach: true) {
            if let found = try permittedEntry(id, archive: a, whole: .pixels, masked: .maskedPixels, refused: &refused)
            {
                return TileLease(
                    store: self, slot: found.slot, bytes: found.bytes, zoom: id.z, sourceZoom: found.sourceZoom)
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
    public func elevation(_ id: TileID, archive: Int? = nil) throws -> ElevationTile? {
        try typedElevation(id, archive: archive)
    }

    /// ``elevation(_:archive:)`` with its typed error, for the library's own callers.
    package func typedElevation(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> ElevationTile? {
        try typedZoomedElevation(id, archive: archive)?.grid
    }

    /// ``elevation(_:archive:)`` with the zoom the grid came from.
    /// - Cost: as ``elevation(_:archive:)``; a made grid costs one bilinear pass (up) or up to
    ///   4 + 16 + 64 grid reads (down), once, then it is cached.
    public func zoomedElevation(_ id: TileID, archive: Int? = nil) throws -> ZoomedElevation? {
        try typedZoomedElevation(id, archive: archive)
    }

    /// ``zoomedElevation(_:archive:)`` with its typed error, for the library's own callers.
    package func typedZoomedElevation(_ id: TileID, archive: Int? = nil) throws(TileStoreError) -> ZoomedElevation? {
        var refused: TileStoreError?
        for a in candidates(for: id, archive: archive, reach: true) where sources[a].summary.hasElevation {
            if let found = try permittedEntry(
                id, archive: a, whole: .elevation, masked: .maskedElevation, refused: &refused)
            {
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
    private func permittedEntry(
        _ id: TileID, archive a: Int, whole: TileLayer, masked: TileLayer,
        refused: inout TileStoreError?
    ) throws(TileStoreError) -> Found? {
        let answer = access(id, archive: a)
        if case .denied(let offers) = answer, refused == nil { refused = Self.lockedError(id, offers: offers) }
        return try entry(id, archive: a, answer: answer, whole: whole, masked: masked, evict: true)
    }

    /// The leased entry of tile `id` in archive `a` as the access answer `answer` lets it be
    /// seen: the whole layer when allowed, the masked one when partial, nil when denied (or
    /// absent). What a requested tile and every child a made tile is built from go through,
    /// so that no pixel or sample reaches a caller unless the policy allows it at its own zoom.
    func entry(
        _ id: TileID, archive a: Int, answer: TileAccess, whole: TileLayer, masked: TileLayer,
        evict: Bool
    ) throws(TileStoreError) -> Found? {
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
        return h | 1  // never 0, the stored zooms' key
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

    /// The products that would unlock pixel `pixel` of tile `id` in archive number `archive`
    /// (the access policy's ``AccessPolicy/offers(for:archive:tileSize:pixel:)``).
    /// - Cost: the policy's; not cached.
    public func offers(_ id: TileID, archive: Int, pixel: (x: Int, y: Int)) -> [ProductOffer] {
        guard sources.indices.contains(archive) else { return [] }
        let source = sources[archive]
        return options.accessPolicy.offers(
            for: id, archive: source.name, tileSize: source.summary.tileSize, pixel: pixel)
    }

    func access(_ id: TileID, archive a: Int, tileSize: Int) -> TileAccess {
        let answer = options.accessPolicy.access(id, archive: sources[a].name, tileSize: tileSize)
        // A tile no mask can fit (a size outside 1…4096) is locked whole rather than shown.
        if case .partial(_, let offers) = answer, !(1...TileMask.maxSide).contains(tileSize) {
            return .denied(unlockedBy: offers)
        }
        return answer
    }

    /// The async face of ``tile(_:archive:)``. The load runs on the calling task; a wait for
    /// another thread's load of the same tile blocks for at most that one load.
    public func tile(_ id: TileID, archive: Int? = nil) async throws -> TileLease? {
        try typedTile(id, archive: archive)
    }

    /// The async face of ``pixels(_:archive:)``.
    public func pixels(_ id: TileID, archive: Int? = nil) async throws -> TileLease? {
        try typedPixels(id, archive: archive)
    }

    /// The async face of ``elevation(_:archive:)``.
    public func elevation(_ id: TileID, archive: Int? = nil) async throws -> ElevationTile? {
        try typedElevation(id, archive: archive)
    }

    /// The async face of ``zoomedElevation(_:archive:)``.
    public func zoomedElevation(_ id: TileID, archive: Int? = nil) async throws -> ZoomedElevation? {
        try typedZoomedElevation(id, archive: archive)
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
                        if error.code == .budgetExhausted { fits = false }
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
            for dxx in -half...half {
                if let t = TileID(z: id.z, x: id.x + dxx, y: y), !out.contains(t) { out.append(t) }
            }
        }
        return out
    }
}
