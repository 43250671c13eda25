import TilePackStore

/// Where an RGBA tile cut by `mask` breaks the cut's rule against the uncut tile: owned pixels
/// must equal the uncut tile's, the others must be transparent (0, 0, 0, 0). Counted in one
/// pass so that a test expects once a tile: an expectation a pixel made these tests the
/// slowest of a debug run.
package struct MaskedTileCheck {
    /// Owned pixels whose RGBA differs from the uncut tile's, and the first of them in row order.
    package private(set) var insideDiffering = 0, firstInsideDiffering: (x: Int, y: Int)? = nil
    /// Pixels outside the mask that are not transparent, and the first of them in row order.
    package private(set) var outsideOpaque = 0, firstOutsideOpaque: (x: Int, y: Int)? = nil
    /// Pixels outside the mask.
    package private(set) var outside = 0

    /// Both tiles `mask.side`² pixels, 4 bytes a pixel.
    /// Cost: one pass over the pixels.
    package init(cut: [UInt8], uncut: [UInt8], mask: TileMask) {
        let side = mask.side
        precondition(cut.count == side * side * 4 && uncut.count == cut.count, "tiles of the mask's side")
        for y in 0..<side {
            for x in 0..<side {
                let p = (y * side + x) * 4
                if mask.isOwned(x: x, y: y) {
                    guard cut[p..<p + 4] != uncut[p..<p + 4] else { continue }
                    insideDiffering += 1
                    if firstInsideDiffering == nil { firstInsideDiffering = (x, y) }
                } else {
                    outside += 1
                    guard cut[p..<p + 4] != [0, 0, 0, 0] else { continue }
                    outsideOpaque += 1
                    if firstOutsideOpaque == nil { firstOutsideOpaque = (x, y) }
                }
            }
        }
    }
}
