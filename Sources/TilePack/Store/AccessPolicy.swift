import TilePackCore

/// The one question the tile store asks before it serves a tile: may this tile be shown?
///
/// Store and Regions meet only here: the store knows nothing of catalogs or purchases, and
/// the region store decides nothing about how tiles are kept. An implementation must be
/// cheap on repeated tiles (the store asks on every request) and safe from any thread.
public protocol AccessPolicy: Sendable {
    /// Allowed, or denied with the products that would unlock the tile.
    func access(_ tile: TileID) -> TileAccess
}

/// The answer of an ``AccessPolicy``.
public enum TileAccess: Sendable, Equatable {
    case allowed
    /// Denied; `unlockedBy` lists the products that would allow the tile, cheapest first
    /// (empty when nothing on sale covers it).
    case denied(unlockedBy: [ProductOffer])

    public var isAllowed: Bool { self == .allowed }
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
