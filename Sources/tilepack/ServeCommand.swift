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
            /tiles/REGION/Z/X/Y (the stored GPU payload; X-Tile-Format names it), \
            /terrain/REGION/Z/X/Y.png (Terrarium elevation), /view/Z/X/Y.png (every region composited), \
            /query?lat=&lon=&zoom=, /store, /regions, /catalog (the signed catalog.jws). With --packs DIR: \
            /packs (every pack's signed manifest and size), /packs/ID and /packs/ID/deltas/FROM (the files, \
            resumable with Range/If-Range; a paid pack only for Authorization: Bearer <signed App Store \
            transaction> of a product that includes it and that the store, --simulator DIR, has not \
            refunded; HEAD needs the same). REGION is an archive's file name without \
            .mbtiles. With a trust file (--trust) the library is a store library: only what the \
            signed catalog gives free and this account bought is served, and a refund shows on \
            the next request; without one it is open. Binds to 127.0.0.1 unless --host says otherwise; stops gracefully on SIGINT/SIGTERM.
            """
    )

    @OptionGroup var regions: RegionLibraryOptions

    @Option(help: "Address to bind (default: loopback only).")
    var host = "127.0.0.1"

    @Option(help: "TCP port (0: any free port; the chosen one is printed).")
    var port = 8080

    @Option(help: "Tile store budget, e.g. 64MiB.")
    var budget = "64MiB"

    @Option(help: "Directory holding Leaflet (leaflet.js, leaflet.css, images/), as Debian's libjs-leaflet installs it.")
    var leaflet = "/usr/share/javascript/leaflet"

    @Option(help: "Packs directory (tilepack pack -o): <id>.mbtiles, <id>.manifest.jws, <id>.vN-vM.delta.mbtiles, served under /packs.")
    var packs: String?

    @Option(help: "Request log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel = "info"

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port \(port) is outside 0…65535") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("--log-level '\(logLevel)' is not a log level") }
        do { _ = try MemoryBudget(parsing: budget) } catch { throw ValidationError(error.description) }
    }

    func run() async throws {
        var options = TileService.Options()
        options.libraryDirectory = regions.library ?? "."
        options.leafletDirectory = leaflet
        options.packsDirectory = packs
        // A pack that cannot be served is skipped with one line, at start and on re-scans.
        options.packReport = { line in printNotice("warning: " + line) }
        let service: TileService
        do {
            options.budget = try MemoryBudget(parsing: budget)
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
            printNotice("packs: \(offered.count) from \(packs.directory.path)" + (offered.isEmpty ? "" : " (" + offered.map(\.id).joined(separator: ", ") + ")"))
            if offered.contains(where: { $0.manifest.productID != nil }), let problem = packs.salesProblem {
                printNotice("warning: " + problem)
            }
        }
        let names = service.regionNames.joined(separator: ", ")
        let library = service.library
        let host = self.host
        try await TileServer.run(service, host: host, port: port, logger: logger) { bound in
            printNow("serving \(library.kind.rawValue) library: \(service.regionNames.count) region\(service.regionNames.count == 1 ? "" : "s") (\(names)) at http://\(host):\(bound)/")
        }
    }
}

/// A line on stdout now (write(2) on fd 1: a script waiting for the port reads it at once).
func printNow(_ message: String) {
    var line = Array((message + "\n").utf8)
    line.withUnsafeMutableBytes { _ = write(1, $0.baseAddress, $0.count) }
}
