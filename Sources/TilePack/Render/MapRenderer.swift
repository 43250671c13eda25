import TilePackCore
import TilePackCodec
import TilePackArchive
import TilePackStore

/// A render's window: a zoom and a picture of at most ``maxSide`` pixels a side around a point
/// (``MapFrame`` itself lives in TilePackCore, shared with the build).
extension MapFrame {
    /// The largest picture side, in pixels (a 4096² RGBA picture is 64 MiB).
    public static let maxSide = 4096

    /// The `width` × `height` window centred on the point.
    /// - Throws: ``RenderInputError`` for a latitude beyond web mercator, a zoom outside 0…24
    ///   or a size outside 1…``maxSide``.
    public init(lat: Double, lon: Double, zoom: Int, width: Int, height: Int) throws(RenderInputError) {
        guard lat.isFinite, lon.isFinite, abs(lat) <= WebMercator.maxLatitude, abs(lon) <= 180 else {
            throw RenderInputError(
                "latitude \(lat), longitude \(lon) is not on the web-mercator map (|lat| ≤ 85.0511, |lon| ≤ 180)")
        }
        try Self.check(zoom: zoom, width: width, height: height)
        let f = WebMercator.fractionalTile(lon: lon, lat: lat, zoom: zoom)
        let size = Double(WebMercator.tileSize)
        self.init(
            zoom: zoom, originX: Int((f.x * size).rounded(.down)) - width / 2,
            originY: Int((f.y * size).rounded(.down)) - height / 2, width: width, height: height)
    }

    static func check(zoom: Int, width: Int, height: Int) throws(RenderInputError) {
        guard (0...TileID.maxZoom).contains(zoom) else {
            throw RenderInputError("zoom \(zoom) is outside 0…\(TileID.maxZoom)")
        }
        guard (1...maxSide).contains(width), (1...maxSide).contains(height) else {
            throw RenderInputError("size \(width)x\(height) is outside 1…\(maxSide) pixels a side")
        }
    }
}

/// A bad render request (a point off the map, a zoom or size out of range): a usage error.
/// `subject` is the value when split out, or empty when the message names it itself.
public struct RenderInputError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// A point, zoom, size or tile that is malformed or out of range.
        public static let invalidValue = Code("invalidValue")
        /// Nothing to draw: no archive in the library, or none covering the frame (`notFound`:
        /// a background-only picture would pass for a map).
        public static let nothingToDraw = Code("nothingToDraw")
    }

    public let code: Code
    public let subject: String
    public let detail: String
    public var cause: (any Error)? { nil }
    public var category: TilePackErrorCategory { code == .nothingToDraw ? .notFound : .invalidArgument }

    public init(_ code: Code = .invalidValue, subject: String, detail: String) {
        self.code = code
        self.subject = subject
        self.detail = detail
    }

    /// A message that names its value itself: no separate subject.
    public init(_ message: String) { self.init(subject: "", detail: message) }
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
    /// The zooms drawn tiles were made from other than the frame's (``Overzoom``: coarser when
    /// scaled up beyond an archive's max zoom, finer when scaled down below its min), ascending;
    /// empty when every drawn tile was stored at the frame's zoom.
    public var sourceZooms: [Int] = []
}

/// Draws a map picture from a ``TileStore``: every archive's decoded tiles composited in the
/// order given (the first at the bottom), tiles the access policy refuses drawn dimmed and
/// hatched with the price of the cheapest product that unlocks them, and an attribution in
/// the bottom-right corner (when anything was drawn). Nothing of a locked tile's pixels is read.
///
/// Locking is per pixel: walking the archives bottom to top, a pixel is locked at the first
/// archive that does not own it (a denied tile: every pixel; a partial tile: the pixels
/// outside its mask). A locked pixel gets the lock drawn over what lies below it, exactly as
/// a wholly locked tile draws it there, and nothing above it is drawn. A tile with any
/// locked pixel counts in ``MapPicture/tilesLocked``.
///
/// Beyond an archive's zooms the store's made tiles are drawn (``TileStore/pixels(_:archive:)``:
/// up to ``Overzoom/maxZoom`` from the nearest stored ancestor, a few zooms below the min zoom
/// from the descendants), so a map never goes blank one zoom past the data. Access is still
/// asked for the frame's own tile: a locked tile is drawn locked, never as its free ancestor.
///
/// Cost: one `pixels` call per visible tile and archive (a hit is O(1); a miss reads and
/// decodes one tile, or makes it from another zoom), and one pass over the picture per tile
/// layer; a partial tile adds a scratch copy of its square.
public enum MapRenderer {
    /// Behind the map where no archive has a tile.
    public static let background: [UInt8] = [236, 234, 228, 255]
    static let lockedShade: [UInt8] = [40, 44, 56, 150]
    static let lockedHatch: [UInt8] = [255, 255, 255, 60]

