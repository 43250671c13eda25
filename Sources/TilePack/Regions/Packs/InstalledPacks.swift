import TilePackCore
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A pack in a library's `packs/` directory that passed every check: its manifest verifies
/// with a trusted publisher key (store libraries), names the file it sits beside, asks for a
/// reader this tilepack has, and the file's tile index digest is the manifest's
/// `tile_index_sha256`. Its tiles are then read through ``PackReader``, which checks every
/// tile against the index on every read.
public struct InstalledPack: Sendable {
    public let manifest: PackManifest
    /// The manifest's JWS as installed.
    public let manifestJWS: String
    public let path: String
    public let reader: PackReader
    /// The pack file's size.
    public let bytes: Int64

    /// The layer of master archive `name`, as a tile archive, nil when the pack has none.
    public func layer(named name: String) -> PackLayerArchive? { reader.layer(named: name) }
}

/// The packs installed in a library, checked (``InstalledPack``), and why the others were
/// refused: a refused pack shows nothing (fail closed) and is named in the library's problems.
///
/// Cost: per pack, one Ed25519 verification, an O(1)-page open and one pass over its tile
/// index (32 bytes and a key per tile: a 40 MB pack of 2,000 tiles is ~0.1 MB of index).
public enum InstalledPacks {
    /// The packs directory of a library.
    public static func directory(library: String) -> String {
        (library.hasSuffix("/") ? library : library + "/") + "packs"
    }

    /// Every `*.manifest.jws` in `<library>/packs/` with its pack. `publisherKeys` nil (an
    /// open library, no trust anchors) reads manifests without checking signatures: an open
    /// library shows everything anyway.
    public static func load(libraryDirectory: String, publisherKeys: [JWK]?) -> (packs: [InstalledPack], problems: [String]) {
        let dir = directory(library: libraryDirectory)
        var packs: [InstalledPack] = []
        var problems: [String] = []
        for name in manifestFileNames(in: dir) {
            do {
                packs.append(try open(manifestPath: dir + "/" + name, publisherKeys: publisherKeys))
            } catch {
                problems.append("\(error) (pack not shown)")
            }
        }
        return (packs.sorted { $0.manifest.packID < $1.manifest.packID }, problems)
    }

    /// One installed pack, checked.
    /// - Throws: ``PackError``: signature, a manifest for another file, a reader too old, a
    ///   pack whose tile index is not the manifest's.
    public static func open(manifestPath: String, publisherKeys: [JWK]?) throws(PackError) -> InstalledPack {
        let jws = try SignedPackManifest.readText(path: manifestPath)
        let manifest: PackManifest
        if let publisherKeys {
            manifest = try SignedPackManifest.verify(jws, publisherKeys: publisherKeys, source: manifestPath)
        } else {
            manifest = try SignedPackManifest.unverifiedPayload(jws, source: manifestPath)
        }
        let fileName = manifestPath.split(separator: "/").last.map(String.init) ?? manifestPath
        guard fileName == PackManifest.manifestFileName(manifest.packID) else {
            throw PackError(.invalidManifest, subject: manifestPath, "is the manifest of pack \(ErrorText.quoted(manifest.packID)), not of this file")
        }
        try requireReadable(manifest, source: manifestPath)
        let slash = manifestPath.lastIndex(of: "/")
        let dir = slash.map { String(manifestPath[..<$0]) } ?? "."
        let path = dir + "/" + PackManifest.packFileName(manifest.packID)
        let reader: PackReader
        let digest: String
        do {
            reader = try PackReader(path: path)
            digest = try reader.indexDigest()
        } catch {
            throw PackError(.hashMismatch, subject: path, error.description, cause: error.description)
        }
        guard digest == manifest.tileIndexSHA256 else {
            throw PackError(.hashMismatch, subject: path, "its tile index is not the one its signed manifest names (edited or swapped)")
        }
        let names = Set(reader.layers.map(\.archive))
        for archive in manifest.archives where !names.contains(archive.name) {
            throw PackError(.hashMismatch, subject: path, "has no layer \(ErrorText.quoted(archive.name)) that its manifest names")
        }
        var info = stat()
        let bytes = stat(path, &info) == 0 ? Int64(info.st_size) : 0
        return InstalledPack(manifest: manifest, manifestJWS: jws, path: path, reader: reader, bytes: bytes)
    }

    /// Refuses a manifest that needs a newer pack reader than this one.
    public static func requireReadable(_ manifest: PackManifest, source: String) throws(PackError) {
        guard manifest.minReaderVersion <= PackSchema.readerVersion else {
            throw PackError(.unsupportedVersion, subject: source,
                            "pack \(manifest.packID) v\(manifest.version) needs pack reader \(manifest.minReaderVersion); this tilepack reads \(PackSchema.readerVersion): update the app")
        }
    }

    /// The names of `*.manifest.jws` regular files in `dir`, sorted; none when it is missing.
    static func manifestFileNames(in dir: String) -> [String] {
        guard let handle = opendir(dir) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard name.hasSuffix(".manifest.jws"), !name.hasPrefix(".") else { continue }
            var info = stat()
            guard lstat(dir + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            names.append(name)
        }
        return names.sorted()
    }
}
