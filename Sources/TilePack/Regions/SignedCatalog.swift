import TilePackCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A catalog signed by its publisher: `catalog.jws` beside the archives, a JWS in compact
/// serialization whose header is `{"alg":"EdDSA","kid":…,"typ":"tilepack-catalog+jws"}` and
/// whose payload is the catalog's JSON bytes (schema version 2).
///
/// Why signed: the catalog decides what each purchase opens (polygons, zooms, archives, free
/// zooms). On a device whose owner can edit every file, an unsigned catalog is a list the
/// attacker writes; signed with the publisher's Ed25519 key (kept by the publisher, never on
/// the device), it is a list the device can check against the public key compiled into the
/// app (``TrustAnchors/publisherKeys``).
///
/// ```swift
/// let jws = try SignedCatalog.sign(catalogBytes, key: publisherKey)         // the publisher
/// let catalog = try SignedCatalog.load(libraryDirectory: dir, publisherKeys: anchors.publisherKeys)
/// ```
///
/// Cost: one Ed25519 signature or verification (~50 µs), the catalog's decode and, on load
/// from a library, one SHA-256 pass over each archive the catalog names.
public enum SignedCatalog {
    /// The file's name in a library directory.
    public static let fileName = "catalog.jws"
    /// The JWS `typ` of a signed catalog: a transaction or any other token signed by the same
    /// key is never taken for a catalog.
    public static let type = "tilepack-catalog+jws"
    /// base64url grows 4/3, plus the header and signature.
    public static let maxFileBytes = Catalog.maxFileBytes / 3 * 4 + 4096

    /// Signs `bytes` (a version-2 catalog, checked first) with the publisher's key.
    /// - Throws: ``CatalogError`` when `bytes` is not a valid version-2 catalog or names an
    ///   archive it gives no SHA-256 for; `path` names it.
    public static func sign(_ bytes: [UInt8], key: Curve25519.Signing.PrivateKey, path: String) throws -> String {
        try sign(CatalogPayload(bytes: bytes, path: path), key: key, path: path)
    }

    /// Signs a payload already decoded (``CatalogPayload``): no second decode.
    /// - Throws: ``CatalogError`` when the catalog is not version 2 or names an archive it
    ///   gives no SHA-256 for; `path` names it.
    package static func sign(
        _ payload: CatalogPayload, key: Curve25519.Signing.PrivateKey, path: String
    ) throws -> String {
        try requireSignable(payload.catalog, path: path)
        return try JWS.sign(bytes: payload.bytes, key: key, kid: JWK(privateKey: key).keyID, typ: type)
    }

    /// The catalog `jws` carries, after checking, in order: the signature with one of
    /// `publisherKeys` (by `kid`), `typ`, then the payload as a version-2 catalog with a
    /// SHA-256 for every archive. With a `libraryDirectory`, products whose archives are
    /// missing or differ from the signed hashes are marked unavailable.
    public static func verify(
        _ jws: String, publisherKeys: [JWK], path: String,
        libraryDirectory: String?
    ) throws -> Catalog {
        var keys: [String: Curve25519.Signing.PublicKey] = [:]
        for jwk in publisherKeys {
            do { keys[jwk.keyID] = try jwk.publicKey(source: "publisher key") } catch {
                throw CatalogError(
                    path: path, field: nil, code: .badSignature, detail: "publisher key: \(error.detailText)")
            }
        }
        let payload: [UInt8]
        do {
            payload = try JWS.verify(jws, publicKeys: keys, type: type, maxLength: maxFileBytes, source: path)
        } catch {
            throw CatalogError(
                path: path, field: nil, code: .badSignature,
                detail: "not signed by a trusted publisher key: \(error.detailText)")
        }
        let catalog = try Catalog(json: payload, path: path, libraryDirectory: libraryDirectory)
        try requireSignable(catalog, path: path)
        return catalog
    }

    /// Reads `catalog.jws` of a library and ``verify(_:publisherKeys:path:libraryDirectory:)``s it.
    /// Returns the catalog and the JWS text (which a device keeps as its last trusted catalog).
    public static func load(
        libraryDirectory: String, publisherKeys: [JWK]
    ) throws -> (catalog: Catalog, jws: String) {
        let path = libraryDirectory.hasSuffix("/") ? libraryDirectory + fileName : libraryDirectory + "/" + fileName
        let bytes = try Catalog.readFile(path, limit: maxFileBytes)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CatalogError(path: path, field: nil, code: .badSignature, detail: "is not text")
        }
        let jws = String(
            text.drop(while: { $0 == " " }).reversed().drop(while: { $0 == "\n" || $0 == "\r" || $0 == " " }).reversed()
        )
        return (try verify(jws, publisherKeys: publisherKeys, path: path, libraryDirectory: libraryDirectory), jws)
    }

    /// A catalog a publisher may sign: version 2 (it has a serial) and a hash for every archive.
    private static func requireSignable(_ catalog: Catalog, path: String) throws(CatalogError) {
        guard catalog.version >= 2, catalog.serial != nil else {
            throw CatalogError(
                path: path, field: "version", code: .unsupportedVersion,
                detail: "\(catalog.version): a signed catalog is version 2 (with a serial)")
        }
        for (i, product) in catalog.products.enumerated() {
            for (j, name) in product.archives.enumerated() where catalog.archiveSHA256[name] == nil {
                throw CatalogError(
                    path: path, field: "products[\(i)].archives[\(j)]", code: .badArchives,
                    detail: "\(ErrorText.quoted(name)) has no SHA-256 in archive_sha256")
            }
        }
    }
}
