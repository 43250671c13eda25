import TilePackCore
import TilePackCodec
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What one archive holds at a point: the answer of `tilepack query`.
public struct PointAnswer: Sendable, Encodable {
    /// The archive file.
    public let archive: String
    /// The region's MBTiles `name`.
    public let region: String
    /// The tile at the query zoom and the pixel within it.
    public let query: TileQuery
    /// Whether the archive stores that tile (transparent tiles are not stored).
    public let present: Bool
    /// The decoded colour at the pixel, when the tile is present.
    public let rgba: [UInt8]?
    /// Elevation in metres, bilinear between the elevation samples around the point; nil
    /// where the archive has no elevation there (or only nodata).
    public let elevationMetres: Double?
    /// The zoom the elevation came from (the query zoom, or the finest zoom below it that
    /// has elevation).
    public let elevationZoom: Int?
    /// The access policy refused the tile (a catalog sells it and this account does not own
    /// it): colour and elevation are withheld.
    public var locked = false
    /// The products that would unlock it, cheapest first (empty unless `locked`).
    public var unlock: [ProductOffer] = []
    /// The zoom the answer's data came from: the colour's (else the elevation's) zoom; the
    /// query zoom for a stored tile, the nearest zoom with data beyond the archive's zooms
    /// (``Overzoom``); nil when there is no data.
    public var dataZoom: Int?
    /// The data came from a coarser zoom than the query's (the tile was scaled up).
    public var overzoomed: Bool { dataZoom.map { $0 < query.zoom } ?? false }

    /// The stored sample at the point, whatever it holds (``valueKind``): a class's exact code
    /// (the nearest sample), otherwise bilinear like ``elevationMetres``; nil without one.
    public var value: Double?
    /// What the archive's samples are (`tilepack:value_kind`); nil for an archive without.
    public var valueKind: ValueKind?
    /// The zoom ``value`` came from.
    public var valueZoom: Int?

    public init(
        archive: String, region: String, query: TileQuery, present: Bool, rgba: [UInt8]?,
        elevationMetres: Double?, elevationZoom: Int?, locked: Bool = false, unlock: [ProductOffer] = [],
        value: Double? = nil, valueKind: ValueKind? = nil, valueZoom: Int? = nil, dataZoom: Int? = nil
    ) {
        self.archive = archive; self.region = region; self.query = query; self.present = present; self.rgba = rgba
        self.elevationMetres = elevationMetres; self.elevationZoom = elevationZoom; self.locked = locked;
        self.unlock = unlock
        self.value = value; self.valueKind = valueKind; self.valueZoom = valueZoom
        self.dataZoom = dataZoom
    }

    /// The fields after the query's own (``TileQuery/CodingKeys``: `lat`, `lon`, `zoom`,
    /// `tile`, `tms_y`, `pixel`).
    enum CodingKeys: String, CodingKey {
        case archive, region, present, rgba, locked, unlock, value, overzoomed
        case elevationMetres = "elevation_m"
        case elevationZoom = "elevation_zoom"
        case valueKind = "value_kind"
        case dataZoom = "data_zoom"
    }

    /// The query's fields, then `archive`, `region`, `present`, `rgba` (null without a tile),
    /// `elevation_m` (rounded to the centimetre, null without elevation and unless the
    /// value kind is elevation or depth), `elevation_zoom`, `value` (a class code exactly,
    /// others to 0.0001), `value_kind`, `data_zoom` (null without data), `overzoomed`,
    /// `locked` and `unlock` ([{`id`, `title`, `price`, `currency`}], cheapest first).
    public func encode(to encoder: any Encoder) throws {
        try query.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(archive, forKey: .archive)
        try c.encode(region, forKey: .region)
        try c.encode(present, forKey: .present)
        try c.encodeOrNull(rgba, forKey: .rgba)
        try c.encodeOrNull(
            elevationMetres.map { JSONOutput.number(($0 * 100).rounded() / 100) }, forKey: .elevationMetres)
        try c.encodeOrNull(elevationZoom, forKey: .elevationZoom)
        try c.encodeOrNull(
            value.map { valueKind == .class ? $0 : JSONOutput.number(($0 * 10_000).rounded() / 10_000) }, forKey: .value
        )
        try c.encodeOrNull(valueKind, forKey: .valueKind)
        try c.encodeOrNull(dataZoom, forKey: .dataZoom)
        try c.encode(overzoomed, forKey: .overzoomed)
        try c.encode(locked, forKey: .locked)
        try c.encode(unlock, forKey: .unlock)
    }

