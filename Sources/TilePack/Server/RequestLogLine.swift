import TilePackCore

/// One line of `serve`'s request log: `GET /tiles/alps/12/2126/1459.png 200 5123 B 1.8 ms`:
/// method, path, status, body bytes (`-` when streamed without a length) and latency.
///
/// Never a header (so never `Authorization`), and a query parameter that may carry a secret
/// (a name containing token, key, sig, auth, secret, password, jws or jwt) shows as
/// `name=REDACTED`: logs are copied to places a bearer token must not go.
/// - Cost: one pass over the request target.
package struct RequestLogLine: Sendable, Equatable, CustomStringConvertible {
    package var method: String
    /// Path and query as received, before redaction.
    package var target: String
    package var status: Int
    package var bytes: Int?
    package var latency: Duration

    package init(method: String, target: String, status: Int, bytes: Int?, latency: Duration) {
        self.method = method
        self.target = target
        self.status = status
        self.bytes = bytes
        self.latency = latency
    }

    /// Query parameter names whose values are never logged (matched case-insensitively, as parts).
    static let secretNameParts = ["token", "key", "sig", "auth", "secret", "password", "jws", "jwt"]

    /// `target` with every secret-looking query value replaced by `REDACTED`; control characters
    /// escaped so a hostile path cannot forge a second log line.
    package static func redacted(_ target: String) -> String {
        let safe = String(
            target.unicodeScalars.flatMap { s -> [Character] in
                s.value < 0x20 || s.value == 0x7F ? Array(s.escaped(asASCII: true)) : [Character(s)]
            })
        guard let question = safe.firstIndex(of: "?") else { return safe }
        let path = safe[..<question]
        let pairs = safe[safe.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false).map {
            pair -> String in
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            let lower = name.lowercased()
            return secretNameParts.contains(where: lower.contains) ? "\(name)=REDACTED" : String(pair)
        }
        return path + "?" + pairs.joined(separator: "&")
    }

    package var description: String {
        let ms = Double(latency.components.seconds) * 1e3 + Double(latency.components.attoseconds) / 1e15
        let tenths = (ms * 10).rounded()
        let shown = "\(Int(tenths) / 10).\(Int(tenths) % 10)"
        return "\(method) \(Self.redacted(target)) \(status) \(bytes.map { "\($0) B" } ?? "- B") \(shown) ms"
    }
}
