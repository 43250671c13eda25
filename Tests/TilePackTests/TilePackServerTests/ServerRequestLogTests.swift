import Foundation
import Hummingbird
import HummingbirdTesting
import HTTPTypes
import Logging
import Synchronization
import Testing
@testable import TilePackServer
import TilePackTestSupport

/// `serve`'s request log: one line per request with method, path, status, bytes and latency,
/// never a header, secret-looking query values redacted.
@Suite("Server: request log lines")
struct ServerRequestLogTests {
    /// Keeps every message logged through it.
    final class Captured: Sendable {
        let lines = Mutex<[String]>([])
        var all: [String] { lines.withLock { $0 } }
    }

    struct CapturingHandler: LogHandler {
        let captured: Captured
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { captured.lines.withLock { $0.append("\(event.message)") } }
    }

    @Test func aLineCarriesMethodPathStatusBytesAndLatency() {
        let line = RequestLogLine(
            method: "GET", target: "/tiles/a/1/2/3.png", status: 200, bytes: 5123, latency: .microseconds(1840))
        #expect(line.description == "GET /tiles/a/1/2/3.png 200 5123 B 1.8 ms")
        let streamed = RequestLogLine(method: "GET", target: "/packs/x", status: 206, bytes: nil, latency: .seconds(2))
        #expect(streamed.description == "GET /packs/x 206 - B 2000.0 ms")
    }

    @Test func secretsInTheQueryAreRedactedAndControlCharactersEscaped() {
        #expect(
            RequestLogLine.redacted("/packs/a?access_token=abc.def.ghi&v=2&API_Key=s3&signature=x")
                == "/packs/a?access_token=REDACTED&v=2&API_Key=REDACTED&signature=REDACTED")
        #expect(RequestLogLine.redacted("/query?lat=1&lon=2&zoom=3") == "/query?lat=1&lon=2&zoom=3")
        #expect(RequestLogLine.redacted("/a\nGET /forged") == "/a\\nGET /forged")
    }

    /// Through the router: the status of a found and a missing route, the body's bytes, and no
    /// trace of the Authorization header or the token in the query.
    @Test func theRouterLogsEveryRequestWithoutSecrets() async throws {
        let captured = Captured()
        let logger = Logger(label: "test") { _ in CapturingHandler(captured: captured) }
        let dir = TemporaryDirectory()
        var options = TileService.Options()
        options.libraryDirectory = dir.path
        let service = try TileService(options)
        let app = Application(router: TileServer.router(service), logger: logger)
        let secret = "eyJhbGciOiJFUzI1NiJ9.payload.signature"
        try await app.test(.router) { client in
            try await client.execute(
                uri: "/regions?token=\(secret)", method: .get, headers: [.authorization: "Bearer \(secret)"]
            ) { r in
                #expect(r.status == .ok)
            }
            try await client.execute(uri: "/nosuch", method: .get) { r in #expect(r.status == .notFound) }
        }
        let lines = captured.all.filter { $0.hasPrefix("GET ") }
        #expect(lines.count == 2, "\(captured.all)")
        #expect(lines.allSatisfy { !$0.contains(secret) && !$0.contains("Bearer") }, "\(lines)")
        #expect(lines.first?.hasPrefix("GET /regions?token=REDACTED 200 ") == true, "\(lines)")
        #expect(lines.last?.hasPrefix("GET /nosuch 404 ") == true, "\(lines)")
        #expect(
            lines.allSatisfy { $0.range(of: #" \d+ B \d+\.\d ms$"#, options: .regularExpression) != nil }, "\(lines)")
    }
}
