import TilePackCore
import TilePackGeoTIFF

/// The GeoTIFFs of a mosaic, opened on first use and closed again, least recently used
/// first, so that at most `limit` are open at once (a mosaic of 2,000 SRTM tiles must not
/// hold 2,000 descriptors and 2,000 block caches).
///
/// A file in use by a reader is never closed under it: ``withFile(_:_:)`` holds a use count,
/// and a thread that needs a file when `limit` files are all in use waits for one to be
/// released. Readers hold one file at a time, so waiting cannot deadlock.
///
/// `@unchecked Sendable`: every mutable field is touched only with `lock` held.
/// - Cost: a hit is one lock round trip; a miss opens the file (header and IFDs, a few KiB)
///   and may close the least recently used idle file (O(limit) scan).
final class TIFFFilePool: @unchecked Sendable {
    struct Statistics: Sendable, Equatable {
        /// Files opened (re-opening after eviction counts again).
        var opens = 0
        /// Most files open at the same moment.
        var peakOpen = 0
    }

    private struct Entry {
        let file: TIFFFile
        var users: Int
        var lastUse: UInt64
    }

    let paths: [String]
    let limit: Int
    /// Block cache of each open file: a share of a fixed total, so memory does not grow with
    /// the limit.
    let cacheBytes: Int
    private let lock = ConditionLock()
    private var open: [Int: Entry] = [:]
    private var opening: Set<Int> = []
    private var clock: UInt64 = 0
    private var stats = Statistics()

    /// Total decoded-block cache over all open files.
    static let totalCacheBytes = 64 << 20

    init(paths: [String], limit: Int) {
        precondition(limit >= 1, "the open-file limit is at least 1")
        self.paths = paths
        self.limit = limit
        cacheBytes = max(1 << 20, Self.totalCacheBytes / max(1, min(limit, paths.count)))
    }

    var statistics: Statistics { lock.withLock { stats } }

    /// Runs `body` with file `index` open; it stays open (and is not evicted) until `body` returns.
    func withFile<R>(_ index: Int, _ body: (TIFFFile) throws -> R) throws -> R {
        let file = try acquire(index)
        defer { release(index) }
        return try body(file)
    }

    private func acquire(_ index: Int) throws -> TIFFFile {
        lock.lock()
        while true {
            clock &+= 1
            if var e = open[index] {
                e.users += 1
                e.lastUse = clock
                open[index] = e
                lock.unlock()
                return e.file
            }
            if opening.contains(index) { lock.wait(); continue }
            if open.count + opening.count < limit { break }
            let idle = open.filter { $0.value.users == 0 }.min { $0.value.lastUse < $1.value.lastUse }
            if let victim = idle?.key {
                open[victim] = nil  // the last reference: TIFFFile's handle closes its descriptor
                continue
            }
            lock.wait()
        }
        opening.insert(index)
        lock.unlock()
        // Opening reads the header and IFDs: done outside the lock so other files stay readable.
        let result = Result { try TIFFFile(path: paths[index], cacheBytes: cacheBytes) }
        lock.lock()
        opening.remove(index)
        defer {
            lock.broadcast()
            lock.unlock()
        }
        let file = try result.get()
        open[index] = Entry(file: file, users: 1, lastUse: clock)
        stats.opens += 1
        stats.peakOpen = max(stats.peakOpen, open.count)
        return file
    }

    private func release(_ index: Int) {
        lock.withLock {
            if var e = open[index] {
                e.users -= 1
                open[index] = e
            }
            lock.broadcast()
        }
    }
}