    /// Renders `frame` from `store`'s archives in `order` (default: store order).
    /// - Throws: ``TileStoreError`` other than `locked` (budget, damaged archive or tile,
    ///   undecodable codec).
    public static func render(
        _ frame: MapFrame, store: TileStore, order: [Int]? = nil,
        attribution: String = ""
    ) throws(TileStoreError) -> MapPicture {
        var picture = MapPicture(image: RGBAImage(width: frame.width, height: frame.height, colour: background))
        let layers = (order ?? Array(store.archives.indices)).filter { store.archives.indices.contains($0) }
        var sourceZooms = Set<Int>()
        for (id, left, top) in frame.tiles {
            let candidates = layers.filter { store.reaches(id, archive: $0) }
            var drew = false
            var locks = TileLocks(left: left, top: top, image: picture.image)
            for a in candidates {
                let side = store.archives[a].tileSize
                var access = store.access(id, archive: a)
                if case .partial(let mask, let offers) = access {
                    // The mask at the tile's side, as the store applies it (a tile size no mask
                    // can have is locked whole).
                    access =
                        (1...TileMask.maxSide).contains(side)
                        ? .partial(mask.scaled(toSide: side), unlockedBy: offers)
                        : .denied(unlockedBy: offers)
                }
                if case .denied(let offers) = access {
                    locks.lockAll(offer: offers.first, in: &picture)
                    break
                }
                do throws(TileStoreError) {
                    if let lease = try store.typedPixels(id, archive: a), side > 0, lease.count >= side * side * 4 {
                        lease.withUnsafeBytes { raw in
                            draw(raw, side: side, into: &picture.image, left: left, top: top, skip: locks.locked)
                        }
                        if lease.sourceZoom != id.z { sourceZooms.insert(lease.sourceZoom) }
                        drew = true
                    }
                } catch  where error.code == .locked {
                    // Denied between the two questions (a refund): lock what is left.
                    locks.lockAll(offer: error.offers.first, in: &picture)
                    break
                }
                if case .partial(let mask, let offers) = access {
                    locks.lock(outside: mask, offer: offers.first, in: &picture)
                }
            }
            if drew { picture.tilesDrawn += 1 }
            if locks.any {
                picture.tilesLocked += 1
                if let offer = locks.offer { picture.offers[offer.id] = offer }
            }
        }
        picture.sourceZooms = sourceZooms.sorted()
        // Credit only what is shown: a picture of nothing stays background.
        if !attribution.isEmpty, picture.tilesDrawn > 0 || picture.tilesLocked > 0 {
            drawAttribution(attribution, into: &picture.image)
        }
        return picture
    }

    /// Which pixels of one tile's 256 × 256 square are locked so far, and the offer the first
    /// lock named.
    struct TileLocks {
        let left: Int, top: Int
        /// The square's visible part in the picture.
        let x0: Int, y0: Int, x1: Int, y1: Int
        /// Per visible pixel, row-major over the visible part; nil while none is locked.
        private(set) var locked: [Bool]?
        private(set) var any = false
        private(set) var offer: ProductOffer?
        private var recorded = false

        init(left: Int, top: Int, image: RGBAImage) {
            self.left = left; self.top = top
            let s = WebMercator.tileSize
            x0 = max(0, left); y0 = max(0, top); x1 = min(image.width, left + s); y1 = min(image.height, top + s)
        }

        private mutating func note(_ offer: ProductOffer?) {
            if !recorded { self.offer = offer; recorded = true }
            any = true
        }

        /// Locks every pixel not yet locked.
        mutating func lockAll(offer: ProductOffer?, in picture: inout MapPicture) {
            note(offer)
            guard x0 < x1, y0 < y1 else { return }
            if locked == nil {
                drawLocked(offer: offer, into: &picture.image, left: left, top: top)
                locked = [Bool](repeating: true, count: (x1 - x0) * (y1 - y0))
                return
            }
            lock(where: { _, _ in true }, offer: offer, in: &picture)
        }

        /// Locks the pixels whose source pixel (nearest, as ``draw`` picks it) the mask does
        /// not own.
        mutating func lock(outside mask: TileMask, offer: ProductOffer?, in picture: inout MapPicture) {
            note(offer)
            let s = WebMercator.tileSize, side = mask.side, left = left, top = top
            lock(
                where: { x, y in !mask.isOwned(x: (x - left) * side / s, y: (y - top) * side / s) }, offer: offer,
                in: &picture)
        }

