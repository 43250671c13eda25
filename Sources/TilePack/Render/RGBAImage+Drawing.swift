import TilePackCodec

/// The few drawing operations a map render needs on an ``RGBAImage``: fills, alpha compositing,
/// hatching and bitmap-font labels.
extension RGBAImage {
    /// Composites `src` ([r, g, b, a], straight alpha) over the pixel at (x, y); outside is ignored.
    @inline(__always)
    public mutating func blend(x: Int, y: Int, r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        guard x >= 0, y >= 0, x < width, y < height, a > 0 else { return }
        let i = (y * width + x) * 4
        if a == 255 {
            pixels[i] = r; pixels[i + 1] = g; pixels[i + 2] = b; pixels[i + 3] = 255
            return
        }
        let sa = Int(a), da = Int(pixels[i + 3]) * (255 - sa) / 255
        let oa = sa + da
        guard oa > 0 else { return }
        pixels[i] = UInt8((Int(r) * sa + Int(pixels[i]) * da) / oa)
        pixels[i + 1] = UInt8((Int(g) * sa + Int(pixels[i + 1]) * da) / oa)
        pixels[i + 2] = UInt8((Int(b) * sa + Int(pixels[i + 2]) * da) / oa)
        pixels[i + 3] = UInt8(min(255, oa))
    }

    /// Composites `colour` over the rectangle (clipped to the picture).
    public mutating func fill(x: Int, y: Int, width w: Int, height h: Int, colour: [UInt8]) {
        let x0 = max(0, x), y0 = max(0, y), x1 = min(width, x + w), y1 = min(height, y + h)
        guard x0 < x1, y0 < y1 else { return }
        for yy in y0..<y1 {
            for xx in x0..<x1 { blend(x: xx, y: yy, r: colour[0], g: colour[1], b: colour[2], a: colour[3]) }
        }
    }

    /// Diagonal lines every `step` pixels over the rectangle, anchored to `anchor` so that
    /// neighbouring rectangles join up.
    public mutating func hatch(
        x: Int, y: Int, width w: Int, height h: Int, step: Int, colour: [UInt8], anchorX: Int = 0, anchorY: Int = 0
    ) {
        let x0 = max(0, x), y0 = max(0, y), x1 = min(width, x + w), y1 = min(height, y + h)
        guard x0 < x1, y0 < y1, step > 0 else { return }
        for yy in y0..<y1 {
            for xx in x0..<x1
            where ((xx - anchorX) + (yy - anchorY)) % step == 0 || ((xx - anchorX) + (yy - anchorY)) % step == step - 1
            {
                blend(x: xx, y: yy, r: colour[0], g: colour[1], b: colour[2], a: colour[3])
            }
        }
    }

    /// Draws `text` with its top-left corner at (x, y) in ``BitmapFont``, each font pixel a
    /// `scale` × `scale` square.
    public mutating func text(_ text: String, x: Int, y: Int, scale: Int = 1, colour: [UInt8]) {
        var penX = x
        for c in text {
            let rows = BitmapFont.rows(c)
            for (ry, bits) in rows.enumerated() {
                for rx in 0..<BitmapFont.glyphWidth where bits & (1 << (BitmapFont.glyphWidth - 1 - rx)) != 0 {
                    fill(x: penX + rx * scale, y: y + ry * scale, width: scale, height: scale, colour: colour)
                }
            }
            penX += (BitmapFont.glyphWidth + BitmapFont.spacing) * scale
        }
    }

    /// `text` on a box with `padding` pixels around it; returns the box's size.
    @discardableResult
    public mutating func label(
        _ text: String, x: Int, y: Int, scale: Int = 1, padding: Int = 2,
        foreground: [UInt8], background: [UInt8]
    ) -> (width: Int, height: Int) {
        let w = BitmapFont.width(of: text, scale: scale) + 2 * padding
        let h = BitmapFont.glyphHeight * scale + 2 * padding
        fill(x: x, y: y, width: w, height: h, colour: background)
        self.text(text, x: x + padding, y: y + padding, scale: scale, colour: foreground)
        return (w, h)
    }

    /// The number of distinct colours, counting at most `limit` (a cheap "is it blank?" check).
    public func distinctColours(limit: Int = 1 << 16) -> Int {
        var seen = Set<UInt32>()
        var i = 0
        while i + 3 < pixels.count && seen.count < limit {
            seen.insert(
                UInt32(pixels[i]) << 24 | UInt32(pixels[i + 1]) << 16 | UInt32(pixels[i + 2]) << 8
                    | UInt32(pixels[i + 3]))
            i += 4
        }
        return seen.count
    }
}
