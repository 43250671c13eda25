import Hummingbird
import HTTPTypes
import NIOCore
import NIOPosix
import TilePackCore

/// The pack routes on Hummingbird: `/catalog`, `/packs`, `/packs/{id}`,
/// `/packs/{id}/deltas/{from}` over ``PackService``, and the streaming of file bodies.
extension TileServer {
    static func addPackRoutes(_ router: Router<BasicRequestContext>, _ service: TileService) {
        router.get("/catalog") { request, _ in
            response(PackService.catalog(of: service.library, ifNoneMatch: request.headers[.ifNoneMatch]))
        }
        guard let packs = service.packs else { return }
        router.get("/packs") { _, _ in response(packs.listing()) }
        for head in [false, true] {
            let method: HTTPRequest.Method = head ? .head : .get
            router.on("/packs/{id}", method: method) { request, context in
                response(packs.file(id: context.parameters.get("id") ?? "", head: head,
                                    authorization: request.headers[.authorization], range: request.headers[.range],
                                    ifRange: request.headers[.ifRange], ifNoneMatch: request.headers[.ifNoneMatch]))
            }
            router.on("/packs/{id}/deltas/{from}", method: method) { request, context in
                response(packs.file(id: context.parameters.get("id") ?? "", deltaFrom: context.parameters.get("from") ?? "", head: head,
                                    authorization: request.headers[.authorization], range: request.headers[.range],
                                    ifRange: request.headers[.ifRange], ifNoneMatch: request.headers[.ifNoneMatch]))
            }
        }
    }

    static func response(_ reply: PackReply) -> Response {
        switch reply {
        case .served(let served):
            return response(served)
        case .file(let reply):
            var headers = HTTPFields()
            headers[.contentType] = reply.contentType
            for (name, value) in reply.headers {
                if let field = HTTPField.Name(name) { headers.append(HTTPField(name: field, value: value)) }
            }
            headers[.contentLength] = "\(reply.length)"
            let status = HTTPResponse.Status(code: reply.status)
            guard let file = reply.file, let length = Int(exactly: reply.length) else {
                return Response(status: status, headers: headers, body: ResponseBody())
            }
            return Response(status: status, headers: headers, body: fileBody(file, first: reply.first, length: length))
        }
    }

    /// `length` bytes of `file` from `first`, read on NIO's blocking-I/O thread pool (as
    /// Hummingbird's FileIO reads) in ``PackService/chunkBytes`` pieces, each written before
    /// the next is read. The connection's writer suspends while the socket's buffer is full,
    /// so a download holds about two pieces in memory however large the file and however
    /// slow the client. A file that ends early (truncated under us) ends the response with an
    /// error: the client sees fewer bytes than `Content-Length`, never bytes of another file.
    static func fileBody(_ file: OpenPackFile, first: Int64, length: Int) -> ResponseBody {
        ResponseBody(contentLength: length) { writer in
            var offset = first
            var remaining = length
            let allocator = ByteBufferAllocator()
            while remaining > 0 {
                let count = min(PackService.chunkBytes, remaining)
                let at = offset
                let chunk = try await NIOThreadPool.singleton.runIfActive { () throws -> ByteBuffer in
                    var buffer = allocator.buffer(capacity: count)
                    let complete = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                        file.read(at: at, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])) ? count : 0
                    }
                    guard complete == count else { throw PackFileTruncated(path: file.file.path) }
                    return buffer
                }
                try await writer.write(chunk)
                offset += Int64(count)
                remaining -= count
            }
            try await writer.finish(nil)
        }
    }
}

/// A pack or delta file that ended before the bytes announced (it was truncated while served).
struct PackFileTruncated: Error, CustomStringConvertible {
    let path: String
    var description: String { "\(path): the file ended before the bytes announced (truncated while served)" }
}
