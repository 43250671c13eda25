import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import Logging
import TilePack
import TilePackServer

/// `tilepack serve`: the region library over HTTP (tiles, TileJSON, terrain, queries, the
/// store) with a viewer page, until SIGINT or SIGTERM.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the region library over HTTP with a map viewer.",
        discussion: """
            Routes: / (viewer), /tiles/REGION.json (TileJSON 3.0), /tiles/REGION/Z/X/Y.png (PNG), \
            /tiles/REGION/Z/X/Y (a GPU tile as a KTX2 file, image/ktx2; X-Tile-Format names the codec), \
            /terrain/REGION/Z/X/Y.png (Terrarium elevation), /view/Z/X/Y.png (every region composited), \
            /query?lat=&lon=&zoom=, /store, /regions, /catalog (the signed catalog.jws). With --packs DIR: \
            /packs (every pack's signed manifest and size), /packs/ID and /packs/ID/deltas/FROM (the files, \
            resumable with Range/If-Range; a paid pack only for Authorization: Bearer <signed App Store \
            transaction> of a product that includes it and that the store, --simulator DIR, has not \
            refunded; HEAD needs the same). The viewer's store panel acts for this --ledger and \
            --account through the store: POST /store/buy/PRODUCT, POST /store/restore, POST \
            /packs/ID/install and /packs/ID/update (installed into the library's packs/ from this \
            server over loopback), GET /store/downloads and /store/installed; a POST from another \
            origin or addressed to another host name is refused (403). REGION is an archive's file name without \
            .mbtiles. With a trust file (--trust) the library is a store library: only what the \
            signed catalog gives free and this account bought is served, and a refund shows on \
            the next request; without one it is open. Binds to 127.0.0.1 unless --host says otherwise; a loopback server answers only requests \
            addressed to a loopback name or an --allowed-host (else 421), and grants no other origin \
            (CORS) unless --cors names it. Every connection is bounded (--max-connections, --max-header-bytes, \
            --max-body-bytes, --header-timeout, --idle-timeout; docs/limits.md). Stops gracefully on SIGINT/SIGTERM.
            """
    )

    @OptionGroup var regions: RegionLibraryOptions

    @Option(help: "Address to bind (default: loopback only).")
    var host = "127.0.0.1"

    @Option(help: "TCP port (0: any free port; the chosen one is printed).")
    var port = 8080

    @Option(help: "Tile store budget, e.g. 64MiB.")
    var budget = "64MiB"

    @Option(
        help: "Directory holding Leaflet (leaflet.js, leaflet.css, images/), as Debian's libjs-leaflet installs it.")
    var leaflet = "/usr/share/javascript/leaflet"

    @Option(
        help:
            """
            Packs directory (tilepack pack -o): <id>.mbtiles, <id>.manifest.jws, <id>.vN-vM.delta.mbtiles, served \
            under /packs.
            """
    )
    var packs: String?

    @Option(help: "Request log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"

    @Option(
        help: ArgumentHelp(
            """
            Open connections at most; more are closed on accept (default: what 48 MiB holds at \
            --max-header-bytes, within the descriptor limit).
            """,
            valueName: "n"))
    var maxConnections: Int?

    @Option(help: "Request line and headers at most, e.g. 16KiB; larger → 431.")
    var maxHeaderBytes = "16KiB"

    @Option(help: "Request body at most, e.g. 64KiB; larger → 413.")
    var maxBodyBytes = "64KiB"

    @Option(
        help: ArgumentHelp(
            "Seconds to send a whole request (from its first byte, or from connecting); slower → 408 and close.",
            valueName: "seconds"))
    var headerTimeout = ConnectionLimits.defaultHeaderTimeout

    @Option(
        help: ArgumentHelp(
            """
            Seconds a kept-alive connection may wait for its next request (or a response for the client to read); \
            longer → close.
            """,
            valueName: "seconds"))
    var idleTimeout = ConnectionLimits.defaultIdleTimeout

    @Option(
        help: ArgumentHelp(
            """
            An origin (scheme://host[:port]) whose pages may read responses (repeatable; '*' for a public \
            server). Default: none, only this server's own pages.
            """,
            valueName: "origin"))
    var cors: [String] = []

    @Option(
        help: ArgumentHelp(
            "A host name a loopback server also answers to (repeatable); requests addressed to any other name get 421.",
            valueName: "name"))
    var allowedHost: [String] = []

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port \(port) is outside 0…65535") }
        guard Logger.Level(rawValue: logLevel) != nil else {
            throw ValidationError("--log-level '\(logLevel)' is not a log level")
        }
        do { _ = try MemoryBudget(parsing: budget) } catch { throw ValidationError("\(error)") }
        if let problem = try connectionLimits().problem { throw ValidationError(problem) }
        for origin in cors where origin != "*" {
            let lower = origin.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), !origin.dropFirst(8).contains("/"),
                origin.utf8.count <= 255
            else {
                throw ValidationError("--cors '\(origin)' is not an origin (scheme://host[:port], or '*')")
            }
        }
        for name in allowedHost where HostCheck.name(ofHost: name) == nil {
            throw ValidationError("--allowed-host '\(name)' is not a host name")
        }
    }

    /// The limits these options give (the connection limit from `ulimit -n` unless given).
    func connectionLimits() throws -> ConnectionLimits {
        let headers: Int, body: Int
        do { headers = try ByteSize.parse(maxHeaderBytes) } catch {
            throw ValidationError("--max-header-bytes \(error)")
        }
        do { body = try ByteSize.parse(maxBodyBytes) } catch {
            throw ValidationError("--max-body-bytes \(error)")
        }
        let connections =
            maxConnections
            ?? ConnectionLimits.defaultMaxConnections(
                fileLimit: ConnectionLimits.fileDescriptorLimit(), maxHeaderBytes: headers)
        return ConnectionLimits(
            maxConnections: connections, maxHeaderBytes: headers, maxBodyBytes: body,
            headerTimeout: headerTimeout, idleTimeout: idleTimeout)
    }

    func run() async throws {
        #if canImport(Glibc)
        // Buffers of 64 KiB and more (a pack download's read pieces, tile batches) come from mmap
        // and go back to the system when freed. glibc's default threshold rises after the first
        // such free, and its heaps then kept 834 MiB resident while 50 clients downloaded a
        // 200 MB pack though a few MiB were live; with the fixed threshold the peak was 70 MiB
        // at the same rate (checks/bench/serve-packs-bench, docs/history/BENCHMARKS-history.md "Issue 24").
        Self.fixMallocMmapThreshold(64 << 10)
        #endif
        var options = TileService.Options()
        options.libraryDirectory = regions.library ?? "."
        options.leafletDirectory = leaflet
        options.packsDirectory = packs
        // A pack that cannot be served is skipped with one line, at start and on re-scans.
        options.packReport = { line in printNotice("warning: " + line) }
        let service: TileService
        do {
            options.budget = try MemoryBudget(parsing: budget)
            try createMissingLedger()
            let library = try regions.open(readOnly: true)
            reportProblems(library)
            options.library = library
            service = try TileService(options)
        } catch let error as any TilePackError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        var logger = Logger(label: "tilepack.serve")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .info
        if let problem = service.assetProblem { printError("warning: \(problem); the viewer page explains it") }
        if let packs = service.packs {
            let offered = packs.directory.packs()
            printNotice(
                "packs: \(offered.count) from \(packs.directory.path)"
                    + (offered.isEmpty ? "" : " (" + offered.map(\.id).joined(separator: ", ") + ")"))
            if offered.contains(where: { $0.manifest.productID != nil }), let problem = packs.salesProblem {
                printNotice("warning: " + problem)
            }
        }
        let names = service.regionNames.joined(separator: ", ")
        let library = service.library
        let host = self.host
        // The viewer's Buy/Restore/Download buttons act for this ledger and account, through
        // a read-write library opened on the first action (the served one stays read-only).
        let regions = self.regions
        let actions = StorefrontActions(
            service: service, options: .init(host: host, openForWriting: { try regions.open(readOnly: false) }))
        var configuration = TileServer.Configuration(host: host, port: port)
        configuration.limits = try connectionLimits()
        configuration.cors = CORSPolicy(origins: cors)
        configuration.allowedHosts = allowedHost
        do {
            try await TileServer.run(service, actions: actions, configuration: configuration, logger: logger) { bound in
                printNow(
                    """
                    serving \(library.kind.rawValue) library: \(service.regionNames.count) \
                    region\(service.regionNames.count == 1 ? "" : "s") (\(names)) at http://\(host):\(bound)/
                    """
                )
            }
        } catch let error as ServerStartError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }
}

