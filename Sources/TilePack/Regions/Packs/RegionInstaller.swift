import TilePackCore
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Installs packs from a pack server (`tilepack serve --packs`) into a library's `packs/`:
/// what an app's "Download" and "Update" buttons call, and `tilepack download`.
///
/// Trust: only ``TrustAnchors/publisherKeys`` vouch for a pack. Every manifest is verified
/// before anything is fetched; the downloaded file must have the signed SHA-256; the listing's
/// unsigned fields must equal the signed ones. The server decides who may download (the
/// transaction presented as `Authorization: Bearer`); the library decides what an installed
/// pack shows (``RegionLibrary``): nothing here needs the network except fetching.
///
/// Files (docs/REGIONS.md, "Packs"): `<pack_id>.mbtiles` and `<pack_id>.manifest.jws` when
/// installed; `<pack_id>.mbtiles.part` (+ `.part.json`) while downloading, resumable after a
/// kill or a dropped connection; `<pack_id>.lock`, locked while a pack is being changed.
///
/// Installing is two renames, **pack first, then manifest**, after both are complete and
/// fsynced (the manifest is written to a temporary name before the pack is moved, so a full
/// disk fails before anything changes). Two renames are not one atomic step, so the pair is
/// made safe by the reader's rule rather than by the file system: a pack is opened only when
/// its manifest verifies and names it, and the pack's tile-index digest equals the manifest's
/// `tile_index_sha256`. Between the renames a reader sees either the new pack without a
/// manifest (a fresh install: not installed yet) or the new pack with the old manifest (an
/// update: the digests differ, so the pack is refused for that instant) — never a manifest
/// without its pack (removal deletes the manifest first), never a half file (the pack only
/// ever appears by rename of a complete, verified file), and never tiles shown under the
/// wrong manifest. A crash between the renames leaves the mismatch, which the next install
/// sees as a damaged copy and replaces.
///
/// Threads: Sendable; per-pack operations exclude each other with ``PackLock`` (a second one
/// gets `busy`), also across processes.
public final class RegionInstaller: Sendable {
    public let libraryDirectory: String
    public let publisherKeys: [JWK]
    /// The server's base URL (`http://host:port`), without a trailing slash.
    public let server: String
    public let transport: any PackTransport
    /// The most bytes the library's installed packs may take together; nil: no quota.
    public let quotaBytes: Int64?
    private let transaction: @Sendable (_ productID: String) -> String?
    let directory: PackDirectory

    /// - Parameters:
    ///   - library: the region library directory (packs go to its `packs/`).
    ///   - trust: the app's trust anchors; their publisher keys verify manifests.
    ///   - server: the pack server's base URL.
    ///   - transaction: the signed transaction to present for a product id (nil: none; the
    ///     server then answers 401 for anything but `free`). See
    ///     ``RegionLibrary/transactionForPack(productID:)``.
    public init(
        library: String, trust: TrustAnchors, server: String, transport: any PackTransport, quotaBytes: Int64? = nil,
        transaction: @escaping @Sendable (_ productID: String) -> String?
    ) {
        libraryDirectory = library
        publisherKeys = trust.publisherKeys
        var base = server
        while base.hasSuffix("/") { base.removeLast() }
        self.server = base
        self.transport = transport
        self.quotaBytes = quotaBytes
        self.transaction = transaction
        directory = PackDirectory(library: library)
    }

    /// An installer for `library` presenting its ledger's transactions.
    /// - Throws: ``PackError`` (`invalidInput`) for an open library (no trust anchors).
    public convenience init(
        library: RegionLibrary, server: String, transport: any PackTransport,
        quotaBytes: Int64? = nil
    ) throws {
        guard let trust = library.trust else {
            throw PackError(
                .invalidInput, subject: library.directory,
                "an open library (no trust anchors) installs no packs: pass --trust FILE")
        }
        self.init(
            library: library.directory, trust: trust, server: server, transport: transport, quotaBytes: quotaBytes,
            transaction: { library.transactionForPack(productID: $0) })
    }

    // MARK: - Listing

    /// The server's packs (`GET /packs`), each manifest verified; refused entries are listed
    /// with the reason.
    /// - Throws: ``PackError`` (`network`) when the server cannot be asked or answers no listing.
    /// - Cost: one request; memory of at most ``PackListing/maxBytes``.
    public func packs() async throws -> PackListing { try await typedPacks() }

