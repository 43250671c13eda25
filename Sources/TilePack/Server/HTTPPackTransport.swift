import AsyncHTTPClient
import TilePackRegions

/// The ``PackTransport`` over AsyncHTTPClient, of `tilepack download` and of `serve`'s store
/// actions (the viewer's Download button fetches from the server's own routes over loopback,
/// as a device would): the body streams chunk by chunk as NIO receives it (no whole-file buffer), redirects are not
/// followed (a pack
/// server answers in place; a redirect elsewhere would carry the transaction away), and
/// connects and reads time out so a dead server fails instead of hanging a download.
///
/// Threads: Sendable. Call ``shutdown()`` once when done.
public struct HTTPPackTransport: PackTransport {
    /// Head of a response within this time (the body then streams on the read timeout).
    public static let headTimeoutSeconds: Int64 = 60
    let client: HTTPClient

    /// - Parameters:
    ///   - connectTimeout: seconds to open a connection.
    ///   - readTimeout: seconds without a byte before a transfer is abandoned.
    public init(connectTimeout: Int64 = 15, readTimeout: Int64 = 30) {
        var configuration = HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(connectTimeout), read: .seconds(readTimeout)))
        configuration.decompression = .disabled
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    public func get(url: String, headers: [(String, String)]) async throws -> PackResponse {
        try await send(head: false, url: url, headers: headers)
    }

    public func head(url: String, headers: [(String, String)]) async throws -> PackResponse {
        try await send(head: true, url: url, headers: headers)
    }

    private func send(head: Bool, url: String, headers: [(String, String)]) async throws -> PackResponse {
        var request = HTTPClientRequest(url: url)
        request.method = head ? .HEAD : .GET
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: .seconds(Self.headTimeoutSeconds))
        let body =
            head ? PackBody.empty : PackBody(response.body.map { @Sendable buffer in Array(buffer.readableBytesView) })
        return PackResponse(
            status: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) }, body: body)
    }

    public func shutdown() async {
        try? await client.shutdown()
    }
}
