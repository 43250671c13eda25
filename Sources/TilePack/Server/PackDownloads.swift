import TilePackCore
import TilePackRegions

/// The pack installs and updates the viewer started (``StorefrontActions``): each a
/// ``RegionInstaller`` run in a background task, fetching from this server's own routes over
/// loopback HTTP (``HTTPPackTransport``) with the ledger's transaction as `Bearer`, exactly as
/// a device does — the same authorization, ranges, hash and signature checks, and atomic
/// install into the served library's `packs/`.
///
/// One run per pack at a time: a second start while one runs is 409 `busy` (the installer's
/// own lock would refuse it too, but only after the listing request; and it also stops a
/// `tilepack download` of the same pack in another process). A finished run stays listed with
/// its result or error until the next start of that pack.
///
/// Memory: one entry per pack id the server offers (ids are checked against the packs
/// directory before a start), each a few numbers and at most one error line.
/// Threads: Sendable; progress callbacks come from the installer's task.
public final class PackDownloads: Sendable {
    /// One download as `GET /store/downloads` lists it.
    public struct Entry: Sendable, Encodable {
        public enum State: String, Sendable, Encodable { case running, done, failed }
        public var packID: String
        /// `install` or `update`.
        public var action: String
        public var state: State
        /// The installer's phase (`downloading`, `verifying`, `applying`, `done`); `starting`
        /// before its first progress report.
        public var phase: String
        /// Bytes of the file being fetched that are on disk, and its size.
        public var bytes: Int64
        public var total: Int64
        /// Bytes per second (0 before a measurement); seconds left at that rate (nil unknown).
        public var rate: Double
        public var eta: Double?
        /// The installer's one-line error and its code, when failed.
        public var error: String?
        public var code: String?
        /// What the installer did, when done.
        public var result: PackInstallResult?

        enum CodingKeys: String, CodingKey {
            case packID = "pack_id", action, state, phase, bytes, total, rate, eta, error, code, result
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(packID, forKey: .packID)
            try c.encode(action, forKey: .action)
            try c.encode(state, forKey: .state)
            try c.encode(phase, forKey: .phase)
            try c.encode(bytes, forKey: .bytes)
            try c.encode(total, forKey: .total)
            try c.encode(rate.isFinite ? rate : 0, forKey: .rate)
            try c.encodeOrNull(eta.flatMap { $0.isFinite ? $0 : nil }, forKey: .eta)
            try c.encodeOrNull(error, forKey: .error)
            try c.encodeOrNull(code, forKey: .code)
            try c.encodeOrNull(result, forKey: .result)
        }
    }

    struct List: Encodable { let downloads: [Entry] }

    private let table = Locked<[String: Entry]>([:])
    /// Created on the first start (a server whose viewer never downloads opens no client).
    private let transport = Locked<HTTPPackTransport?>(nil)
    /// Runs in flight, so ``shutdown()`` can wait for them before closing the client.
    private let tasks = Locked<[String: Task<Void, Never>]>([:])

    public init() {}

    /// Every download started since the server began, sorted by pack id.
    public func entries() -> [Entry] { table.withLock { $0.values.sorted { $0.packID < $1.packID } } }

    /// Starts installing (or updating) `id` from `server` into `library`'s `packs/`: 202 with
    /// the entry, or 409 `busy` while a run of `id` goes on.
    func start(_ id: String, update: Bool, library: RegionLibrary, server: String) -> ServedResponse {
        let entry = Entry(
            packID: id, action: update ? "update" : "install", state: .running, phase: "starting",
            bytes: 0, total: 0, rate: 0, eta: nil, error: nil, code: nil, result: nil)
        let started = table.withLock { t -> Bool in
            if t[id]?.state == .running { return false }
            t[id] = entry
            return true
        }
        guard started else {
            return .error(
                409, kind: "busy", message: "pack \(id) is already downloading (GET /store/downloads shows how far)")
        }
        let client = transport.withLock { t in
            if let t { return t }
            let made = HTTPPackTransport()
            t = made
            return made
        }
        let installer: RegionInstaller
        do {
            installer = try RegionInstaller(library: library, server: server, transport: client)
        } catch {
            // RegionInstaller throws PackError alone (its public face is untyped).
            let error = error as? PackError ?? PackError(.io, subject: library.directory, "\(error)", cause: error)
            finish(id, .failure(error))
            return .error(503, kind: "unavailable", message: error.description)
        }
        let task = Task.detached { [self] in
            let progress: @Sendable (PackProgress) -> Void = { [self] p in self.record(id, p) }
            do {
                let result =
                    update
                    ? try await installer.update(id, progress: progress)
                    : try await installer.install(id, progress: progress)
                finish(id, .success(result))
            } catch {
                // The installer throws PackError alone (its public face is untyped).
                finish(id, .failure(error as? PackError ?? PackError(.io, subject: id, "\(error)", cause: error)))
            }
            _ = tasks.withLock { $0.removeValue(forKey: id) }
        }
        tasks.withLock { $0[id] = task }
        do { return .json(try JSONOutput.string(entry), status: 202, cache: "no-store") } catch { return .from(error) }
    }

    private func record(_ id: String, _ p: PackProgress) {
        table.withLock { t in
            guard var e = t[id], e.state == .running else { return }
            e.phase = p.phase.rawValue
            e.bytes = p.bytesReceived
            e.total = p.totalBytes
            e.rate = p.bytesPerSecond
            e.eta = p.timeRemaining?.inSeconds
            t[id] = e
        }
    }

    private func finish(_ id: String, _ outcome: Result<PackInstallResult, PackError>) {
        table.withLock { t in
            guard var e = t[id] else { return }
            switch outcome {
            case .success(let result):
                e.state = .done
                e.phase = "done"
                e.result = result
                e.rate = 0
                e.eta = 0
                if e.total == 0 { e.total = result.bytesTotal }
                e.bytes = e.total
            case .failure(let error):
                e.state = .failed
                e.error = error.description + (error.cause.map { " (\(ErrorText.oneLine("\($0)")))" } ?? "")
                e.code = error.code.rawValue
                e.eta = nil
            }
            t[id] = e
        }
    }

    /// Waits for runs in flight (the server has stopped, so they fail quickly if they still
    /// need it), then shuts the HTTP client down.
    func shutdown() async {
        for task in tasks.withLock({ Array($0.values) }) { await task.value }
        if let client = transport.withLock({ $0 }) { await client.shutdown() }
    }
}
