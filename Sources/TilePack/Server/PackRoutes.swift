import Hummingbird
import HTTPTypes
import NIOCore
import NIOPosix
import TilePackCore

/// The pack routes on Hummingbird: `/catalog`, `/packs`, `/packs/{id}`,
/// `/packs/{id}/deltas/{from}` over ``PackService``, and the streaming of file bodies.
extension TileServer {
    static func addPackRoutes(_ router: Router<TileRequestContext>, _ service: TileService) {
        router.get("/catalog") { request, _ in
            response(PackService.catalog(of: service.library, ifNoneMatch: request.headers[.ifNoneMatch]))
        }
        guard let packs = service.packs else { return }
        router.get("/packs") { _, _ in response(packs.listing()) }
        for head in [false, true] {
            let method: HTTPRequest.Method = head ? .head : .get
            router.on("/packs/{id}", method: method) { request, context in
                response(
                    eventLoop: context.eventLoop,
                    packs.file(
                        id: context.parameters.get("id") ?? "", head: head,
                        authorization: request.headers[.authorization], range: request.headers[.range],
                        ifRange: request.headers[.ifRange], ifNoneMatch: request.headers[.ifNoneMatch]))
            }
            router.on("/packs/{id}/deltas/{from}", method: method) { request, context in
                response(
                    eventLoop: context.eventLoop,
                    packs.file(
                        id: context.parameters.get("id") ?? "", deltaFrom: context.parameters.get("from") ?? "",
                        head: head,
                        authorization: request.headers[.authorization], range: request.headers[.range],
                        ifRange: request.headers[.ifRange], ifNoneMatch: request.headers[.ifNoneMatch]))
            }
        }
    }

    static func response(eventLoop: any EventLoop, _ reply: PackReply) -> Response {
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
            return Response(
                status: status, headers: headers,
                body: fileBody(file, first: reply.first, length: length, eventLoop: eventLoop))
        }
    }

    /// `length` bytes of `file` from `first`, read on NIO's blocking-I/O thread pool (as
    /// Hummingbird's FileIO reads) in ``PackService/chunkBytes`` pieces, each written before
    /// the next is read. The connection's writer suspends while the socket's buffer is full,
    /// and each piece waits until the connection's event loop has taken the previous one.
    ///
    /// Memory: the pieces are read into a ring of ``PackService/chunkRing`` buffers that the
    /// download reuses, so a download holds at most that many pieces however large the file
    /// and however slow the client. Reusing them matters as much as bounding them: a fresh
    /// 128 KiB allocation per piece, freed on another thread, grew glibc's heap to 1 GiB of
    /// resident memory for 50 downloads of a 200 MB pack (serve-packs-bench), though never more
    /// than a few MiB were live. A buffer the connection still holds when its turn comes again
    /// is copied on write by ByteBuffer (correct, one allocation), never overwritten.
    ///
    /// A file that ends early (truncated under us) ends the response with an error: the client
    /// sees fewer bytes than `Content-Length`, never bytes of another file.
    static func fileBody(_ file: OpenPackFile, first: Int64, length: Int, eventLoop: any EventLoop) -> ResponseBody {
        ResponseBody(contentLength: length) { writer in
            let allocator = ByteBufferAllocator()
            let ring = (0..<PackService.chunkRing).map { _ in
                ChunkSlot(allocator.buffer(capacity: PackService.chunkBytes))
            }
            var offset = first
            var remaining = length
            var turn = 0
            while remaining > 0 {
                let count = min(PackService.chunkBytes, remaining)
                let at = offset
                let slot = ring[turn % ring.count]
                turn += 1
                let chunk = try await NIOThreadPool.singleton.runIfActive { () throws -> ByteBuffer in
                    try slot.buffer.withLock { buffer in
                        buffer.clear()
                        let read = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw in
                            file.read(at: at, into: UnsafeMutableRawBufferPointer(rebasing: raw[0..<count])) ? count : 0
                        }
                        guard read == count else { throw PackFileTruncated(path: file.file.path) }
                        return buffer
                    }
                }
                try await writer.write(chunk)
                // The writer hands the piece to the connection's event loop and returns; it
                // suspends only once the connection reports its buffer full, which the loop
                // says only after it has taken the piece. A loop busy with other connections
                // would otherwise let this download queue piece after piece in memory (the
                // server's RSS went past 160 MiB): wait until the loop has taken this one.
                try await eventLoop.submit {}.get()
                offset += Int64(count)
                remaining -= count
            }
            try await writer.finish(nil)
        }
    }
}

/// One reusable read buffer of a download. The mutex is uncontended (one download's reads
/// follow each other); it makes the buffer's hand-over between the request's task and the
/// thread pool's thread sound without copying it (a copy would defeat the reuse).
final class ChunkSlot: Sendable {
    let buffer: Locked<ByteBuffer>
    init(_ buffer: ByteBuffer) { self.buffer = Locked(buffer) }
}

/// A pack or delta file that ended before the bytes announced (it was truncated while served).
struct PackFileTruncated: Error, CustomStringConvertible {
    let path: String
    var description: String { "\(path): the file ended before the bytes announced (truncated while served)" }
}