    /// ``packs()`` with its typed error, for the installer's own callers.
    func typedPacks() async throws(PackError) -> PackListing {
        let url = server + "/packs"
        let response: PackResponse
        do { response = try await transport.get(url: url, headers: [("Accept", "application/json")]) } catch {
            throw PackError(
                .network, subject: url, "the request failed: \(PackDownload.describe(error))", cause: error)
        }
        guard response.status == 200 else { throw await PackDownload.failure(response, url: url) }
        let body: [UInt8]?
        do { body = try await response.body.collect(limit: PackListing.maxBytes) } catch {
            throw PackError(
                .network, subject: url, "the listing broke off: \(PackDownload.describe(error))", cause: error)
        }
        guard let body else {
            throw PackError(.network, subject: url, "the listing is over \(PackListing.maxBytes) bytes")
        }
        return try PackError.typed({ try PackListing.parse(body, publisherKeys: publisherKeys, source: url) }) {
            PackError(.invalidManifest, subject: url, "\($0)")
        }
    }

    /// The server's entry for `packID`, or why there is none.
    func listed(_ packID: String) async throws(PackError) -> ListedPack {
        guard PackManifest.isValidPackID(packID) else {
            throw PackError(.invalidInput, subject: packID, "is not a pack id")
        }
        let listing = try await typedPacks()
        if let pack = listing.pack(packID) { return pack }
        if let refused = listing.refused.first(where: { $0.claimedPackID == packID }) { throw refused.error }
        throw PackError(
            .notFound, subject: packID,
            "the server at \(server) lists no such pack"
                + (listing.refused.isEmpty
                    ? "" : " (\(listing.refused.count) entries refused, the first: \(listing.refused[0].error))"))
    }

    // MARK: - Installed packs (offline)

    /// The library's installed packs (offline: listing and removal).
    public var installedPacks: InstalledPacks { InstalledPacks(directory: directory, publisherKeys: publisherKeys) }

    /// The packs in the library's `packs/` (``InstalledPacks/list()``).
    public func installed() throws -> [InstalledPack] { try installedPacks.list() }

    /// Removes `packID` (``InstalledPacks/remove(_:)``); returns the bytes freed.
    @discardableResult
    public func remove(_ packID: String) throws -> Int64 { try installedPacks.remove(packID) }

    // MARK: - Checking and installing

    /// Whether the installed `packID` is the server's latest version, and how it would be updated.
    /// - Cost: one listing request; no download.
    public func check(_ packID: String) async throws -> PackUpdateStatus {
        let listed = try await listed(packID)
        let current = directory.installed(packID, publisherKeys: publisherKeys)
        guard let manifest = current?.manifest, current?.problem == nil else {
            return .notInstalled(latest: listed.version)
        }
        if listed.version < manifest.version {
            throw PackError(
                .downgrade, subject: packID,
                """
                the server offers version \(listed.version), version \(manifest.version) is installed: a \
                downgrade is refused
                """
            )
        }
        if listed.version == manifest.version { return .upToDate(version: manifest.version) }
        return .updateAvailable(
            installed: manifest.version, latest: listed.version,
            plan: PackUpdatePlan.choose(installed: manifest, listed: listed))
    }

    /// Installs `packID`, or brings an installed one to the server's version (as ``update(_:progress:)``).
    /// - Throws: ``PackError``: `unsupportedVersion`, `downgrade`, `badSignature`, `hashMismatch`,
    ///   `noSpace` (disk or quota, with the figures), `busy`, `network`, `io`, and the server's
    ///   refusals (`missingTransaction`, `invalidTransaction`, `notEntitled`, `revoked`, `expired`).
    ///   Whatever fails, the installed version (if any) stays as it was.
    public func install(
        _ packID: String, progress: (@Sendable (PackProgress) -> Void)? = nil
    ) async throws -> PackInstallResult {
        try await perform(try await listed(packID), requireInstalled: false, progress: progress)
    }

    /// Brings the installed `packID` to the server's version: by deltas when the chain is kept
    /// and smaller (``PackUpdatePlan/choose(installed:listed:)``), else in full.
    /// - Throws: as ``install(_:progress:)``; `notFound` when the pack is not installed.
    public func update(
        _ packID: String, progress: (@Sendable (PackProgress) -> Void)? = nil
    ) async throws -> PackInstallResult {
        try await perform(try await listed(packID), requireInstalled: true, progress: progress)
    }

    /// Installs the listed pack `listed` (already verified).
    public func install(
        _ listed: ListedPack, progress: (@Sendable (PackProgress) -> Void)? = nil
    ) async throws -> PackInstallResult {
        try await perform(listed, requireInstalled: false, progress: progress)
    }

