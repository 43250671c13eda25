import TilePackCore
import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a pack is, as its publisher signed it: the payload of `<pack_id>.manifest.jws`.
///
/// A pack is the unit a device downloads after a purchase: one file holding exactly one
/// product's tiles (docs/REGIONS.md, "Packs"). The manifest binds that file to its product
/// (`product_id`), its version and its content (`sha256` of the file, `tile_index_sha256` of
/// the tile index inside it), so a new pack version needs no new catalog, and a device that
/// can edit every file it holds cannot pass one product's tiles off as another's.
///
/// Field names are the wire format (scripts and apps read them); dates are milliseconds since
/// 1970 UTC, as App Store transactions write theirs, so a lapsed subscription's signed
/// `expiresDate` and a pack's signed `released_at` compare without conversion.
public struct PackManifest: Codable, Sendable, Equatable {
    /// One master archive the pack carries a layer of.
    public struct Archive: Codable, Sendable, Equatable {
        /// The master archive's file name, as the catalog's `archives` name it.
        public var name: String
        /// Lowercase hex SHA-256 of the master archive the layer was cut from.
        public var sha256: String
        public var minzoom: Int
        public var maxzoom: Int
        /// The layer's tile codec (`astc6x6`, `pvrtc4`, `png`): a change is a format change,
        /// which no delta carries.
        public var codec: String

        public init(name: String, sha256: String, minzoom: Int, maxzoom: Int, codec: String) {
            self.name = name; self.sha256 = sha256; self.minzoom = minzoom; self.maxzoom = maxzoom; self.codec = codec
        }
    }

    /// Tiles and stored bytes at one zoom (display tiles and elevation rows of every layer).
    public struct ZoomCount: Codable, Sendable, Equatable {
        public var z: Int
        public var tiles: Int
        public var bytes: Int

        public init(z: Int, tiles: Int, bytes: Int) { self.z = z; self.tiles = tiles; self.bytes = bytes }
    }

    /// The product id (`free` for the free overview).
    public var packID: String
    /// The catalog product whose purchase opens the pack; nil for `free`, which needs none.
    public var productID: String?
    /// 1, 2, …: a new build of the same product is the next version.
    public var version: Int
    /// When the publisher released this version (ms since 1970 UTC). A lapsed subscription
    /// keeps the versions released before its signed `expiresDate`.
    public var releasedAt: Int64
    /// The oldest pack reader that can read this pack (``PackSchema/readerVersion``).
    public var minReaderVersion: Int
    public var archives: [Archive]
    /// [west, south, east, north] in degrees.
    public var bounds: [Double]
    public var perZoom: [ZoomCount]
    /// The pack file's size in bytes.
    public var totalBytes: Int64
    /// Lowercase hex SHA-256 of the pack file as published.
    public var sha256: String
    /// Lowercase hex SHA-256 of the pack's tile index (``PackFormat``, "tile index digest"):
    /// what a delta-updated pack is checked against, since its file bytes differ.
    public var tileIndexSHA256: String
    /// Credit and data licence, shown wherever the pack's tiles are.
    public var attribution: String
    public var license: String

    enum CodingKeys: String, CodingKey {
        case packID = "pack_id", productID = "product_id", version, releasedAt = "released_at"
        case minReaderVersion = "min_reader_version", archives, bounds, perZoom = "per_zoom"
        case totalBytes = "total_bytes", sha256, tileIndexSHA256 = "tile_index_sha256", attribution, license
    }

    public init(
        packID: String, productID: String?, version: Int, releasedAt: Int64, minReaderVersion: Int,
        archives: [Archive], bounds: [Double], perZoom: [ZoomCount], totalBytes: Int64, sha256: String,
        tileIndexSHA256: String, attribution: String, license: String
    ) {
        self.packID = packID; self.productID = productID; self.version = version; self.releasedAt = releasedAt
        self.minReaderVersion = minReaderVersion; self.archives = archives; self.bounds = bounds; self.perZoom = perZoom
        self.totalBytes = totalBytes; self.sha256 = sha256; self.tileIndexSHA256 = tileIndexSHA256
        self.attribution = attribution; self.license = license
    }

    /// The free overview's pack id.
    public static let freePackID = "free"

    /// Pack files' names in a packs directory (server) or a library's `packs/` (device).
    public static func packFileName(_ packID: String) -> String { packID + ".mbtiles" }
    public static func manifestFileName(_ packID: String) -> String { packID + ".manifest.jws" }
    public static func deltaFileName(_ packID: String, from: Int, to: Int) -> String {
        "\(packID).v\(from)-v\(to).delta.mbtiles"
    }