    /// `{archive, region, lat, lon, zoom, tile {z,x,y}, tms_y, pixel {x,y}, present, rgba,
    /// elevation_m, elevation_zoom, data_zoom, overzoomed, locked, unlock}` on one line, keys sorted.
    public var json: String {
        get throws { try JSONOutput.string(self) }
    }

    /// Human-readable lines.
    public var text: String {
        var lines = [
            "archive:   \(archive) (region \"\(region)\")",
            """
            tile:      \(query.tile.z)/\(query.tile.x)/\(query.tile.y) (TMS row \(query.tmsY)), pixel \
            \(query.pixel.x),\(query.pixel.y)
            """,
        ]
        if locked {
            let offer =
                unlock.first.map { "buy \($0.title) (\($0.price) \($0.currency))" } ?? "no product on sale unlocks it"
            lines.append("locked:    \(offer)")
        } else if let rgba {
            lines.append("colour:    rgba(\(rgba[0]), \(rgba[1]), \(rgba[2]), \(rgba[3]))")
        } else {
            lines.append("colour:    no tile stored here at zoom \(query.zoom) (outside the data, or transparent)")
        }
        if let v = value, let z = valueZoom {
            let from = "(from zoom \(z))"
            switch valueKind {
            case .elevation?, nil: lines.append("elevation: \((v * 100).rounded() / 100) m \(from)")
            case .depth?: lines.append("depth:     \((v * 100).rounded() / 100) m \(from)")
            case .percent?: lines.append("value:     \((v * 100).rounded() / 100) % \(from)")
            case .class?: lines.append("class:     \(Self.plain(v)) \(from)")
            case .value?: lines.append("value:     \((v * 10_000).rounded() / 10_000) \(from)")
            }
        } else if let e = elevationMetres, let z = elevationZoom {
            lines.append("elevation: \((e * 100).rounded() / 100) m (from zoom \(z))")
        }
        if let z = dataZoom, z != query.zoom {
            lines.append(
                "data:      from zoom \(z) (\(z < query.zoom ? "overzoomed: scaled up" : "underzoomed: scaled down"))")
        }
        return lines.joined(separator: "\n")
    }
}

extension PointAnswer {
    /// An integral value without a fraction ("7", not "7.0").
    static func plain(_ v: Double) -> String { NumberText.plain(v) }
}

/// The answer when no archive covers the point: the query's fields with `archive` and
/// `region` null, `present` false, `rgba`, `elevation_m`, `elevation_zoom` and `data_zoom`
/// null, `overzoomed` false, plus a `message` naming the place searched.
public struct UncoveredPointAnswer: Sendable, Encodable {
    public let query: TileQuery
    /// Where the archives were looked for (a directory, or "the current directory").
    public let searched: String

    public init(query: TileQuery, searched: String) {
        self.query = query
        self.searched = searched
    }

    public var message: String { "no region archive in \(searched) covers this point" }

    enum CodingKeys: String, CodingKey {
        case archive, region, present, rgba, message, locked, unlock, value, overzoomed
        case elevationMetres = "elevation_m"
        case elevationZoom = "elevation_zoom"
        case valueKind = "value_kind"
        case dataZoom = "data_zoom"
    }

    public func encode(to encoder: any Encoder) throws {
        try query.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeNil(forKey: .archive)
        try c.encodeNil(forKey: .region)
        try c.encode(false, forKey: .present)
        try c.encodeNil(forKey: .rgba)
        try c.encodeNil(forKey: .elevationMetres)
        try c.encodeNil(forKey: .elevationZoom)
        try c.encodeNil(forKey: .value)
        try c.encodeNil(forKey: .valueKind)
        try c.encodeNil(forKey: .dataZoom)
        try c.encode(false, forKey: .overzoomed)
        try c.encode(message, forKey: .message)
        try c.encode(false, forKey: .locked)
        try c.encode([ProductOffer](), forKey: .unlock)
    }

    /// One line, keys sorted.
    public var json: String {
        get throws { try JSONOutput.string(self) }
    }
}

