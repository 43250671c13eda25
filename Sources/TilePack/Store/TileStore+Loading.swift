import TilePackCore
import TilePackCodec
import TilePackArchive
import Histogram
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// How a miss becomes an entry: candidates in search order, the single-flight load under the
// budget (room made before anything is allocated), decoding, masking and the buffer pool.

extension TileStore {
    struct Source: Sendable {
        let archive: any TileArchive
        let summary: TileArchiveSummary
        let payload: TilePayloadCodec?
        /// The archive's file name, as the access policy and a catalog's `archives` name it.
        let name: String
    }

    static func lockedError(_ id: TileID, offers: [ProductOffer]) -> TileStoreError {
        TileStoreError(
            .locked, subject: "tile \(id)",
            detail: offers.isEmpty ? "locked: no product on sale unlocks it" : "locked: unlocked by \(names(offers))",
            offers: offers)
    }

    func partialError(_ id: TileID, archive a: Int, mask: TileMask, offers: [ProductOffer]) -> TileStoreError {
        TileStoreError(
            .partialTile, subject: "tile \(id) of \(sources[a].name)",
            detail:
                """
                partly locked (\(mask.ownedCount) of \(mask.pixelCount) pixels owned): its GPU payload cannot be \
                masked, 
                """
                    + "read its pixels instead"
                    + (offers.isEmpty ? "" : "; the rest is unlocked by \(Self.names(offers))"),
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
    func candidates(for id: TileID, archive: Int?, reach: Bool = false) -> Candidates {
        guard let archive else {
            return Candidates(sources: sources, id: id, index: 0, end: sources.count, filtered: true, reach: reach)
        }
        let valid = sources.indices.contains(archive)
        return Candidates(
            sources: sources, id: id, index: valid ? archive : 0, end: valid ? archive + 1 : 0, filtered: false,
            reach: reach)
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
                let found = Found(
                    slot: slot, bytes: state.entries[slot].bufferBytes, sourceZoom: state.entries[slot].sourceZoom)
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
            if error.code == .damagedTile { state.failures.remember(key, error) }
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
                let buffer: TileBuffer? = try source.archive.withTile(key.tile, maxBytes: limit) {
                    stored -> TileBuffer in
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
                        throw TileStoreError(
                            .damagedTile, subject: path, detail: "tile \(key.tile) is damaged: \(error)")
                    }
                    filled = buffer
                    return buffer
                }
                return buffer.map { .buffer($0, sourceZoom: key.tile.z) } ?? .absent
            } catch {
                if let filled { returnBuffer(filled) }
                if let error = error as? TileStoreError { throw error }
                if let error = error as? ArchiveError, error.code == .damaged {
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
                throw TileStoreError(
                    .undecodable, subject: path,
                    detail: "tiles use codec '\(source.summary.codecName)', which tilepack cannot decode")
            }
            if let zooms = source.summary.zoomRange, !zooms.contains(key.tile.z) {
                return try zoomedPixels(key, zooms: zooms, payload: payload, evict: evict)
            }
            guard let words = try entry(TileKey(archive: key.archive, layer: .payload, tile: key.tile), evict: evict)
            else {
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
                throw TileStoreError(
                    .undecodable, subject: path,
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
                    UnsafeMutableRawBufferPointer(rebasing: out[from..<(from + run.count * 4)]).initializeMemory(
                        as: UInt8.self, repeating: 0)
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
            try reserveInFlight(bytes, evict: evict, subject: path)
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
                    throw ArchiveError(
                        path: path, code: .badElevation,
                        detail:
                            """
                            elevation tile \(key.tile) declares a \(width)×\(height) grid; tiles are \(tileSize) \
                            pixels, 
                            """
                                + "grids at most \(limit) a side")
                }
                do throws(TileStoreError) {
                    reserved = try reserveGrid(width * height, evict: evict, subject: path)
                } catch {
                    refusal = error
                    throw ArchiveError(path: path, code: .badElevation, detail: error.detail)
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
                for y in 0..<h {
                    fitted.forEachRun(row: y, owned: false) { run in for x in run { v[y * w + x] = .nan } }
                }
            } else {
                for y in 0..<h {
                    let my = (2 * y + 1) * fitted.side / (2 * h)
                    for x in 0..<w where !fitted.isOwned(x: (2 * x + 1) * fitted.side / (2 * w), y: my) {
                        v[y * w + x] = .nan
                    }
                }
            }
        }
        return ElevationTile(width: w, height: h, values: values)
    }

    /// An archive error's message without the path repeated (the store error names it).
    private static func detail(of error: any Error, path: String) -> String {
        let text = "\(error)"
        return text.hasPrefix(path + ": ") ? String(text.dropFirst(path.count + 2)) : text
    }

    /// A buffer of at least `bytes`, its accounted size reserved in the budget first.
    /// Counts `bytes` as resident and in flight, making room first (evicting when `evict`).
    /// - Throws: `budgetExhausted` naming `subject` when leases and loads fill the budget.
    func reserveInFlight(_ bytes: Int, evict: Bool, subject: String) throws(TileStoreError) {
        lock.lock()
        defer { lock.unlock() }
        try state.makeRoom(for: bytes, evict: evict, subject: subject)
        state.resident += bytes
        state.inFlightBytes += bytes
        state.notePeak()
    }

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
            if let recycled = try state.makeRoom(
                for: capacity + TileBuffer.objectOverhead, evict: evict,
                subject: "tile store", wantCapacity: capacity)
            {
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
