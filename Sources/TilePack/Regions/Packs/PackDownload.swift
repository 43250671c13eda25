import TilePackCore
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One file fetched into a resumable `.part`: the pack, or a delta. The caller holds the
/// pack's ``PackLock``.
///
/// Resuming: a `.part` is continued only when its sidecar (`.part.json`) names the same
/// `identity` (the signed manifest's `sha256` for a pack: a `.part` of another version is
/// discarded, never resumed) and the server's ETag for it; the request then carries
/// `Range: bytes=N-` and `If-Range: <etag>`, so a server whose file changed answers 200 with
/// the whole new file, which restarts the `.part` from 0. A 206 must start exactly at N and
/// end at the announced size.
///
/// Never more than `expectedBytes` are written: a server that sends more than it announced
/// (or than the signed manifest says) is a ``PackError/Code/network`` error with the `.part`
/// kept at what fits, and a connection that drops leaves the `.part` for the next attempt.
///
/// Cost: memory of one chunk; one `pwrite` per chunk; an `fsync` at the end.
struct PackDownload {
    let transport: any PackTransport
    let url: String
    let headers: [(String, String)]
    let partPath: String
    let statePath: String
    /// What the bytes must be: the file's signed SHA-256 (a pack) or the delta's name and target version.
    let identity: String
    let expectedBytes: Int64
    let packID: String
    let fileName: String
    let progress: (@Sendable (PackProgress) -> Void)?

    /// The sidecar's content.
    struct PartState: Codable, Equatable {
        var identity: String
        var etag: String?
    }

    struct Outcome {
        /// Bytes the `.part` held when the transfer started (0: from scratch).
        var resumedFrom: Int64
        /// Bytes that came over the network.
        var received: Int64
    }

