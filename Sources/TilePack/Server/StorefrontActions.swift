import TilePackCore
import TilePackRegions

/// What the viewer's store panel does, acting for the ledger and account `serve` was started
/// with, through the store `serve` asks (`--simulator DIR`: the test App Store's Sandbox):
///
/// - `POST /store/buy/{product}` → `{"product_id", "already_owned", "transaction_id"?}`; the
///   purchase goes through a ``RegionLibrary`` opened read-write on the served library's
///   directory, trust, ledger, account and store (``Options/openForWriting``), because the
///   served one is read-only. The served library's ``LedgerEntitlements`` is refreshed at
///   once, so the next tile shows what was bought.
/// - `POST /store/restore` → `{"inserted", "replaced", "unchanged"}`.
/// - `POST /packs/{id}/install`, `POST /packs/{id}/update` → 202 and a background
///   ``RegionInstaller`` run into the served library's `packs/` (``PackDownloads``), fetching
///   from this server's own routes over loopback with the ledger's transaction as a device
///   would; 409 `busy` while that pack's previous run goes on.
/// - `GET /store/downloads` → `{"downloads": [PackDownloads.Entry…]}`.
/// - `GET /store/installed` → `{"packs": [{"pack_id", "version", "bytes", "product_id",
///   "owned", "problem"}]}` (as `tilepack library list --json`).
///
/// **Who may act.** These spend the account's money, so a web page elsewhere must not be able
/// to press them. The routes answer POST only (the CORS middleware allows GET/HEAD/OPTIONS
/// from other origins, so a browser never preflights a POST successfully), and every POST must
/// (``refusal(origin:host:)``) be addressed to this server by a name it knows — a loopback
/// name (`127.0.0.1`, `localhost`, `[::1]`) or the `--host` it was bound to, with its port —
/// and, when it carries an `Origin` (browsers always send one with a POST), come from exactly
/// that origin; else 403 `forbiddenOrigin`. Checking `Host` as well as `Origin` also stops DNS
/// rebinding (a foreign name resolving to 127.0.0.1 sends its own name in both). A client
/// without `Origin` (curl) is a local program and may act, as `tilepack store buy` could.
///
/// The ledger file must exist before the served library opens it read-only (a read-only open
/// of a missing ledger is empty for good): `serve` creates a missing one at start.
///
/// Threads: Sendable. Buy and restore run one at a time (one lock around the writable library).
public final class StorefrontActions: Sendable {
    public struct Options: Sendable {
        /// Opens the served library read-write (same directory, trust, ledger, account, store).
        /// Called on the first buy or restore; a failure is answered and tried again next time.
        public var openForWriting: @Sendable () throws -> RegionLibrary
        /// The address `serve` binds (`--host`): besides the loopback names, the one name a
        /// POST may be addressed to. A wildcard (`0.0.0.0`, `::`) adds no name.
        public var host: String
        public init(host: String, openForWriting: @escaping @Sendable () throws -> RegionLibrary) {
            self.host = host
            self.openForWriting = openForWriting
        }
    }

    /// Product ids in a URL: at most this many bytes (catalog ids are short).
    static let maxProductIDBytes = 200

    let service: TileService
    let options: Options
    public let downloads: PackDownloads
    private let writable = Locked<RegionLibrary?>(nil)
    /// The bound port, once the server runs (``serverRunning(port:)``).
    private let port = Locked<Int?>(nil)

    public init(service: TileService, options: Options) {
        self.service = service
        self.options = options
        downloads = PackDownloads()
    }

    var served: RegionLibrary { service.library }

    /// Tells the actions the port the server is bound to (TileServer.run's callback): POSTs
    /// are refused until then, and installs fetch from it.
    public func serverRunning(port bound: Int) { port.withLock { $0 = bound } }

    /// Stops the loopback HTTP client (after the server has stopped).
    public func shutdown() async { await downloads.shutdown() }

    // MARK: - Who may act

    /// Names this server answers POSTs for.
    var knownHosts: [String] {
        var names = ["127.0.0.1", "localhost", "[::1]"]
        let host = options.host.lowercased()
        if !["0.0.0.0", "::", "[::]", ""].contains(host) {
            names.append(host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host)
        }
        return names
    }

