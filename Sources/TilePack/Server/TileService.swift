import NIOCore
import TilePackCore
import TilePackCodec
import TilePackArchive
import TilePackStore
import TilePackRegions
import TilePackRender
import TilePackEncoders
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Everything `tilepack serve` answers, as plain functions from request values to a
/// ``ServedResponse``: tiles (stored payloads, PNG, Terrarium elevation), TileJSON, point
/// queries, the store's catalog, the viewer page and its map library. One ``TileStore``
/// under one budget serves every route, and the region library's access policy is asked for
/// every tile.
///
/// Every value from a URL is checked before use: region names are looked up in the table of
/// archives opened at start (never joined into a path), numbers are parsed from at most ten
/// ASCII digits and range-checked, and asset names are looked up in the table of files read
/// at start.
public final class TileService: Sendable {
    public struct Options: Sendable {
        public var libraryDirectory = "."
        /// The library as the caller opened it (trust anchors, ledger, store); nil opens
        /// ``libraryDirectory`` as an open library (no store, every tile shows).
        public var library: RegionLibrary?
        public var budget: MemoryBudget = PointQuery.defaultBudget
        /// Where Debian's libjs-leaflet puts Leaflet.
        public var leafletDirectory = "/usr/share/javascript/leaflet"
        /// The publisher's packs directory (`serve --packs`): nil serves no packs.
        public var packsDirectory: String?
        /// Receives one line per pack or delta the packs directory skips.
        public var packReport: @Sendable (String) -> Void = { _ in }
        public init() {}
    }

    /// `Cache-Control` of tiles: a day; the ETag makes revalidation cheap.
    public static let tileCacheControl = "public, max-age=86400"
    /// The largest asset read at start (leaflet.js is ~140 KiB).
    static let maxAssetBytes = 4 << 20

    public let library: RegionLibrary
    public let layers: MapLayers
    /// Pack delivery (`/packs`), when a packs directory was given.
    public let packs: PackService?
    /// Region names (archive file names without `.mbtiles`) in drawing order.
    public let regionNames: [String]
    let regionIndex: [String: Int]
    let assets: [String: Asset]
    /// Why the viewer's map library is missing, nil when it was found.
    public let assetProblem: String?
    let png = PNGEncoder(level: 1, reducesColorType: true)  // tiles made per request: speed over size
    /// PNGs made per request, by ETag.
    let encoded = EncodedTileCache(limit: 16 << 20)

    struct Asset: Sendable {
        let bytes: [UInt8]
        let contentType: String
        let etag: String
    }

    public init(_ options: Options) throws {
        library = try options.library ?? RegionLibrary(directory: options.libraryDirectory, trust: nil)
        let drawing = try library.drawingLayers()
        layers = try MapLayers(
            archives: drawing.map(\.archive), credits: drawing.map(\.attribution),
            budget: options.budget, accessPolicy: library.accessPolicy())
        var names: [String] = [], index: [String: Int] = [:]
        for (i, layer) in drawing.enumerated() {
            names.append(layer.name)
            index[layer.name] = i
        }
        regionNames = names
        regionIndex = index
        (assets, assetProblem) = Self.loadAssets(options.leafletDirectory)
        if let dir = options.packsDirectory {
            packs = try PackService(library: library, packsDirectory: dir, report: options.packReport)
        } else {
            packs = nil
        }
    }

    var store: TileStore { layers.store }

    // MARK: - Tiles

    /// The file name of the ``TileID`` route's last segment: `Y`, `Y.png`.
    enum TileFormat { case payload, png }

