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
import TilePackCore

/// What a region library sells: `catalog.json` beside the archives (schema: docs/REGIONS.md).
///
/// A free tier (every tile up to ``freeMaxZoom``) and products: regions (a polygon, a zoom
/// range, the archives holding it), bundles of products, and subscriptions. Decoding checks
/// the whole file and refuses it with a one-line ``CatalogError`` naming the field;
/// loading from a library also marks products whose archives are missing as unavailable
/// (still listed, never offered), which is not an error.
///
/// ```swift
/// if let catalog = try Catalog.load(libraryDirectory: "SampleRegions") {
///     let policy = RegionAccessPolicy(catalog: catalog, entitlements: ledger)
/// }
/// ```
///
/// Cost: loading is linear in the file, plus each polygon's validation
/// (``RegionPolygon``); lookups by id are O(1).
public struct Catalog: Sendable, Codable {
    /// The file's name in a library directory.
    public static let fileName = "catalog.json"
    /// The schema version this tilepack writes. Version 1 (no `serial`, no archive hashes)
    /// still loads, unsigned, in a library without trust anchors.
    public static let currentVersion = 2
    /// Larger catalog files are refused before being read (a catalog is kilobytes).
    public static let maxFileBytes = 16 << 20

    public let version: Int
    /// Version 2: the publisher's edition number, 1…2^53. A device refuses a signed catalog
    /// whose serial is lower than one it has already accepted (a replayed older catalog).
    /// nil in version 1.
    public let serial: Int64?
    /// Version 2: the SHA-256 (lowercase hex) of each master archive a product names, by file
    /// name. An entitlement covers an archive only when the file's hash is this one, so a
    /// product cannot be made to open some other archive renamed to its name. Required for
    /// every archive of a signed catalog (`tilepack catalog sign` fills it in).
    public private(set) var archiveSHA256: [String: String]
    /// Zooms up to this one are shown everywhere without purchase (0…24).
    public let freeMaxZoom: Int
    /// In file order.
    public private(set) var products: [Product]

    private let indexByID: [String: Int]
    /// For each product (by index), the indices of the products it includes directly.
    let children: [[Int]]
    /// Every product index once, each after all the products it includes (the includes graph
    /// is acyclic): the order one pass of dynamic programming over the graph takes.
    let includedFirst: [Int]
    /// For each product, the union of the bounds and the span of the zooms of the areas it
    /// entitles (``bounds(of:)``, ``zoomRange(of:)``); nil where it entitles none.
    private let coveredBounds: [GeoBounds?]
    private let coveredZooms: [ClosedRange<Int>?]

    enum Key: String, CodingKey, CaseIterable {
        case version, serial, archiveSHA256 = "archive_sha256", freeMaxZoom = "free_max_zoom", products
    }

    /// The largest serial: JSON numbers stay exact up to 2^53 in every reader.
    public static let maxSerial: Int64 = 1 << 53

    // MARK: - Loading

    /// The catalog of a library directory, or nil when it has no `catalog.json` (then every
    /// archive is open, as without a region store). Products whose archives are missing from
    /// the directory are marked unavailable.
    public static func load(libraryDirectory: String) throws -> Catalog? {
        let path = libraryDirectory.hasSuffix("/") ? libraryDirectory + fileName : libraryDirectory + "/" + fileName
        guard Self.exists(path) else { return nil }
        return try Catalog(contentsOf: path)
    }

    /// Reads and validates a catalog file; archives are looked up in the file's directory.
    public init(contentsOf path: String) throws {
        let bytes = try Self.readFile(path)
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { path[..<$0].isEmpty ? "/" : String(path[..<$0]) } ?? "."
        try self.init(json: bytes, path: path, libraryDirectory: directory)
    }