        /// Draws the lock on a scratch copy of the visible square (so the hatch and the label
        /// land exactly where a wholly locked tile has them) and copies back the pixels that
        /// `newly(x, y)` locks and were not locked before.
        private mutating func lock(where newly: (Int, Int) -> Bool, offer: ProductOffer?, in picture: inout MapPicture)
        {
            guard x0 < x1, y0 < y1 else { return }
            let w = x1 - x0, h = y1 - y0
            var scratch = RGBAImage(width: w, height: h, colour: [0, 0, 0, 0])
            for y in 0..<h {
                let from = ((y0 + y) * picture.image.width + x0) * 4
                scratch.pixels.replaceSubrange(
                    (y * w * 4)..<((y + 1) * w * 4), with: picture.image.pixels[from..<(from + w * 4)])
            }
            drawLocked(offer: offer, into: &scratch, left: left - x0, top: top - y0, anchorX: -x0, anchorY: -y0)
            var flags = locked ?? [Bool](repeating: false, count: w * h)
            for y in 0..<h {
                for x in 0..<w where !flags[y * w + x] && newly(x0 + x, y0 + y) {
                    flags[y * w + x] = true
                    let i = ((y0 + y) * picture.image.width + x0 + x) * 4, j = (y * w + x) * 4
                    for c in 0..<4 { picture.image.pixels[i + c] = scratch.pixels[j + c] }
                }
            }
            locked = flags
        }
    }

    /// One decoded tile (side × side RGBA) over the 256 × 256 square at (left, top),
    /// nearest-neighbour scaled when the archive's tiles are not 256 pixels. Pixels of the
    /// visible square that `skip` flags (row-major over the visible part) are left alone.
    static func draw(
        _ src: UnsafeRawBufferPointer, side: Int, into image: inout RGBAImage, left: Int, top: Int,
        skip: [Bool]? = nil
    ) {
        let s = WebMercator.tileSize
        let x0 = max(0, left), y0 = max(0, top), x1 = min(image.width, left + s), y1 = min(image.height, top + s)
        guard x0 < x1, y0 < y1 else { return }
        let w = x1 - x0
        for y in y0..<y1 {
            let sy = (y - top) * side / s
            for x in x0..<x1 {
                if let skip, skip[(y - y0) * w + x - x0] { continue }
                let sx = (x - left) * side / s
                let i = (sy * side + sx) * 4
                image.blend(x: x, y: y, r: src[i], g: src[i + 1], b: src[i + 2], a: src[i + 3])
            }
        }
    }

    /// Dims and hatches the tile's square and writes the price of `offer` (or "LOCKED") in
    /// the middle of its visible part.
    /// `anchorX`/`anchorY`: the picture's origin in `image`'s coordinates, so that hatching
    /// drawn on a scratch copy of part of the picture lines up with the picture's.
    static func drawLocked(
        offer: ProductOffer?, into image: inout RGBAImage, left: Int, top: Int,
        anchorX: Int = 0, anchorY: Int = 0
    ) {
        let s = WebMercator.tileSize
        image.fill(x: left, y: top, width: s, height: s, colour: lockedShade)
        image.hatch(
            x: left, y: top, width: s, height: s, step: 16, colour: lockedHatch, anchorX: anchorX, anchorY: anchorY)
        let text = offer.map { "\($0.price) \($0.currency)" } ?? "LOCKED"
        let scale = 2
        let w = BitmapFont.width(of: text, scale: scale) + 8, h = BitmapFont.glyphHeight * scale + 8
        let vx0 = max(0, left), vy0 = max(0, top), vx1 = min(image.width, left + s), vy1 = min(image.height, top + s)
        guard vx1 - vx0 >= w, vy1 - vy0 >= h else { return }
        image.label(
            text, x: (vx0 + vx1 - w) / 2, y: (vy0 + vy1 - h) / 2, scale: scale, padding: 4,
            foreground: [255, 255, 255, 255], background: [20, 22, 30, 200])
    }

    /// The attribution on a light box in the bottom-right corner.
    static func drawAttribution(_ text: String, into image: inout RGBAImage) {
        let maxChars = max(1, (image.width - 8) / (BitmapFont.glyphWidth + BitmapFont.spacing))
        let shown = text.count > maxChars ? String(text.prefix(max(1, maxChars - 3))) + "..." : text
        let w = BitmapFont.width(of: shown) + 6, h = BitmapFont.glyphHeight + 6
        image.label(
            shown, x: image.width - w, y: image.height - h, scale: 1, padding: 3,
            foreground: [30, 30, 30, 255], background: [255, 255, 255, 190])
    }
}
