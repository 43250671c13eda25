import TilePackCore
import TilePackStore
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The long test of a ``TileStore``: many threads replay viewer traces against it for a
/// while, some holding leases, with memory warnings on a schedule; the report says whether
/// the budget ever broke and what the process's memory did. What `tilepack stress` runs.
public enum TileStoreStress {
    public struct Configuration: Sendable {
        public var threads = 8
        public var duration: Duration = .seconds(30)
        public var trace: AccessTrace.Kind = .random
        /// Ask for decoded pixels instead of payloads.
        public var decode = false
        /// Frames of each thread's trace (it loops over them until the time is up).
        public var frames = 2_000
        /// Every `leaseEvery`-th tile is kept leased until the thread's next kept tile.
        public var leaseEvery = 8
        public var seed: UInt64 = 1
        public init() {}
    }

    /// What one run measured. JSON keys as `tilepack stress --json` prints them.
    public struct Report: Sendable, Encodable {
        public var operations = 0
        public var hitRate = 0.0
        public var peakResidentBytes = 0
        public var budgetBytes = 0
        public var idleRSSBytes = 0
        public var peakRSSBytes = 0
        public var budgetViolations = 0
        public var loadP50Micros = 0.0
        public var loadP99Micros = 0.0
        public var memoryWarnings = 0
        public var bytesFreedByPressure = 0
        /// Loads refused because leases filled the budget (typed errors, not violations).
        public var budgetExhaustedErrors = 0
        /// Other errors (damaged tiles), by one-line description, first few.
        public var otherErrors: [String] = []
        public var seconds = 0.0
        public var threads = 0
        public var trace = ""
        /// nil when the byte accounting balanced at the end, else the mismatch.
        public var accountingProblem: String?

        /// Peak RSS minus (idle RSS + budget): the "no more than 24 MiB above".
        public var rssAboveIdlePlusBudget: Int { peakRSSBytes - idleRSSBytes - budgetBytes }

        /// Whether the run kept every promise: no violation, accounting balanced.
        public var passed: Bool {
            budgetViolations == 0 && accountingProblem == nil && peakResidentBytes <= budgetBytes
        }