    /// Decodes and validates catalog JSON; `path` names it in errors. With a
    /// `libraryDirectory`, products whose archives are not regular files there are marked
    /// unavailable; without one, every product stays available.
    public init(json: [UInt8], path: String, libraryDirectory: String?) throws {
        do {
            self = try JSONDecoder().decode(Catalog.self, from: Data(json))
        } catch let issue as CatalogIssue {
            throw CatalogError(path: path, field: issue.field, code: issue.kind, detail: issue.detail)
        } catch let error as DecodingError {
            throw Self.describe(error, path: path)
        } catch {
            throw CatalogError(path: path, field: nil, code: .malformed, detail: "cannot be decoded: \(error)")
        }
        if let libraryDirectory { markAvailability(libraryDirectory: libraryDirectory) }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Key.self)
        version = try c.decode(Int.self, forKey: .version)
        guard version == 1 || version == Self.currentVersion else {
            throw CatalogIssue(
                .unsupportedVersion, "version",
                "\(version) is not supported (this tilepack reads versions 1 and \(Self.currentVersion))")
        }
        let v1Keys: [Key] = [.version, .freeMaxZoom, .products]
        try Product.refuseUnknownKeys(decoder, known: (version == 1 ? v1Keys : Key.allCases).map(\.rawValue))
        if version == 1 {
            serial = nil
            archiveSHA256 = [:]
        } else {
            let serial = try c.decode(Int64.self, forKey: .serial)
            guard (1...Self.maxSerial).contains(serial) else {
                throw CatalogIssue(.invalidValue, "serial", "\(serial) is outside 1…2^53")
            }
            self.serial = serial
            let hashes = try c.decodeIfPresent([String: String].self, forKey: .archiveSHA256) ?? [:]
            for (name, hex) in hashes.sorted(by: { $0.key < $1.key }) {
                guard Product.isPlainFileName(name) else {
                    throw CatalogIssue(
                        .badArchives, "archive_sha256[\(ErrorText.quoted(name))]", "is not a file name in the library")
                }
                guard hex.utf8.count == 64, hex.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) })
                else {
                    throw CatalogIssue(
                        .invalidValue, "archive_sha256[\(ErrorText.quoted(name))]",
                        "\(ErrorText.quoted(String(hex.prefix(80)))) is not 64 lowercase hex digits")
                }
            }
            archiveSHA256 = hashes
        }
        freeMaxZoom = try c.decode(Int.self, forKey: .freeMaxZoom)
        guard (0...TileID.maxZoom).contains(freeMaxZoom) else {
            throw CatalogIssue(.badZoomRange, "free_max_zoom", "\(freeMaxZoom) is outside 0…\(TileID.maxZoom)")
        }
        let products = try c.decode([Product].self, forKey: .products)
        self.products = products

        var index: [String: Int] = [:]
        for (i, p) in products.enumerated() {
            if let earlier = index[p.id] {
                throw CatalogIssue(
                    .duplicateID, "products[\(i)].id",
                    "\(ErrorText.quoted(p.id)) is already the id of products[\(earlier)]")
            }
            index[p.id] = i
        }
        indexByID = index
        // One storefront, one currency (as an App Store storefront): "cheapest first" then
        // compares amounts, never euros with yen.
        if let first = products.first, let i = products.firstIndex(where: { $0.currency != first.currency }) {
            throw CatalogIssue(
                .badCurrency, "products[\(i)].currency",
                """
                \(ErrorText.quoted(products[i].currency)) differs from products[0]'s \
                \(ErrorText.quoted(first.currency)) (a catalog sells in one currency)
                """
            )
        }
        for (i, p) in products.enumerated() {
            for (j, other) in p.includes.enumerated() {
                let field = "products[\(i)].includes[\(j)]"
                guard other != p.id else {
                    throw CatalogIssue(.cycle, field, "\(ErrorText.quoted(other)) is the \(p.kind.rawValue) itself")
                }
                guard let k = index[other] else {
                    throw CatalogIssue(
                        .unknownProduct, field, "\(ErrorText.quoted(other)) is not a product in the catalog")
                }
                guard products[k].kind != .subscription else {
                    throw CatalogIssue(
                        .invalidValue, field,
                        "\(ErrorText.quoted(other)) is a subscription (only regions and bundles can be included)")
                }
            }
        }
        // Linear in products + includes, whatever the graph's shape (40,000 chained bundles
        // once took minutes when each product walked everything below it).
        let children = products.map { $0.includes.compactMap { index[$0] } }
        switch Self.includedFirstOrder(children) {
        case .failure(let cycle):
            throw CatalogIssue(
                .cycle, "products[\(cycle.nodes[0])].includes",
                cycle.nodes.map { ErrorText.quoted(products[$0].id) }.joined(separator: " → ") + " form a cycle")
        case .success(let order):
            includedFirst = order
        }
        self.children = children
        var bounds = [GeoBounds?](repeating: nil, count: products.count)
        var zooms = [ClosedRange<Int>?](repeating: nil, count: products.count)
        for k in includedFirst {
            var b = products[k].area?.bounds, z = products[k].area == nil ? nil : products[k].zoomRange
            for c in children[k] {
                if let cb = bounds[c] { b = b?.union(cb) ?? cb }
                if let cz = zooms[c] {
                    z = z.map { min($0.lowerBound, cz.lowerBound)...max($0.upperBound, cz.upperBound) } ?? cz
                }
            }
            bounds[k] = b
            zooms[k] = z
        }
        coveredBounds = bounds
        coveredZooms = zooms
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(version, forKey: .version)
        try c.encodeIfPresent(serial, forKey: .serial)
        if version >= 2, !archiveSHA256.isEmpty { try c.encode(archiveSHA256, forKey: .archiveSHA256) }
        try c.encode(freeMaxZoom, forKey: .freeMaxZoom)
        try c.encode(products, forKey: .products)
    }

    // MARK: - Queries

    /// The product with this id, or nil.
    ///
    /// Cost: O(1).
    public func product(id: String) -> Product? {
        indexByID[id].map { products[$0] }
    }

    /// The ids `ids` entitle: each known id, and everything it includes, recursively
    /// (a bundle entitles its regions; unknown ids are ignored).
    ///
    /// Cost: O(size of the answer) per id.
    public func entitlementClosure(of ids: some Sequence<String>) -> Set<String> {
        var result: Set<String> = []
        for id in ids {
            guard let i = indexByID[id] else { continue }
            var stack = [i]
            while let k = stack.popLast() {
                guard result.insert(products[k].id).inserted else { continue }
                stack.append(contentsOf: products[k].includes.compactMap { indexByID[$0] })
            }
        }
        return result
    }

    /// The lon/lat box of everything the product covers (union of its areas), as `store list`
    /// prints `bounds`; nil for an unknown id.
    public func bounds(of id: String) -> GeoBounds? {
        guard let i = indexByID[id] else { return nil }
        return coveredBounds[i]
    }

    /// The zooms the product sells anywhere (the span of its areas' ranges); nil for an unknown id.
    public func zoomRange(of id: String) -> ClosedRange<Int>? {
        guard let i = indexByID[id] else { return nil }
        return coveredZooms[i]
    }

    /// The indices of the products with an area that product `i` entitles: itself if it has
    /// an area, then what it includes, depth first in `includes` order, each once.
    /// Cost: O(products and includes reachable from `i`).
    func coveredAreas(_ i: Int) -> [Int] {
        var seen: Set<Int> = [], result: [Int] = [], stack = [i]
        while let k = stack.popLast() {
            guard seen.insert(k).inserted else { continue }
            if products[k].area != nil { result.append(k) }
            stack.append(contentsOf: children[k].reversed())
        }
        return result
    }

    // MARK: - Private

    /// A product whose archive is missing cannot be delivered: unavailable, with the reason;
    /// one that includes an unavailable product is unavailable too.
    private mutating func markAvailability(libraryDirectory: String) {
        let dir = libraryDirectory.hasSuffix("/") ? libraryDirectory : libraryDirectory + "/"
        // Each named archive hashed once (a library's archives may be large: this is the one
        // full read of them at open, bounded memory, 1 MiB at a time).
        var mismatched: [String: String] = [:]
        for (name, expected) in archiveSHA256 where Self.isRegularFile(dir + name) {
            let actual = (try? FileDigest.sha256(path: dir + name)) ?? "unreadable"
            if actual != expected { mismatched[name] = actual }
        }
        // A device's library holds none of the master archives: its products are delivered as
        // packs (each bound to its product by a signed manifest), so a missing master makes
        // nothing unavailable there. A library holding some masters but not others is a
        // publisher's library half built: what it lacks cannot be sold.
        let holdsMasters = products.contains { $0.archives.contains { Self.isRegularFile(dir + $0) } }
        for i in products.indices {
            if holdsMasters, let missing = products[i].archives.first(where: { !Self.isRegularFile(dir + $0) }) {
                products[i].availability = .unavailable(
                    reason: "archive \(ErrorText.quoted(missing)) is not in the library")
            } else if let other = products[i].archives.first(where: { mismatched[$0] != nil }) {
                products[i].availability = .unavailable(
                    reason: "archive \(ErrorText.quoted(other)) is not the one the catalog names (its SHA-256 differs)")
            }
        }
        // The first unavailable area each product reaches (itself, then its includes in order),
        // in one pass over the graph.
        var firstUnavailable = [Int?](repeating: nil, count: products.count)
        for k in includedFirst {
            firstUnavailable[k] =
                products[k].area != nil && !products[k].isAvailable
                ? k : children[k].lazy.compactMap { firstUnavailable[$0] }.first
        }
        for i in products.indices where products[i].isAvailable {
            if let k = firstUnavailable[i] {
                products[i].availability = .unavailable(
                    reason: "includes \(ErrorText.quoted(products[k].id)), which is unavailable")
            }
        }
    }

    /// A cycle through includes: its product indices, the first repeated at the end.
    struct Cycle: Error { let nodes: [Int] }

    /// The products in an order where each comes after all it includes (a post-order of a
    /// depth-first search), or the first cycle found. Iterative, so a chain of any length
    /// cannot overflow the stack. Cost: O(products + includes).
    static func includedFirstOrder(_ children: [[Int]]) -> Result<[Int], Cycle> {
        var state = [UInt8](repeating: 0, count: children.count)  // 0 new, 1 on the path, 2 done
        var order: [Int] = []
        order.reserveCapacity(children.count)
        for root in children.indices where state[root] == 0 {
            var path: [(node: Int, next: Int)] = [(root, 0)]
            state[root] = 1
            while let top = path.last {
                if top.next < children[top.node].count {
                    path[path.count - 1].next += 1
                    let child = children[top.node][top.next]
                    if state[child] == 1, let from = path.firstIndex(where: { $0.node == child }) {
                        return .failure(Cycle(nodes: path[from...].map(\.node) + [child]))
                    }
                    if state[child] == 0 {
                        state[child] = 1
                        path.append((child, 0))
                    }
                } else {
                    state[top.node] = 2
                    order.append(top.node)
                    path.removeLast()
                }
            }
        }
        return .success(order)
    }

    private static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    private static func isRegularFile(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
    }

    /// `catalog` with `archiveSHA256` replaced (what `catalog sign` writes back).
    init(_ catalog: Catalog, archiveSHA256: [String: String]) {
        self = catalog
        self.archiveSHA256 = archiveSHA256
    }

    /// The whole file, refused past `limit` bytes (default ``maxFileBytes``).
    package static func readFile(_ path: String, limit: Int = maxFileBytes) throws(CatalogError) -> [UInt8] {
        let maxFileBytes = limit
        // O_NONBLOCK: a FIFO named catalog.json must not hang the open; fstat refuses it next.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            throw CatalogError(
                path: path, field: nil, code: code == ENOENT ? .notFound : .cannotRead,
                detail: code == ENOENT ? "no such file" : "cannot open: \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw CatalogError(
                path: path, field: nil, code: .notRegularFile, detail: RegularFile.notRegular(mode: info.st_mode))
        }
        guard info.st_size <= maxFileBytes else {
            throw CatalogError(
                path: path, field: nil, code: .cannotRead,
                detail: "is \(info.st_size) bytes (a catalog may have at most \(maxFileBytes))")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else {
                throw CatalogError(
                    path: path, field: nil, code: .cannotRead,
                    detail: "cannot read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[..<n])
            // The file may grow after fstat: the cap holds for what is read, too.
            guard bytes.count <= maxFileBytes else {
                throw CatalogError(
                    path: path, field: nil, code: .cannotRead, detail: "grew past \(maxFileBytes) bytes while read")
            }
        }
        return bytes
    }

    /// A decoder error as one line with the JSON path of the field at fault.
    private static func describe(_ error: DecodingError, path: String) -> CatalogError {
        func typeName(_ type: Any.Type) -> String {
            switch type {
            case is String.Type: "a string"
            case is Int.Type: "an integer"
            case is Double.Type: "a number"
            case is Bool.Type: "true or false"
            default:
                String(describing: type).hasPrefix("Array") ? "an array" : "an object"
            }
        }
        switch error {
        case .keyNotFound(let key, let context):
            return CatalogError(
                path: path, field: CatalogIssue.field(context.codingPath + [key]), code: .malformed,
                detail: "is missing")
        case .typeMismatch(let type, let context):
            return CatalogError(
                path: path, field: CatalogIssue.field(context.codingPath), code: .malformed,
                detail: "must be \(typeName(type))")
        case .valueNotFound(let type, let context):
            return CatalogError(
                path: path, field: CatalogIssue.field(context.codingPath), code: .malformed,
                detail: "is null (must be \(typeName(type)))")
        case .dataCorrupted(let context):
            let field = CatalogIssue.field(context.codingPath)
            let detail =
                field == nil
                ? "is not valid JSON (\(context.debugDescription))" : "is not valid: \(context.debugDescription)"
            return CatalogError(path: path, field: field, code: .malformed, detail: detail)
        @unknown default:
            return CatalogError(path: path, field: nil, code: .malformed, detail: "cannot be decoded: \(error)")
        }
    }
}
