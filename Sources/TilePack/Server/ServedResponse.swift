import TilePackCore

/// What a route answers, before HTTP: a status, headers and a body. The routes of
/// ``TileService`` return these so they can be tested and fuzzed without a socket; the
/// Hummingbird adapter (``TileServer``) only copies them into a response.
public struct ServedResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int = 200, contentType: String, headers: [(String, String)] = [], body: [UInt8]) {
        self.status = status; self.contentType = contentType; self.headers = headers; self.body = body
    }

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// A JSON body.
    public static func json(_ text: String, status: Int = 200, cache: String = "no-cache") -> ServedResponse {
        ServedResponse(status: status, contentType: "application/json; charset=utf-8",
                       headers: [("Cache-Control", cache)], body: Array(text.utf8))
    }

    /// `{"error": KIND, "message": TEXT}` with `status`.
    public static func error(_ status: Int, kind: String, message: String, extra: [(String, String)] = []) -> ServedResponse {
        var fields = ["\"error\":\(jsonString(kind))", "\"message\":\(jsonString(message))", "\"status\":\(status)"]
        fields += extra.map { "\(jsonString($0.0)):\($0.1)" }
        return .json("{" + fields.joined(separator: ",") + "}", status: status, cache: "no-store")
    }

    /// The HTTP status for an error category: the server's half of "the CLI maps kinds to
    /// exit codes, the server to HTTP statuses".
    public static func status(for category: TilePackErrorCategory) -> Int {
        switch category {
        case .invalidArgument: 400
        case .notFound: 404
        case .locked: 403
        case .budgetExhausted: 503       // leases fill the budget: try again shortly
        case .unsupported: 501           // an archive of a codec tilepack cannot decode
        case .invalidInput, .environment: 500   // a damaged archive or the machine: not the client's fault
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

/// A JSON string literal.
func jsonString(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case "<": out += "\\u003c"   // safe inside an HTML <script>
        default:
            if scalar.value < 0x20 {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

/// A 64-bit hash of `bytes` for ETags: FNV-1a's step over 8-byte words (then the tail byte by
/// byte) with a final avalanche. Eight times fewer steps than byte-wise FNV-1a: hashing a 32 KiB
/// PVRTC payload took half the time of a raw-tile request before (serve-bench).
func fnv1a(_ bytes: UnsafeRawBufferPointer, seed: UInt64 = 0xcbf2_9ce4_8422_2325) -> UInt64 {
    var h = seed
    let prime: UInt64 = 0x0000_0100_0000_01b3
    let words = bytes.count / 8
    var i = 0
    while i < words {
        let w = bytes.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self)
        h = (h ^ w) &* prime
        h ^= h >> 29
        i += 1
    }
    for b in bytes[(words * 8)...] { h = (h ^ UInt64(b)) &* prime }
    h ^= UInt64(bytes.count)
    h = (h ^ (h >> 33)) &* 0xff51_afd7_ed55_8ccd
    return h ^ (h >> 33)
}

func hex16(_ v: UInt64) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: 16 - s.count) + s
}
