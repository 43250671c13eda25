import TilePackCore
import TilePackSQLite
import TilePackCodec
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Resuming: the journal a build keeps in its temporary archive, the interrupted archives
/// a new writer can adopt, and the finished-root rows that say which subtrees are done.
///
/// Cost: one indexed row per finished root; adopting an archive checkpoints its WAL once.
extension MBTilesWriter {
    /// A journal of finished work kept in the temporary archive, so a build killed at any
    /// moment (SIGKILL, power loss) can resume from its last committed batch.
    ///
    /// Two tables live beside the MBTiles ones while the archive is built: `tilepack_build`
    /// (name, value: the ``identity`` of the build) and `tilepack_roots` (a tile on the map
    /// grid and an opaque `pixels` blob the caller records once everything below that tile is
    /// written: ``recordRoot(_:payload:)``). A root row goes into the same transaction as the
    /// tiles written just before it, so a committed root means a committed subtree.
    /// ``finish()`` drops both tables (keeping the root rows at and above ``keptRootZoom`` when set)
    /// and hands the freed pages back to the file system (incremental auto-vacuum).
    public struct Journal: Sendable, Equatable {
        /// What the build is (e.g. source digest and options). The caller compares it with an
        /// interrupted archive's before resuming (``Interrupted/identity``).
        public var identity: [String: String]
        /// Root rows at this zoom and above (lower zoom numbers) stay in the finished archive:
        /// shard archives keep the pixels of their shard-zoom tiles and of the tiles above
        /// they built, for the merge. Nil drops them all.
        public var keptRootZoom: Int?

        public init(identity: [String: String], keptRootZoom: Int? = nil) {
            self.identity = identity
            self.keptRootZoom = keptRootZoom
        }
    }

    /// A temporary archive of this target left by a writer that is gone (see
    /// ``MBTilesWriter/interrupted(target:)``).
    public struct Interrupted: Sendable, Equatable {
        public let path: String
        /// Its journal's identity; nil when it has none (killed while being created, or
        /// written without a journal): such a file cannot be resumed.
        public let identity: [String: String]?
        /// Roots recorded as finished.
        public let finishedRoots: Int
    }

    /// Temporary archives of `target` whose writers are gone (killed, or the machine lost
    /// power), newest first, each with its journal's identity when it has one.
    /// - Cost: a directory listing; opening each candidate (recovering its WAL) and reading
    ///   its `tilepack_build` rows and root count.
    public static func interrupted(target: String) -> [Interrupted] {
        AtomicReplacement(targetPath: target, companionSuffixes: companions).abandonedTemporaries().map { path in
            guard access(path, F_OK) == 0, let db = try? SQLiteConnection(path: path, mode: .readWriteCreate),
                let rows = try? db.prepare("SELECT name, value FROM tilepack_build")
            else {
                return Interrupted(path: path, identity: nil, finishedRoots: 0)
            }
            var identity: [String: String] = [:]
            while (try? rows.step()) == true {
                if let name = rows.string(at: 0) { identity[name] = rows.string(at: 1) ?? "" }
            }
            let count =
                (try? db.prepare("SELECT count(*) FROM tilepack_roots")).flatMap { s in
                    (try? s.step()) == true ? s.int(at: 0) : nil
                } ?? 0
            return Interrupted(path: path, identity: identity.isEmpty ? nil : identity, finishedRoots: count)
        }
    }

    /// The roots a resume of the (abandoned) temporary archive at `path` will skip: those its
    /// journal committed as finished. Empty when the file cannot be read.
    /// - Cost: opening the file and reading `tilepack_roots`' keys.
    package static func committedRoots(path: String) -> Set<TileID> {
        guard let db = try? SQLiteConnection(path: path, mode: .readWriteExisting),
            let keys = try? rootKeys(db)
        else { return [] }
        return keys
    }

    /// Moves an interrupted archive to this writer's temporary name: its WAL is checkpointed
    /// into the file first, so the file alone holds every committed batch.
    func adopt(_ interrupted: Interrupted) throws {
        do {
            let old = try SQLiteConnection(path: interrupted.path, mode: .readWriteCreate)
            try old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            throw Self.writeFailure(error, path: interrupted.path, doing: "recovering the interrupted archive")
        }
        guard interrupted.path != temporaryPath else { return }
        replacement.removeTemporary()
        guard rename(interrupted.path, temporaryPath) == 0 else {
            throw ArchiveError(
                path: interrupted.path, code: .writeFailed,
                detail: "cannot move to \(temporaryPath): \(AtomicReplacement.message(errno))")
        }
        for suffix in Self.companions { unlink(interrupted.path + suffix) }
    }

    static func rootKeys(_ db: SQLiteConnection) throws -> Set<TileID> {
        let rows = try db.prepare("SELECT zoom_level, tile_column, tile_row FROM tilepack_roots")
        var keys = Set<TileID>()
        while try rows.step() {
            let z = rows.int(at: 0)
            guard (0...TileID.maxZoom).contains(z) else { continue }
            if let id = TileID(z: z, x: rows.int(at: 1), tmsY: rows.int(at: 2)) { keys.insert(id) }
        }
        return keys
    }

    /// Records that everything below `tile` (and `tile`) is written, with the caller's
    /// `payload` for it (nil: an empty tile), in the current batch. Needs a ``Journal``.
    /// - Cost: one indexed insert of the payload.
    public func recordRoot(_ tile: TileID, payload: [UInt8]?) throws {
        try checkOpen()
        guard let stmt = insertRoot else { preconditionFailure("recordRoot on a writer without a journal") }
        do {
            try beginBatchIfNeeded()
            try stmt.bind(tile.z, at: 1)
            try stmt.bind(tile.x, at: 2)
            try stmt.bind(tile.tmsY, at: 3)
            if let payload { try stmt.bind(payload, at: 4) } else { try stmt.bindNull(at: 4) }
            try stmt.run()
            try endBatchIfFull(adding: payload?.count ?? 0)
        } catch {
            throw fail(error, doing: "recording finished tile \(tile)")
        }
    }

    /// The payload recorded for a root: `.some(nil)` for an empty tile, nil when none is recorded.
    public func rootPayload(_ tile: TileID) throws -> [UInt8]?? {
        try checkOpen()
        guard let stmt = selectRoot else { preconditionFailure("rootPayload on a writer without a journal") }
        do {
            try stmt.bind(tile.z, at: 1)
            try stmt.bind(tile.x, at: 2)
            try stmt.bind(tile.tmsY, at: 3)
            defer { stmt.reset() }
            guard try stmt.step() else { return nil }
            return .some(stmt.isNull(at: 0) ? nil : stmt.bytes(at: 0) ?? [])
        } catch {
            throw fail(error, doing: "reading finished tile \(tile)")
        }
    }
}
