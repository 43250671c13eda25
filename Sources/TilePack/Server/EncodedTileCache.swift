import NIOCore
import TilePackCore

/// Tiles encoded for browsers (PNG made from PVRTC, Terrarium PNGs), kept by ETag up to a byte
/// limit, least recently used dropped first (a ``ByteBudgetCache`` of the buffers responses
/// share). Encoding a 256 × 256 PNG costs ~6 ms a request (serve-bench: 350 tiles/s on two
/// cores); a hit costs a dictionary lookup. Counted apart from the tile store's budget: the
/// server's peak RSS stays within that budget + 64 MiB with the default 16 MiB.
final class EncodedTileCache: Sendable {
    private let cache: ByteBudgetCache<String, ByteBuffer>

    /// A tile above a quarter of `limit` is served but not kept.
    init(limit: Int) { cache = ByteBudgetCache(limit: limit, maxEntryBytes: limit / 4) }

    /// The entry under `key`: a buffer responses share (never copied per request).
    func get(_ key: String) -> ByteBuffer? { cache.get(key) }

    /// Keeps `value` under `key` and returns it as the buffer responses share (one copy here).
    @discardableResult
    func put(_ key: String, _ value: [UInt8]) -> ByteBuffer {
        cache.put(key, ByteBuffer(bytes: value), bytes: value.count)
    }
}