    /// `/tiles/{region}/{z}/{x}/{y}` (the stored GPU payload) and `…/{y}.png` (decoded and
    /// re-encoded as PNG; a PNG archive's bytes as stored).
    ///
    /// Outside the archive's zooms the PNG is the store's made tile (``Overzoom``: scaled up
    /// from the nearest stored ancestor up to z22, scaled down from the min zoom's tiles a few
    /// zooms below it), with `X-Tile-Overzoom: <source zoom>` (coarser than the tile's zoom:
    /// scaled up; finer: scaled down). The payload stays exact-zoom only (GPU words cannot be
    /// scaled without re-encoding): 404 there.
    ///
    /// A partly owned tile: its payload is 403 `partialTile` (a payload cannot be masked
    /// without an encoder); its PNG is made from the store's masked pixels (alpha 0 outside
    /// the owned mask) under an ETag of its own (`m` + the masked pixels' hash seeded with the
    /// mask's fingerprint), never the stored bytes and never a whole tile's ETag.
    public func tile(region: String, z: String, x: String, y: String, ifNoneMatch: String? = nil) -> ServedResponse {
        let format: TileFormat, yText: Substring
        if y.hasSuffix(".png") { format = .png; yText = y.dropLast(4) } else { format = .payload; yText = Substring(y) }
        let a: Int, id: TileID
        switch locate(region: region, z: z, x: x, y: yText) {
        case .failure(let response): return response
        case .success(let found): (a, id) = found
        }
        let summary = store.archives[a]
        if format == .png, let zooms = summary.zoomRange, !zooms.contains(id.z) {
            return zoomedPNG(region: region, archive: a, id: id, ifNoneMatch: ifNoneMatch)
        }
        do throws(TileStoreError) {
            let found: TileLease?
            do throws(TileStoreError) {
                found = try store.tile(id, archive: a)
            } catch  where error.problem == .partialTile && format == .png {
                return maskedPNG(region: region, archive: a, id: id, ifNoneMatch: ifNoneMatch)
            }
            guard let lease = found else { return notFound(region, id) }
            let hash = lease.withUnsafeBytes { fnv1a($0) }
            let etag = "\"\(format == .png ? "p" : "t")\(hex16(hash))\""
            if Self.matches(ifNoneMatch, etag) { return notModified(etag) }
            switch format {
            case .payload:
                return ServedResponse(
                    contentType: "application/octet-stream",
                    headers: tileHeaders(etag) + [
                        ("X-Tile-Format", summary.codecName),
                        ("X-Tile-Size", "\(summary.tileSize)"),
                    ],
                    shared: lease.withUnsafeBytes { ByteBuffer(bytes: $0) })
            case .png:
                if summary.codec == .png {
                    return ServedResponse(
                        contentType: "image/png", headers: tileHeaders(etag),
                        shared: lease.withUnsafeBytes { ByteBuffer(bytes: $0) })
                }
                if let cached = encoded.get(etag) {
                    return ServedResponse(contentType: "image/png", headers: tileHeaders(etag), shared: cached)
                }
                guard let pixels = try store.pixels(id, archive: a) else { return notFound(region, id) }
                return encodedPNG(etag: etag, rgba: pixels.array, side: summary.tileSize)
            }
        } catch {
            return tileError(error, region: region, id: id)
        }
    }

    /// The PNG of a partly owned tile, from the store's masked pixels. The ETag hashes the
    /// pixels as masked (seeded with the mask's fingerprint), so the encoded-tile cache can
    /// never hand a masked tile's key an unmasked PNG or the other way round.
    func maskedPNG(region: String, archive a: Int, id: TileID, ifNoneMatch: String?) -> ServedResponse {
        let side = store.archives[a].tileSize
        do throws(TileStoreError) {
            let seed = store.access(id, archive: a).mask?.fingerprint ?? 0
            guard let pixels = try store.pixels(id, archive: a) else { return notFound(region, id) }
            let etag = "\"m" + pixels.withUnsafeBytes { hex16(fnv1a($0, seed: seed)) } + "\""
            if Self.matches(ifNoneMatch, etag) { return notModified(etag) }
            if let cached = encoded.get(etag) {
                return ServedResponse(contentType: "image/png", headers: tileHeaders(etag), shared: cached)
            }
            return encodedPNG(etag: etag, rgba: pixels.array, side: side)
        } catch {
            return tileError(error, region: region, id: id)
        }
    }

