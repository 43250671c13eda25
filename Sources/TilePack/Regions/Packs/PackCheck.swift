import TilePackCore
import TilePackArchive

/// A pack file held against the manifest beside it (`<pack_id>.manifest.jws`): what `info`
/// shows in its `pack` section and what `verify` requires.
///
/// - `signature`: `valid` (verifies with a trusted publisher key), `invalid` (does not),
///   `unverified` (no trust anchors to check it with), `absent` (no manifest beside the pack).
/// - `sha256Matches`: the file is the one published (false after a delta update, whose file
///   bytes differ while its tiles are version N's: then `tileIndexMatches` decides).
///
/// Cost: one Ed25519 verification, one SHA-256 pass over the file, one scan of the index.
public struct PackCheck: Sendable, Encodable {
    public var manifest: PackManifest?
    public var signature: String
    public var manifestPath: String
    public var sha256Matches: Bool?
    public var tileIndexMatches: Bool?
    /// Why the manifest could not be read or verified.
    public var problem: String?

    enum CodingKeys: String, CodingKey {
        case manifest, signature, manifestPath = "manifest_path", sha256Matches = "sha256_matches"
        case tileIndexMatches = "tile_index_matches", problem
    }

    /// Checks the pack at `path` against its manifest; `publisherKeys` nil: no trust anchors.
    public init(packPath path: String, publisherKeys: [JWK]?) {
        let slash = path.lastIndex(of: "/")
        let dir = slash.map { String(path[..<$0]) } ?? "."
        var file = slash.map { String(path[path.index(after: $0)...]) } ?? path
        if file.hasSuffix(".mbtiles") { file.removeLast(".mbtiles".count) }
        // A pack's id is its file name; a delta names its pack in its metadata.
        let packID = (try? PackReader(path: path))?.metadata[PackSchema.Key.packID] ?? file
        manifestPath = dir + "/" + PackManifest.manifestFileName(packID)
        let jws: String
        do { jws = try SignedPackManifest.readText(path: manifestPath) } catch {
            signature = "absent"
            problem = "\(error)"
            return
        }
        if let keys = publisherKeys {
            do {
                manifest = try SignedPackManifest.verify(jws, publisherKeys: keys, source: manifestPath)
                signature = "valid"
            } catch {
                signature = "invalid"
                problem = "\(error)"
                manifest = try? SignedPackManifest.unverifiedPayload(jws, source: manifestPath)
            }
        } else {
            signature = "unverified"
            manifest = try? SignedPackManifest.unverifiedPayload(jws, source: manifestPath)
        }
        guard let manifest, manifest.packID == packID, !path.hasSuffix(".delta.mbtiles") else { return }
        sha256Matches = (try? FileDigest.sha256(path: path)).map { $0 == manifest.sha256 }
        tileIndexMatches = (try? PackReader(path: path).indexDigest()).map { $0 == manifest.tileIndexSHA256 }
    }
}
