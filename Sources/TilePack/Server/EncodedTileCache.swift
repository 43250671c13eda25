import NIOCore
import TilePackCore

/// Tiles encoded for browsers (PNG made from PVRTC, Terrarium PNGs), kept by ETag up to a byte
/// limit and dropped oldest first. Encoding a 256 × 256 PNG costs ~6 ms a request (serve-bench:
/// 350 tiles/s on two cores); a hit costs a dictionary lookup. Counted apart from the tile
/// store's budget: the server's peak RSS stays within that budget + 64 MiB with the default 16 MiB.
final class EncodedTileCache: Sendable {
    private struct State {
        var entries: [String: ByteBuffer] = [:]
        var order: [String] = []
        var head = 0
        var bytes = 0
    }
    let limit: Int
    private let state = Locked(State())

    init(limit: Int) { self.limit = limit }

    /// The entry under `key`: a buffer responses share (never copied per request).
    func get(_ key: String) -> ByteBuffer? { state.withLock { $0.entries[key] } }

    /// Keeps `value` under `key` and returns it as the buffer responses share (one copy here).
    @discardableResult
    func put(_ key: String, _ value: [UInt8]) -> ByteBuffer {
        let buffer = ByteBuffer(bytes: value)
        guard value.count <= limit / 4 else { return buffer }
        return state.withLock { s in
            if let existing = s.entries[key] { return existing }
            s.entries[key] = buffer
            s.order.append(key)
            s.bytes += value.count
            while s.bytes > limit, s.head < s.order.count {
                let old = s.order[s.head]
                s.head += 1
                if let v = s.entries.removeValue(forKey: old) { s.bytes -= v.readableBytes }
            }
            if s.head > 1024 && s.head * 2 > s.order.count {   // compact the queue now and then
                s.order.removeFirst(s.head)
                s.head = 0
            }
            return buffer
        }
    }
}
