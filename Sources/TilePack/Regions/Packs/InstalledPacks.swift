import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The packs installed in a library's `packs/`: what `tilepack library list` and `remove`
/// show and do, and what an app's "Downloaded regions" screen lists. Offline.
public struct InstalledPacks: Sendable {
    let directory: PackDirectory
    public let publisherKeys: [JWK]

    init(directory: PackDirectory, publisherKeys: [JWK]) {
        self.directory = directory
        self.publisherKeys = publisherKeys
    }

    /// The packs of the library at `library`, verified with `trust`'s publisher keys.
    public init(library: String, trust: TrustAnchors) {
        self.init(directory: PackDirectory(library: library), publisherKeys: trust.publisherKeys)
    }

    /// The `packs/` directory.
    public var path: String { directory.path }

    /// The packs in the library's `packs/`, each manifest verified.
    /// - Cost: one Ed25519 verification and one stat per pack.
    public func list() throws -> [InstalledPack] {
        try directory.packIDs().compactMap { directory.installed($0, publisherKeys: publisherKeys) }
    }

    /// Removes pack `packID` (manifest first, then the pack, any `.part` and delta leftovers).
    /// Returns the bytes freed.
    /// - Throws: ``PackError`` `notFound` when nothing of it is there, `busy` while it downloads.
    @discardableResult
    public func remove(_ packID: String) throws -> Int64 {
        guard PackManifest.isValidPackID(packID) else {
            throw PackError(.invalidInput, subject: packID, "is not a pack id")
        }
        guard access(directory.path, F_OK) == 0 else {
            throw PackError(.notFound, subject: packID, "is not installed (\(directory.path) does not exist)")
        }
        let lock = try PackLock.acquire(directory.lock(packID), packID: packID)
        var freed: Int64 = 0
        var found = false
        // The manifest goes first: a reader never sees a manifest whose pack is gone.
        var doomed = [
            directory.manifest(packID), directory.pack(packID), directory.part(packID), directory.partState(packID),
            directory.update(packID),
        ]
        doomed += try directory.names().filter { Self.isDeltaLeftover($0, of: packID) }.map(directory.file)
        for path in doomed {
            let size = PackDirectory.regularFileSize(path)
            if unlink(path) == 0 {
                found = true
                freed += size ?? 0
            } else if errno != ENOENT {
                let code = errno
                lock.unlock()
                throw PackError(.io, subject: path, "cannot remove (\(AtomicReplacement.message(code)))")
            }
        }
        directory.syncDirectory()
        lock.unlock(unlinking: true)
        guard found else { throw PackError(.notFound, subject: packID, "is not installed in \(directory.path)") }
        return freed
    }

    /// `<id>.v<N>-v<M>.delta.mbtiles.part` or its `.json`: a delta download of `id`.
    static func isDeltaLeftover(_ name: String, of id: String) -> Bool {
        guard name.hasPrefix(id + ".v") else { return false }
        var rest = name.dropFirst(id.count + 2)
        for suffix in [".delta.mbtiles.part.json", ".delta.mbtiles.part"] where rest.hasSuffix(suffix) {
            rest = rest.dropLast(suffix.count)
            let versions = rest.split(separator: "-v", omittingEmptySubsequences: false)
            return versions.count == 2
                && versions.allSatisfy { !$0.isEmpty && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
        }
        return false
    }
}
