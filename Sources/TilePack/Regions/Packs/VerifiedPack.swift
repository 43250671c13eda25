import TilePackCore
import TilePackArchive

/// An installed pack opened for reading after passing every check: its manifest verifies with
/// a trusted publisher key (store libraries), names the file it sits beside, asks for a reader
/// this tilepack has, and the file's tile index digest is the manifest's `tile_index_sha256`
/// (the rule that makes the installer's two renames safe: a new pack beside an old manifest,
/// or the reverse, is refused). Its tiles are read through ``PackReader``, which checks every
/// tile against the index on every read. What ``RegionLibrary`` draws and gates.
///
/// Cost of ``open(libraryDirectory:publisherKeys:)``: per pack, one Ed25519 verification, an
/// O(1)-page open and one pass over its tile index (a key and 32 bytes a tile: a 40 MB pack of
/// 2,000 tiles has ~0.1 MB of index).
public struct VerifiedPack: Sendable {
    public let manifest: PackManifest
    /// The manifest's JWS as installed.
    public let manifestJWS: String
    public let path: String
    public let reader: PackReader
    /// The pack file's size.
    public let bytes: Int64

    /// The layer of master archive `name`, as a tile archive, nil when the pack has none.
    public func layer(named name: String) -> PackLayerArchive? { reader.layer(named: name) }

    /// Every pack in `<library>/packs/` that passes, sorted by id, and a problem line for each
    /// that does not (it is then not shown: fail closed). `publisherKeys` nil (an open library,
    /// no trust anchors) reads manifests without checking signatures: an open library shows
    /// everything anyway.
    public static func open(
        libraryDirectory: String, publisherKeys: [JWK]?
    ) -> (packs: [VerifiedPack], problems: [String]) {
        let directory = PackDirectory(library: libraryDirectory)
        guard let ids = try? directory.packIDs() else { return ([], []) }
        var packs: [VerifiedPack] = []
        var problems: [String] = []
        for id in ids {
            do {
                packs.append(try open(directory.manifest(id), publisherKeys: publisherKeys))
            } catch {
                problems.append("\(error) (pack \(id) not shown)")
            }
        }
        return (packs, problems)
    }

    /// One installed pack, checked.
    /// - Throws: ``PackError``: a missing or unsigned manifest, a manifest for another file, a
    ///   reader too old, a pack whose tile index is not the manifest's.
    public static func open(_ manifestPath: String, publisherKeys: [JWK]?) throws -> VerifiedPack {
        let jws = try SignedPackManifest.readText(path: manifestPath)
        let manifest: PackManifest
        if let publisherKeys {
            manifest = try SignedPackManifest.verify(jws, publisherKeys: publisherKeys, source: manifestPath)
        } else {
            manifest = try SignedPackManifest.unverifiedPayload(jws, source: manifestPath)
        }
        let fileName = manifestPath.split(separator: "/").last.map(String.init) ?? manifestPath
        guard fileName == PackManifest.manifestFileName(manifest.packID) else {
            throw PackError(
                .invalidManifest, subject: manifestPath,
                "is the manifest of pack \(ErrorText.quoted(manifest.packID)), not of this file")
        }
        guard manifest.minReaderVersion <= PackInstall.readerVersion else {
            throw PackError(
                .unsupportedVersion, subject: manifestPath,
                """
                pack \(manifest.packID) v\(manifest.version) needs pack reader \(manifest.minReaderVersion); this \
                tilepack reads \(PackInstall.readerVersion): update the app
                """
            )
        }
        let slash = manifestPath.lastIndex(of: "/")
        let path = (slash.map { String(manifestPath[..<$0]) } ?? ".") + "/" + PackManifest.packFileName(manifest.packID)
        let reader: PackReader
        let digest: String
        do {
            reader = try PackReader(path: path)
            digest = try reader.indexDigest()
        } catch {
            throw PackError(
                .hashMismatch, subject: path, "cannot be read as a pack: \(error)", cause: error
            )
        }
        guard digest == manifest.tileIndexSHA256 else {
            throw PackError(
                .hashMismatch, subject: path,
                "its tile index is not the one its signed manifest names (edited or swapped)")
        }
        let names = Set(reader.layers.map(\.archive))
        for archive in manifest.archives where !names.contains(archive.name) {
            throw PackError(
                .hashMismatch, subject: path, "has no layer \(ErrorText.quoted(archive.name)) that its manifest names")
        }
        return VerifiedPack(
            manifest: manifest, manifestJWS: jws, path: path, reader: reader,
            bytes: PackDirectory.regularFileSize(path) ?? 0)
    }
}
