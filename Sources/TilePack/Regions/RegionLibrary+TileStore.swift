import TilePackCore
import TilePackArchive
import TilePackStore

extension RegionLibrary {
    /// A library opened for drawing: one tile store over every layer, and the layers in the
    /// store's order (archive `i` of ``store`` is `layers[i]`).
    public struct OpenedStore: Sendable {
        public let store: TileStore
        public let layers: [DrawingLayer]
    }

    /// The one way a library becomes a tile store, for an app and for `query`, `render`,
    /// `serve` and `stress` alike: every layer of ``drawingLayers()`` (the master archives, then
    /// the installed packs' layers) in one ``TileStore`` under `budget`, every tile asked of
    /// ``accessPolicy()``, so no caller can open the library's archives without its gate.
    ///
    /// `options.accessPolicy` is replaced by the library's.
    /// - Throws: ``ArchiveError`` naming a damaged master archive (the library is not opened
    ///   with a layer silently missing), ``TileStoreError`` for bad options.
    /// - Cost: opens each master archive (its header and metadata); packs are already open.
    public func openTileStore(
        budget: MemoryBudget, options: TileStoreOptions = TileStoreOptions()
    ) throws
        -> OpenedStore
    {
        let layers = try drawingLayers()
        var options = options
        options.accessPolicy = accessPolicy()
        let store = try TileStore(archives: layers.map(\.archive), budget: budget, options: options)
        return OpenedStore(store: store, layers: layers)
    }
}
