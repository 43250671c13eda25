import TilePackCore
import TilePackRegions

/// What `tilepack serve --packs DIR` adds: the signed catalog, the list of packs with their
/// sizes, and the packs and deltas themselves, streamed from disk, resumable, to whoever may
/// have them (``PackAuthorizer``). Routes, as plain functions like ``TileService``'s:
///
/// - `GET /catalog`: the library's `catalog.jws` as published (`application/jose`), 404 without.
/// - `GET /packs`: `{"packs": [{manifest fields, "manifest": JWS, "url", "deltas": [{"from",
///   "url", "bytes"}]}]}`, sorted by `pack_id`. Public: an app shows sizes before a purchase.
/// - `GET`/`HEAD /packs/{id}` and `/packs/{id}/deltas/{from}`: the file (``PackReply/file(_:)``),
///   with `ETag` (strong), `Accept-Ranges: bytes`, `Range`/`If-Range` (``PackRange``),
///   `If-None-Match` (304). HEAD needs the same authorization as GET (it answers what GET
///   would, without the body, so a client learns whether its token works before downloading)
///   and ignores `Range` (RFC 9110: Range is defined for GET only), giving the whole size.
///
/// Errors are the server's JSON shape (`{"error", "message", "status"}`) with the
/// ``PackError`` code as `error`: 401 `missingTransaction`/`invalidTransaction` (with
/// `WWW-Authenticate: Bearer`), 403 `notEntitled`/`revoked`/`expired`, 404 `notFound`, 416
/// `rangeNotSatisfiable`, 503 `unavailable` (the server cannot check a purchase now: no store,
/// no trusted catalog, the store did not answer).
///
/// Threads: Sendable. Cost per file request: one `stat` of the directory, the authorization
/// (paid packs), one `open`+`fstat`; the body is read by the adapter in ``chunkBytes`` pieces.
public final class PackService: Sendable {
    /// The piece of a file read and handed to the connection at a time.
    public static let chunkBytes = 256 << 10
    /// Read buffers per download, reused in turn (``TileServer``'s file body): at most this
    /// many pieces of a download are in memory at once.
    public static let chunkRing = 2

    public let directory: ServedPacks
    let library: RegionLibrary
    let authorizer: PackAuthorizer

    /// - Parameters:
    ///   - library: the served library: its trust anchors verify manifests and transactions,
    ///     its catalog says what includes what, its storefront is asked about refunds.
    ///   - packsDirectory: the publisher's packs (`tilepack pack -o`).
    ///   - report: one line per pack or delta skipped, at start and on re-scans.
    /// - Throws: ``PackError`` (`io`) when the directory cannot be listed.
    public init(
        library: RegionLibrary, packsDirectory: String, report: @escaping @Sendable (String) -> Void
    ) throws(PackError) {
        self.library = library
        authorizer = PackAuthorizer(library: library)
        directory = try ServedPacks(path: packsDirectory, publisherKeys: library.trust?.publisherKeys, report: report)
    }

    /// Why this server cannot deliver paid packs, nil when it can (`serve` says it at start).
    public var salesProblem: String? { authorizer.salesProblem }

    // MARK: - Catalog and listing

    /// `GET /catalog`: `catalog.jws` as the publisher signed it; devices verify it themselves.
    /// Served with or without `--packs`.
    /// - Cost: one bounded read of the file (at most ``SignedCatalog/maxFileBytes``).
    public static func catalog(of library: RegionLibrary, ifNoneMatch: String? = nil) -> ServedResponse {
        let path = library.directory + "/" + SignedCatalog.fileName
        let bytes: [UInt8]
        do {
            bytes = try RegionFiles.regularFileBytes(path: path, limit: SignedCatalog.maxFileBytes)
        } catch  where error.category == .notFound {
            return .error(
                404, kind: "notFound", message: "this library has no signed catalog (\(SignedCatalog.fileName))")
        } catch {
            return .error(500, kind: "environment", message: "\(SignedCatalog.fileName): \(error.problem)")
        }
        let etag = "\"c" + bytes.withUnsafeBytes { hex16(fnv1a($0)) } + "\""
        if TileService.matches(ifNoneMatch, etag) {
            return ServedResponse(
                status: 304, contentType: "", headers: [("ETag", etag), ("Cache-Control", "no-cache")], body: [])
        }
        return ServedResponse(
            contentType: "application/jose", headers: [("ETag", etag), ("Cache-Control", "no-cache")], body: bytes)
    }

    /// `GET /packs`.
    public func listing() -> ServedResponse {
        do {
            let entries = directory.packs().map(PackListing.init)
            return .json(try JSONOutput.string(PackList(packs: entries)))
        } catch {
            return .from(error)
        }
    }

    /// How many packs are offered (for `/store`).
    public var count: Int { directory.packs().count }

    struct PackList: Encodable { let packs: [PackListing] }

    /// One pack in `/packs`: the manifest's own fields (its coding keys), then ours.
    struct PackListing: Encodable {
        let pack: ServedPack

