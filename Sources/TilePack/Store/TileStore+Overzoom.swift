import TilePackCore
import TilePackCodec
import TilePackArchive

/// The loads of tiles outside an archive's zooms (``Overzoom``): what the `.pixels` and
/// `.elevation` layers hold for such a tile. They go through ``entry(_:evict:mask:)`` for the
/// ancestor or the children, so every grid and buffer they read is cached, leased while read
/// (until the made tile is computed) and counted like any other, and single flight holds for
/// made tiles too.
///
/// Access: the caller decided it for the requested tile. Overzoom then reads the ancestor
/// whatever the policy says of it (the picture shown is the requested tile's, and a locked
/// requested tile never gets this far). Underzoom is different: the made tile shows its
/// children's content, so each child is read only as the policy allows it at its own zoom —
/// allowed whole, partial masked (unowned pixels transparent, samples NaN) before it is
/// downsampled, denied not at all. The made tile's cache key carries those answers
/// (``plainKey(_:_:_:)``).
extension TileStore {
    /// Pixels of `key.tile` (outside `zooms`) from the nearest stored ancestor, scaled up, or
    /// from the four children, scaled down. Class archives (``ValueKind/class``) are scaled
    /// by nearest and by the most frequent colour, so no colour is blended into one no class has.
    /// - Cost: overzoom: one ancestor decode (cached) and one bilinear pass; underzoom: four
    ///   child reads a zoom, at most ``Overzoom/maxUnderzoomLevels`` zooms down, and their
    ///   access answers.
    func zoomedPixels(
        _ key: TileKey, zooms: ClosedRange<Int>, payload: TilePayloadCodec, evict: Bool
    )
        throws(TileStoreError) -> Loaded
    {
        let id = key.tile, side = payload.tileSize, count = payload.pixelByteCount
        let summary = sources[key.archive].summary
        let classes = summary.valueKind == .class
        if id.z > zooms.upperBound {
            guard id.z <= Overzoom.maxZoom else { return .absent }
            // The nearest stored ancestor: an absent tile at the max zoom (outside the data, or
            // transparent) may still sit inside a coarser zoom's tile.
            for z in stride(from: zooms.upperBound, through: zooms.lowerBound, by: -1) {
                let ancestor = Overzoom.ancestor(of: id, atZoom: z)
                guard summary.meets(ancestor),
                    let found = try entry(TileKey(archive: key.archive, layer: .pixels, tile: ancestor), evict: evict)
                else { continue }
                defer { release(found.slot) }  // leased until the made tile is computed
                let buffer = try acquireBuffer(bytes: count, evict: evict)
                let out = buffer.mutableBytes(count)
                if classes {
                    Overzoom.upscaleRGBANearest(found.bytes, side: side, from: ancestor, to: id, into: out)
                } else {
                    Overzoom.upscaleRGBA(found.bytes, side: side, from: ancestor, to: id, into: out)
                }
                return .buffer(buffer, sourceZoom: found.sourceZoom)
            }
            return .absent
        }
        // Underzoom: a 2 × 2 mean needs an even side.
        guard zooms.lowerBound - id.z <= Overzoom.maxUnderzoomLevels, side % 2 == 0 else { return .absent }
        let buffer = try acquireBuffer(bytes: count, evict: evict)
        let out = buffer.mutableBytes(count)
        out.initializeMemory(as: UInt8.self, repeating: 0)  // a missing or denied child leaves its quadrant transparent
        var any = false
        do throws(TileStoreError) {
            for (quadrant, child) in id.children.enumerated() where summary.meets(child) {
                guard
                    let found = try entry(
                        child, archive: key.archive, answer: access(child, archive: key.archive),
                        whole: .pixels, masked: .maskedPixels, evict: evict)
                else { continue }
                defer { release(found.slot) }
                if classes {
                    Overzoom.downsampleRGBAMode(found.bytes, side: side, quadrant: quadrant, into: out)
                } else {
                    Overzoom.downsampleRGBA(found.bytes, side: side, quadrant: quadrant, into: out)
                }
                any = true
            }
        } catch {
            returnBuffer(buffer)
            throw error
        }
        guard any else {
            returnBuffer(buffer)
            return .absent
        }
        return .buffer(buffer, sourceZoom: zooms.lowerBound)
    }