    /// Nil when a POST with these raw `Origin` and `Host` values may act; else the 403 (or 503
    /// before the port is known). See the type's comment.
    public func refusal(origin: String?, host: String?) -> ServedResponse? {
        guard let bound = port.withLock({ $0 }) else {
            return .error(503, kind: "unavailable", message: "the server is starting: try again").adding([
                ("Retry-After", "1")
            ])
        }
        let authorities = Set(knownHosts.map { "\($0):\(bound)" })
        guard let host, host.utf8.count <= 255, let addressed = Self.authority(host), authorities.contains(addressed)
        else {
            return .error(
                403, kind: "forbiddenOrigin",
                message:
                    """
                    store actions answer only requests addressed to this server as \
                    \(authorities.sorted().joined(separator: ", ")) (Host: \(TileService.shown(host ?? "none")))
                    """
            )
        }
        if let origin {
            guard origin.utf8.count <= 255, origin.lowercased().hasPrefix("http://"),
                Self.authority(String(origin.dropFirst(7))) == addressed
            else {
                return .error(
                    403, kind: "forbiddenOrigin",
                    message:
                        """
                        store actions answer only this server's own pages (Origin: \(TileService.shown(origin)), \
                        expected http://\(host))
                        """
                )
            }
        }
        return nil
    }

