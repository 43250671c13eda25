import NIOCore
import TilePackCore
import TilePackStore

/// What a route answers, before HTTP: a status, headers and a body. The routes of
/// ``TileService`` return these so they can be tested and fuzzed without a socket; the
/// Hummingbird adapter (``TileServer``) only copies them into a response.
public struct ServedResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var headers: [(String, String)]
    /// The body's bytes (copied out of ``shared`` when the body is a shared buffer).
    public var body: [UInt8] {
        get { shared.map { Array($0.readableBytesView) } ?? bytes }
        set { bytes = newValue; shared = nil }
    }
    /// The body's length. Cost: O(1).
    public var bodyCount: Int { shared?.readableBytes ?? bytes.count }
    /// A body shared with a cache (the encoded-tile cache's PNGs), written to the socket as it
    /// is. Why: copying a cached 64–120 KB PNG into a fresh buffer per response made malloc map
    /// and unmap it each time, and the page faults were the PNG route's top cost under wrk.
    public private(set) var shared: ByteBuffer?
    private var bytes: [UInt8]

    public init(status: Int = 200, contentType: String, headers: [(String, String)] = [], body: [UInt8]) {
        self.status = status; self.contentType = contentType; self.headers = headers; self.bytes = body
    }

    /// A response whose body is `shared` (not copied).
    public init(status: Int = 200, contentType: String, headers: [(String, String)] = [], shared: ByteBuffer) {
        self.status = status; self.contentType = contentType; self.headers = headers; self.bytes = []
        self.shared = shared
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// A JSON body.
    public static func json(_ text: String, status: Int = 200, cache: String = "no-cache") -> ServedResponse {
        ServedResponse(
            status: status, contentType: "application/json; charset=utf-8",
            headers: [("Cache-Control", cache)], body: Array(text.utf8))
    }

    /// `{"error": KIND, "message": TEXT, "status": N}` with `status`.
    public static func error(_ status: Int, kind: String, message: String) -> ServedResponse {
        .json(encoding: ErrorBody(error: kind, message: message, status: status), status: status, cache: "no-store")
    }

    /// 403 for a tile the access policy locks: the error body with the region, the tile and
    /// the products that unlock it.
    static func locked(
        kind: String, message: String, region: String, tile: TileID, unlock: [ProductOffer]
    ) -> ServedResponse {
        let body = ErrorBody(
            error: kind, message: message, status: 403,
            locked: .init(region: region, tile: tile.description, unlock: unlock))
        return .json(encoding: body, status: 403, cache: "no-store")
    }

    /// The HTTP status for an error category: the server's half of "the CLI maps kinds to
    /// exit codes, the server to HTTP statuses".
    public static func status(for category: TilePackErrorCategory) -> Int {
        switch category {
        case .invalidArgument: 400
        case .notFound: 404
        case .locked: 403
        case .budgetExhausted: 503  // leases fill the budget: try again shortly
        case .unsupported: 501  // an archive of a codec tilepack cannot decode
        case .invalidInput, .environment: 500  // a damaged archive or the machine: not the client's fault
        }
    }

    /// A thrown error as a response: its category's status, its one-line description.
    public static func from(_ error: any Error) -> ServedResponse {
        if let e = error as? any TilePackError {
            let status = status(for: e.category)
            var response = ServedResponse.error(status, kind: "\(e.category)", message: e.description)
            if status == 503 { response.headers.append(("Retry-After", "1")) }
            return response
        }
        return .error(500, kind: "internal", message: "\(error)")
    }
}

/// A 64-bit hash of `bytes` for ETags: FNV-1a's step over 8-byte words in four independent
/// lanes (32 bytes a round), the lanes folded, the tail word by word and byte by byte, then a
/// final avalanche. Why lanes: each step waits on the previous multiply, so one chain runs at
/// the multiplier's latency; four chains keep it busy. A 32 KiB PVRTC payload is hashed per
/// raw-tile request, and one chain was still the server's top symbol under wrk (serve-bench).
/// Not a defence against chosen collisions: an ETag only saves a client a download.
/// - Cost: O(bytes), about a cycle per 8 bytes.
func fnv1a(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
    let prime: UInt64 = 0x0000_0100_0000_01b3
    @inline(__always) func step(_ h: UInt64, _ w: UInt64) -> UInt64 {
        let m = (h ^ w) &* prime
        return m ^ (m >> 29)
    }
    var lanes = (seed, seed ^ 0x9e37_79b9_7f4a_7c15, seed ^ 0xc2b2_ae3d_27d4_eb4f, seed ^ 0x1656_67b1_9e37_79f9)
    let rounds = bytes.count / 32
    var i = 0
    while i < rounds {
        let o = i * 32
        lanes.0 = step(lanes.0, bytes.loadUnaligned(fromByteOffset: o, as: UInt64.self))
        lanes.1 = step(lanes.1, bytes.loadUnaligned(fromByteOffset: o + 8, as: UInt64.self))
        lanes.2 = step(lanes.2, bytes.loadUnaligned(fromByteOffset: o + 16, as: UInt64.self))
        lanes.3 = step(lanes.3, bytes.loadUnaligned(fromByteOffset: o + 24, as: UInt64.self))
        i += 1
    }
    var h = step(step(step(step(seed, lanes.0), lanes.1), lanes.2), lanes.3)
    var o = rounds * 32
    while o + 8 <= bytes.count {
        h = step(h, bytes.loadUnaligned(fromByteOffset: o, as: UInt64.self))
        o += 8
    }
    for b in bytes[o...] { h = (h ^ UInt64(b)) &* prime }
    h ^= UInt64(bytes.count)
    h = (h ^ (h >> 33)) &* 0xff51_afd7_ed55_8ccd
    return h ^ (h >> 33)
}

func hex16(_ v: UInt64) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: 16 - s.count) + s
}
