import TilePackCore

extension RegionInstaller {
    /// Fetches the shop's signed catalog (`GET /catalog`) into the library as `catalog.jws`
    /// when it verifies with the publisher keys and its serial is higher than the library's
    /// own (or the library has none that verifies): how a device learns what is for sale
    /// before it buys. Returns the serial written, nil when the library's was kept.
    ///
    /// An older, unsigned or foreign catalog is refused and the library's kept; the library
    /// checks the file again at every open anyway (it fails closed on a bad one).
    /// - Throws: ``PackError``: `network` (no answer), `badSignature` (it does not verify).
    /// - Cost: one request of at most ``SignedCatalog/maxFileBytes``, one Ed25519 verification.
    public static func refreshCatalog(
        server: String, transport: any PackTransport, libraryDirectory: String,
        publisherKeys: [JWK]
    ) async throws -> Int64? {
        var base = server
        while base.hasSuffix("/") { base.removeLast() }
        let url = base + "/catalog"
        let response: PackResponse
        do { response = try await transport.get(url: url, headers: [("Accept", "application/jose")]) } catch {
            throw PackError(
                .network, subject: url, "the request failed: \(PackDownload.describe(error))", cause: error)
        }
        guard response.status == 200 else { throw await PackDownload.failure(response, url: url) }
        let body: [UInt8]?
        do { body = try await response.body.collect(limit: SignedCatalog.maxFileBytes) } catch {
            throw PackError(
                .network, subject: url, "the catalog broke off: \(PackDownload.describe(error))", cause: error)
        }
        guard let body, let text = String(validating: body, as: UTF8.self) else {
            throw PackError(
                .network, subject: url, "the catalog is over \(SignedCatalog.maxFileBytes) bytes or not text")
        }
        let jws = String(text.filter { !$0.isWhitespace })
        let offered: Catalog
        do {
            offered = try SignedCatalog.verify(jws, publisherKeys: publisherKeys, path: url, libraryDirectory: nil)
        } catch {
            throw PackError(.badSignature, subject: url, error.detailText)
        }
        let held = try? SignedCatalog.load(libraryDirectory: libraryDirectory, publisherKeys: publisherKeys).catalog
        if let held, (held.serial ?? 0) >= (offered.serial ?? 0) { return nil }
        let dir = libraryDirectory.hasSuffix("/") ? libraryDirectory : libraryDirectory + "/"
        do {
            try RegionFiles.makeDirectories(libraryDirectory)
            try RegionFiles.writeAtomically(
                path: dir + SignedCatalog.fileName, bytes: Array((jws + "\n").utf8), mode: 0o644)
        } catch {
            throw PackError(.io, subject: dir + SignedCatalog.fileName, error.detail)
        }
        return offered.serial ?? 0
    }
}