    /// `name:port` in lower case, with HTTP's default port 80 when none is given (RFC 9110
    /// §4.2.1: `Host: localhost` is `localhost:80`); nil for anything with a path, user info
    /// or a port that is not 1…5 digits.
    static func authority(_ text: String) -> String? {
        let s = text.lowercased()
        // Byte tests, not `contains("/")`: on Linux a String argument goes through Foundation's
        // CFStringFind, and this runs on every request (the Host check).
        guard !s.isEmpty,
            !s.utf8.contains(where: { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: " ") })
        else { return nil }
        let name: Substring, port: Substring?
        if s.hasPrefix("[") {
            guard let close = s.firstIndex(of: "]") else { return nil }
            name = s[...close]
            let rest = s[s.index(after: close)...]
            if rest.isEmpty {
                port = nil
            } else {
                guard rest.first == ":" else { return nil }
                port = rest.dropFirst()
            }
        } else {
            let parts = s.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, !parts[0].isEmpty else { return nil }
            name = parts[0]
            port = parts.count == 2 ? parts[1] : nil
        }
        if let port {
            guard (1...5).contains(port.utf8.count), port.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }), let n = Int(port)
            else { return nil }
            return "\(name):\(n)"
        }
        return "\(name):80"
    }

    // MARK: - Buy and restore

    /// Why this server cannot buy or restore, nil when it can.
    var storeProblem: ServedResponse? {
        guard served.trust != nil else {
            return .error(
                503, kind: "unavailable",
                message: "this library is open (no trust anchors): there is no store to buy from (serve --trust FILE)")
        }
        guard served.storefront != nil else {
            return .error(
                503, kind: "unavailable", message: "this server has no store to buy from (serve --simulator DIR)")
        }
        guard served.catalog != nil, served.catalogProblem == nil else {
            return .error(
                503, kind: "unavailable",
                message: "this library has no trusted catalog" + (served.catalogProblem.map { " (\($0))" } ?? "")
                    + ": nothing is for sale")
        }
        return nil
    }

    /// `POST /store/buy/{product}`.
    /// - Cost: as ``RegionLibrary/buy(_:)`` (a store purchase, one ledger write, ES256
    ///   verifications); the first call also opens the library read-write.
    public func buy(_ product: String) -> ServedResponse {
        if let problem = storeProblem { return problem }
        guard product.utf8.count <= Self.maxProductIDBytes, served.catalog?.product(id: product) != nil else {
            return .error(
                404, kind: "notFound",
                message: "no product \(TileService.shown(product)) in the catalog (GET /store lists them)")
        }
        let result: RegionLibrary.PurchaseResult
        do {
            result = try withWritable { try $0.buy(product) }
        } catch {
            return Self.failure(error)
        }
        try? served.entitlements?.refresh()
        let reply: PurchaseReply
        switch result {
        case .bought(let entitlement):
            reply = PurchaseReply(productID: product, alreadyOwned: false, transactionID: entitlement.transactionID)
        case .alreadyOwned:
            reply = PurchaseReply(productID: product, alreadyOwned: true)
        }
        return .json(encoding: reply, cache: "no-store")
    }

    /// `POST /store/restore`.
    /// - Cost: as ``RegionLibrary/restore()``: one store listing, one import.
    public func restore() -> ServedResponse {
        if let problem = storeProblem { return problem }
        let summary: LedgerImportSummary
        do {
            summary = try withWritable { try $0.restore() }
        } catch {
            return Self.failure(error)
        }
        try? served.entitlements?.refresh()
        return .json(
            "{\"inserted\":\(summary.inserted),\"replaced\":\(summary.replaced),\"unchanged\":\(summary.unchanged)}",
            cache: "no-store")
    }

    /// Runs `body` on the read-write library (opened on first use), one caller at a time.
    private func withWritable<T>(_ body: (RegionLibrary) throws -> T) throws -> T {
        try writable.withLock { library in
            let open = try library ?? options.openForWriting()
            library = open
            return try body(open)
        }
    }

    /// A buy or restore failure: the store not answering is 503, a product not for sale 404,
    /// the rest by category.
    static func failure(_ error: any Error) -> ServedResponse {
        if let e = error as? LedgerError, e.code == .store {
            return .error(503, kind: "unavailable", message: e.description).adding([("Retry-After", "1")])
        }
        if let e = error as? CatalogError, e.code == .unknownProduct {
            return .error(404, kind: "notFound", message: e.description)
        }
        return .from(error)
    }

    // MARK: - Installed packs

    /// `GET /store/installed`: the packs in the served library's `packs/`, as `library list --json`.
    /// - Cost: one Ed25519 verification and one stat per installed pack.
    public func installed() -> ServedResponse {
        guard served.trust != nil else { return .json("{\"packs\":[]}") }
        _ = served.entitlements?.generation  // sees another process's purchases (data_version)
        do {
            return .json(try JSONOutput.string(InstalledList(packs: try served.installedPackListings())))
        } catch {
            return .from(error)
        }
    }

    struct InstalledList: Encodable { let packs: [InstalledPackListing] }

    // MARK: - Downloads

    /// `POST /packs/{id}/install` (`update` false) and `/packs/{id}/update`: 202 with the
    /// download's entry, 404 for a pack this server does not offer, 409 while one runs.
    public func startDownload(_ id: String, update: Bool) -> ServedResponse {
        guard let packs = service.packs else {
            return .error(404, kind: "notFound", message: "this server offers no packs (serve --packs DIR)")
        }
        guard packs.directory.pack(id) != nil else {
            return .error(
                404, kind: "notFound",
                message: "no pack \(TileService.shown(id)) on this server (GET /packs lists them)")
        }
        guard served.trust != nil else {
            return .error(
                503, kind: "unavailable",
                message: "this library is open (no trust anchors): it installs no packs (serve --trust FILE)")
        }
        guard let bound = port.withLock({ $0 }) else {
            return .error(503, kind: "unavailable", message: "the server is starting: try again").adding([
                ("Retry-After", "1")
            ])
        }
        let base = "http://" + Self.loopbackName(options.host) + ":\(bound)"
        return downloads.start(id, update: update, library: served, server: base)
    }

    /// `GET /store/downloads`.
    public func downloadsListing() -> ServedResponse {
        do {
            return .json(try JSONOutput.string(PackDownloads.List(downloads: downloads.entries())), cache: "no-store")
        } catch {
            return .from(error)
        }
    }

    /// The name this process reaches its own listener by: the bound address, a loopback one
    /// for a wildcard.
    static func loopbackName(_ host: String) -> String {
        switch host {
        case "0.0.0.0", "": return "127.0.0.1"
        case "::", "[::]": return "[::1]"
        default: return host.contains(":") && !host.hasPrefix("[") ? "[" + host + "]" : host
        }
    }
}
