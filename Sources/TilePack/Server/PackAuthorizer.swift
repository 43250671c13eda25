import TilePackCore
import TilePackRegions

/// Who may download a pack from `serve --packs`: the server's half of the region store's
/// trust model, with the device's code (``AppStoreVerifier`` over the library's
/// ``TrustAnchors``) and the store's current word (``Storefront/currentTransaction(id:bundleID:)``).
///
/// The free pack (no `product_id`) needs nothing. A paid pack needs `Authorization: Bearer
/// <JWS>`, a signed App Store transaction, and every step below; the first that fails is the
/// answer (``PackError`` code → HTTP status in ``PackService``):
/// 1. the server can sell at all — a store library (trust anchors; an open library has no way
///    to check a purchase: `notEntitled`), a catalog that verified (else `network`, 503), a
///    store to ask (`--simulator DIR`; else `network`, 503). Never open when unsure.
/// 2. a bearer token is there and looks like a compact JWS (`missingTransaction`, 401);
/// 3. it verifies as the device verifies it: chain to a pinned root, ES256, bundle id,
///    environment (`invalidTransaction`, 401);
/// 4. its product, of the type the catalog's kind sells (`Non-Consumable` for a region or
///    bundle, `Auto-Renewable Subscription` for a subscription), includes the pack's product
///    (``Catalog/entitlementClosure(of:)``) (`notEntitled`, 403);
/// 5. the store's current version of that transaction (verified the same way, same id and
///    product) is not revoked (`revoked`, 403; a store that does not know it: `revoked`; a
///    store that does not answer: `network`, 503);
/// 6. a subscription whose current `expiresDate` has passed keeps only pack versions released
///    before it (`released_at` ≤ `expiresDate`; else `expired`, 403): what was bought stays
///    bought. A delta is judged by its pack's current manifest (the version it leads to may
///    be older, but only the current one's `released_at` is signed here).
///
/// Cost: one ES256 verification of the token (chains cached), one store lookup (a SQLite
/// SELECT for the test App Store; an HTTPS call for Apple's), one verification of its answer.
/// Nothing is cached between requests, so a refund counts from the next request.
struct PackAuthorizer: Sendable {
    let library: RegionLibrary
    /// Over the library's trust anchors; nil for an open library.
    let verifier: AppStoreVerifier?

    init(library: RegionLibrary) {
        self.library = library
        verifier = library.trust.map { AppStoreVerifier(anchors: $0) }
    }

    /// Why paid packs cannot be delivered by this server at all, nil when they can (said at start).
    var salesProblem: String? {
        guard library.trust != nil else {
            return
                """
                the library is open (no trust anchors): only the free pack is served, paid packs answer 403 \
                notEntitled
                """
        }
        if let problem = library.catalogProblem {
            return "the catalog is not trusted (\(problem.description)): paid packs answer 503"
        }
        if library.catalog == nil { return "the library has no catalog: paid packs answer 503" }
        if library.storefront == nil {
            return "no store to check purchases with (give --simulator DIR): paid packs answer 503"
        }
        return nil
    }

    /// Returns when `authorization` (the raw header, nil when absent) may download `manifest`'s
    /// pack (or one of its deltas); throws the reason otherwise.
    func authorize(_ manifest: PackManifest, authorization: String?) throws(PackError) {
        guard let product = manifest.productID else { return }
        let subject = "pack \(manifest.packID)"
        guard let trust = library.trust, let verifier else {
            throw PackError(
                .notEntitled, subject: subject,
                """
                this server's library is open (no trust anchors): it cannot check a purchase, so it serves only \
                the free pack
                """
            )
        }
        guard let catalog = library.catalog, library.catalogProblem == nil else {
            throw PackError(.network, subject: subject, "this server has no trusted catalog: paid packs are not served")
        }
        guard let storefront = library.storefront else {
            throw PackError(
                .network, subject: subject,
                "this server has no store to check purchases with: paid packs are not served")
        }
        guard let token = Self.bearerToken(authorization) else {
            throw PackError(
                .missingTransaction, subject: subject,
                "send Authorization: Bearer <the signed App Store transaction that bought \(product)>")
        }
        let presented: AppStoreTransaction
        do {
            presented = try verifier.verifyTransaction(token, source: "Authorization")
        } catch {
            throw PackError(.invalidTransaction, subject: subject, "\(error)")
        }
        guard let id = presented.transactionId, let bought = presented.productId else {
            throw PackError(
                .invalidTransaction, subject: subject, "the transaction names no transactionId or productId")
        }
        guard let boughtProduct = catalog.product(id: bought),
            presented.type == RegionLibrary.storeType(of: boughtProduct.kind),
            catalog.entitlementClosure(of: [bought]).contains(product)
        else {
            throw PackError(
                .notEntitled, subject: subject,
                """
                transaction \(id) buys \(ErrorText.quoted(bought)) (\(presented.type?.rawValue ?? "no type")), \
                which does not include \(product)
                """
            )
        }
        let answer: String?
        do {
            answer = try storefront.currentTransaction(id: id, bundleID: trust.bundleID)
        } catch {
            throw PackError(
                .network, subject: subject, "the store did not answer for transaction \(id)", cause: error)
        }
        guard let answer else {
            throw PackError(.revoked, subject: subject, "the store knows no transaction \(id)")
        }
        let current: AppStoreTransaction
        do {
            current = try verifier.verifyTransaction(answer, source: "the store's transaction \(id)")
        } catch {
            throw PackError(
                .network, subject: subject, "the store's answer for transaction \(id) does not verify",
                cause: error)
        }
        guard current.transactionId == id, current.productId == bought, current.type == presented.type else {
            throw PackError(.network, subject: subject, "the store answered another transaction than \(id)")
        }
        if let revoked = current.revocationDate {
            throw PackError(
                .revoked, subject: subject,
                """
                transaction \(id) was refunded or revoked at \
                \(AppStoreDate.text(milliseconds: revoked.appStoreMilliseconds))
                """
            )
        }
        if let expires = current.expiresDate?.appStoreMilliseconds, expires <= nowMilliseconds(),
            manifest.releasedAt > expires
        {
            throw PackError(
                .expired, subject: subject,
                """
                the subscription of transaction \(id) ended at \(AppStoreDate.text(milliseconds: expires)), \
                before version \(manifest.version) was released \
                (\(AppStoreDate.text(milliseconds: manifest.releasedAt)))
                """
            )
        }
    }

    /// The library clock's time in ms (a clock outside 1970…9999 counts as the far future:
    /// every subscription has then ended).
    private func nowMilliseconds() -> Int64 {
        let now = library.clock.now()
        return now.isInAppStoreRange ? now.appStoreMilliseconds : Int64.max
    }

    /// The token of `Bearer TOKEN` (scheme case-insensitive), when TOKEN is 1…64 KiB of
    /// base64url and dots; nil for anything else (missing or garbled: `missingTransaction`).
    static func bearerToken(_ header: String?) -> String? {
        guard let header, header.utf8.count <= AppStoreVerifier.maxCompactLength + 16 else { return nil }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1]
        guard
            token.utf8.allSatisfy({ b in
                (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x2d
                    || b == 0x5f || b == 0x2e
            }), token.utf8.filter({ $0 == 0x2e }).count == 2
        else { return nil }
        return String(token)
    }
}
