import TilePackCore
import TilePackArchive
import TilePackStore

/// Archives opened for drawing: one ``TileStore`` over them (asking `accessPolicy` for every
/// tile) and the attribution their metadata carries. What `render` and `serve` open.
public struct MapLayers: Sendable {
    public let store: TileStore
    /// The archives' distinct `attribution` values, joined with "; " (an archive without one
    /// is credited by its region name).
    public let attribution: String
    /// Each archive's own credit, in store order: its attribution, else its region name (what
    /// one region's TileJSON carries).
    public let credits: [String]

    /// Layers over `store`, its archives in drawing order (the first at the bottom): a
    /// library's store (`RegionLibrary.openTileStore`) or one ``TileStore`` over archives.
    /// `credits[i]` is archive i's attribution (empty: its region name).
    /// - Cost: O(archives) to join the credits.
    public init(store: TileStore, credits: [String]) {
        var attributions: [String] = [], each: [String] = []
        for (i, archive) in store.archives.enumerated() {
            var credit = i < credits.count ? String(credits[i].trimmingWhitespace()) : ""
            if credit.isEmpty { credit = String(archive.name.trimmingWhitespace()) }
            each.append(credit)
            if !credit.isEmpty, !attributions.contains(credit) { attributions.append(credit) }
        }
        self.store = store
        self.credits = each
        attribution = attributions.joined(separator: "; ")
    }

    /// The picture of `frame`, every archive composited in store order.
    public func render(_ frame: MapFrame) throws(TileStoreError) -> MapPicture {
        try MapRenderer.render(frame, store: store, attribution: attribution)
    }
}

extension TileID {
    /// Parses `Z/X/Y` (XYZ rows), checking every number against the zoom before use.
    public init(path text: some StringProtocol) throws(RenderInputError) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.count <= 10 && $0.allSatisfy(\.isASCII) }),
            let z = Int(parts[0]), let x = Int(parts[1]), let y = Int(parts[2])
        else {
            throw RenderInputError("tile '\(text.prefix(64))': expected Z/X/Y, e.g. 12/2118/1461")
        }
        guard let id = TileID(z: z, x: x, y: y) else {
            throw RenderInputError(
                "tile \(z)/\(x)/\(y) does not exist (zoom 0…\(TileID.maxZoom), x and y 0…2^zoom − 1)")
        }
        self = id
    }
}