    /// The PNG of a tile outside the archive's zooms, made by the store from another zoom
    /// (access asked for this tile; a partly owned one comes masked). The ETag hashes the
    /// pixels as made, seeded with the source zoom and the mask's fingerprint.
    func zoomedPNG(region: String, archive a: Int, id: TileID, ifNoneMatch: String?) -> ServedResponse {
        let side = store.archives[a].tileSize
        do throws(TileStoreError) {
            let mask = store.access(id, archive: a).mask?.fingerprint ?? 0
            guard let pixels = try store.pixels(id, archive: a) else { return notFound(region, id) }
            let seed = mask ^ UInt64(pixels.sourceZoom) &* 0x9E37_79B9_7F4A_7C15
            let etag = "\"z" + pixels.withUnsafeBytes { hex16(fnv1a($0, seed: seed)) } + "\""
            let extra = [("X-Tile-Overzoom", "\(pixels.sourceZoom)")]
            if Self.matches(ifNoneMatch, etag) { return notModified(etag, extra: extra) }
            if let cached = encoded.get(etag) {
                return ServedResponse(contentType: "image/png", headers: tileHeaders(etag) + extra, shared: cached)
            }
            return encodedPNG(etag: etag, rgba: pixels.array, side: side, extra: extra)
        } catch {
            return tileError(error, region: region, id: id)
        }
    }

    /// `rgba` (side² pixels) as a PNG tile response, kept in the encoded-tile cache under `etag`.
    func encodedPNG(etag: String, rgba: [UInt8], side: Int, extra: [(String, String)] = []) -> ServedResponse {
        let body: [UInt8]
        do throws(PNGError) {
            body = try png.encode(rgba: rgba, width: side, height: side)
        } catch {
            return .from(error)
        }
        return ServedResponse(
            contentType: "image/png", headers: tileHeaders(etag) + extra, shared: encoded.put(etag, body))
    }

    /// `/view/{z}/{x}/{y}.png`: every region composited as `tilepack render --tile` draws it,
    /// locked tiles dimmed with their price: the viewer's base layer. Beyond the archives'
    /// zooms the store's made tiles are drawn; `X-Tile-Overzoom` then lists the zooms they
    /// came from (comma-separated, ascending: usually one).
    public func view(z: String, x: String, y: String, ifNoneMatch: String? = nil) -> ServedResponse {
        guard y.hasSuffix(".png") else {
            return .error(404, kind: "notFound", message: "view tiles are PNG: /view/{z}/{x}/{y}.png")
        }
        guard let zoom = Self.integer(z[...]), zoom <= TileID.maxZoom,
            let col = Self.integer(x[...]), let row = Self.integer(y.dropLast(4)),
            let id = TileID(z: zoom, x: col, y: row)
        else {
            return .error(
                400, kind: "invalidArgument",
                message: "not a tile: /view/\(Self.shown(z))/\(Self.shown(x))/\(Self.shown(y))")
        }
        do {
            let picture = try MapRenderer.render(MapFrame(tile: id), store: store)
            let etag = "\"v" + picture.image.pixels.withUnsafeBytes { hex16(fnv1a($0)) } + "\""
            let extra =
                picture.sourceZooms.isEmpty
                ? [] : [("X-Tile-Overzoom", picture.sourceZooms.map(String.init).joined(separator: ","))]
            if Self.matches(ifNoneMatch, etag) { return notModified(etag, cache: "no-cache", extra: extra) }
            let body = try png.encode(
                rgba: picture.image.pixels, width: picture.image.width, height: picture.image.height)
            return ServedResponse(
                contentType: "image/png", headers: [("ETag", etag), ("Cache-Control", "no-cache")] + extra, body: body)
        } catch {
            return .from(error)
        }
    }