/// Answers point queries against downloaded regions: which archives cover a point, what
/// colour their tile has there, and for terrain the elevation in metres. Every tile and
/// elevation grid comes through a ``TileStore``, so repeated queries in one process hit its
/// cache and stay within its budget.
///
/// Cost per archive that covers the point, on a miss: one tile read and decode (a 256 × 256
/// PVRTC decode is ~0.5 ms) and at most one elevation grid per zoom tried; on a hit, O(1).
public enum PointQuery {
    /// The budget of the store the convenience entry points open: room for a few dozen
    /// decoded tiles, far more than one query needs.
    public static let defaultBudget: MemoryBudget = {
        do { return try MemoryBudget(bytes: 32 << 20) } catch { preconditionFailure("32 MiB is a valid budget") }
    }()

    /// The `.mbtiles` files (or those ending `suffix`) directly inside `directory`, sorted by name.
    public static func archives(in directory: String, suffix: String = ".mbtiles") throws -> [String] {
        guard let dir = opendir(directory) else {
            throw InputFileError(path: directory, detail: "cannot open the region library directory (errno \(errno))")
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name.hasSuffix(suffix) && !name.hasPrefix(".") { names.append(name) }
        }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        return names.sorted().map { directory == "." ? $0 : prefix + $0 }
    }

    /// The answers of every archive of `store` whose bounds contain the point, in store order.
    public static func answer(_ query: TileQuery, store: TileStore) throws -> [PointAnswer] {
        try store.archives.indices
            .filter { store.archives[$0].contains(lon: query.lon, lat: query.lat) }
            .map { try answer(query, store: store, archive: $0) }
    }

    /// What one open archive holds at the point (whether or not its bounds contain it),
    /// through a store opened for the call.
    public static func answer(_ query: TileQuery, reader: MBTilesReader) throws -> PointAnswer {
        try answer(query, store: TileStore(archives: [reader], budget: defaultBudget), archive: 0)
    }

    /// What archive number `archive` of `store` holds at the point.
    public static func answer(_ query: TileQuery, store: TileStore, archive a: Int) throws -> PointAnswer {
        let summary = store.archives[a]
        let path = store.archivePaths[a]
        func locked(_ tileOffers: [ProductOffer]) -> PointAnswer {
            // Name what unlocks the point, not every product touching its tile; should the
            // policy find none there (a pixel on an area's very edge), the tile's list stands.
            let (px, py) = pixel(of: query, side: summary.tileSize)
            let pointOffers = store.offers(query.tile, archive: a, pixel: (px, py))
            // Nothing of a locked tile is shown, elevation included.
            return PointAnswer(
                archive: path, region: summary.name, query: query, present: false, rgba: nil,
                elevationMetres: nil, elevationZoom: nil, locked: true,
                unlock: pointOffers.isEmpty ? tileOffers : pointOffers)
        }
        // A partly owned tile: the point's pixel decides, as a pixel of `render` would.
        if case .partial(let mask, let offers) = store.access(query.tile, archive: a) {
            let (px, py) = pixel(of: query, side: summary.tileSize)
            if !mask.scaled(toSide: summary.tileSize).isOwned(x: px, y: py) { return locked(offers) }
        }
        var rgba: [UInt8]?, colourZoom: Int?
        do throws(TileStoreError) {
            (rgba, colourZoom) = try colour(at: query, store: store, archive: a) ?? (nil, nil)
        } catch {
            switch error.code {
            case .locked, .partialTile:
                return locked(error.offers)
            case .undecodable:
                // An archive of JPEG or vector tiles: name the file and the codec, as before the store.
                throw InputFileError(path: path, detail: error.detail)
            default:
                throw error
            }
        }
        var sample: (Double, Int)?
        if summary.hasElevation, let range = summary.zoomRange {
            // The stored zooms nearest the query's first: it and coarser ones (a zoom may lack a
            // grid), then finer ones (an archive built with `--elevation max-zoom` keeps grids at
            // its max zoom only). Outside the archive's zooms the query's own tile comes first,
            // which the store makes from the nearest zoom with data (asking the access policy
            // about the tile asked for) — except for class codes, which are never blended: only
            // stored grids, the nearest sample.
            let nearest = summary.valueKind == .class
            let start = min(max(query.zoom, range.lowerBound), range.upperBound)
            var zooms =
                Array(stride(from: start, through: range.lowerBound, by: -1))
                + Array(stride(from: start + 1, through: range.upperBound, by: 1))
            if !nearest && !range.contains(query.zoom) { zooms.insert(query.zoom, at: 0) }
            sample = try elevationAt(
                lon: query.lon, lat: query.lat, store: store, archive: a, zooms: zooms, nearest: nearest)
        }
        // Only heights and depths are metres; a percentage or class code is a value, not an elevation.
        let metres = summary.valueKind?.isMetres ?? false ? sample : nil
        return PointAnswer(
            archive: path, region: summary.name, query: query, present: rgba != nil, rgba: rgba,
            elevationMetres: metres?.0, elevationZoom: metres?.1,
            value: sample?.0, valueKind: summary.valueKind, valueZoom: sample?.1,
            dataZoom: colourZoom ?? sample?.1)
    }

