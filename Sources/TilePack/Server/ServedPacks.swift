import TilePackCore
import TilePackRegions
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file `serve --packs` streams, as it was when the directory was scanned.
///
/// Invariant: `size > 0`; `device`/`inode`/`size` are what `stat` said at the scan, and a
/// request streams the file only when the descriptor it opened has all three (``ServedPacks/openFile(_:)``),
/// so the ETag and Content-Length sent are the file's.
public struct PackFile: Sendable, Equatable {
    public let path: String
    public let size: Int64
    let device: UInt64
    let inode: UInt64
    /// Strong ETag, quoted: a pack's is its manifest's `sha256`, a delta's the SHA-256 the
    /// scan computed.
    public let etag: String
}

/// A delta this server offers: from version `from` to `from + 1`.
public struct PackDelta: Sendable, Equatable {
    public let from: Int
    public let file: PackFile
}

/// A pack as `serve --packs` offers it: its manifest (verified with the trust anchors'
/// publisher keys in a store library), the manifest's JWS as published, the pack file, and
/// the deltas that lead to this version.
public struct ServedPack: Sendable {
    public let manifest: PackManifest
    public let jws: String
    public let file: PackFile
    /// Ascending by `from`; each `from + 1` ≤ the manifest's version.
    public let deltas: [PackDelta]

    public var id: String { manifest.packID }
}

/// The publisher's packs directory (docs/REGIONS.md, "Packs"): `<pack_id>.mbtiles`,
/// `<pack_id>.manifest.jws`, `<pack_id>.v<N-1>-v<N>.delta.mbtiles`, as one table read at start
/// and read again whenever the directory changes (its mtime, ctime or inode: a file renamed in,
/// replaced or removed), checked on every request with one `stat`.
///
/// A pack is offered only when its manifest is a manifest for its file name, verifies with
/// one of `publisherKeys` (when given: a store library; an open library has none and reads the
/// payload unverified), and its file is a regular file of exactly `total_bytes`. Anything else
/// is skipped with one line through `report` (once per problem, not on every re-scan). The
/// pack file's SHA-256 is not recomputed here (a 200 MB pack would cost a second per scan):
/// the device checks the bytes it receives against the signed `sha256`.
///
/// Request values are looked up in the table, never joined into a path: no request names a file
/// outside the directory.
///
/// Threads: Sendable; one mutex around the table. Cost: a `stat` of the directory per request;
/// a re-scan verifies each manifest (Ed25519, ~50 µs), stats each file and hashes each delta
/// not hashed before (by device, inode, size and mtime).
public final class ServedPacks: Sendable {
    public let path: String
    /// nil: an open library (manifests read unverified).
    let publisherKeys: [JWK]?
    let report: @Sendable (String) -> Void
    private let state: Locked<State>

    struct Stamp: Equatable {
        var device: UInt64, inode: UInt64, mtime: Int64, mtimeNanos: Int64, ctime: Int64, ctimeNanos: Int64
    }

    struct FileKey: Hashable {
        var device: UInt64, inode: UInt64, size: Int64, mtime: Int64, mtimeNanos: Int64
    }

    struct State {
        var stamp: Stamp?
        var packs: [String: ServedPack] = [:]
        var reported: Set<String> = []
        var deltaHashes: [FileKey: String] = [:]
    }

    /// Scans `path` once.
    /// - Parameters:
    ///   - publisherKeys: the trust anchors' publisher keys (store library), nil (open library).
    ///   - report: receives one line per pack or delta skipped.
    /// - Throws: ``PackError`` (`io`) when `path` is not a readable directory.
    public init(path: String, publisherKeys: [JWK]?, report: @escaping @Sendable (String) -> Void) throws(PackError) {
        self.path = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        self.publisherKeys = publisherKeys
        self.report = report
        state = Locked(State())
        guard let stamp = Self.stamp(self.path) else {
            throw PackError(.io, subject: path, "is not a directory this process can read (--packs)")
        }
        guard let dir = opendir(self.path) else {
            throw PackError(.io, subject: path, "cannot be listed (\(AtomicReplacement.message(errno)))")
        }
        closedir(dir)
        state.withLock { scan(&$0, stamp: stamp) }
    }

    /// Every pack offered, sorted by pack id (after a re-scan when the directory changed).
    public func packs() -> [ServedPack] {
        refreshed().values.sorted { $0.id < $1.id }
    }

    /// The pack `id` (after a re-scan when the directory changed), nil when none is offered.
    public func pack(_ id: String) -> ServedPack? {
        guard PackManifest.isValidPackID(id) else { return nil }
        return refreshed()[id]
    }