    /// `/terrain/{region}/{z}/{x}/{y}.png`: the elevation grid as Terrarium RGB, 256 × 256.
    public func terrain(region: String, z: String, x: String, y: String, ifNoneMatch: String? = nil) -> ServedResponse {
        guard y.hasSuffix(".png") else {
            return .error(404, kind: "notFound", message: "terrain tiles are PNG: /terrain/{region}/{z}/{x}/{y}.png")
        }
        let a: Int, id: TileID
        switch locate(region: region, z: z, x: x, y: y.dropLast(4)) {
        case .failure(let response): return response
        case .success(let found): (a, id) = found
        }
        // Only heights and depths are terrain: a percentage or class grid is not served as metres.
        guard store.archives[a].valueKind?.isMetres == true else {
            return .error(404, kind: "notFound", message: "region \(region) has no elevation")
        }
        do throws(TileStoreError) {
            // A partly owned tile's grid comes with NaN outside the mask: its ETag is the
            // masked values' hash, seeded with the mask's fingerprint.
            let seed = store.access(id, archive: a).mask?.fingerprint
            // Outside the archive's zooms the store makes the grid from the nearest zoom with data.
            guard let zoomed = try store.zoomedElevation(id, archive: a), zoomed.grid.width > 0, zoomed.grid.height > 0
            else {
                return notFound(region, id)
            }
            let grid = zoomed.grid
            let extra = zoomed.sourceZoom == id.z ? [] : [("X-Tile-Overzoom", "\(zoomed.sourceZoom)")]
            let hash = grid.values.withUnsafeBytes { fnv1a($0, seed: seed ?? 0xcbf2_9ce4_8422_2325) }
            let etag = "\"\(seed == nil ? "e" : "f")\(hex16(hash))\""
            if Self.matches(ifNoneMatch, etag) { return notModified(etag, extra: extra) }
            if let cached = encoded.get(etag) {
                return ServedResponse(contentType: "image/png", headers: tileHeaders(etag) + extra, shared: cached)
            }
            let rgba = Terrarium.rgba(grid)
            do throws(PNGError) {
                let body = try png.encode(rgba: rgba, width: 256, height: 256)
                return ServedResponse(
                    contentType: "image/png", headers: tileHeaders(etag) + extra, shared: encoded.put(etag, body))
            } catch {
                return .from(error)
            }
        } catch {
            return tileError(error, region: region, id: id)
        }
    }

    /// `/tiles/{region}.json`: TileJSON 3.0.0 for the PNG tiles. `base` is the URL prefix the
    /// client reached us by (`http://host:port`), already checked.
    public func tileJSON(file: String, base: String) -> ServedResponse {
        guard file.hasSuffix(".json") else {
            return .error(404, kind: "notFound", message: "no such resource: /tiles/\(Self.shown(file))")
        }
        let region = String(file.dropLast(5))
        guard let a = regionIndex[region] else { return unknownRegion(region) }
        let s = store.archives[a]
        var fields = [
            "\"tilejson\":\"3.0.0\"", "\"name\":\(jsonString(s.name))", "\"scheme\":\"xyz\"",
            "\"tiles\":[\(jsonString("\(base)/tiles/\(region)/{z}/{x}/{y}.png"))]",
            "\"attribution\":\(jsonString(layers.attribution))",
            "\"tilepack:region\":\(jsonString(region))",
            "\"tilepack:codec\":\(jsonString(s.codecName))",
            "\"tilepack:payload_tiles\":[\(jsonString("\(base)/tiles/\(region)/{z}/{x}/{y}"))]",
        ]
        if s.valueKind?.isMetres == true {
            fields.append("\"tilepack:terrain_tiles\":[\(jsonString("\(base)/terrain/\(region)/{z}/{x}/{y}.png"))]")
            fields.append("\"tilepack:terrain_encoding\":\"terrarium\"")
        }
        if let z = s.zoomRange { fields += ["\"minzoom\":\(z.lowerBound)", "\"maxzoom\":\(z.upperBound)"] }
        if let b = s.bounds {
            fields.append("\"bounds\":[\(b.west),\(b.south),\(b.east),\(b.north)]")
            let zoom = s.zoomRange.map { ($0.lowerBound + $0.upperBound) / 2 } ?? 0
            fields.append("\"center\":[\((b.west + b.east) / 2),\((b.south + b.north) / 2),\(zoom)]")
        }
        return .json("{" + fields.joined(separator: ",") + "}", cache: "public, max-age=60")
    }

