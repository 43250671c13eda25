import TilePackCore
import TilePackArchive
import TilePackStore

/// The part of the web-mercator plane a render covers: a zoom and a window of global pixels
/// (256 per tile at that zoom, the origin at the north-west corner of the world).
public struct MapFrame: Sendable, Equatable {
    /// The largest picture side, in pixels (a 4096² RGBA picture is 64 MiB).
    public static let maxSide = 4096

    public let zoom: Int
    /// Global pixel of the picture's top-left corner at `zoom`.
    public let originX: Int
    public let originY: Int
    public let width: Int
    public let height: Int

    /// The `width` × `height` window centred on the point.
    /// - Throws: ``RenderInputError`` for a latitude beyond web mercator, a zoom outside 0…24
    ///   or a size outside 1…``maxSide``.
    public init(lat: Double, lon: Double, zoom: Int, width: Int, height: Int) throws(RenderInputError) {
        guard lat.isFinite, lon.isFinite, abs(lat) <= WebMercator.maxLatitude, abs(lon) <= 180 else {
            throw RenderInputError("latitude \(lat), longitude \(lon) is not on the web-mercator map (|lat| ≤ 85.0511, |lon| ≤ 180)")
        }
        try Self.check(zoom: zoom, width: width, height: height)
        let f = WebMercator.fractionalTile(lon: lon, lat: lat, zoom: zoom)
        let size = Double(WebMercator.tileSize)
        self.zoom = zoom
        originX = Int((f.x * size).rounded(.down)) - width / 2
        originY = Int((f.y * size).rounded(.down)) - height / 2
        self.width = width
        self.height = height
    }

    /// Exactly one tile, 256 × 256.
    public init(tile: TileID) {
        zoom = tile.z
        originX = tile.x * WebMercator.tileSize
        originY = tile.y * WebMercator.tileSize
        width = WebMercator.tileSize
        height = WebMercator.tileSize
    }

    static func check(zoom: Int, width: Int, height: Int) throws(RenderInputError) {
        guard (0...TileID.maxZoom).contains(zoom) else { throw RenderInputError("zoom \(zoom) is outside 0…\(TileID.maxZoom)") }
        guard (1...maxSide).contains(width), (1...maxSide).contains(height) else {
            throw RenderInputError("size \(width)x\(height) is outside 1…\(maxSide) pixels a side")
        }
    }

    /// The tiles the window touches, rows top first (columns wrap around the antimeridian;
    /// rows beyond the poles are left out).
    public var tiles: [(id: TileID, left: Int, top: Int)] {
        let s = WebMercator.tileSize, n = 1 << zoom
        let tx0 = Self.floorDiv(originX, s), tx1 = Self.floorDiv(originX + width - 1, s)
        let ty0 = max(0, Self.floorDiv(originY, s)), ty1 = min(n - 1, Self.floorDiv(originY + height - 1, s))
        guard ty0 <= ty1 else { return [] }
        var out: [(TileID, Int, Int)] = []
        for ty in ty0...ty1 {
            for tx in tx0...tx1 {
                let wrapped = ((tx % n) + n) % n
                if let id = TileID(z: zoom, x: wrapped, y: ty) { out.append((id, tx * s - originX, ty * s - originY)) }
            }
        }
        return out
    }

    static func floorDiv(_ a: Int, _ b: Int) -> Int { a >= 0 ? a / b : -((-a + b - 1) / b) }
}

/// A bad render request (a point off the map, a zoom or size out of range): a usage error.
public struct RenderInputError: TilePackError, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
    public var category: TilePackErrorCategory { .invalidArgument }
}

/// What ``MapRenderer`` drew.
public struct MapPicture: Sendable {
    public var image: RGBAImage
    /// Tiles of which at least one archive drew pixels.
    public var tilesDrawn = 0
    /// Tiles the access policy refused (drawn dimmed, with a price).
    public var tilesLocked = 0
    /// The cheapest product named on each locked tile, by product id.
    public var offers: [String: ProductOffer] = [:]
}

/// Draws a map picture from a ``TileStore``: every archive's decoded tiles composited in the
/// order given (the first at the bottom), tiles the access policy refuses drawn dimmed and
/// hatched with the price of the cheapest product that unlocks them, and an attribution in
/// the bottom-right corner. Nothing of a locked tile's pixels is read.
///
/// Cost: one `pixels` call per visible tile and archive (a hit is O(1); a miss reads and
/// decodes one tile), and one pass over the picture per tile layer.
public enum MapRenderer {
    /// Behind the map where no archive has a tile.
    public static let background: [UInt8] = [236, 234, 228, 255]
    static let lockedShade: [UInt8] = [40, 44, 56, 150]
    static let lockedHatch: [UInt8] = [255, 255, 255, 60]

