import TilePackCore

/// The one question the tile store asks before it serves a tile: may this tile of this
/// archive be shown, and which of its pixels?
///
/// Store and Regions meet only here: the store knows nothing of catalogs or purchases, and
/// the region store decides nothing about how tiles are kept. An implementation must be
/// cheap on repeated tiles (the store asks on every request) and safe from any thread.
///
/// The store asks ``access(_:archive:tileSize:)`` with each archive's file name and tile
/// size. A policy that does not care about archives or pixels implements only
/// ``access(_:)`` (as ``OpenAccess`` does): the per-archive questions then get its answer.
public protocol AccessPolicy: Sendable {
    /// The whole tile in any archive: allowed, or denied with the products that would unlock
    /// it. What a policy blind to archives and pixels answers every question with.
    func access(_ tile: TileID) -> TileAccess

    /// The tile as archive `archive` (a file name such as `montblanc-color.mbtiles`) holds
    /// it, `tileSize` pixels a side: allowed, partial (with the owned pixels, a mask of
    /// `tileSize` a side) or denied. Defaults to ``access(_:archive:)``.
    func access(_ tile: TileID, archive: String, tileSize: Int) -> TileAccess

    /// The tile of `archive` at 256 pixels a side (the web-mercator tile). Defaults to
    /// ``access(_:)``.
    func access(_ tile: TileID, archive: String) -> TileAccess

    /// The products that would unlock one pixel (column, row from the top left) of the tile
    /// as `archive` holds it, cheapest first: what a locked point names (`query`). Defaults to
    /// the tile's offers; a policy that sells areas narrows them to the products holding the
    /// pixel. Advice only: it grants nothing.
    func offers(for tile: TileID, archive: String, tileSize: Int, pixel: (x: Int, y: Int)) -> [ProductOffer]
}

extension AccessPolicy {
    public func offers(for tile: TileID, archive: String, tileSize: Int, pixel: (x: Int, y: Int)) -> [ProductOffer] {
        access(tile, archive: archive, tileSize: tileSize).offers
    }

    public func access(_ tile: TileID, archive: String, tileSize: Int) -> TileAccess {
        access(tile, archive: archive)
    }

    public func access(_ tile: TileID, archive: String) -> TileAccess { access(tile) }
}

/// The answer of an ``AccessPolicy``.
public enum TileAccess: Sendable, Equatable {
    case allowed
    /// Some pixels owned, some not: `mask` says which (its side is the archive's tile size).
    /// Decoded reads show only the owned pixels; the raw payload is refused. `unlockedBy` as
    /// for ``denied(unlockedBy:)``.
    case partial(TileMask, unlockedBy: [ProductOffer])
    /// Denied; `unlockedBy` lists the products that would allow the tile, cheapest first
    /// (empty when nothing on sale covers it).
    case denied(unlockedBy: [ProductOffer])

    public var isAllowed: Bool {
        if case .allowed = self { return true }
        return false
    }

    /// The owned pixels of a partial tile; nil when allowed or denied.
    public var mask: TileMask? {
        if case .partial(let mask, _) = self { return mask }
        return nil
    }

    /// The products a partial or denied tile names; empty when allowed.
    public var offers: [ProductOffer] {
        switch self {
        case .allowed: []
        case .partial(_, let offers), .denied(let offers): offers
        }
    }
}

/// A product that would unlock a tile, as a denial names it: enough to show "buy X (price)".
public struct ProductOffer: Sendable, Equatable, Codable {
    public let id: String
    public let title: String
    /// The price as written in the catalog, a decimal string ("4.99"), never a float.
    public let price: String
    /// ISO 4217 currency code ("EUR").
    public let currency: String

    public init(id: String, title: String, price: String, currency: String) {
        self.id = id; self.title = title; self.price = price; self.currency = currency
    }
}

/// Everything open: libraries without a catalog (every archive is free to show).
public struct OpenAccess: AccessPolicy {
    public init() {}
    public func access(_ tile: TileID) -> TileAccess { .allowed }
}
