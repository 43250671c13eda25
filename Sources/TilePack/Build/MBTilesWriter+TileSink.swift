import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
/// The MBTiles writer as the build pipeline's sink: display tiles into `images`/`map`,
/// elevation into the `elevation` table (docs/FORMAT.md).
extension MBTilesWriter: TileSink {
    public func write(tile: TileID, encoded: [UInt8]) throws {
        try write(encoded, for: tile)
    }

    public func writeElevation(tile: TileID, metres: [Float], width: Int, height: Int) throws {
        try writeElevation(ElevationTile(width: width, height: height, values: metres), for: tile)
    }

    public var elevationPacker: ElevationPacker? { options.elevationPacker }

    public func writeElevation(tile: TileID, packed: PackedElevation) throws {
        try writeElevation(packed: packed, for: tile)
    }
}