    func run() async throws(PackError) -> Outcome {
        let fd = open(partPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0o600)
        guard fd >= 0 else {
            throw PackError(.io, subject: partPath, "cannot open (\(AtomicReplacement.message(errno)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw PackError(.io, subject: partPath, RegularFile.notRegular(mode: info.st_mode))
        }
        var offset = Int64(info.st_size)
        var etag: String?
        if let state = readState(), state.identity == identity, let known = state.etag, offset <= expectedBytes {
            etag = known
        } else {
            offset = 0
        }
        if offset == 0 { try truncate(fd, to: 0) }
        let resumedFrom = offset
        var received: Int64 = 0
        if offset == expectedBytes {
            report(.downloading, bytes: offset, resumedFrom: resumedFrom, rate: 0)
            return Outcome(resumedFrom: resumedFrom, received: 0)
        }

        var restarted = false
        var body = PackBody.empty
        // A refusal before any byte leaves no empty .part behind.
        func dropIfEmpty() {
            var now = stat()
            if fstat(fd, &now) == 0, now.st_size == 0 { unlink(partPath); unlink(statePath) }
        }
        while true {
            var request = headers
            if offset > 0, let etag {
                request.append(("Range", "bytes=\(offset)-"))
                request.append(("If-Range", etag))
            }
            let response: PackResponse
            do { response = try await transport.get(url: url, headers: request) } catch {
                dropIfEmpty()
                throw PackError(
                    .network, subject: url, "the request failed: \(Self.describe(error))", cause: error)
            }
            switch response.status {
            case 200:
                if let length = response.header("Content-Length"), Int64(length) != expectedBytes {
                    dropIfEmpty()
                    throw PackError(.network, subject: url, "announces \(length) bytes; expected \(expectedBytes)")
                }
                if offset > 0 { try truncate(fd, to: 0) }
                offset = 0
            case 206:
                guard offset > 0, let range = response.header("Content-Range"),
                    let (first, last, total) = Self.parseContentRange(range),
                    first == offset, last == expectedBytes - 1, total == expectedBytes
                else {
                    dropIfEmpty()
                    throw PackError(
                        .network, subject: url,
                        """
                        answered a range request with \
                        \(response.header("Content-Range").map { "Content-Range \($0)" } ?? "no Content-Range"); \
                        expected bytes \(offset)-\(expectedBytes - 1)/\(expectedBytes)
                        """
                    )
                }
                if let length = response.header("Content-Length"), Int64(length) != expectedBytes - offset {
                    throw PackError(
                        .network, subject: url, "announces \(length) bytes for range \(offset)-\(expectedBytes - 1)")
                }
            case 416 where offset > 0 && !restarted:
                // The server's file is shorter than the .part: start over once.
                try truncate(fd, to: 0)
                offset = 0
                etag = nil
                restarted = true
                continue
            default:
                dropIfEmpty()
                throw await Self.failure(response, url: url)
            }
            etag = response.header("ETag")
            try writeState(PartState(identity: identity, etag: etag))
            body = response.body
            break
        }

        var rate = TransferRate()
        let clock = ContinuousClock()
        var lastReport = clock.now
        rate.record(offset, at: lastReport)
        report(.downloading, bytes: offset, resumedFrom: offset == 0 ? 0 : resumedFrom, rate: 0)
        let startedAt = offset
        do {
            for try await chunk in body {
                let room = expectedBytes - offset
                if Int64(chunk.count) > room {
                    try write(fd, chunk[0..<Int(room)], at: offset)
                    offset += room
                    throw PackError(
                        .network, subject: url,
                        """
                        sent more than the \(expectedBytes - startedAt) bytes it announced; the \(offset)-byte \
                        .part was kept
                        """
                    )
                }
                try write(fd, chunk[...], at: offset)
                offset += Int64(chunk.count)
                received += Int64(chunk.count)
                let now = clock.now
                rate.record(offset, at: now)
                if now - lastReport >= .milliseconds(200) || offset == expectedBytes {
                    lastReport = now
                    report(.downloading, bytes: offset, resumedFrom: startedAt, rate: rate.bytesPerSecond)
                }
            }
        } catch let error as PackError {
            throw error
        } catch {
            fsync(fd)
            throw PackError(
                .network, subject: url,
                """
                the transfer broke after \(offset) of \(expectedBytes) bytes (\(Self.describe(error))); run again \
                to resume
                """,
                cause: error)
        }
        fsync(fd)
        guard offset == expectedBytes else {
            throw PackError(
                .network, subject: url,
                "the connection closed after \(offset) of \(expectedBytes) bytes; run again to resume")
        }
        return Outcome(resumedFrom: startedAt, received: received)
    }

    // MARK: helpers

    private func report(_ phase: PackProgress.Phase, bytes: Int64, resumedFrom: Int64, rate: Double) {
        guard let progress else { return }
        let remaining = expectedBytes - bytes
        progress(
            PackProgress(
                packID: packID, phase: phase, file: fileName, bytesReceived: bytes, totalBytes: expectedBytes,
                resumedFrom: resumedFrom, bytesPerSecond: rate,
                timeRemaining: rate > 0 ? Self.duration(bytes: remaining, at: rate) : (remaining == 0 ? .zero : nil)))
    }

    /// `bytes` at `rate` bytes a second, capped at a year (a stalled transfer's rate can be
    /// tiny, and `Duration` must not overflow).
    static func duration(bytes: Int64, at rate: Double) -> Duration {
        .seconds(min(Double(max(0, bytes)) / rate, 365 * 86_400))
    }

    private func readState() -> PartState? {
        guard let bytes = try? RegionFiles.regularFileBytes(path: statePath, limit: 4096) else { return nil }
        return try? JSONDecoder().decode(PartState.self, from: Data(bytes))
    }

    private func writeState(_ state: PartState) throws(PackError) {
        do {
            try RegionFiles.writeAtomically(
                path: statePath, bytes: Array(try JSONOutput.string(state).utf8), mode: 0o600)
        } catch let error as InputFileError {
            throw PackError(.io, subject: error.subject, error.detail)
        } catch {
            throw PackError(.io, subject: statePath, "\(error)")
        }
    }

    private func truncate(_ fd: Int32, to size: Int64) throws(PackError) {
        guard ftruncate(fd, off_t(size)) == 0 else {
            throw PackError(.io, subject: partPath, "cannot truncate (\(AtomicReplacement.message(errno)))")
        }
    }

    private func write(_ fd: Int32, _ bytes: ArraySlice<UInt8>, at offset: Int64) throws(PackError) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                pwrite(fd, raw.baseAddress! + done, raw.count - done, off_t(offset) + off_t(done))
            }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                throw PackError(
                    code == ENOSPC || code == EDQUOT ? .noSpace : .io, subject: partPath,
                    """
                    cannot write at byte \(offset + Int64(done)) (\(AtomicReplacement.message(code))); the .part \
                    keeps what was written
                    """
                )
            }
            done += n
        }
    }

    /// `bytes A-B/T` → (A, B, T).
    static func parseContentRange(_ text: String) -> (Int64, Int64, Int64)? {
        guard text.hasPrefix("bytes ") else { return nil }
        let parts = text.dropFirst(6).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let total = Int64(parts[1]) else { return nil }
        let range = parts[0].split(separator: "-", omittingEmptySubsequences: false)
        guard range.count == 2, let first = Int64(range[0]), let last = Int64(range[1]),
            first >= 0, first <= last, last < total
        else { return nil }
        return (first, last, total)
    }

    /// The typed error for a refused request: the server's JSON `error` code for 401/403
    /// (`missingTransaction`, `invalidTransaction`, `notEntitled`, `revoked`, `expired`),
    /// `notFound` for 404, `network` for anything else.
    static func failure(_ response: PackResponse, url: String) async -> PackError {
        let body = (try? await response.body.collect(limit: 64 << 10)) ?? nil
        struct ServerError: Decodable { var error: String?; var message: String? }
        let parsed = body.flatMap { try? JSONDecoder().decode(ServerError.self, from: Data($0)) }
        let message = parsed?.message.map { ErrorText.oneLine(String($0.prefix(300))) } ?? "HTTP \(response.status)"
        switch response.status {
        case 401, 403:
            let code = parsed?.error.flatMap(PackError.Code.init(rawValue:))
            let allowed: [PackError.Code] = [
                .missingTransaction, .invalidTransaction, .notEntitled, .revoked, .expired,
            ]
            let chosen =
                code.flatMap { allowed.contains($0) ? $0 : nil }
                ?? (response.status == 401 ? .missingTransaction : .notEntitled)
            return PackError(chosen, subject: url, "refused (\(response.status) \(chosen.rawValue)): \(message)")
        case 404:
            return PackError(.notFound, subject: url, "not on the server (404): \(message)")
        default:
            return PackError(.network, subject: url, "answered \(response.status): \(message)")
        }
    }

    static func describe(_ error: any Error) -> String { ErrorText.oneLine(String("\(error)".prefix(300))) }
}