    // MARK: - Query and store

    /// `/query?lat=&lon=&zoom=`: a JSON array of `tilepack query --json` objects, one per
    /// region that covers the point (one "uncovered" object when none does).
    public func query(lat: String?, lon: String?, zoom: String?) -> ServedResponse {
        guard let latText = lat, let lonText = lon, let zoomText = zoom else {
            return .error(
                400, kind: "invalidArgument", message: "give lat, lon and zoom, e.g. /query?lat=45.85&lon=6.88&zoom=12")
        }
        guard let la = Self.decimal(latText), let lo = Self.decimal(lonText) else {
            return .error(400, kind: "invalidArgument", message: "lat and lon must be decimal degrees")
        }
        guard let z = Self.integer(zoomText[...]), z <= TileID.maxZoom else {
            return .error(400, kind: "invalidArgument", message: "zoom must be an integer 0…\(TileID.maxZoom)")
        }
        do {
            let q = try TileQuery(lat: la, lon: lo, zoom: z)
            let answers = try PointQuery.answer(q, store: store)
            let objects =
                answers.isEmpty
                ? [try uncoveredPointJSON(q, searched: "this server's library")] : try answers.map { try $0.json }
            return .json("[" + objects.joined(separator: ",") + "]")
        } catch {
            return .from(error)
        }
    }

    /// `/store`: `{"library": "store"|"open", "catalog": bool, "catalog_problem": text|null,
    /// "free_max_zoom": N|null, "products": [store list --json objects], "packs": N}`.
    /// A store library whose catalog failed closed lists no products and says why. `packs`
    /// counts the packs `/packs` offers; absent when serve was started without `--packs`.
    public func storeListing() -> ServedResponse {
        _ = library.entitlements?.generation  // sees a purchase made since (data_version, at most every 5 ms)
        let kind = "\"library\":\(jsonString(library.kind.rawValue))"
        let packCount = packs.map { ",\"packs\":\($0.count)" } ?? ""
        let problem = "\"catalog_problem\":" + (library.catalogProblem.map { jsonString($0.description) } ?? "null")
        guard let catalog = library.catalog, library.catalogProblem == nil else {
            let free =
                library.catalog.map { "\($0.freeMaxZoom)" }
                ?? (library.kind == .store ? "\(RegionLibrary.failClosedMaxZoom)" : "null")
            return .json("{\(kind),\"catalog\":false,\(problem),\"free_max_zoom\":\(free),\"products\":[]\(packCount)}")
        }
        do {
            let products = try library.listings().map { try JSONOutput.string($0) }
            return .json(
                "{\(kind),\"catalog\":true,\(problem),\"free_max_zoom\":\(catalog.freeMaxZoom),\"products\":["
                    + products.joined(separator: ",") + "]\(packCount)}")
        } catch {
            return .from(error)
        }
    }

    /// `/regions`: each region's name, title, bounds, zooms, codec and whether it has elevation,
    /// and the catalog products' polygons: what the viewer draws.
    public func regionsListing() -> ServedResponse {
        var regions: [String] = []
        for (i, name) in regionNames.enumerated() {
            let s = store.archives[i]
            var f = [
                "\"region\":\(jsonString(name))", "\"name\":\(jsonString(s.name))",
                "\"codec\":\(jsonString(s.codecName))",
                "\"elevation\":\(s.valueKind?.isMetres == true)",
            ]
            if let b = s.bounds { f.append("\"bounds\":[\(b.west),\(b.south),\(b.east),\(b.north)]") }
            if let z = s.zoomRange { f += ["\"minzoom\":\(z.lowerBound)", "\"maxzoom\":\(z.upperBound)"] }
            regions.append("{" + f.joined(separator: ",") + "}")
        }
        var areas: [String] = []
        for p in library.catalog?.products ?? [] {
            guard let area = p.area else { continue }
            let rings = area.rings.map { ring in "[" + ring.map { "[\($0.lon),\($0.lat)]" }.joined(separator: ",") + "]"
            }
            areas.append(
                "{\"id\":\(jsonString(p.id)),\"title\":\(jsonString(p.title)),\"rings\":[\(rings.joined(separator: ","))]}"
            )
        }
        return .json(
            "{\"regions\":[\(regions.joined(separator: ","))],\"areas\":[\(areas.joined(separator: ","))],"
                + "\"attribution\":\(jsonString(layers.attribution)),\(viewZooms)}")
    }

