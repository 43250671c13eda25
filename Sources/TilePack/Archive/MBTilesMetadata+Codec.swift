import TilePackCore
import TilePackSQLite
import TilePackCodec
extension TileCodecChoice {
    /// The codec that decodes an archive's tiles, from its metadata: `tilepack:codec`, or
    /// MBTiles `format` for archives written by others (PNG ones decode; JPEG or vector
    /// tiles give nil).
    public init?(metadata: [String: String]) {
        let name = metadata[MBTilesMetadata.Key.codec] ?? metadata[MBTilesMetadata.Key.format] ?? ""
        self.init(rawValue: name.lowercased())
    }
}

extension MBTilesReader {
    /// Tile side in pixels: `tilepack:tile_size`, else MBTiles' customary 256.
    public var tileSize: Int { MBTilesMetadata.tileSize(in: metadata) }
}

extension MBTilesMetadata {
    /// Tile side in pixels from metadata rows (MBTiles' or a PMTiles archive's JSON):
    /// `tilepack:tile_size` when in 1…4096, else the customary 256.
    static func tileSize(in rows: [String: String]) -> Int {
        rows[Key.tileSize].flatMap { Int($0) }.flatMap { (1...4096).contains($0) ? $0 : nil } ?? 256
    }
}
