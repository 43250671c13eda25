/// One entry of a PMTiles directory: `runLength` tiles from `tileID` on, all stored at
/// `offset` (from the tile data section's start) with `length` bytes; or, with `runLength`
/// 0, a leaf directory of `length` bytes at `offset` from the leaf section's start that
/// holds the tiles from `tileID` up to the next entry's.
public struct PMTilesEntry: Sendable, Equatable {
    public var tileID: UInt64
    public var offset: UInt64
    public var length: UInt32
    public var runLength: UInt32

    public init(tileID: UInt64, offset: UInt64, length: UInt32, runLength: UInt32) {
        self.tileID = tileID; self.offset = offset; self.length = length; self.runLength = runLength
    }

    /// Whether this entry points at a leaf directory rather than tiles.
    public var isLeaf: Bool { runLength == 0 }
}
