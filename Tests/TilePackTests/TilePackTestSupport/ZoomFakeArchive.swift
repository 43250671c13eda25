import TilePackArchive
import TilePackCodec
import TilePackCore
import TilePackEncoders

/// An in-memory PNG archive of small tiles with known pixels and elevation grids, so that
/// every made tile can be checked against numbers worked out by hand.
package final class ZoomFakeArchive: TileArchive {
    package let path: String
    package let summary: TileArchiveSummary
    private let stored: [TileID: [UInt8]]
    private let grids: [TileID: ElevationTile]
    private let reads = Locked(0)

    /// `pixels[id]`: side² RGBA8 (rows top first), stored PNG-encoded.
    package init(
        path: String = "zoom.mbtiles", zooms: ClosedRange<Int>, side: Int, pixels: [TileID: [UInt8]],
        grids: [TileID: ElevationTile] = [:], bounds: GeoBounds? = nil, valueKind: ValueKind? = nil
    ) throws {
        self.path = path
        summary = TileArchiveSummary(
            name: "zoom", bounds: bounds, zoomRange: zooms, codec: .png, codecName: "png",
            tileSize: side, hasElevation: !grids.isEmpty, valueKind: valueKind.map { .some($0) })
        var stored: [TileID: [UInt8]] = [:]
        for (id, rgba) in pixels { stored[id] = try PNGEncoder().encode(rgba: rgba, width: side, height: side) }
        self.stored = stored
        self.grids = grids
    }

    package func withTile<R>(_ id: TileID, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? {
        reads.withLock { $0 += 1 }
        guard let bytes = stored[id] else { return nil }
        return try bytes.withUnsafeBytes { try body($0) }
    }

    package func elevation(_ id: TileID) throws(ArchiveError) -> ElevationTile? { grids[id] }

    package var readCount: Int { reads.withLock { $0 } }
}