extension ServeCommand {
    /// Creates the store library's ledger when it does not exist yet (empty, with --account or
    /// a new account). The served library opens it read-only, and a read-only open of a
    /// missing file is an empty ledger for good: it would never see what the viewer's Buy
    /// button records. Nothing else is written, and no store is created.
    func createMissingLedger() throws {
        guard let anchors = try regions.trustAnchors() else { return }
        let path = regions.ledger ?? EntitlementLedger.defaultPath()
        guard access(path, F_OK) != 0 else { return }
        let ledger = try EntitlementLedger(
            path: regions.ledger, verifier: AppStoreVerifier(anchors: anchors), account: regions.account)
        if ledger.accountWasDrawn {
            printNotice(
                """
                note: new store account \(ledger.account): pass --account \(ledger.account) to restore these \
                purchases on another device
                """
            )
        }
    }
}

#if canImport(Glibc)
extension ServeCommand {
    /// glibc's `mallopt(M_MMAP_THRESHOLD, bytes)` (malloc.h is not in Swift's Glibc module, so
    /// it is looked up by name; `M_MMAP_THRESHOLD` is -3 in glibc's ABI). Setting it also fixes
    /// the threshold (no dynamic raising). Does nothing where the symbol is missing (musl).
    static func fixMallocMmapThreshold(_ bytes: Int32) {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "mallopt") else { return }
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        _ = unsafeBitCast(symbol, to: Mallopt.self)(-3, bytes)
    }
}
#endif

/// A line on stdout now (write(2) on fd 1: a script waiting for the port reads it at once).
func printNow(_ message: String) {
    var line = Array((message + "\n").utf8)
    line.withUnsafeMutableBytes { _ = write(1, $0.baseAddress, $0.count) }
}
