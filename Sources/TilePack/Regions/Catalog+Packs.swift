import TilePackCore
import TilePackArchive

extension Catalog {
    /// The products with an area that `id` entitles: a region itself, a bundle's regions, a
    /// subscription's (through its bundles). What a product's pack covers. Empty for an
    /// unknown id.
    ///
    /// Cost: O(size of the answer).
    public func areaProducts(of id: String) -> [Product] {
        guard let i = products.firstIndex(where: { $0.id == id }) else { return [] }
        return coveredAreas(i).map { products[$0] }
    }

    /// A product selling zooms that none of its archives holds.
    public struct UnheldZooms: Sendable, Equatable {
        public var productID: String
        public var zooms: [Int]
        public var archives: [String]
    }

    /// The products (with an area) whose zoom range holds zooms that none of their archives
    /// has, given each archive's zoom range (an archive missing from `archiveZooms` holds
    /// none). Empty when everything sold is held.
    ///
    /// Cost: O(products × zooms × archives).
    public func unheldZooms(archiveZooms: [String: ClosedRange<Int>]) -> [UnheldZooms] {
        products.compactMap { p in
            guard p.area != nil, let zooms = p.zoomRange else { return nil }
            let missing = zooms.filter { z in !p.archives.contains { archiveZooms[$0]?.contains(z) ?? false } }
            return missing.isEmpty ? nil : UnheldZooms(productID: p.id, zooms: missing, archives: p.archives)
        }
    }

    /// The one-line error for ``unheldZooms(archiveZooms:)``'s first answer, nil when there is
    /// none: the product, the zooms (as ranges) and the archives that lack them.
    public func unheldZoomsError(archiveZooms: [String: ClosedRange<Int>], path: String) -> CatalogError? {
        guard let first = unheldZooms(archiveZooms: archiveZooms).first,
            let i = products.firstIndex(where: { $0.id == first.productID })
        else { return nil }
        let held = first.archives.map { name in
            "\(name) holds " + (archiveZooms[name].map { "z\($0.lowerBound)–\($0.upperBound)" } ?? "nothing")
        }
        return CatalogError(
            path: path, field: "products[\(i)].maxzoom", code: .badZoomRange,
            detail:
                """
                \(ErrorText.quoted(first.productID)) sells zooms \(Self.spans(first.zooms)) that none of its \
                archives holds (
                """
                    + held.joined(separator: ", ") + ")")
    }

    /// `[9, 10, 11, 14]` as "9–11, 14".
    static func spans(_ zooms: [Int]) -> String {
        var parts: [String] = []
        var i = 0
        while i < zooms.count {
            var j = i
            while j + 1 < zooms.count, zooms[j + 1] == zooms[j] + 1 { j += 1 }
            parts.append(i == j ? "\(zooms[i])" : "\(zooms[i])–\(zooms[j])")
            i = j + 1
        }
        return parts.joined(separator: ", ")
    }
}

extension Catalog {
    /// Throws when a product sells zooms that none of its archives in `libraryDirectory`
    /// holds (an archive that is missing or unreadable holds none): what `catalog sign` and
    /// `pack` refuse to publish.
    /// - Cost: opens each named archive (O(1) pages each).
    public func requireHeldZooms(libraryDirectory: String, path: String) throws {
        var held: [String: ClosedRange<Int>] = [:]
        let dir = libraryDirectory.hasSuffix("/") ? libraryDirectory : libraryDirectory + "/"
        for name in Set(products.flatMap(\.archives)) {
            held[name] = (try? MBTilesReader(path: dir + name))?.zoomRange
        }
        if let error = unheldZoomsError(archiveZooms: held, path: path) { throw error }
    }
}
