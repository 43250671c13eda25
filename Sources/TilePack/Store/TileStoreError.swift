import TilePackCore

/// Why the tile store could not serve a tile. `description` is one line naming the archive
/// (or the budget) and the problem.
public struct TileStoreError: TilePackError, Equatable {
    public enum Problem: Sendable, Equatable {
        /// Leased tiles and loads in flight fill the budget: nothing can be evicted to make room.
        case budgetExhausted
        /// The archive could not be read (damaged, vanished) — see `detail`.
        case archive
        /// A stored tile or elevation grid does not decode.
        case damagedTile
        /// The archive's tiles use a codec tilepack cannot decode (pixels asked of JPEG tiles).
        case undecodable
        /// The access policy denies the tile; `detail` names the products that unlock it.
        case locked
        /// The access policy owns only part of the tile, and its raw (GPU) payload was asked
        /// for: a payload cannot be masked without re-encoding it. Its pixels can be read
        /// (masked). Category `locked`.
        case partialTile
        /// Options that cannot work (a budget smaller than one tile, a bad warning schedule).
        case invalidOptions
    }

    public let problem: Problem
    /// The archive (path) or "tile store" for budget problems.
    public let subject: String
    public let detail: String
    /// The products that would unlock the tile, for ``Problem/locked`` and ``Problem/partialTile``.
    public let offers: [ProductOffer]

    public init(_ problem: Problem, subject: String, detail: String, offers: [ProductOffer] = []) {
        self.problem = problem
        self.subject = subject
        self.detail = detail
        self.offers = offers
    }

    public var category: TilePackErrorCategory {
        switch problem {
        case .budgetExhausted: .budgetExhausted
        case .archive, .damagedTile: .invalidInput
        case .undecodable: .unsupported
        case .locked, .partialTile: .locked
        case .invalidOptions: .invalidArgument
        }
    }

    public var description: String { "\(subject): \(detail)" }
}