    /// Whether `id` may name a pack (and so a file): a catalog product id or `free`, 1–200
    /// characters of letters, digits, `.`, `_` and `-`, not starting with a dot.
    public static func isValidPackID(_ id: String) -> Bool {
        guard (1...200).contains(id.utf8.count), id.first != "." else { return false }
        return id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b == 0x2e || b == 0x5f
                || b == 0x2d
        }
    }

    /// The problem with the payload's values, nil when they are consistent: a pack id that
    /// cannot name a file, `free` with a product or a product pack without one, a version
    /// below 1, zooms outside 0…24 or reversed, bounds that are not four finite numbers,
    /// hashes that are not 64 hex digits, negative sizes.
    public func problem() -> String? {
        guard Self.isValidPackID(packID) else {
            return "pack_id \(ErrorText.quoted(String(packID.prefix(64)))) cannot name a pack"
        }
        if packID == Self.freePackID {
            if productID != nil { return "the free pack names a product" }
        } else {
            guard let productID, !productID.isEmpty else { return "pack \(packID) names no product_id" }
        }
        guard version >= 1 else { return "version \(version) is below 1" }
        guard minReaderVersion >= 1 else { return "min_reader_version \(minReaderVersion) is below 1" }
        guard !archives.isEmpty else { return "names no archives" }
        for a in archives {
            guard 0 <= a.minzoom, a.minzoom <= a.maxzoom, a.maxzoom <= TileID.maxZoom else {
                return
                    """
                    archive \(ErrorText.quoted(a.name)): zooms \(a.minzoom)…\(a.maxzoom) are not within \
                    0…\(TileID.maxZoom)
                    """
            }
            guard Self.isHexDigest(a.sha256) else {
                return "archive \(ErrorText.quoted(a.name)): sha256 is not 64 hex digits"
            }
        }
        guard bounds.count == 4, bounds.allSatisfy(\.isFinite) else {
            return "bounds are not [west, south, east, north]"
        }
        guard perZoom.allSatisfy({ (0...TileID.maxZoom).contains($0.z) && $0.tiles >= 0 && $0.bytes >= 0 }) else {
            return "per_zoom has a zoom outside 0…\(TileID.maxZoom) or a negative count"
        }
        guard totalBytes > 0 else { return "total_bytes \(totalBytes) is not positive" }
        guard Self.isHexDigest(sha256), Self.isHexDigest(tileIndexSHA256) else {
            return "sha256 or tile_index_sha256 is not 64 hex digits"
        }
        return nil
    }

    static func isHexDigest(_ s: String) -> Bool {
        s.utf8.count == 64 && s.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    /// All zooms of all layers.
    public var zoomRange: ClosedRange<Int>? {
        guard let lo = archives.map(\.minzoom).min(), let hi = archives.map(\.maxzoom).max() else { return nil }
        return lo...hi
    }
}

/// A manifest with its publisher's signature: `<pack_id>.manifest.jws`, a JWS in compact
/// serialization, header `{"alg":"EdDSA","kid":…,"typ":"tilepack-pack+jws"}`, payload the
/// manifest's JSON. Signed with the same publisher key as the catalog (``SignedCatalog``), so
/// the trust anchors an app compiles in cover both.
///
/// Cost: one Ed25519 signature or verification (~50 µs) and the payload's decode.
public enum SignedPackManifest {
    /// The JWS `typ`: a catalog or a transaction is never taken for a manifest.
    public static let type = "tilepack-pack+jws"
    /// A manifest is a few KiB; anything past this is refused before it is decoded.
    public static let maxBytes = 256 << 10

    /// Signs `manifest` with the publisher's key.
    /// - Throws: ``PackError`` (`invalidManifest`) when its values are inconsistent.
    public static func sign(_ manifest: PackManifest, key: Curve25519.Signing.PrivateKey) throws -> String {
        if let problem = manifest.problem() { throw PackError(.invalidManifest, subject: manifest.packID, problem) }
        let bytes = Array(try JSONOutput.string(manifest).utf8)
        return try JWS.sign(bytes: bytes, key: key, kid: JWK(privateKey: key).keyID, typ: type)
    }

    /// The manifest `jws` carries, after checking its signature with one of `publisherKeys`
    /// (by `kid`), its `typ`, and its values (``PackManifest/problem()``).
    /// - Throws: ``PackError`` (`badSignature`, `invalidManifest`) naming `source`.
    public static func verify(_ jws: String, publisherKeys: [JWK], source: String) throws -> PackManifest {
        var keys: [String: Curve25519.Signing.PublicKey] = [:]
        for jwk in publisherKeys {
            do { keys[jwk.keyID] = try jwk.publicKey(source: "publisher key") } catch {
                throw PackError(.badSignature, subject: source, "publisher key: \(error.detailText)")
            }
        }
        guard !keys.isEmpty else {
            throw PackError(.badSignature, subject: source, "the trust anchors name no publisher key")
        }
        let payload: [UInt8]
        do {
            payload = try JWS.verify(jws, publicKeys: keys, type: type, maxLength: maxBytes, source: source)
        } catch {
            throw PackError(
                .badSignature, subject: source, "not signed by a trusted publisher key: \(error.detailText)")
        }
        return try decode(payload, source: source)
    }