    private func perform(
        _ listed: ListedPack, requireInstalled: Bool,
        progress: (@Sendable (PackProgress) -> Void)?
    ) async throws(PackError) -> PackInstallResult {
        let manifest = listed.manifest
        let id = manifest.packID
        guard manifest.minReaderVersion <= PackInstall.readerVersion else {
            throw PackError(
                .unsupportedVersion, subject: id,
                """
                version \(manifest.version) needs pack reader \(manifest.minReaderVersion); this one reads \
                \(PackInstall.readerVersion): update the app
                """
            )
        }
        try directory.create()
        let lock = try PackLock.acquire(directory.lock(id), packID: id)
        defer { lock.unlock() }
        let current = directory.installed(id, publisherKeys: publisherKeys)
        let intact = current?.problem == nil ? current?.manifest : nil
        if requireInstalled, intact == nil {
            throw PackError(
                .notFound, subject: id, current?.problem ?? "is not installed in \(directory.path): download it first")
        }
        var plan = PackUpdatePlan.choose(installed: intact, listed: listed)
        if let intact {
            if manifest.version < intact.version {
                throw PackError(
                    .downgrade, subject: id,
                    """
                    the server offers version \(manifest.version), version \(intact.version) is installed: a \
                    downgrade is refused
                    """
                )
            }
            if manifest.version == intact.version {
                if let problem = installedProblem(id, manifest: intact) {
                    plan = .full(reason: "full: the installed copy is damaged (\(problem))", bytes: manifest.totalBytes)
                } else {
                    progress?(
                        PackProgress(
                            packID: id, phase: .done, file: PackManifest.packFileName(id), bytesReceived: 0,
                            totalBytes: 0, resumedFrom: 0, bytesPerSecond: 0, timeRemaining: .zero))
                    return PackInstallResult(
                        packID: id, version: intact.version, mode: .upToDate, bytesReceived: 0, bytesTotal: 0,
                        resumedFrom: 0, sha256: intact.sha256, reason: "up-to-date")
                }
            }
        }
        var deltaFailure: PackError?
        if case .deltas(let chain, let bytes) = plan, let intact {
            do throws(PackError) {
                return try await updateByDeltas(listed, from: intact, chain: chain, bytes: bytes, progress: progress)
            } catch  where error.code == .deltaMismatch {
                // A delta that does not lead to the signed index: the installed version is
                // untouched and the delta downloads are gone; the whole pack still can.
                plan = .full(reason: "full: the delta update failed (\(error))", bytes: manifest.totalBytes)
                deltaFailure = error
            }
        }
        do throws(PackError) {
            return try await installFull(listed, reason: plan.reason, replacing: current, progress: progress)
        } catch {
            // Both ways failed: say both, in one line, with the delta's verdict first.
            guard let deltaFailure else { throw error }
            throw PackError(
                error.code, subject: error.subject,
                "\(error.detail) (the full download was the fallback: \(deltaFailure.description))", cause: error.cause)
        }
    }

    /// Why the installed pack `id` does not match `manifest`; nil when it does: the pack
    /// opens and its tile-index digest is the signed `tile_index_sha256` (the file's SHA-256
    /// is not the test: a delta-updated pack holds the same tiles in other bytes). Tiles are
    /// checked against the index on every read.
    /// - Cost: opening the pack and one scan of its index.
    func installedProblem(_ id: String, manifest: PackManifest) -> String? {
        Self.indexProblem(directory.pack(id), manifest: manifest)
    }

    /// Why the pack at `path` is not the one `manifest` signs (its tile index); nil when it is.
    static func indexProblem(_ path: String, manifest: PackManifest) -> String? {
        do {
            let digest = try PackReader(path: path).indexDigest()
            return digest == manifest.tileIndexSHA256
                ? nil
                : "\(path): tile index digest \(digest), the signed manifest says \(manifest.tileIndexSHA256)"
        } catch {
            return "\(error)"
        }
    }

    func authorization(_ manifest: PackManifest) -> [(String, String)] {
        guard let product = manifest.productID, let jws = transaction(product) else { return [] }
        return [("Authorization", "Bearer " + jws)]
    }

    /// Refuses a transfer of `needed` bytes the disk cannot hold, or a pack of `packBytes` the
    /// quota cannot (the figures in the message).
    func checkSpace(id: String, version: Int, needed: Int64, packBytes: Int64) throws(PackError) {
        let free = try directory.availableBytes()
        if needed > free {
            throw PackError(
                .noSpace, subject: id,
                "version \(version) needs \(needed) more bytes, \(free) are free on \(directory.path)")
        }
        if let quotaBytes {
            let others = try directory.installedBytes(except: id)
            if others + packBytes > quotaBytes {
                throw PackError(
                    .noSpace, subject: id,
                    """
                    over the library quota: installed packs take \(others) bytes, version \(version) needs \
                    \(packBytes), together \(others + packBytes) > quota \(quotaBytes)
                    """
                )
            }
        }
    }