    /// The elevation grid of `key.tile` (outside `zooms`), made as ``zoomedPixels`` makes
    /// pixels (class codes by nearest up and by the most frequent code down); its bytes
    /// reserved in the budget before the grid is allocated.
    /// - Throws: `damagedTile` when the children's grids differ in size.
    func zoomedElevation(_ key: TileKey, zooms: ClosedRange<Int>, evict: Bool) throws(TileStoreError) -> Loaded {
        let id = key.tile, summary = sources[key.archive].summary, path = sources[key.archive].archive.path
        let classes = summary.valueKind == .class
        if id.z > zooms.upperBound {
            guard id.z <= Overzoom.maxZoom else { return .absent }
            for z in stride(from: zooms.upperBound, through: zooms.lowerBound, by: -1) {
                let ancestor = Overzoom.ancestor(of: id, atZoom: z)
                guard summary.meets(ancestor),
                    let found = try entry(
                        TileKey(archive: key.archive, layer: .elevation, tile: ancestor), evict: evict)
                else { continue }
                // Leased until the made grid is computed: evicted, the ancestor's grid would be
                // uncounted while it is still read.
                defer { release(found.slot) }
                guard let grid = lock.withLock({ state.entries[found.slot].elevation }) else { continue }
                let bytes = try reserveGrid(grid.width * grid.height, evict: evict, subject: path)
                let made =
                    classes
                    ? Overzoom.upscaleElevationNearest(grid, from: ancestor, to: id)
                    : Overzoom.upscaleElevation(grid, from: ancestor, to: id)
                return .elevation(
                    made, bytes: try trueUp(bytes, made, evict: evict, subject: path), sourceZoom: found.sourceZoom)
            }
            return .absent
        }
        guard zooms.lowerBound - id.z <= Overzoom.maxUnderzoomLevels else { return .absent }
        var values: [Float] = [], size: (w: Int, h: Int)?, reserved = 0
        do throws(TileStoreError) {
            for (quadrant, child) in id.children.enumerated() where summary.meets(child) {
                guard
                    let found = try entry(
                        child, archive: key.archive, answer: access(child, archive: key.archive),
                        whole: .elevation, masked: .maskedElevation, evict: evict)
                else { continue }
                defer { release(found.slot) }  // leased until its quadrant is made
                guard let grid = lock.withLock({ state.entries[found.slot].elevation }) else { continue }
                if let size {
                    guard grid.width == size.w, grid.height == size.h else {
                        throw TileStoreError(
                            .damagedTile, subject: path,
                            detail:
                                """
                                the elevation grids of tile \(id)'s children differ in size (\(size.w)×\(size.h), \
                                \(grid.width)×\(grid.height))
                                """
                        )
                    }
                } else {
                    // A 2 × 2 mean needs even sides.
                    guard grid.width % 2 == 0, grid.height % 2 == 0 else { return .absent }
                    size = (grid.width, grid.height)
                    reserved = try reserveGrid(grid.width * grid.height, evict: evict, subject: path)
                    values = [Float](repeating: .nan, count: grid.width * grid.height)  // a missing child: no data
                }
                if classes {
                    Overzoom.downsampleElevationMode(grid, quadrant: quadrant, into: &values)
                } else {
                    Overzoom.downsampleElevation(grid, quadrant: quadrant, into: &values)
                }
            }
        } catch {
            if reserved > 0 { unreserve(reserved) }
            throw error
        }
        guard let size else { return .absent }
        let made = ElevationTile(width: size.w, height: size.h, values: values)
        return .elevation(
            made, bytes: try trueUp(reserved, made, evict: evict, subject: path), sourceZoom: zooms.lowerBound)
    }

    /// Reserves a grid of `count` samples (its accounted bytes, as a load in flight) before it
    /// is allocated; returns the bytes reserved.
    func reserveGrid(_ count: Int, evict: Bool, subject: String) throws(TileStoreError) -> Int {
        let bytes = count * MemoryLayout<Float>.stride + TileBuffer.objectOverhead
        try reserveInFlight(bytes, evict: evict, subject: subject)
        return bytes
    }

    func unreserve(_ bytes: Int) {
        lock.withLock {
            state.resident -= bytes
            state.inFlightBytes -= bytes
        }
    }

    /// The accounted bytes of `grid` as the store counts a stored grid (its array's capacity),
    /// the reservation grown to match when the allocator gave more than was asked.
    func trueUp(_ reserved: Int, _ grid: ElevationTile, evict: Bool, subject: String) throws(TileStoreError) -> Int {
        let actual = grid.values.capacity * MemoryLayout<Float>.stride + TileBuffer.objectOverhead
        guard actual > reserved else { return reserved }
        lock.lock()
        defer { lock.unlock() }
        do {
            try state.makeRoom(for: actual - reserved, evict: evict, subject: subject)
        } catch {
            state.resident -= reserved
            state.inFlightBytes -= reserved
            throw error
        }
        state.resident += actual - reserved
        state.inFlightBytes += actual - reserved
        state.notePeak()
        return actual
    }
}

/// An elevation grid and the zoom it came from (``TileStore/zoomedElevation(_:archive:)``).
public struct ZoomedElevation: Sendable, Equatable {
    public let grid: ElevationTile
    /// The zoom asked for.
    public let zoom: Int
    /// The zoom the grid came from: ``zoom`` when stored, coarser when overzoomed, finer when
    /// underzoomed.
    public let sourceZoom: Int

    public init(grid: ElevationTile, zoom: Int, sourceZoom: Int) {
        self.grid = grid; self.zoom = zoom; self.sourceZoom = sourceZoom
    }

    public var isOverzoomed: Bool { sourceZoom < zoom }
    public var isUnderzoomed: Bool { sourceZoom > zoom }
}
