import TilePackCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A pack installed in a library's `packs/` directory, as ``RegionInstaller/installed()`` lists it.
public struct InstalledPack: Sendable, Equatable {
    public var packID: String
    /// The verified manifest; nil when it is missing or does not verify (see ``problem``).
    public var manifest: PackManifest?
    /// Size of `<pack_id>.mbtiles` (0 when it is missing).
    public var bytes: Int64
    /// Why this pack cannot be used (a manifest that does not verify or names another pack, a
    /// pack file missing); nil when both files are there and the manifest verifies.
    public var problem: String?

    public var version: Int? { manifest?.version }
}

/// The device's `<library>/packs/` directory: file names, the per-pack lock, sizes, disk space.
/// Everything in it is the attacker's to edit: manifests are verified on every read, sizes are
/// only used for quotas and listings, never for trust.
struct PackDirectory: Sendable {
    let path: String

    init(library: String) { path = (library.hasSuffix("/") ? String(library.dropLast()) : library) + "/packs" }

    func file(_ name: String) -> String { path + "/" + name }
    func pack(_ id: String) -> String { file(PackManifest.packFileName(id)) }
    func manifest(_ id: String) -> String { file(PackManifest.manifestFileName(id)) }
    func part(_ id: String) -> String { pack(id) + ".part" }
    /// What the `.part` holds (which file of which version, the server's ETag): a `.part` of
    /// another version is discarded, never resumed.
    func partState(_ id: String) -> String { part(id) + ".json" }
    func lock(_ id: String) -> String { file(id + ".lock") }
    /// A delta being downloaded (resumable like the pack's `.part`).
    func deltaPart(_ id: String, from: Int, to: Int) -> String {
        file(PackManifest.deltaFileName(id, from: from, to: to) + ".part")
    }
    /// The copy a delta is applied to; removed on failure, renamed over the pack on success.
    func update(_ id: String) -> String { pack(id) + ".update" }

    func create() throws(PackError) {
        do { try RegionFiles.makeDirectories(path) } catch {
            throw PackError(.io, subject: error.subject, error.detail)
        }
    }

    /// Names in the directory (none when it does not exist).
    func names() throws(PackError) -> [String] {
        guard let dir = opendir(path) else {
            if errno == ENOENT { return [] }
            throw PackError(.io, subject: path, "cannot list (\(AtomicReplacement.message(errno)))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }

    /// The ids of packs with a manifest or a pack file here.
    func packIDs() throws(PackError) -> [String] {
        var ids: Set<String> = []
        for name in try names() {
            for suffix in [".manifest.jws", ".mbtiles"]
            where name.hasSuffix(suffix) && !name.hasSuffix(".delta.mbtiles") {
                let id = String(name.dropLast(suffix.count))
                if PackManifest.isValidPackID(id) { ids.insert(id) }
            }
        }
        return ids.sorted()
    }

    /// The installed pack `id`, its manifest verified with `publisherKeys`; nil when neither of
    /// its files exists.
    /// - Cost: one Ed25519 verification, one stat.
    func installed(_ id: String, publisherKeys: [JWK]) -> InstalledPack? {
        let size = Self.regularFileSize(pack(id))
        let manifestExists = access(manifest(id), F_OK) == 0
        guard size != nil || manifestExists else { return nil }
        var result = InstalledPack(packID: id, manifest: nil, bytes: size ?? 0, problem: nil)
        do {
            let (manifest, _) = try SignedPackManifest.load(path: manifest(id), publisherKeys: publisherKeys)
            // A manifest copied under another pack's name must not vouch for that pack.
            guard manifest.packID == id else {
                throw PackError(
                    .invalidManifest, subject: self.manifest(id),
                    "is the manifest of pack \(manifest.packID), not of \(id)")
            }
            result.manifest = manifest
            if size == nil { result.problem = "\(pack(id)): missing" }
        } catch {
            result.problem = "\(error)"
        }
        return result
    }

    /// Bytes of the installed pack files (`*.mbtiles`, not deltas or partial downloads), the
    /// figure a library quota is measured against; `except` is left out (a pack being replaced).
    func installedBytes(except: String? = nil) throws(PackError) -> Int64 {
        var total: Int64 = 0
        for id in try packIDs() where id != except {
            total += Self.regularFileSize(pack(id)) ?? 0
        }
        return total
    }

    /// Free bytes for an unprivileged writer on the directory's file system.
    func availableBytes() throws(PackError) -> Int64 {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else {
            throw PackError(.io, subject: path, "cannot measure free space (\(AtomicReplacement.message(errno)))")
        }
        let (bytes, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return overflow ? .max : Int64(clamping: bytes)
    }

    /// A regular file's size; nil when it does not exist or is not a regular file.
    static func regularFileSize(_ path: String) -> Int64? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int64(info.st_size)
    }

    /// Makes the directory's entries (renames, unlinks) durable.
    func syncDirectory() {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

/// An exclusive, non-blocking `flock` on `<pack_id>.lock`, held while a pack is downloaded,
/// installed, updated or removed: a second download of the same pack (another process or
/// task) gets ``PackError/Code/busy`` instead of interleaving its bytes into the same `.part`.
/// The lock dies with its process (a SIGKILLed download never leaves a pack locked).
///
/// The lock file may be unlinked by ``unlock(unlinking:)`` (``RegionInstaller/remove(_:)``): a
/// taker checks after locking that the path still names the inode it locked, and starts over
/// when it does not, so a waiter on the unlinked inode and a taker of the new file never both
/// hold "the" lock.
final class PackLock: Sendable {
    private let fd: Locked<Int32>
    let path: String

    private init(fd: Int32, path: String) { self.fd = Locked(fd); self.path = path }

    static func acquire(_ path: String, packID: String) throws(PackError) -> PackLock {
        for _ in 0..<8 {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
            guard fd >= 0 else {
                throw PackError(.io, subject: path, "cannot open the lock (\(AtomicReplacement.message(errno)))")
            }
            if flock(fd, LOCK_EX | LOCK_NB) != 0 {
                let code = errno
                close(fd)
                if code == EWOULDBLOCK || code == EAGAIN {
                    throw PackError(
                        .busy, subject: packID,
                        "another download, update or removal of this pack is running (\(path) is locked)")
                }
                throw PackError(.io, subject: path, "cannot lock (\(AtomicReplacement.message(code)))")
            }
            var held = stat(), named = stat()
            if fstat(fd, &held) == 0, lstat(path, &named) == 0, held.st_ino == named.st_ino, held.st_dev == named.st_dev
            {
                return PackLock(fd: fd, path: path)
            }
            close(fd)
        }
        throw PackError(.busy, subject: packID, "\(path) keeps being replaced")
    }

    /// Releases the lock (idempotent); with `unlinking`, removes the lock file first, while
    /// still holding it.
    func unlock(unlinking: Bool = false) {
        fd.withLock { fd in
            guard fd >= 0 else { return }
            if unlinking { unlink(path) }
            close(fd)
            fd = -1
        }
    }

    deinit { unlock() }
}