    private func installFull(
        _ listed: ListedPack, reason: String, replacing current: InstalledPack?,
        progress: (@Sendable (PackProgress) -> Void)?
    ) async throws(PackError) -> PackInstallResult {
        let manifest = listed.manifest
        let id = manifest.packID
        let part = directory.part(id)
        let held = PackDirectory.regularFileSize(part) ?? 0
        try checkSpace(
            id: id, version: manifest.version, needed: max(0, manifest.totalBytes - held),
            packBytes: manifest.totalBytes)
        let download = PackDownload(
            transport: transport, url: server + listed.path, headers: authorization(manifest),
            partPath: part, statePath: directory.partState(id), identity: "pack sha256 " + manifest.sha256,
            expectedBytes: manifest.totalBytes, packID: id, fileName: PackManifest.packFileName(id),
            progress: progress)
        let outcome = try await download.run()
        progress?(
            PackProgress(
                packID: id, phase: .verifying, file: PackManifest.packFileName(id), bytesReceived: manifest.totalBytes,
                totalBytes: manifest.totalBytes, resumedFrom: outcome.resumedFrom, bytesPerSecond: 0,
                timeRemaining: nil))
        let digest: String
        do { digest = try FileDigest.sha256(path: part) } catch { throw PackError(.io, subject: part, error.detail) }
        guard digest == manifest.sha256 else {
            discardPart(id)
            throw PackError(
                .hashMismatch, subject: server + listed.path,
                """
                the downloaded file has SHA-256 \(digest), the signed manifest says \(manifest.sha256): \
                discarded, nothing installed
                """
            )
        }
        // The file is the one the publisher signed, so its index is too, unless the publisher
        // signed a manifest that does not describe its own pack: still not installed.
        if let problem = Self.indexProblem(part, manifest: manifest) {
            discardPart(id)
            throw PackError(.hashMismatch, subject: server + listed.path, "\(problem): discarded, nothing installed")
        }
        try commit(id, staged: part, manifestJWS: listed.jws)
        unlink(directory.partState(id))
        progress?(
            PackProgress(
                packID: id, phase: .done, file: PackManifest.packFileName(id), bytesReceived: manifest.totalBytes,
                totalBytes: manifest.totalBytes, resumedFrom: outcome.resumedFrom, bytesPerSecond: 0,
                timeRemaining: .zero))
        return PackInstallResult(
            packID: id, version: manifest.version, mode: .full, bytesReceived: outcome.received,
            bytesTotal: manifest.totalBytes, resumedFrom: outcome.resumedFrom, sha256: manifest.sha256, reason: reason)
    }

    private func discardPart(_ id: String) {
        unlink(directory.part(id))
        unlink(directory.partState(id))
    }

    /// Moves the complete, verified `staged` file over `<id>.mbtiles`, then the manifest over
    /// `<id>.manifest.jws` (see the type's comment for why in this order), and syncs the directory.
    func commit(_ id: String, staged: String, manifestJWS: String) throws(PackError) {
        let manifestPath = directory.manifest(id)
        let temporary = "\(manifestPath).tmp-\(getpid())-\(String(UInt64.random(in: .min ... .max), radix: 36))"
        try Self.writeDurably(temporary, Array(manifestJWS.utf8))
        let fd = open(staged, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd >= 0 { fsync(fd); close(fd) }
        guard rename(staged, directory.pack(id)) == 0 else {
            let code = errno
            unlink(temporary)
            throw PackError(.io, subject: directory.pack(id), "cannot install (\(AtomicReplacement.message(code)))")
        }
        guard rename(temporary, manifestPath) == 0 else {
            let code = errno
            unlink(temporary)
            throw PackError(
                .io, subject: manifestPath,
                """
                the pack was moved into place but its manifest could not be (\(AtomicReplacement.message(code))): \
                it stays unusable until installed again
                """
            )
        }
        directory.syncDirectory()
    }

    /// Writes a new file and fsyncs it; a partial file is removed.
    static func writeDurably(_ path: String, _ bytes: [UInt8]) throws(PackError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw PackError(.io, subject: path, "cannot create (\(AtomicReplacement.message(errno)))")
        }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                close(fd)
                unlink(path)
                throw PackError(
                    code == ENOSPC || code == EDQUOT ? .noSpace : .io, subject: path,
                    "cannot write (\(AtomicReplacement.message(code)))")
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            let code = errno
            close(fd)
            unlink(path)
            throw PackError(
                code == ENOSPC || code == EDQUOT ? .noSpace : .io, subject: path,
                "cannot sync (\(AtomicReplacement.message(code)))")
        }
        close(fd)
    }
}
