import ArgumentParser
import TilePack
import TilePackServer

/// `tilepack download PACK_ID --server URL`: installs or updates a pack from a pack server
/// (`tilepack serve --packs`) into the library's `packs/`, presenting the ledger's transaction.
struct DownloadCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract:
            "Download a region pack from a pack server into the library, resuming and verifying it; or update it.",
        discussion: """
            The manifest's publisher signature is checked first (trust file's publisher keys); the \
            pack downloads into packs/<id>.mbtiles.part, resumes from there after a kill or a dropped \
            connection, must have the signed SHA-256, and is then moved into place. --update fetches \
            only the deltas when the server keeps the chain from the installed version and it is \
            smaller; a codec change is a full update ("full: format changed").
            Exit status: 0 done (or up to date), 3 not entitled (the server's 401/403), 2 a signature, \
            hash or delta mismatch, a downgrade or a pack too new for this reader, 1 network, disk, \
            quota, busy (another download of the pack) or I/O. With --check: 0 up to date, 10 an \
            update (or the pack) is available.
            """)

    @Argument(help: "Pack id (the product id, or free). Omit with --all.")
    var packID: String?

    @Option(help: "The pack server's base URL, e.g. http://127.0.0.1:8080.")
    var server: String

    @OptionGroup var options: RegionLibraryOptions

    @Flag(help: "Update an installed pack (deltas when smaller); refuse a pack that is not installed.")
    var update = false

    @Flag(help: "Only say whether an update is available (exit 0 up to date, 10 available); download nothing.")
    var check = false

    @Flag(help: "With --update or --check: every installed pack.")
    var all = false

    @Option(help: "Library quota in bytes: refuse a pack that would make the installed packs larger.")
    var quota: Int64?

    @Option(help: "Progress on stderr: auto (bar on a terminal, else none), bar, json, none.")
    var progress: DownloadProgressStyle = .auto

    @Flag(
        help:
            """
            End with one JSON line per pack: pack_id, version, mode (full|delta|up-to-date), bytes_received, \
            bytes_total, resumed_from, sha256, reason.
            """
    )
    var json = false

    static let updateAvailableStatus: Int32 = 10

    func validate() throws {
        if all {
            guard packID == nil else { throw ValidationError("give a pack id or --all, not both") }
            guard update || check else { throw ValidationError("--all needs --update or --check") }
        } else if packID == nil {
            throw ValidationError("give a pack id (or --all with --update or --check)")
        }
        if let quota, quota < 0 { throw ValidationError("--quota must be a byte count ≥ 0") }
        if update && check { throw ValidationError("--update and --check exclude each other") }
        guard server.hasPrefix("http://") || server.hasPrefix("https://") else {
            throw ValidationError("--server must be an http:// or https:// URL")
        }
    }

    func run() async throws {
        let installer: RegionInstaller
        let transport = HTTPPackTransport()
        do {
            // What is for sale first: the shop's signed catalog, when newer than the library's.
            if let anchors = try options.trustAnchors() {
                let dir = options.library ?? "."
                do {
                    if let serial = try await RegionInstaller.refreshCatalog(
                        server: server, transport: transport, libraryDirectory: dir,
                        publisherKeys: anchors.publisherKeys)
                    {
                        printNotice("catalog: serial \(serial) from \(server) -> \(dir)/\(SignedCatalog.fileName)")
                    }
                } catch let error as PackError where error.code == .badSignature {
                    throw error
                } catch {
                    printNotice("warning: \(error) (the library's catalog is kept)")
                }
            }
            let library = try options.open(readOnly: true)
            reportProblems(library)
            installer = try RegionInstaller(library: library, server: server, transport: transport, quotaBytes: quota)
        } catch let error as any TilePackError {
            await transport.shutdown()
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        let status = await run(installer)
        await transport.shutdown()
        if status != 0 { throw ExitCode(status) }
    }

    /// Runs the command's packs in turn; the exit status (the first failure's).
    private func run(_ installer: RegionInstaller) async -> Int32 {
        let ids: [String]
        if all {
            do { ids = try installer.installed().map(\.packID) } catch {
                let error = Self.packError(error)
                printError(error.description)
                return Self.exitStatus(error)
            }
            if ids.isEmpty { printNotice("note: no packs installed in \(installer.installedPacks.path)") }
        } else {
            ids = packID.map { [$0] } ?? []
        }
        var status: Int32 = 0
        let display = DownloadProgressDisplay(style: progress.resolved(stderrIsTerminal: stderrIsTerminal))
        for id in ids {
            do {
                if check {
                    let answer = try await installer.check(id)
                    report(id, answer)
                    if case .upToDate = answer {} else if status == 0 { status = Self.updateAvailableStatus }
                    continue
                }
                let result =
                    update
                    ? try await installer.update(id, progress: display.callback)
                    : try await installer.install(id, progress: display.callback)
                display.finish()
                if json {
                    print((try? JSONOutput.string(result)) ?? "{}")
                } else {
                    switch result.mode {
                    case .upToDate: print("\(id): version \(result.version) is up to date")
                    case .full, .delta:
                        let resumed = result.resumedFrom > 0 ? ", resumed from byte \(result.resumedFrom)" : ""
                        print(
                            """
                            \(id): installed version \(result.version) (\(result.reason); \(result.bytesReceived) \
                            bytes received\(resumed))
                            """
                        )
                    }
                }
            } catch {
                let error = Self.packError(error)
                display.finish()
                printError(error.description)
                if status == 0 || status == Self.updateAvailableStatus { status = Self.exitStatus(error) }
            }
        }
        return status
    }

    private func report(_ id: String, _ status: PackUpdateStatus) {
        struct CheckReport: Encodable {
            let pack_id: String, status: String, installed: Int?, latest: Int, mode: String?, bytes: Int64?,
                reason: String?
        }
        let line: CheckReport
        switch status {
        case .notInstalled(let latest):
            line = CheckReport(
                pack_id: id, status: "not-installed", installed: nil, latest: latest, mode: "full", bytes: nil,
                reason: "full: not installed")
        case .upToDate(let version):
            line = CheckReport(
                pack_id: id, status: "up-to-date", installed: version, latest: version, mode: nil, bytes: 0, reason: nil
            )
        case .updateAvailable(let installed, let latest, let plan):
            let mode: String = if case .deltas = plan { "delta" } else { "full" }
            line = CheckReport(
                pack_id: id, status: "update-available", installed: installed, latest: latest, mode: mode,
                bytes: plan.bytes, reason: plan.reason)
        }
        if json {
            print((try? JSONOutput.string(line)) ?? "{}")
        } else {
            switch status {
            case .notInstalled(let latest): print("\(id): not installed (version \(latest) available)")
            case .upToDate(let version): print("\(id): version \(version) is up to date")
            case .updateAvailable(let installed, let latest, let plan):
                print("\(id): version \(latest) available, \(installed) installed (\(plan.reason))")
            }
        }
    }

    /// The installer throws PackError alone (its public face is untyped); anything else is `io`.
    static func packError(_ error: any Error) -> PackError {
        error as? PackError ?? PackError(.io, subject: "tilepack download", "\(error)", cause: error)
    }

    /// 3 refused by the server, 2 a signature, hash or delta mismatch, 1 the environment.
    static func exitStatus(_ error: PackError) -> Int32 {
        switch error.code {
        case .notEntitled, .missingTransaction, .invalidTransaction, .revoked, .expired: 3
        case .badSignature, .hashMismatch, .deltaMismatch, .invalidManifest, .downgrade, .unsupportedVersion: 2
        case .invalidInput: 64
        // .network, .noSpace, .busy, .io, .notFound, and any code added later.
        default: 1
        }
    }
}
