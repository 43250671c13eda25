import TilePackCore

/// What a publisher signs: the catalog's JSON bytes with `archive_sha256` complete, and the
/// same catalog decoded and validated.
///
/// Why both: signing checks the catalog (version 2, a hash for every archive, zooms the
/// archives hold) and then signs its bytes. Carrying the decoded form beside the bytes lets
/// `tilepack catalog sign` decode a 40,000-product catalog once instead of three times
/// (issue 27: under 1 s for ~6 MB).
///
/// Invariant: `catalog` is what decoding `bytes` gives (checked in debug builds when the
/// bytes were rewritten; a test checks the round trip).
package struct CatalogPayload: Sendable {
    /// The JSON to sign.
    public let bytes: [UInt8]
    /// `bytes`, decoded and validated (no library directory: every product available).
    public let catalog: Catalog
    /// The archives whose SHA-256 was added from the library, in catalog order.
    public let hashed: [String]

    /// `bytes` as they are: decoded and validated once.
    /// - Throws: ``CatalogError`` for an invalid catalog; `path` names it.
    /// - Cost: one decode, O(bytes).
    public init(bytes: [UInt8], path: String) throws(CatalogError) {
        self.bytes = bytes
        self.catalog = try Catalog.typed(json: bytes, path: path)
        self.hashed = []
    }

    /// `bytes` with `archive_sha256` filled in from the archives in `libraryDirectory` for every
    /// archive a product names and the file gives no hash for; the same bytes when nothing was
    /// missing. What `tilepack catalog sign` signs.
    /// - Throws: ``CatalogError`` for an invalid catalog, a version-1 catalog, or a named
    ///   archive that is missing.
    /// - Cost: one decode, one SHA-256 pass per archive hashed, and one encode when any was.
    public init(filling bytes: [UInt8], path: String, libraryDirectory: String) throws(CatalogError) {
        let catalog = try Catalog.typed(json: bytes, path: path)
        guard catalog.version >= 2 else {
            throw CatalogError(
                path: path, field: "version", code: .unsupportedVersion,
                detail: "\(catalog.version): a signed catalog is version 2 (add \"serial\": 1)")
        }
        var hashes = catalog.archiveSHA256
        var hashed: [String] = []
        let dir = libraryDirectory.hasSuffix("/") ? libraryDirectory : libraryDirectory + "/"
        for name in catalog.products.flatMap(\.archives) where hashes[name] == nil {
            do {
                hashes[name] = try FileDigest.sha256(path: dir + name)
            } catch {
                throw CatalogError(
                    path: dir + name, field: nil, code: .notFound,
                    detail: "\(error.detail) (the catalog names it and gives no SHA-256)")
            }
            hashed.append(name)
        }
        self.hashed = hashed
        if hashed.isEmpty {
            self.bytes = bytes
            self.catalog = catalog
            return
        }
        let filled = Catalog(catalog, archiveSHA256: hashes)
        do {
            self.bytes = Array((try JSONOutput.string(filled) + "\n").utf8)
        } catch {
            throw CatalogError(path: path, field: nil, code: .malformed, detail: "cannot be written back: \(error)")
        }
        self.catalog = filled
        assert(Self.decodes(self.bytes, to: filled), "\(path): the rewritten catalog does not decode to itself")
    }

    /// Whether `bytes` decode to `catalog`'s products and hashes (the debug invariant).
    static func decodes(_ bytes: [UInt8], to catalog: Catalog) -> Bool {
        guard let again = try? Catalog(json: bytes, path: "", libraryDirectory: nil) else { return false }
        return again.products == catalog.products && again.archiveSHA256 == catalog.archiveSHA256
            && again.serial == catalog.serial && again.freeMaxZoom == catalog.freeMaxZoom
    }
}

extension Catalog {
    /// ``init(json:path:libraryDirectory:)`` (no library) with its typed error.
    static func typed(json: [UInt8], path: String) throws(CatalogError) -> Catalog {
        try CatalogError.typed({ try Catalog(json: json, path: path, libraryDirectory: nil) }) {
            CatalogError(path: path, field: nil, code: .malformed, detail: "\($0)")
        }
    }
}