        enum CodingKeys: String, CodingKey {
            case operations, seconds, threads, trace, passed
            case hitRate = "hit_rate"
            case peakResidentBytes = "peak_resident_bytes"
            case budgetBytes = "budget_bytes"
            case idleRSSBytes = "idle_rss_bytes"
            case peakRSSBytes = "peak_rss_bytes"
            case rssAboveIdlePlusBudget = "rss_above_idle_plus_budget_bytes"
            case budgetViolations = "budget_violations"
            case loadP50Micros = "load_p50_us"
            case loadP99Micros = "load_p99_us"
            case memoryWarnings = "memory_warnings"
            case bytesFreedByPressure = "bytes_freed_by_pressure"
            case budgetExhaustedErrors = "budget_exhausted_errors"
            case otherErrors = "other_errors"
            case accountingProblem = "accounting_problem"
        }

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(operations, forKey: .operations)
            try c.encode(JSONOutput.number((hitRate * 10_000).rounded() / 10_000), forKey: .hitRate)
            try c.encode(peakResidentBytes, forKey: .peakResidentBytes)
            try c.encode(budgetBytes, forKey: .budgetBytes)
            try c.encode(idleRSSBytes, forKey: .idleRSSBytes)
            try c.encode(peakRSSBytes, forKey: .peakRSSBytes)
            try c.encode(rssAboveIdlePlusBudget, forKey: .rssAboveIdlePlusBudget)
            try c.encode(budgetViolations, forKey: .budgetViolations)
            try c.encode(JSONOutput.number(loadP50Micros), forKey: .loadP50Micros)
            try c.encode(JSONOutput.number(loadP99Micros), forKey: .loadP99Micros)
            try c.encode(memoryWarnings, forKey: .memoryWarnings)
            try c.encode(bytesFreedByPressure, forKey: .bytesFreedByPressure)
            try c.encode(budgetExhaustedErrors, forKey: .budgetExhaustedErrors)
            try c.encode(otherErrors, forKey: .otherErrors)
            try c.encode(JSONOutput.number((seconds * 100).rounded() / 100), forKey: .seconds)
            try c.encode(threads, forKey: .threads)
            try c.encode(trace, forKey: .trace)
            try c.encodeOrNull(accountingProblem, forKey: .accountingProblem)
            try c.encode(passed, forKey: .passed)
        }
    }

    /// Runs `configuration` against `store` and reports. Each thread replays its own trace
    /// (seeded by the thread number) over archive `thread mod archives`' extent.
    /// - Cost: `threads` threads for `duration`.
    public static func run(_ store: TileStore, _ configuration: Configuration) -> Report {
        let idleRSS = ProcessMemory.residentBytes()
        store.resetStatistics()
        let traces: [[TileID]] = (0..<configuration.threads).map { t in
            guard !store.archives.isEmpty, let extent = TileExtent(summary: store.archives[t % store.archives.count])
            else { return [] }
            return AccessTrace.make(
                configuration.trace, over: extent, frames: configuration.frames,
                seed: configuration.seed &+ UInt64(t)
            ).requests
        }
        let counters = Counters()
        let started = ContinuousClock.now
        let deadline = started + configuration.duration
        let group = DispatchGroup()
        for t in 0..<configuration.threads {
            // One serial queue each: GCD gives every one its own thread (overcommit), so all
            // `threads` run at once whatever the core count.
            DispatchQueue(label: "tilepack.stress.\(t)").async(group: group) {
                let result = replay(
                    store, traces[t], decode: configuration.decode,
                    leaseEvery: max(1, configuration.leaseEvery), until: deadline)
                counters.add(result)
            }
        }
        group.wait()
        let stats = store.statistics
        var report = counters.report
        report.seconds = (ContinuousClock.now - started).inSeconds
        report.hitRate = stats.hitRate
        report.peakResidentBytes = stats.peakResidentBytes
        report.budgetBytes = stats.budgetBytes
        report.budgetViolations = stats.budgetViolations
        report.loadP50Micros = stats.loadP50Micros
        report.loadP99Micros = stats.loadP99Micros
        report.memoryWarnings = stats.memoryWarnings
        report.bytesFreedByPressure = stats.bytesFreedByPressure
        report.idleRSSBytes = idleRSS
        report.peakRSSBytes = ProcessMemory.peakResidentBytes()
        report.threads = configuration.threads
        report.trace = configuration.trace.rawValue
        report.accountingProblem = store.accountingProblem()
        return report
    }

    private static func replay(
        _ store: TileStore, _ requests: [TileID], decode: Bool, leaseEvery: Int,
        until deadline: ContinuousClock.Instant
    ) -> Report {
        var report = Report()
        guard !requests.isEmpty else { return report }
        var held: TileLease?
        var i = 0
        while true {
            // Check the clock every 64 operations: reading it costs more than a hit.
            if i % 64 == 0, ContinuousClock.now >= deadline { break }
            let id = requests[i % requests.count]
            i += 1
            do throws(TileStoreError) {
                let lease = decode ? try store.typedPixels(id) : try store.typedTile(id)
                if i % leaseEvery == 0, let lease { held = consume lease }
            } catch {
                if error.code == .budgetExhausted {
                    report.budgetExhaustedErrors += 1
                    held = nil  // give the budget back, as an app would
                } else if report.otherErrors.count < 5 {
                    report.otherErrors.append(error.description)
                }
            }
        }
        _ = consume held
        report.operations = i
        return report
    }

    /// Sums of the threads' counts.
    private final class Counters: @unchecked Sendable {
        // Guarded by `lock`.
        private let lock = ConditionLock()
        private var total = Report()

        func add(_ r: Report) {
            lock.withLock {
                total.operations += r.operations
                total.budgetExhaustedErrors += r.budgetExhaustedErrors
                total.otherErrors.append(contentsOf: r.otherErrors.prefix(max(0, 5 - total.otherErrors.count)))
            }
        }

        var report: Report { lock.withLock { total } }
    }
}

#if os(Linux)
private let RUSAGE_SELF_WHO = RUSAGE_SELF.rawValue
#else
private let RUSAGE_SELF_WHO = RUSAGE_SELF
#endif

/// The process's real memory, as the kernel counts it.
public enum ProcessMemory {
    /// Resident set size now: field 2 of /proc/self/statm × the page size (0 where there is
    /// no /proc). - Cost: one small file read.
    public static func residentBytes() -> Int {
        let fd = open("/proc/self/statm", O_RDONLY)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return 0 }
        let fields = buffer[0..<n].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The highest resident set size the process has had (getrusage's `ru_maxrss`).
    public static func peakResidentBytes() -> Int {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF_WHO, &usage) == 0 else { return 0 }
        #if os(Linux)
        return Int(usage.ru_maxrss) * 1024  // kilobytes on Linux
        #else
        return Int(usage.ru_maxrss)  // bytes on Darwin
        #endif
    }
}