    /// Renders `frame` from `store`'s archives in `order` (default: store order).
    /// - Throws: ``TileStoreError`` other than `locked` (budget, damaged archive or tile,
    ///   undecodable codec).
    public static func render(_ frame: MapFrame, store: TileStore, order: [Int]? = nil,
                              attribution: String = "") throws(TileStoreError) -> MapPicture {
        var picture = MapPicture(image: RGBAImage(width: frame.width, height: frame.height, colour: background))
        let layers = (order ?? Array(store.archives.indices)).filter { store.archives.indices.contains($0) }
        for (id, left, top) in frame.tiles {
            let candidates = layers.filter { store.archives[$0].mayContain(id) }
            var drew = false
            for a in candidates {
                do throws(TileStoreError) {
                    guard let lease = try store.pixels(id, archive: a) else { continue }
                    let side = store.archives[a].tileSize
                    guard side > 0, lease.count >= side * side * 4 else { continue }
                    lease.withUnsafeBytes { raw in draw(raw, side: side, into: &picture.image, left: left, top: top) }
                    drew = true
                } catch where error.problem == .locked {
                    // The policy answers per tile, whatever the archive: draw the lock once.
                    drawLocked(offer: error.offers.first, into: &picture.image, left: left, top: top)
                    picture.tilesLocked += 1
                    if let offer = error.offers.first { picture.offers[offer.id] = offer }
                    break
                }
            }
            if drew { picture.tilesDrawn += 1 }
        }
        if !attribution.isEmpty { drawAttribution(attribution, into: &picture.image) }
        return picture
    }

    /// One decoded tile (side × side RGBA) over the 256 × 256 square at (left, top),
    /// nearest-neighbour scaled when the archive's tiles are not 256 pixels.
    static func draw(_ src: UnsafeRawBufferPointer, side: Int, into image: inout RGBAImage, left: Int, top: Int) {
        let s = WebMercator.tileSize
        let x0 = max(0, left), y0 = max(0, top), x1 = min(image.width, left + s), y1 = min(image.height, top + s)
        guard x0 < x1, y0 < y1 else { return }
        for y in y0..<y1 {
            let sy = (y - top) * side / s
            for x in x0..<x1 {
                let sx = (x - left) * side / s
                let i = (sy * side + sx) * 4
                image.blend(x: x, y: y, r: src[i], g: src[i + 1], b: src[i + 2], a: src[i + 3])
            }
        }
    }

    /// Dims and hatches the tile's square and writes the price of `offer` (or "LOCKED") in
    /// the middle of its visible part.
    static func drawLocked(offer: ProductOffer?, into image: inout RGBAImage, left: Int, top: Int) {
        let s = WebMercator.tileSize
        image.fill(x: left, y: top, width: s, height: s, colour: lockedShade)
        image.hatch(x: left, y: top, width: s, height: s, step: 16, colour: lockedHatch)
        let text = offer.map { "\($0.price) \($0.currency)" } ?? "LOCKED"
        let scale = 2
        let w = BitmapFont.width(of: text, scale: scale) + 8, h = BitmapFont.glyphHeight * scale + 8
        let vx0 = max(0, left), vy0 = max(0, top), vx1 = min(image.width, left + s), vy1 = min(image.height, top + s)
        guard vx1 - vx0 >= w, vy1 - vy0 >= h else { return }
        image.label(text, x: (vx0 + vx1 - w) / 2, y: (vy0 + vy1 - h) / 2, scale: scale, padding: 4,
                    foreground: [255, 255, 255, 255], background: [20, 22, 30, 200])
    }

    /// The attribution on a light box in the bottom-right corner.
    static func drawAttribution(_ text: String, into image: inout RGBAImage) {
        let maxChars = max(1, (image.width - 8) / (BitmapFont.glyphWidth + BitmapFont.spacing))
        let shown = text.count > maxChars ? String(text.prefix(max(1, maxChars - 3))) + "..." : text
        let w = BitmapFont.width(of: shown) + 6, h = BitmapFont.glyphHeight + 6
        image.label(shown, x: image.width - w, y: image.height - h, scale: 1, padding: 3,
                    foreground: [30, 30, 30, 255], background: [255, 255, 255, 190])
    }
}
