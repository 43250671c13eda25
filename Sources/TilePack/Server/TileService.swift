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
    /// Raw archives `GET /NAME.pmtiles` serves, by file name (an open library's PMTiles).
    let archiveFiles: [String: String]
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
        let opened = try library.openTileStore(budget: options.budget)
        let drawing = opened.layers
        layers = MapLayers(store: opened.store, credits: drawing.map(\.attribution))
        var names: [String] = [], index: [String: Int] = [:]
        for (i, layer) in drawing.enumerated() {
            names.append(layer.name)
            index[layer.name] = i
        }
        regionNames = names
        regionIndex = index
        archiveFiles = Self.servedArchiveFiles(library, layers: drawing)
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
                found = try store.typedTile(id, archive: a)
            } catch  where error.code == .partialTile && format == .png {
                return maskedPNG(region: region, archive: a, id: id, ifNoneMatch: ifNoneMatch)
            }
            guard let lease = found else { return notFound(region, id) }
            let hash = lease.withUnsafeBytes { fnv1a($0) }
            let etag = "\"\(format == .png ? "p" : "t")\(hex16(hash))\""
            if Self.matches(ifNoneMatch, etag) { return notModified(etag) }
            switch format {
            case .payload:
                let headers =
                    tileHeaders(etag) + [("X-Tile-Format", summary.codecName), ("X-Tile-Size", "\(summary.tileSize)")]
                guard let ktx2 = summary.codec?.ktx2Format else {
                    return ServedResponse(
                        contentType: "application/octet-stream", headers: headers,
                        shared: lease.withUnsafeBytes { ByteBuffer(bytes: $0) })
                }
                // A GPU tile goes out as a KTX2 file around the raw payload (no supercompression:
                // every KTX2 loader reads that, and HTTP compression is the transport's business).
                return lease.withUnsafeBytes { payload in
                    do {
                        let prefix = try KTX2Writer.prefix(
                            storedByteCount: payload.count, supercompression: .none, format: ktx2,
                            width: summary.tileSize, height: summary.tileSize)
                        var body = ByteBuffer()
                        body.reserveCapacity(prefix.count + payload.count)
                        body.writeBytes(prefix)
                        body.writeBytes(payload)
                        return ServedResponse(
                            contentType: TileCodecChoice.ktx2MediaType, headers: headers, shared: body)
                    } catch {
                        return .from(error)
                    }
                }
            case .png:
                if summary.codec == .png {
                    return ServedResponse(
                        contentType: "image/png", headers: tileHeaders(etag),
                        shared: lease.withUnsafeBytes { ByteBuffer(bytes: $0) })
                }
                if let cached = encoded.get(etag) {
                    return ServedResponse(contentType: "image/png", headers: tileHeaders(etag), shared: cached)
                }
                guard let pixels = try store.typedPixels(id, archive: a) else { return notFound(region, id) }
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
            guard let pixels = try store.typedPixels(id, archive: a) else { return notFound(region, id) }
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
            guard let pixels = try store.typedPixels(id, archive: a) else { return notFound(region, id) }
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
        guard store.archives[a].hasElevationMetres else {
            return .error(404, kind: "notFound", message: "region \(region) has no elevation")
        }
        do throws(TileStoreError) {
            // A partly owned tile's grid comes with NaN outside the mask: its ETag is the
            // masked values' hash, seeded with the mask's fingerprint.
            let seed = store.access(id, archive: a).mask?.fingerprint
            // Outside the archive's zooms the store makes the grid from the nearest zoom with data.
            guard let zoomed = try store.typedZoomedElevation(id, archive: a), zoomed.grid.width > 0,
                zoomed.grid.height > 0
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
        let center = s.bounds.map { b in
            [
                (b.west + b.east) / 2, (b.south + b.north) / 2,
                Double(s.zoomRange.map { ($0.lowerBound + $0.upperBound) / 2 } ?? 0),
            ]
        }
        let document = TileJSONDocument(
            name: s.name, tiles: ["\(base)/tiles/\(region)/{z}/{x}/{y}.png"], attribution: layers.credits[a],
            region: region, codec: s.codecName, payloadTiles: ["\(base)/tiles/\(region)/{z}/{x}/{y}"],
            terrainTiles: s.hasElevationMetres ? ["\(base)/terrain/\(region)/{z}/{x}/{y}.png"] : nil,
            minzoom: s.zoomRange?.lowerBound, maxzoom: s.zoomRange?.upperBound,
            bounds: s.bounds.map { [$0.west, $0.south, $0.east, $0.north] }, center: center)
        return .json(encoding: document, cache: "public, max-age=60")
    }
}
