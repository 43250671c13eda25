import TilePackCore

/// Why the tile store could not serve a tile: `subject` is the archive (or "tile store" for
/// budget problems), `detail` the problem, `cause` the archive or decoder error underneath.
/// Locked tiles also carry the ``offers`` that would unlock them.
public struct TileStoreError: TilePackError, Equatable {
    /// The kind of failure: extensible (a new code is not a breaking change), compared with `==`.
    public struct Code: TilePackErrorCode {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }
        /// Leased tiles and loads in flight fill the budget: nothing can be evicted to make room.
        public static let budgetExhausted = Code("budgetExhausted")
        /// The archive could not be read (damaged, vanished) — see `detail`.
        public static let archive = Code("archive")
        /// A stored tile or elevation grid does not decode.
        public static let damagedTile = Code("damagedTile")
        /// The archive's tiles use a codec tilepack cannot decode (pixels asked of JPEG tiles).
        public static let undecodable = Code("undecodable")
        /// The access policy denies the tile; `detail` names the products that unlock it.
        public static let locked = Code("locked")
        /// The access policy owns only part of the tile, and its raw (GPU) payload was asked
        /// for: a payload cannot be masked without re-encoding it. Its pixels can be read
        /// (masked). Category `locked`.
        public static let partialTile = Code("partialTile")
        /// Options that cannot work (a budget smaller than one tile, a bad warning schedule).
        public static let invalidOptions = Code("invalidOptions")
    }

    public let code: Code
    /// The archive (path) or "tile store" for budget problems.
    public let subject: String
    public let detail: String
    /// The error underneath, if any; not compared by `==`.
    public let cause: (any Error)?
    /// The products that would unlock the tile, for ``Code/locked`` and ``Code/partialTile``.
    public let offers: [ProductOffer]

    public init(
        _ code: Code, subject: String, detail: String, offers: [ProductOffer] = [], cause: (any Error)? = nil
    ) {
        self.code = code
        self.subject = subject
        self.detail = detail
        self.offers = offers
        self.cause = cause
    }

    public var category: TilePackErrorCategory {
        switch code {
        case .budgetExhausted: .budgetExhausted
        case .undecodable: .unsupported
        case .locked, .partialTile: .locked
        case .invalidOptions: .invalidArgument
        default: .invalidInput
        }
    }
}
