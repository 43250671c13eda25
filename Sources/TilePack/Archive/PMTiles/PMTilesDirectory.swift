import TilePackCore

/// A PMTiles directory: entries sorted by tile id, serialised column by column as varints
/// (the count; the tile ids as deltas from the previous one; the run lengths; the lengths;
/// the offsets, each stored + 1, or 0 for "right after the previous entry's bytes").
/// Compression (gzip in tilepack's archives) wraps the result and is the caller's.
public struct PMTilesDirectory: Sendable, Equatable {
    public var entries: [PMTilesEntry]

    public init(entries: [PMTilesEntry]) { self.entries = entries }

    /// Bytes of one entry held in memory: what a leaf cache charges a directory.
    static let entryBytes = MemoryLayout<PMTilesEntry>.stride

    /// The uncompressed serialisation.
    /// - Cost: O(entries); at most 40 bytes per entry.
    public var bytes: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(entries.count * 6 + 10)
        PMTilesVarint.append(UInt64(entries.count), to: &out)
        var last: UInt64 = 0
        for e in entries {
            PMTilesVarint.append(e.tileID &- last, to: &out)
            last = e.tileID
        }
        for e in entries { PMTilesVarint.append(UInt64(e.runLength), to: &out) }
        for e in entries { PMTilesVarint.append(UInt64(e.length), to: &out) }
        for (i, e) in entries.enumerated() {
            if i > 0, e.offset == entries[i - 1].offset &+ UInt64(entries[i - 1].length) {
                PMTilesVarint.append(0, to: &out)
            } else {
                PMTilesVarint.append(e.offset &+ 1, to: &out)
            }
        }
        return out
    }

    /// Parses an uncompressed directory, checking what a reader relies on: the count fits the
    /// bytes (every entry takes at least four), ids strictly increase without overflow, run
    /// lengths and lengths fit 32 bits, lengths are positive, a run never reaches the next
    /// entry's id, offsets do not overflow, and no byte is left over.
    /// - Throws: ``ArchiveError`` (`damaged`) naming `path` and `what` ("root directory").
    /// - Cost: O(bytes); one allocation of the entries.
    public init(parsing bytes: [UInt8], path: String, what: String) throws(ArchiveError) {
        func damaged(_ detail: String) -> ArchiveError {
            ArchiveError(path: path, code: .damaged, detail: "\(what): \(detail)")
        }
        let parsed: Result<[PMTilesEntry], ArchiveError> = bytes.withUnsafeBufferPointer { buf in
            var at = 0
            guard let rawCount = PMTilesVarint.read(buf, at: &at) else { return .failure(damaged("no entry count")) }
            guard rawCount <= UInt64((buf.count - at) / 4) else {
                return .failure(damaged("\(rawCount) entries cannot fit in \(buf.count) bytes"))
            }
            let count = Int(rawCount)
            var entries = [PMTilesEntry](
                repeating: PMTilesEntry(tileID: 0, offset: 0, length: 0, runLength: 0), count: count)
            var id: UInt64 = 0
            for i in 0..<count {
                guard let delta = PMTilesVarint.read(buf, at: &at) else { return .failure(damaged("ids end early")) }
                guard i == 0 || delta > 0 else { return .failure(damaged("tile ids do not increase at entry \(i)")) }
                let (next, overflow) = id.addingReportingOverflow(delta)
                guard !overflow else { return .failure(damaged("tile id overflows at entry \(i)")) }
                id = next
                entries[i].tileID = id
            }
            for i in 0..<count {
                guard let run = PMTilesVarint.read(buf, at: &at), let r = UInt32(exactly: run) else {
                    return .failure(damaged("run length \(i) is missing or beyond 32 bits"))
                }
                entries[i].runLength = r
            }
            for i in 0..<count {
                guard let length = PMTilesVarint.read(buf, at: &at), let l = UInt32(exactly: length), l > 0 else {
                    return .failure(damaged("length \(i) is missing, zero or beyond 32 bits"))
                }
                entries[i].length = l
            }
            for i in 0..<count {
                guard let raw = PMTilesVarint.read(buf, at: &at) else { return .failure(damaged("offsets end early")) }
                if raw == 0 {
                    guard i > 0 else { return .failure(damaged("the first offset is 0 (\"after the previous\")")) }
                    let (o, overflow) = entries[i - 1].offset.addingReportingOverflow(UInt64(entries[i - 1].length))
                    guard !overflow else { return .failure(damaged("offset \(i) overflows")) }
                    entries[i].offset = o
                } else {
                    entries[i].offset = raw - 1
                }
            }
            guard at == buf.count else { return .failure(damaged("\(buf.count - at) bytes after the last entry")) }
            for i in 0..<count where entries[i].runLength > 0 {
                let (end, overflow) = entries[i].tileID.addingReportingOverflow(UInt64(entries[i].runLength))
                guard !overflow, i + 1 == count || end <= entries[i + 1].tileID else {
                    return .failure(damaged("the run of entry \(i) overlaps entry \(i + 1)"))
                }
            }
            return .success(entries)
        }
        entries = try parsed.get()
    }

    /// The entry that holds tile `id` (a run covering it) or the leaf directory that may:
    /// the last entry whose id is ≤ `id`, when it is a leaf or its run reaches `id`.
    /// - Cost: O(log entries).
    public func find(_ id: UInt64) -> PMTilesEntry? {
        var lo = 0, hi = entries.count - 1
        while lo <= hi {
            let mid = (lo + hi) / 2
            if entries[mid].tileID <= id { lo = mid + 1 } else { hi = mid - 1 }
        }
        guard hi >= 0 else { return nil }
        let e = entries[hi]
        if e.isLeaf { return e }
        return id - e.tileID < UInt64(e.runLength) ? e : nil
    }
}
