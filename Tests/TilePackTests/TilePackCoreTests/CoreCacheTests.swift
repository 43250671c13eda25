import Testing
@testable import TilePackCore
import TilePackTestSupport

/// The one byte-capped cache (decoded TIFF blocks, the server's encoded tiles): its limit holds
/// at every put, the least recently used entry goes first, an oversized value is not kept, and
/// an entry already cached wins a second put.
@Suite("Core: byte-budgeted cache")
struct CoreCacheTests {
    @Test func evictsTheLeastRecentlyUsedWithinTheLimit() {
        let cache = ByteBudgetCache<Int, [UInt8]>(limit: 100)
        for k in 0..<4 { cache.put(k, [UInt8](repeating: UInt8(k), count: 30), bytes: 30) }
        // 4 × 30 > 100: key 0, the oldest, went.
        #expect(cache.get(0) == nil && cache.count == 3 && cache.byteCount == 90)
        #expect(cache.get(1) != nil)  // 1 is now the most recent: 2 goes next
        cache.put(9, [9], bytes: 30)
        #expect(cache.get(2) == nil && cache.get(1) != nil && cache.get(3) != nil && cache.get(9) != nil)
        #expect(cache.byteCount <= 100)
    }

    @Test func oversizedValuesAreReturnedUnkeptAndTheFirstPutWins() {
        let cache = ByteBudgetCache<String, [UInt8]>(limit: 1000, maxEntryBytes: 100)
        #expect(cache.put("big", [1, 2, 3], bytes: 101) == [1, 2, 3])
        #expect(cache.get("big") == nil && cache.byteCount == 0)
        cache.put("k", [1], bytes: 10)
        #expect(cache.put("k", [2], bytes: 10) == [1] && cache.byteCount == 10)
        // Seeded churn: the running total never passes the limit.
        var rng = SplitMix64(seed: 27)
        for _ in 0..<2000 {
            let key = "\(rng.next() % 64)", size = Int(rng.next() % 120)
            cache.put(key, [], bytes: size)
            #expect(cache.byteCount <= 1000)
        }
    }
}