        enum Keys: String, CodingKey { case manifest, url, deltas }
        struct Delta: Encodable { let from: Int, url: String, bytes: Int64 }

        func encode(to encoder: any Encoder) throws {
            try pack.manifest.encode(to: encoder)
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(pack.jws, forKey: .manifest)
            try c.encode(PackService.url(pack.id), forKey: .url)
            try c.encode(
                pack.deltas.map {
                    Delta(from: $0.from, url: PackService.url(pack.id, deltaFrom: $0.from), bytes: $0.file.size)
                },
                forKey: .deltas)
        }
    }

    static func url(_ id: String) -> String { "/packs/" + id }
    static func url(_ id: String, deltaFrom from: Int) -> String { "/packs/\(id)/deltas/\(from)" }

    // MARK: - Files

    /// `GET`/`HEAD /packs/{id}` (`deltaFrom` nil) and `/packs/{id}/deltas/{from}`. Header values
    /// are passed raw (nil when absent).
    public func file(
        id: String, deltaFrom: String? = nil, head: Bool, authorization: String?, range: String?,
        ifRange: String?, ifNoneMatch: String?
    ) -> PackReply {
        guard let pack = directory.pack(id) else {
            return .served(
                .error(
                    404, kind: "notFound",
                    message: "no pack \(TileService.shown(id)) on this server (GET /packs lists them)"))
        }
        var file = pack.file
        if let deltaFrom {
            guard let from = TileService.integer(deltaFrom[...]),
                let delta = pack.deltas.first(where: { $0.from == from })
            else {
                return .served(
                    .error(
                        404, kind: "notFound",
                        message:
                            """
                            pack \(id) has no delta from version \(TileService.shown(deltaFrom)) on this server \
                            (version \(pack.manifest.version))
                            """
                    ))
            }
            file = delta.file
        }
        do throws(PackError) {
            try authorizer.authorize(pack.manifest, authorization: authorization)
        } catch {
            return .served(Self.response(error))
        }
        var headers: [(String, String)] = [
            ("ETag", file.etag), ("Accept-Ranges", "bytes"),
            // Paid bytes are never for shared caches; revalidation is cheap with the ETag.
            ("Cache-Control", pack.manifest.productID == nil ? "public, no-cache" : "private, no-cache"),
        ]
        if TileService.matches(ifNoneMatch, file.etag) {
            return .served(ServedResponse(status: 304, contentType: "", headers: headers, body: []))
        }
        let contentType = "application/vnd.sqlite3"
        if head {
            return .file(
                PackFileReply(
                    status: 200, contentType: contentType, headers: headers, first: 0, length: file.size, file: nil))
        }
        let first: Int64, length: Int64, status: Int
        switch PackRange.answer(range: range, ifRange: ifRange, size: file.size, etag: file.etag) {
        case .bytes(let code, let from, let count, let extra):
            (first, length, status) = (from, count, code)
            headers += extra
        case .refused(let response):
            return .served(response)
        }
        // The file must still be the one scanned (same inode and size): else scan again once
        // (a new version renamed in), and refuse rather than stream bytes under another ETag.
        guard let handle = directory.openFile(file) else {
            directory.rescan()
            return .served(
                .error(503, kind: "unavailable", message: "pack \(id) changed while it was being served; ask again")
                    .adding([("Retry-After", "1")]))
        }
        return .file(
            PackFileReply(
                status: status, contentType: contentType, headers: headers, first: first, length: length, file: handle))
    }

    /// A ``PackError`` as the server's JSON error with its HTTP status.
    static func response(_ error: PackError) -> ServedResponse {
        let status: Int
        var extra: [(String, String)] = []
        switch error.code {
        case .missingTransaction, .invalidTransaction:
            status = 401
            extra.append(("WWW-Authenticate", "Bearer realm=\"tilepack packs\""))
        case .notEntitled, .revoked, .expired: status = 403
        case .notFound: status = 404
        case .invalidInput: status = 400
        case .network: status = 503
        default: status = 500
        }
        let kind = error.code == .network ? "unavailable" : error.code.rawValue
        var message = error.description
        if let cause = error.cause { message += " (\(ErrorText.oneLine("\(cause)")))" }
        return ServedResponse.error(status, kind: kind, message: message).adding(extra)
    }
}

/// What a pack route answers: a small response, or a file to stream.
public enum PackReply: Sendable {
    case served(ServedResponse)
    case file(PackFileReply)
}

/// A file body: `length` bytes from `first` of `file`, read by the HTTP adapter in
/// ``PackService/chunkBytes`` pieces; `file` nil for HEAD (headers only, `Content-Length`
/// `length`).
public struct PackFileReply: Sendable {
    public var status: Int
    public var contentType: String
    public var headers: [(String, String)]
    public var first: Int64
    public var length: Int64
    public let file: OpenPackFile?
}

extension ServedResponse {
    /// The response with `more` headers appended.
    func adding(_ more: [(String, String)]) -> ServedResponse {
        var copy = self
        copy.headers += more
        return copy
    }
}