    /// `"view_minzoom":N,"view_maxzoom":N`: the zooms `/view` draws something at, which the
    /// viewer's map follows: from ``Overzoom/maxUnderzoomLevels`` below the coarsest archive's
    /// min zoom to ``Overzoom/maxZoom`` (or a finer archive's max); 0…18 without archives.
    var viewZooms: String {
        let reaches = store.archives.compactMap(\.zoomRange).map(Overzoom.reach(of:))
        guard let lo = reaches.map(\.lowerBound).min(), let hi = reaches.map(\.upperBound).max() else {
            return "\"view_minzoom\":0,\"view_maxzoom\":18"
        }
        return "\"view_minzoom\":\(lo),\"view_maxzoom\":\(min(hi, TileID.maxZoom))"
    }

    // MARK: - Viewer

    /// `/`: the viewer page, or a page saying how to install the map library when it is missing.
    public func viewerPage() -> ServedResponse {
        if let assetProblem {
            let html = ViewerPage.missingLibrary(assetProblem)
            return ServedResponse(
                status: 503, contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-store")],
                body: Array(html.utf8))
        }
        return ServedResponse(
            contentType: "text/html; charset=utf-8", headers: [("Cache-Control", "no-cache")],
            body: Array(ViewerPage.html.utf8))
    }

    /// `/leaflet/{path}`: a file of the map library, from the table read at start.
    public func asset(_ path: String, ifNoneMatch: String? = nil) -> ServedResponse {
        guard let asset = assets[path] else {
            return .error(
                404, kind: "notFound",
                message: "no asset \(Self.shown(path))"
                    + (assetProblem.map { " (\($0))" } ?? ""))
        }
        if Self.matches(ifNoneMatch, asset.etag) { return notModified(asset.etag) }
        return ServedResponse(
            contentType: asset.contentType, headers: [("ETag", asset.etag), ("Cache-Control", "public, max-age=3600")],
            body: asset.bytes)
    }

