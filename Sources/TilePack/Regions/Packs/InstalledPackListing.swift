import TilePackCore

/// One installed pack as `tilepack library list --json` and `GET /store/installed` show it:
/// `pack_id`, `version`, `bytes`, `product_id`, `owned` (the library shows it now: free,
/// entitled, or kept by a lapsed subscription; never when damaged), `problem`.
public struct InstalledPackListing: Sendable, Encodable, Equatable {
    public var packID: String
    public var version: Int?
    public var bytes: Int64
    public var productID: String?
    public var owned: Bool
    /// Why the pack is not shown (a manifest that does not verify, a tile index that is not
    /// the signed one, a missing file); nil when it is sound.
    public var problem: String?

    enum CodingKeys: String, CodingKey {
        case packID = "pack_id", version, bytes, productID = "product_id", owned, problem
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(packID, forKey: .packID)
        try c.encodeOrNull(version, forKey: .version)
        try c.encode(bytes, forKey: .bytes)
        try c.encodeOrNull(productID, forKey: .productID)
        try c.encode(owned, forKey: .owned)
        try c.encodeOrNull(problem, forKey: .problem)
    }
}

extension RegionLibrary {
    /// The packs in `packs/`, each checked as opening would check it (signature, file, tile
    /// index digest) — also those installed after this library was opened — and whether it
    /// shows for this account now.
    /// - Throws: ``PackError`` (`invalidInput`) for an open library, which has no packs.
    /// - Cost: per pack, one Ed25519 verification and one scan of its tile index.
    public func installedPackListings() throws -> [InstalledPackListing] {
        guard let trust else {
            throw PackError(
                .invalidInput, subject: directory, "an open library (no trust anchors) has no packs: pass --trust FILE")
        }
        let directory = PackDirectory(library: self.directory)
        return try InstalledPacks(library: self.directory, trust: trust).list().map { pack in
            var problem = pack.problem
            var open = false
            if problem == nil {
                do {
                    let verified = try VerifiedPack.open(
                        directory.manifest(pack.packID), publisherKeys: trust.publisherKeys)
                    open = isPackOpen(verified.manifest)
                } catch {
                    problem = "\(error)"
                }
            }
            return Self.listing(pack, owned: open, problem: problem)
        }
    }

    /// A function of its own: inlined into the closure above, Swift 6.3.1's optimizer crashed on
    /// the reads of `pack.manifest` (CopyPropagation's ownership verifier, `-c release`).
    @inline(never)
    static func listing(_ pack: InstalledPack, owned: Bool, problem: String?) -> InstalledPackListing {
        InstalledPackListing(
            packID: pack.packID, version: pack.manifest?.version, bytes: pack.bytes,
            productID: pack.manifest?.productID, owned: owned && problem == nil, problem: problem)
    }

    /// Whether a pack with this signed manifest shows for this account now (see
    /// ``PackAccessPolicy``). An open library shows every pack.
    public func isPackOpen(_ manifest: PackManifest) -> Bool {
        guard kind == .store else { return true }
        let gate = PackAccessPolicy.Gate(
            packID: manifest.packID, productID: manifest.productID, releasedAt: manifest.releasedAt)
        return PackAccessPolicy(
            base: FreeZoomAccess(maxZoom: Self.failClosedMaxZoom), catalog: catalog,
            entitlements: catalogProblem == nil ? entitlements : nil, layers: [manifest.packID: gate]
        )
        .isOpen(packID: manifest.packID)
    }
}
