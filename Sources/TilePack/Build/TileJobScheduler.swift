import Foundation
import TilePackCore

/// One tile's work in a build's pyramid: made on a ``TileJobScheduler`` thread once the jobs
/// it needs (its children) are done, then handed to the sink by the calling thread in the
/// order the jobs were submitted.
///
/// Its mutable fields are only touched under the scheduler's lock (hence `@unchecked`).
final class TileJob: @unchecked Sendable {
    /// What the calling thread does with the job once it is done, in submission order.
    enum Role {
        /// Write it (and record it finished in the journal when `record`).
        case write(record: Bool)
        /// Nothing: a tile another build made, loaded only for its parent.
        case load
        /// A subtree an interrupted run finished: `skipped` planned tiles counted done.
        case resumed(skipped: Int)
    }

    typealias Work = @Sendable (_ kids: [TileBuffer?], _ workspace: ResampleWorkspace) throws -> TileResult

    let tile: TileID
    let role: Role
    /// Nil once run (or for a job made done).
    fileprivate var work: Work?
    /// The jobs whose buffers `work` takes, in ``TileID/children`` order; emptied when it runs,
    /// so a child's buffer lives only until its parent is made (and it is written).
    fileprivate var kids: [TileJob?]
    /// Kids not done yet.
    fileprivate var waiting = 0
    /// Jobs waiting for this one; emptied when it is done.
    fileprivate var parents: [TileJob] = []
    fileprivate var result: TileResult?
    fileprivate let order: Int

    fileprivate init(tile: TileID, role: Role, order: Int, kids: [TileJob?], work: Work?, result: TileResult?) {
        self.tile = tile
        self.role = role
        self.order = order
        self.kids = kids
        self.work = work
        self.result = result
    }
}

/// A small dependency scheduler for one build: `workers` threads make tile jobs as soon as
/// their children are done, earliest-submitted first, while the calling thread submits more
/// and takes finished ones in submission order (``next()``).
///
/// Why: making a block level by level left a core idle at each level's last tile and while
/// the calling thread made the tiles above the block zoom one at a time; with a parent ready
/// once its four children are, a block's upper levels and the parents above it run beside
/// the next block's max-zoom tiles. Earliest-first keeps the oldest work (and its buffers)
/// finishing first. The first error a job throws stops the workers and is rethrown by the
/// next ``next()``.
///
/// Every wait (a worker for a ready job, the calling thread for the oldest job, shut-down for
/// the workers' end) is on one ``ConditionLock``, broadcast at each change: with two or three
/// threads a broadcast wakes little, and no signal has to be counted.
/// - Cost: `workers` threads for the scheduler's life (ended by ``shutDown()``); one lock and
///   one broadcast per job start and end; a linear scan of the ready jobs (at most a block's)
///   per start.
///
/// `@unchecked Sendable`: the workers touch only the fields marked "under `lock`", and only
/// while holding it; `queue`, `queueHead` and `submitted` are the calling thread's.
final class TileJobScheduler: @unchecked Sendable {
    private let lock = ConditionLock()
    /// Jobs whose kids are all done, not started yet; under `lock`.
    private var ready: [TileJob] = []
    /// The first error a job threw; under `lock`.
    private var failure: (any Error)?
    /// Set by an error or ``shutDown()``: workers take no more jobs; under `lock`.
    private var stopping = false
    /// Worker threads not ended yet; under `lock`.
    private var liveWorkers: Int
    /// Submitted jobs in order, nil once taken by ``next()`` (so a taken job's buffer lives
    /// only as long as its parent needs it); calling thread only.
    private var queue: [TileJob?] = []
    private var queueHead = 0
    private var submitted = 0

    /// Starts `workspaces.count` threads, each with its own workspace.
    init(workspaces: [ResampleWorkspace]) {
        liveWorkers = workspaces.count
        for workspace in workspaces {
            let thread = Thread { [self] in
                loop(workspace)
                lock.withLock {
                    liveWorkers -= 1
                    lock.broadcast()
                }
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
    }

    /// Queues `work` for `tile`, to run once every non-nil kid is done. Calling thread only.
    @discardableResult
    func submit(_ tile: TileID, role: TileJob.Role, kids: [TileJob?] = [], work: @escaping TileJob.Work) -> TileJob {
        let job = TileJob(tile: tile, role: role, order: submitted, kids: kids, work: work, result: nil)
        submitted += 1
        queue.append(job)
        lock.withLock {
            for case let kid? in kids where kid.result == nil {
                kid.parents.append(job)
                job.waiting += 1
            }
            if job.waiting == 0 {
                ready.append(job)
                lock.broadcast()
            }
        }
        return job
    }

    /// A job already done (a resumed subtree's pixels), taken in order like the others.
    @discardableResult
    func done(_ tile: TileID, role: TileJob.Role, result: TileResult) -> TileJob {
        let job = TileJob(tile: tile, role: role, order: submitted, kids: [], work: nil, result: result)
        submitted += 1
        queue.append(job)
        return job
    }

    /// The oldest job not yet taken and its result, waiting for it; nil when none is left.
    /// Its encoded bytes are dropped from the job (the caller has them; the job may stay
    /// alive until its parent is made). Calling thread only.
    /// - Throws: the first error a job threw.
    func next() throws -> (TileJob, TileResult)? {
        guard queueHead < queue.count, let job = queue[queueHead] else { return nil }
        let result = try lock.withLock { () throws -> TileResult in
            while true {
                if let failure { throw failure }
                if let result = job.result {
                    job.result?.encoded = nil
                    return result
                }
                lock.wait()
            }
        }
        queue[queueHead] = nil
        queueHead += 1
        if queueHead >= 1024 {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        return (job, result)
    }

    /// Stops the workers (jobs not started are dropped) and waits for them to end. Calling
    /// thread only; call once, also after an error.
    func shutDown() {
        lock.withLock {
            stopping = true
            ready = []
            lock.broadcast()
            while liveWorkers > 0 { lock.wait() }
            // Break the kid ↔ parent references of jobs that never ran.
            for case let job? in queue[queueHead...] {
                job.kids = []
                job.parents = []
                job.work = nil
            }
        }
        queue = []
        queueHead = 0
    }

    private func loop(_ workspace: ResampleWorkspace) {
        while let (job, work, kids) = take() {
            let outcome = Result { try work(kids, workspace) }
            lock.withLock {
                switch outcome {
                case .failure(let error):
                    if failure == nil { failure = error }
                    stopping = true
                    ready = []
                case .success(let result):
                    job.result = result
                    for parent in job.parents {
                        parent.waiting -= 1
                        if parent.waiting == 0 && !stopping { ready.append(parent) }
                    }
                    job.parents = []
                }
                lock.broadcast()
            }
        }
    }

    /// The earliest-submitted ready job with its work and its kids' buffers, waiting for one;
    /// nil once the scheduler stops.
    private func take() -> (TileJob, TileJob.Work, [TileBuffer?])? {
        lock.withLock {
            while !stopping {
                if let i = ready.indices.min(by: { ready[$0].order < ready[$1].order }) {
                    let job = ready.remove(at: i)
                    let kids = job.kids.map { $0?.result?.buffer }
                    job.kids = []
                    // Only submitted jobs become ready, and each once: `work` is there.
                    guard let work = job.work else { continue }
                    job.work = nil
                    return (job, work, kids)
                }
                lock.wait()
            }
            return nil
        }
    }
}