    /// Re-scans now, whatever the directory's stamp (a file replaced in place keeps it).
    func rescan() {
        state.withLock { s in
            if let stamp = Self.stamp(path) { scan(&s, stamp: stamp) } else { s.packs = [:] }
        }
    }

    private func refreshed() -> [String: ServedPack] {
        state.withLock { s in
            guard let stamp = Self.stamp(path) else { s.packs = [:]; s.stamp = nil; return s.packs }
            if stamp != s.stamp { scan(&s, stamp: stamp) }
            return s.packs
        }
    }

    /// Opens `file` for reading when it is still the file the scan saw (same device, inode and
    /// size, a regular file), else nil.
    func openFile(_ file: PackFile) -> OpenPackFile? {
        let fd = open(file.path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) == file.size,
            UInt64(truncatingIfNeeded: info.st_dev) == file.device,
            UInt64(truncatingIfNeeded: info.st_ino) == file.inode
        else {
            close(fd)
            return nil
        }
        return OpenPackFile(fd: fd, file: file)
    }

    // MARK: - Scanning

    private static func stamp(_ path: String) -> Stamp? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        let (m, c) = times(info)
        return Stamp(
            device: UInt64(truncatingIfNeeded: info.st_dev), inode: UInt64(truncatingIfNeeded: info.st_ino),
            mtime: Int64(m.tv_sec), mtimeNanos: Int64(m.tv_nsec), ctime: Int64(c.tv_sec), ctimeNanos: Int64(c.tv_nsec))
    }

    /// (mtime, ctime) of a `stat`, as each platform names them.
    static func times(_ info: stat) -> (timespec, timespec) {
        #if canImport(Darwin)
        (info.st_mtimespec, info.st_ctimespec)
        #else
        (info.st_mtim, info.st_ctim)
        #endif
    }

    private func names() -> [String] {
        guard let dir = opendir(path) else { return [] }
        defer { closedir(dir) }
        var out: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if !name.hasPrefix(".") { out.append(name) }
        }
        return out.sorted()
    }

    private func scan(_ s: inout State, stamp: Stamp) {
        s.stamp = stamp
        var problems: [String] = []
        var packs: [String: ServedPack] = [:]
        let all = names()
        let manifestSuffix = ".manifest.jws"
        var deltaNames: [String: [(from: Int, name: String)]] = [:]
        for name in all where name.hasSuffix(ServedPacks.deltaSuffix) {
            guard let (id, from) = Self.parseDeltaName(name) else {
                problems.append("\(path)/\(name): not a delta name <pack_id>.v<N-1>-v<N>.delta.mbtiles; not served")
                continue
            }
            deltaNames[id, default: []].append((from, name))
        }
        var keep: [FileKey: String] = [:]
        for name in all where name.hasSuffix(manifestSuffix) {
            let id = String(name.dropLast(manifestSuffix.count))
            let manifestPath = path + "/" + name
            guard PackManifest.isValidPackID(id) else {
                problems.append("\(manifestPath): \(ErrorText.quoted(id)) cannot name a pack; not served")
                continue
            }
            let manifest: PackManifest, jws: String
            do {
                jws = try SignedPackManifest.readText(path: manifestPath)
                if let publisherKeys {
                    manifest = try SignedPackManifest.verify(jws, publisherKeys: publisherKeys, source: manifestPath)
                } else {
                    manifest = try SignedPackManifest.unverifiedPayload(jws, source: manifestPath)
                }
            } catch {
                problems.append("\(error); pack \(id) not served")
                continue
            }
            guard manifest.packID == id else {
                problems.append(
                    "\(manifestPath): the manifest is pack \(ErrorText.quoted(manifest.packID))'s; not served")
                continue
            }
            let packPath = path + "/" + PackManifest.packFileName(id)
            let info: stat
            switch Self.regularFile(packPath) {
            case .failure(let problem): problems.append("\(packPath): \(problem); pack \(id) not served"); continue
            case .success(let found): info = found
            }
            guard Int64(info.st_size) == manifest.totalBytes else {
                problems.append(
                    """
                    \(packPath): \(info.st_size) bytes, the manifest says total_bytes \(manifest.totalBytes); \
                    pack \(id) not served
                    """
                )
                continue
            }
            let file = PackFile(
                path: packPath, size: manifest.totalBytes, device: UInt64(truncatingIfNeeded: info.st_dev),
                inode: UInt64(truncatingIfNeeded: info.st_ino),
                etag: "\"\(manifest.sha256)\"")
            var deltas: [PackDelta] = []
            for (from, deltaName) in (deltaNames[id] ?? []).sorted(by: { $0.from < $1.from }) {
                let deltaPath = path + "/" + deltaName
                guard from + 1 <= manifest.version else {
                    problems.append("\(deltaPath): leads past version \(manifest.version), the manifest's; not served")
                    continue
                }
                let d: stat
                switch Self.regularFile(deltaPath) {
                case .failure(let problem): problems.append("\(deltaPath): \(problem); not served"); continue
                case .success(let found): d = found
                }
                let m = Self.times(d).0
                let key = FileKey(
                    device: UInt64(truncatingIfNeeded: d.st_dev), inode: UInt64(truncatingIfNeeded: d.st_ino),
                    size: Int64(d.st_size),
                    mtime: Int64(m.tv_sec), mtimeNanos: Int64(m.tv_nsec))
                let hash: String
                if let known = s.deltaHashes[key] {
                    hash = known
                } else {
                    do throws(InputFileError) { hash = try FileDigest.sha256(path: deltaPath) } catch {
                        problems.append("\(error.description); not served")
                        continue
                    }
                }
                keep[key] = hash
                deltas.append(
                    PackDelta(
                        from: from,
                        file: PackFile(
                            path: deltaPath, size: key.size, device: key.device,
                            inode: key.inode, etag: "\"\(hash)\"")))
            }
            packs[id] = ServedPack(manifest: manifest, jws: jws, file: file, deltas: deltas)
        }
        s.packs = packs
        s.deltaHashes = keep
        let now = Set(problems)
        for line in problems where !s.reported.contains(line) { report(line) }
        s.reported = now
    }

    static let deltaSuffix = ".delta.mbtiles"

    /// `<pack_id>.v<from>-v<from+1>.delta.mbtiles` → (pack id, from), else nil. The name must
    /// be exactly what ``PackManifest/deltaFileName(_:from:to:)`` writes (no leading zeros).
    static func parseDeltaName(_ name: String) -> (String, Int)? {
        let stem = Array(name.utf8.dropLast(deltaSuffix.utf8.count))
        // The last ".v": a pack id may hold ".v" itself ("com.example.v2.alps").
        guard name.hasSuffix(deltaSuffix), stem.count >= 2,
            let dot = (0..<(stem.count - 1)).last(where: {
                stem[$0] == UInt8(ascii: ".") && stem[$0 + 1] == UInt8(ascii: "v")
            })
        else { return nil }
        let id = String(decoding: stem[..<dot], as: UTF8.self)
        let versions = Substring(String(decoding: stem[(dot + 2)...], as: UTF8.self)).split(
            separator: "-", omittingEmptySubsequences: false)
        guard PackManifest.isValidPackID(id), versions.count == 2, versions[1].hasPrefix("v"),
            let from = TileService.integer(versions[0]), let to = TileService.integer(versions[1].dropFirst()),
            from >= 1, to == from + 1, PackManifest.deltaFileName(id, from: from, to: to) == name
        else { return nil }
        return (id, from)
    }

    enum FileCheck { case success(stat), failure(String) }

    /// `stat` of a regular, non-empty file (symbolic links followed: the publisher's choice).
    static func regularFile(_ path: String) -> FileCheck {
        var info = stat()
        guard stat(path, &info) == 0 else { return .failure("cannot stat (\(AtomicReplacement.message(errno)))") }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(RegularFile.notRegular(mode: info.st_mode)) }
        guard info.st_size > 0 else { return .failure("is empty") }
        return .success(info)
    }
}

/// A pack or delta file opened for one response; closed when the response is done with it
/// (deinit), whether its body was sent, cut short or never started (HEAD, a dropped client).
public final class OpenPackFile: Sendable {
    let fd: Int32
    public let file: PackFile

    init(fd: Int32, file: PackFile) { self.fd = fd; self.file = file }

    deinit { close(fd) }

    /// Reads exactly `buffer.count` bytes at `offset` (pread: no shared position, so one file
    /// may serve several readers). Returns false when the file ends first (it was truncated
    /// under us).
    /// - Cost: one `pread` per call in the usual case.
    func read(at offset: Int64, into buffer: UnsafeMutableRawBufferPointer) -> Bool {
        var done = 0
        while done < buffer.count {
            guard let base = buffer.baseAddress else { return false }
            let n = pread(fd, base + done, buffer.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            if n == 0 { return false }
            done += n
        }
        return true
    }
}
