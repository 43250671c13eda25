import ArgumentParser
import TilePack

/// `tilepack stress`: many threads replay viewer traces against a tile store under a byte
/// budget, with memory warnings, and report whether the budget ever broke.
struct StressCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stress",
        abstract: "Load tiles from many threads under a memory budget and check it never breaks.",
        discussion: """
            Each thread replays a viewer trace (a 4×3-tile viewport: pan sweeps, zooms in and \
            out, or a random walk) over an archive's extent for --seconds, keeping every 8th \
            tile leased until its next. Prints operations, hit rate, peak resident bytes, peak \
            process RSS, budget violations (must be 0), load latency p50/p99. Exit status 0 \
            only when there were no violations and the byte accounting balanced.
            """
    )

    @Argument(help: "Region archive (.mbtiles) to load from.")
    var archive: String?

    @Option(help: "Directory of region archives (*.mbtiles) to load from instead.")
    var library: String?

    @Option(help: "Memory budget: bytes, or KiB/MiB/GiB (e.g. 8MiB).")
    var budget = "8MiB"

    @Option(help: "Threads loading at once (1…256).")
    var threads = 8

    @Option(help: "How long to run, in seconds (at most 86400).")
    var seconds = 30.0

    @Option(help: "Simulated memory warnings: every:N (after every N loads) or random:SEED (1 load in 32, seeded).")
    var memoryWarnings: String?

    @Option(help: "Access trace each thread replays: pan, zoom or random.")
    var trace: AccessTrace.Kind = .random

    @Option(help: "Eviction policy: lru or slru.")
    var policy: EvictionPolicyKind = .default

    @Flag(help: "Ask for decoded RGBA pixels instead of GPU payloads.")
    var decode = false

    @Flag(
        help:
            """
            Print one JSON object: operations, hit_rate, peak_resident_bytes, peak_rss_bytes, budget_violations, \
            load_p50_us, load_p99_us, memory_warnings, bytes_freed_by_pressure, and more.
            """
    )
    var json = false

    func validate() throws {
        if (archive == nil) == (library == nil) {
            throw ValidationError("give an ARCHIVE or --library DIR (one of them)")
        }
        if !(1...256).contains(threads) { throw ValidationError("--threads \(threads) must be 1…256") }
        if !(seconds > 0 && seconds <= 86_400) {
            throw ValidationError("--seconds \(seconds) must be above 0 and at most 86400")
        }
        do { _ = try MemoryBudget(parsing: budget) } catch { throw ValidationError("--budget: \(error)") }
        if let memoryWarnings {
            do { _ = try SimulatedMemoryWarnings(parsing: memoryWarnings) } catch {
                throw ValidationError("--memory-warnings: \(error.description)")
            }
        }
    }

    func run() throws {
        do {
            var options = TileStoreOptions()
            options.policy = policy
            options.simulatedWarnings = try memoryWarnings.map { text throws(TileStoreError) in
                try SimulatedMemoryWarnings(parsing: text)
            }
            let memory = try MemoryBudget(parsing: budget)
            // One archive, or a library opened the one way every command opens one (open
            // access: stress measures the store, not the shop); a damaged archive is named.
            let store: TileStore
            if let archive {
                store = try TileStore(archives: [try openTileArchive(path: archive)], budget: memory, options: options)
            } else {
                let opened = try RegionLibrary(directory: library ?? ".", trust: nil)
                    .openTileStore(budget: memory, options: options)
                guard !opened.layers.isEmpty else {
                    throw InputFileError(path: library ?? ".", detail: "no readable region archive")
                }
                store = opened.store
            }
            var configuration = TileStoreStress.Configuration()
            configuration.threads = threads
            configuration.duration = .milliseconds(Int64((seconds * 1000).rounded()))
            configuration.trace = trace
            configuration.decode = decode
            let report = TileStoreStress.run(store, configuration)
            if json {
                print(try JSONOutput.string(report))
            } else {
                print(Self.text(report))
            }
            if !report.passed { throw ExitCode(1) }
        } catch let error as any TilePackError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }

    static func text(_ r: TileStoreStress.Report) -> String {
        func mib(_ b: Int) -> String { ByteSize.format(b) }
        var lines = [
            """
            operations:        \(r.operations) in \(String(format2: r.seconds)) s on \(r.threads) threads \
            (\(r.trace) trace)
            """,
            "hit rate:          \(String(format2: r.hitRate * 100)) %",
            "peak resident:     \(mib(r.peakResidentBytes)) of a \(mib(r.budgetBytes)) budget",
            "budget violations: \(r.budgetViolations)",
            """
            process RSS:       idle \(mib(r.idleRSSBytes)), peak \(mib(r.peakRSSBytes)) \
            (\(mib(r.rssAboveIdlePlusBudget)) above idle + budget)
            """,
            "load latency:      p50 \(String(format2: r.loadP50Micros)) µs, p99 \(String(format2: r.loadP99Micros)) µs",
            "memory warnings:   \(r.memoryWarnings), \(mib(r.bytesFreedByPressure)) freed",
            "budget exhausted:  \(r.budgetExhaustedErrors) loads refused while leases filled the budget",
            "accounting:        \(r.accountingProblem ?? "balanced")",
        ]
        for e in r.otherErrors { lines.append("error:             \(e)") }
        lines.append(r.passed ? "PASS" : "FAIL")
        return lines.joined(separator: "\n")
    }
}

extension AccessTrace.Kind: ExpressibleByArgument {}
extension EvictionPolicyKind: ExpressibleByArgument {}