    /// Reads Leaflet's files (top level and `images/`) into memory, so that a request never
    /// reaches the file system.
    static func loadAssets(_ directory: String) -> ([String: Asset], String?) {
        var out: [String: Asset] = [:]
        for sub in ["", "images/"] {
            guard let dir = opendir(directory + "/" + sub) else { continue }
            defer { closedir(dir) }
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self)
                }
                guard let type = contentType(name), !name.hasPrefix(".") else { continue }
                guard let bytes = readSmallFile(directory + "/" + sub + name) else { continue }
                let etag = "\"a" + bytes.withUnsafeBytes { hex16(fnv1a($0)) } + "\""
                out[sub + name] = Asset(bytes: bytes, contentType: type, etag: etag)
            }
        }
        guard out["leaflet.js"] != nil, out["leaflet.css"] != nil else {
            return (
                out,
                "Leaflet not found in \(directory) (leaflet.js and leaflet.css): install Debian's libjs-leaflet "
                    + "(apt-get install libjs-leaflet) or pass --leaflet DIR"
            )
        }
        return (out, nil)
    }

    static func contentType(_ name: String) -> String? {
        if name.hasSuffix(".js") { return "text/javascript; charset=utf-8" }
        if name.hasSuffix(".css") { return "text/css; charset=utf-8" }
        if name.hasSuffix(".png") { return "image/png" }
        if name.hasSuffix(".svg") { return "image/svg+xml" }
        return nil
    }

    static func readSmallFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var out: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, 65536) }
            if n < 0 { return nil }
            if n == 0 { return out }
            out.append(contentsOf: chunk[0..<n])
            if out.count > maxAssetBytes { return nil }
        }
    }

    // MARK: - Input checks

    enum Located { case success((Int, TileID)), failure(ServedResponse) }

    /// The archive of `region` and the tile z/x/y, or the 404/400 to answer.
    func locate(region: String, z: String, x: String, y: Substring) -> Located {
        guard let a = regionIndex[region] else { return .failure(unknownRegion(region)) }
        guard let zoom = Self.integer(z[...]), zoom <= TileID.maxZoom else {
            return .failure(
                .error(
                    400, kind: "invalidArgument", message: "zoom \(Self.shown(z)) is not an integer 0…\(TileID.maxZoom)"
                ))
        }
        guard let col = Self.integer(x[...]), let row = Self.integer(y), let id = TileID(z: zoom, x: col, y: row) else {
            return .failure(
                .error(
                    400, kind: "invalidArgument",
                    message:
                        "tile \(zoom)/\(Self.shown(x))/\(Self.shown(String(y))) is not a tile: x and y are integers 0…2^zoom − 1"
                ))
        }
        return .success((a, id))
    }

    /// A non-negative integer of at most ten ASCII digits, else nil.
    static func integer(_ s: Substring) -> Int? {
        guard !s.isEmpty, s.utf8.count <= 10, s.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return Int(s)
    }

    /// A finite decimal number of at most 32 characters (digits, sign, point, exponent), else nil.
    static func decimal(_ s: String) -> Double? {
        guard !s.isEmpty, s.utf8.count <= 32,
            s.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 43 || $0 == 46 || $0 == 101 || $0 == 69 }),
            let v = Double(s), v.isFinite
        else { return nil }
        return v
    }

    /// A request value as it may appear in a message: at most 64 characters.
    static func shown(_ s: String) -> String { s.count > 64 ? String(s.prefix(64)) + "…" : s }

    /// Whether an `If-None-Match` value names `etag` (or is `*`).
    static func matches(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch, ifNoneMatch.utf8.count <= 8192 else { return false }
        for part in ifNoneMatch.split(separator: ",") {
            var tag = part.trimmingWhitespace()
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag == "*" || tag == etag[...] { return true }
        }
        return false
    }

    // MARK: - Responses

    func tileHeaders(_ etag: String) -> [(String, String)] {
        [("ETag", etag), ("Cache-Control", Self.tileCacheControl)]
    }

    func notModified(
        _ etag: String, cache: String = TileService.tileCacheControl, extra: [(String, String)] = []
    ) -> ServedResponse {
        ServedResponse(
            status: 304, contentType: "", headers: [("ETag", etag), ("Cache-Control", cache)] + extra, body: [])
    }

    func unknownRegion(_ region: String) -> ServedResponse {
        .error(
            404, kind: "notFound",
            message: "no region \(jsonSafe(region)) in this library (regions: \(regionNames.joined(separator: ", ")))")
    }

    func notFound(_ region: String, _ id: TileID) -> ServedResponse {
        .error(404, kind: "notFound", message: "region \(region) has no tile \(id)")
    }

    /// 403 with the products that unlock a locked tile (kind `locked`), or of a partly owned
    /// tile's payload (kind `partialTile`); other store errors by category.
    func tileError(_ error: TileStoreError, region: String, id: TileID) -> ServedResponse {
        let offers = (try? JSONOutput.string(error.offers)) ?? "[]"
        let extra = [("region", jsonString(region)), ("tile", jsonString(id.description)), ("unlock", offers)]
        let buy =
            error.offers.first.map { "buy \($0.title) (\($0.price) \($0.currency))" } ?? "no product on sale unlocks it"
        switch error.problem {
        case .locked:
            return .error(403, kind: "locked", message: "tile \(id) of \(region) is locked: " + buy, extra: extra)
        case .partialTile:
            return .error(
                403, kind: "partialTile",
                message: "tile \(id) of \(region) is partly locked: its payload cannot be served masked; "
                    + "ask /tiles/\(region)/\(id).png for the owned pixels, or " + buy,
                extra: extra)
        default:
            return .from(error)
        }
    }

    func jsonSafe(_ s: String) -> String { Self.shown(s) }
}
