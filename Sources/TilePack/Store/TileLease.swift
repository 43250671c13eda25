import TilePackCore

/// A pinned tile: its bytes stay valid and in the cache until the lease is dropped.
/// Non-copyable, so exactly one release happens, in `deinit`.
public struct TileLease: ~Copyable, @unchecked Sendable {
    private let store: TileStore
    private let slot: Int
    private let bytes: UnsafeRawBufferPointer
    /// The zoom of the tile asked for.
    public let zoom: Int
    /// The zoom the bytes came from: ``zoom`` for a stored tile, a coarser zoom for a tile
    /// made from an ancestor (overzoomed), a finer one for a tile made from descendants
    /// (underzoomed). ``TileStore/pixels(_:archive:)`` makes tiles (see ``Overzoom``);
    /// ``TileStore/overzoomedTile(_:archive:)`` leases an ancestor's payload as is.
    public let sourceZoom: Int

    init(store: TileStore, slot: Int, bytes: UnsafeRawBufferPointer, zoom: Int, sourceZoom: Int) {
        self.store = store
        self.slot = slot
        self.bytes = bytes
        self.zoom = zoom
        self.sourceZoom = sourceZoom
    }

    /// Made from a coarser zoom (cropped and scaled up).
    public var isOverzoomed: Bool { sourceZoom < zoom }
    /// Made from a finer zoom (scaled down).
    public var isUnderzoomed: Bool { sourceZoom > zoom }

    deinit { store.release(slot) }

    /// Byte count.
    public var count: Int { bytes.count }

    /// Calls `body` with the bytes (valid only during the call). - Cost: O(1).
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(bytes)
    }

    /// A copy of the bytes. - Cost: one allocation and copy.
    public var array: [UInt8] { Array(bytes) }

    /// Byte `i`. - Cost: O(1), bounds-checked.
    public subscript(i: Int) -> UInt8 {
        precondition(i >= 0 && i < bytes.count, "lease index out of range")
        return bytes[i]
    }
}

/// A stored payload (GPU words or PNG bytes) standing in for a finer tile, and the part of
/// it to draw (``TileStore/overzoomedTile(_:archive:)``). The lease pins the bytes.
public struct OverzoomedPayload: ~Copyable {
    /// The payload of the tile at ``sourceZoom``; its ``TileLease/zoom`` is the requested zoom.
    public let lease: TileLease
    /// The requested tile's square inside the payload's tile.
    public let crop: TileCrop

    public var sourceZoom: Int { lease.sourceZoom }
    /// Drawn from a coarser zoom (crop smaller than the whole tile).
    public var isOverzoomed: Bool { lease.isOverzoomed }
}

/// A square part of a tile, as fractions of its side from its top-left corner (texture
/// coordinates): `x`, `y` of the top-left corner, `size` the side.
public struct TileCrop: Sendable, Equatable {
    public let x: Double
    public let y: Double
    public let size: Double

    /// The whole tile.
    public static let full = TileCrop(x: 0, y: 0, size: 1)

    public init(x: Double, y: Double, size: Double) { self.x = x; self.y = y; self.size = size }

    /// The part of `ancestor` that tile `id` covers.
    /// - Precondition: `ancestor` is `id` or an ancestor of it.
    public init(of id: TileID, in ancestor: TileID) {
        precondition(
            ancestor.z <= id.z && id.x >> (id.z - ancestor.z) == ancestor.x
                && id.y >> (id.z - ancestor.z) == ancestor.y,
            "a crop is of a tile inside its ancestor")
        let k = id.z - ancestor.z, scale = Double(1 << k)
        self.init(
            x: Double(id.x - (ancestor.x << k)) / scale, y: Double(id.y - (ancestor.y << k)) / scale, size: 1 / scale)
    }

    /// The crop in pixels of a tile `side` pixels wide: origin and side (fractional when the
    /// tile is finer than one source pixel).
    public func pixels(side: Int) -> (x: Double, y: Double, size: Double) {
        (x * Double(side), y * Double(side), size * Double(side))
    }
}
