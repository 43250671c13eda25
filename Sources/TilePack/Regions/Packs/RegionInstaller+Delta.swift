import TilePackCore
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension RegionInstaller {
    /// Brings the installed version `installed` to `listed` through `chain` (N → N+1 → … → M):
    /// each delta downloads into a resumable `.part`, is applied to a copy (the installed
    /// pack is never written), and the last step's result must have the signed manifest's
    /// `tile_index_sha256`; intermediate steps are checked against the digest their delta
    /// names (unsigned: the listing carries only the latest manifest; the signed check at the
    /// end covers the whole chain). Only then is the copy moved over the pack, with the new
    /// manifest, as a full install is.
    /// - Throws: ``PackError``: `deltaMismatch` (a delta for another version, truncated, or
    ///   not leading to the signed index; the delta downloads are discarded), and as a full
    ///   download for the transfers. The installed version is untouched on any failure.
    /// - Cost: the deltas' bytes over the network; one copy of the pack per step.
    func updateByDeltas(
        _ listed: ListedPack, from installed: PackManifest, chain: [ListedPack.Delta], bytes: Int64,
        progress: (@Sendable (PackProgress) -> Void)?
    ) async throws(PackError) -> PackInstallResult {
        let manifest = listed.manifest
        let id = manifest.packID
        let packPath = directory.pack(id)
        let installedBytes = PackDirectory.regularFileSize(packPath) ?? 0
        // Deltas plus a copy of the pack (two while chaining): what the disk must hold at the peak.
        try checkSpace(
            id: id, version: manifest.version, needed: bytes + 2 * max(installedBytes, manifest.totalBytes),
            packBytes: manifest.totalBytes)
        var received: Int64 = 0, resumed: Int64 = 0
        var deltaPaths: [String] = []
        for step in chain {
            let to = step.from + 1
            let part = directory.deltaPart(id, from: step.from, to: to)
            let download = PackDownload(
                transport: transport, url: server + step.url, headers: authorization(manifest),
                partPath: part, statePath: part + ".json",
                identity: "delta v\(step.from)-v\(to) towards pack sha256 \(manifest.sha256)",
                expectedBytes: step.bytes, packID: id,
                fileName: PackManifest.deltaFileName(id, from: step.from, to: to), progress: progress)
            let outcome = try await download.run()
            received += outcome.received
            resumed += outcome.resumedFrom
            deltaPaths.append(part)
        }
        func discardDeltas() {
            for path in deltaPaths { unlink(path); unlink(path + ".json") }
        }
        progress?(
            PackProgress(
                packID: id, phase: .applying, file: PackManifest.packFileName(id), bytesReceived: bytes,
                totalBytes: bytes, resumedFrom: resumed, bytesPerSecond: 0, timeRemaining: nil))
        let output = directory.update(id)
        let intermediate = output + ".step"
        var source = packPath
        do throws(ArchiveError) {
            for (index, (step, delta)) in zip(chain, deltaPaths).enumerated() {
                let to = step.from + 1
                let last = index == chain.count - 1
                let expected: String
                if last {
                    expected = manifest.tileIndexSHA256
                } else {
                    expected =
                        try ArchiveError.typed(path: delta) { try PackReader(path: delta) }.metadata[
                            PackSchema.Key.tileIndexSHA256] ?? ""
                }
                let target = last ? output : (source == intermediate ? output : intermediate)
                try PackDelta.apply(
                    delta: delta, installed: source, output: target, packID: id, from: step.from, to: to,
                    expectedDigest: expected)
                if source != packPath && source != target { unlink(source) }
                source = target
            }
            guard
                try ArchiveError.typed(path: output, { try PackReader(path: output).indexDigest() })
                    == manifest.tileIndexSHA256
            else {
                throw ArchiveError(
                    path: output, code: .deltaMismatch, detail: "the updated pack's tile index is not the signed one"
                )
            }
        } catch {
            unlink(output)
            unlink(intermediate)
            discardDeltas()
            let code: PackError.Code =
                error.code == .writeFailed || error.code == .cannotOpen ? .io : .deltaMismatch
            throw PackError(
                code, subject: error.subject,
                """
                the delta update to version \(manifest.version) failed: \(error.detail); version \
                \(installed.version) stays installed
                """,
                cause: error)
        }
        try commit(id, staged: output, manifestJWS: listed.jws)
        discardDeltas()
        progress?(
            PackProgress(
                packID: id, phase: .done, file: PackManifest.packFileName(id), bytesReceived: bytes,
                totalBytes: bytes, resumedFrom: resumed, bytesPerSecond: 0, timeRemaining: .zero))
        return PackInstallResult(
            packID: id, version: manifest.version, mode: .delta, bytesReceived: received, bytesTotal: bytes,
            resumedFrom: resumed, sha256: manifest.sha256, reason: PackUpdatePlan.deltas(chain, bytes: bytes).reason)
    }
}