    /// The manifest in `jws` WITHOUT checking its signature: for a server listing its own
    /// packs directory and for `info`, never for a decision on a device.
    public static func unverifiedPayload(_ jws: String, source: String) throws -> PackManifest {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard jws.utf8.count <= maxBytes, parts.count == 3 else {
            throw PackError(.invalidManifest, subject: source, "is not a compact JWS")
        }
        let payload: [UInt8]
        do { payload = try Base64URL.decode(parts[1], source: source) } catch {
            throw PackError(.invalidManifest, subject: source, error.detailText)
        }
        return try decode(payload, source: source)
    }

    private static func decode(_ payload: [UInt8], source: String) throws(PackError) -> PackManifest {
        let manifest: PackManifest
        do { manifest = try JSONDecoder().decode(PackManifest.self, from: Data(payload)) } catch {
            throw PackError(.invalidManifest, subject: source, "payload is not a pack manifest: \(error)")
        }
        if let problem = manifest.problem() { throw PackError(.invalidManifest, subject: source, problem) }
        return manifest
    }

    /// Reads and verifies a `.manifest.jws` file (at most ``maxBytes``, regular files only).
    /// Returns the manifest and the JWS text.
    public static func load(
        path: String, publisherKeys: [JWK]
    ) throws -> (manifest: PackManifest, jws: String) {
        let jws = try readText(path: path)
        return (try verify(jws, publisherKeys: publisherKeys, source: path), jws)
    }

    /// A `.manifest.jws` file's text, trimmed (at most ``maxBytes``, regular files only).
    public static func readText(path: String) throws -> String {
        let bytes: [UInt8]
        do { bytes = try RegionFiles.contents(path: path, limit: maxBytes) } catch {
            throw PackError(.io, subject: path, error.detail)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw PackError(.invalidManifest, subject: path, "is not text")
        }
        return String(text.filter { !$0.isWhitespace })
    }
}

/// A pack that cannot be made, listed, downloaded, verified or installed. One type for the
/// whole delivery path (publisher, server, device): `code` says what a caller may tell apart
/// (and what the CLI's exit status reports), `subject` names the file, pack, URL or option,
/// `detail` the problem, `cause` the error underneath (a network or file error), when there was one.
public struct PackError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`;
    /// `rawValue` is the stable word scripts and JSON see.
    public struct Code: TilePackErrorCode, RawRepresentable, Codable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
        /// The manifest's signature does not verify, or no publisher key is trusted.
        public static let badSignature = Code(rawValue: "badSignature")
        /// A manifest that is not one, or whose values are inconsistent.
        public static let invalidManifest = Code(rawValue: "invalidManifest")
        /// A file whose SHA-256, tile index or a tile's hash differs from the manifest.
        public static let hashMismatch = Code(rawValue: "hashMismatch")
        /// A delta for another version or pack, truncated, or not leading to the manifest.
        public static let deltaMismatch = Code(rawValue: "deltaMismatch")
        /// The pack needs a newer reader than this one.
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")
        /// A manifest older than the installed version.
        public static let downgrade = Code(rawValue: "downgrade")
        /// The account does not own the product (401/403 at the server).
        public static let notEntitled = Code(rawValue: "notEntitled")
        /// No transaction to present, or one the server could not verify.
        public static let missingTransaction = Code(rawValue: "missingTransaction")
        /// No transaction to present, or one the server could not verify.
        public static let invalidTransaction = Code(rawValue: "invalidTransaction")
        /// The transaction was refunded or revoked.
        public static let revoked = Code(rawValue: "revoked")
        /// A subscription that ended before this pack version was released.
        public static let expired = Code(rawValue: "expired")
        /// Not enough disk, or the library's quota would be passed.
        public static let noSpace = Code(rawValue: "noSpace")
        /// The server could not be reached, answered an error, or broke the protocol (more
        /// bytes than announced, a range it was not asked for).
        public static let network = Code(rawValue: "network")
        /// A file could not be read or written.
        public static let io = Code(rawValue: "io")
        /// Another download of the same pack holds its lock.
        public static let busy = Code(rawValue: "busy")
        /// No such pack (on the server, in the library).
        public static let notFound = Code(rawValue: "notFound")
        /// A catalog that sells what no archive holds, a bad option.
        public static let invalidInput = Code(rawValue: "invalidInput")
    }

    public let code: Code
    /// The file, pack, URL or option, on one line.
    public let subject: String
    /// The problem, on one line.
    public let detail: String
    /// What went wrong underneath, when it was another error; not compared by `==`.
    public let cause: (any Error)?

    public init(_ code: Code, subject: String, _ detail: String, cause: (any Error)? = nil) {
        self.code = code
        self.subject = ErrorText.oneLine(subject)
        self.detail = ErrorText.oneLine(detail)
        self.cause = cause
    }
    public var category: TilePackErrorCategory {
        switch code {
        case .io, .network, .noSpace, .busy: .environment
        case .notEntitled, .missingTransaction, .invalidTransaction, .revoked, .expired: .locked
        case .notFound: .notFound
        case .unsupportedVersion: .unsupported
        default: .invalidInput
        }
    }
}