    /// The RGBA at the query's pixel and the zoom it came from (the query zoom, or the
    /// nearest zoom with data outside the archive's zooms); nil when the archive has no tile
    /// there.
    static func colour(at query: TileQuery, store: TileStore, archive a: Int) throws(TileStoreError) -> ([UInt8], Int)?
    {
        guard let pixels = try store.typedPixels(query.tile, archive: a) else { return nil }
        let size = store.archives[a].tileSize
        let (px, py) = pixel(of: query, side: size)
        let i = (py * size + px) * 4
        return ([pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3]], pixels.sourceZoom)
    }

    /// The query's pixel is on the 256-pixel web-mercator grid; scaled to a tile of `side`.
    static func pixel(of query: TileQuery, side: Int) -> (x: Int, y: Int) {
        (query.pixel.x * side / WebMercator.tileSize, query.pixel.y * side / WebMercator.tileSize)
    }

    /// Tile `id`'s grid, nil when there is none or this account may not see that tile: another
    /// zoom's tile (a finer one, typically) answers nothing rather than failing the query.
    static func visibleElevation(
        _ id: TileID, store: TileStore, archive: Int
    ) throws(TileStoreError) -> ZoomedElevation? {
        do {
            return try store.typedZoomedElevation(id, archive: archive)
        } catch {
            if error.code == .locked { return nil }
            throw error
        }
    }

    /// Bilinear elevation between the four samples around the point (samples sit at pixel
    /// centres; the tile's edge samples are held beyond its edge), NaN neighbours dropped and
    /// the rest renormalised. The first zoom in `zooms` with a tile and a valid value wins;
    /// the answer's zoom is the one its grid came from. `nearest` (class codes): the sample of
    /// the pixel the point falls in, exactly, never blended.
    static func elevationAt(
        lon: Double, lat: Double, store: TileStore, archive: Int,
        zooms: some Sequence<Int>, nearest: Bool = false
    ) throws -> (Double, Int)? {
        for z in zooms {
            guard let hit = WebMercator.tile(lon: lon, lat: lat, zoom: z),
                let zoomed = try visibleElevation(hit.tile, store: store, archive: archive)
            else { continue }
            let tile = zoomed.grid
            let f = WebMercator.fractionalTile(lon: lon, lat: lat, zoom: z)
            if nearest {
                let px = (f.x - Double(hit.tile.x)) * Double(tile.width),
                    py = (f.y - Double(hit.tile.y)) * Double(tile.height)
                let cx = px.isFinite ? min(max(px, 0), Double(tile.width - 1)) : 0
                let cy = py.isFinite ? min(max(py, 0), Double(tile.height - 1)) : 0
                let x = Int(cx), y = Int(cy)
                let v = Double(tile[x, y])
                if v.isFinite { return (v, z) }
                continue
            }
            let fx = (f.x - Double(hit.tile.x)) * Double(tile.width) - 0.5
            let fy = (f.y - Double(hit.tile.y)) * Double(tile.height) - 0.5
            let cx = min(max(fx, 0), Double(tile.width - 1)), cy = min(max(fy, 0), Double(tile.height - 1))
            let x0 = Int(cx), y0 = Int(cy)
            let x1 = min(x0 + 1, tile.width - 1), y1 = min(y0 + 1, tile.height - 1)
            let tx = cx - Double(x0), ty = cy - Double(y0)
            var sum = 0.0, weight = 0.0
            for (x, y, w) in [
                (x0, y0, (1 - tx) * (1 - ty)), (x1, y0, tx * (1 - ty)), (x0, y1, (1 - tx) * ty), (x1, y1, tx * ty),
            ] {
                let v = Double(tile[x, y])
                if v.isFinite && w > 0 { sum += v * w; weight += w }
            }
            if weight > 1e-9 { return (sum / weight, zoomed.sourceZoom) }
        }
        return nil
    }
}
