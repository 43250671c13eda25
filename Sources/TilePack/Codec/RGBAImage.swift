/// An RGBA8 picture: rows top first, straight alpha, `width × height × 4` bytes. The one image
/// type of tilepack: what the PNG decoder returns and what a map render draws on (its drawing
/// operations are in TilePackRender, `RGBAImage+Drawing.swift`).
public struct RGBAImage: Sendable, Equatable {
    public let width: Int
    public let height: Int
    /// width × height × 4 bytes.
    public var pixels: [UInt8]

    /// A picture of `pixels`, which must hold `width × height × 4` bytes (the callers made them).
    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(width > 0 && height > 0 && pixels.count == width * height * 4, "callers check sizes")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// A picture filled with `colour` ([r, g, b, a]).
    public init(width: Int, height: Int, colour: [UInt8] = [0, 0, 0, 0]) {
        precondition(width > 0 && height > 0 && colour.count == 4, "callers check sizes")
        self.width = width
        self.height = height
        var row = [UInt8](repeating: 0, count: width * 4)
        for x in 0..<width {
            row[x * 4] = colour[0]; row[x * 4 + 1] = colour[1]; row[x * 4 + 2] = colour[2]; row[x * 4 + 3] = colour[3]
        }
        var all: [UInt8] = []
        all.reserveCapacity(width * height * 4)
        for _ in 0..<height { all.append(contentsOf: row) }
        pixels = all
    }
}
