import TilePackCore
import TilePackCodec

extension PMTilesReader {
    /// Decodes every stored tile with the archive's codec and every elevation tile of its
    /// Terrarium sibling; the first that does not decode is thrown (damaged), naming the tile.
    /// What `tilepack verify` runs on a PMTiles archive (its structure is checked on the way:
    /// ``forEachEntry(_:)`` refuses directories that are out of order or address too much).
    /// - Returns: addressed tiles (a run counts each tile; its bytes are decoded once) and
    ///   elevation tiles that decode.
    /// - Cost: O(archive): one read and one decode per distinct entry, and per elevation tile.
    public func decodeAllTiles() throws -> (tiles: Int, elevationRows: Int) {
        let summary = self.summary
        let codec = try decodableCodec()
        let decoder = codec.decoder()
        var tiles = 0, rows = 0
        try forEachEntry { entry in
            let bytes = try read(entry, maxBytes: Self.maxBlobBytes, what: "tile id \(entry.tileID)")
            do { _ = try decoder.decode(bytes, width: summary.tileSize, height: summary.tileSize) } catch {
                let name = TileID(pmtilesID: entry.tileID).map { "tile \($0)" } ?? "tile id \(entry.tileID)"
                throw ArchiveError(
                    path: path, code: .damaged, detail: "\(name) does not decode as \(codec.rawValue): \(error)")
            }
            tiles += Int(entry.runLength)
        }
        if let terrain {
            try terrain.forEachTile { id, _ in
                if try terrain.elevation(id) != nil { rows += 1 }
            }
        }
        return (tiles, rows)
    }
}
