import TilePackCore
extension TIFFFile {
    /// Largest side ``readRGBA8()`` accepts: 16384² RGBA8 is 1 GiB.
    public static let rgbaMaximumSide = 16_384

    /// The whole first image as RGBA8 rows (top first), for 8-bit gray, gray+alpha, RGB and
    /// RGBA images: what the codec CLI and previews need. Other layouts throw
    /// ``TIFFError/Code/unsupported``.
    /// Cost: one full read, width × height × (bands + 4) bytes.
    public func readRGBA8() throws(TIFFError) -> [UInt8] {
        let img = image
        guard img.sampleType == .uint8, (1...4).contains(img.bands), img.photometric != 3 else {
            throw TIFFError(
                path: path, code: .unsupported,
                detail:
                    """
                    \(img.bands)-band \(img.sampleType.rawValue) \(img.photometricName) image cannot be read as \
                    RGBA8 (need 8-bit gray, RGB or RGBA)
                    """
            )
        }
        // Sparse files can declare huge images in a few bytes: cap before allocating.
        guard img.width <= Self.rgbaMaximumSide, img.height <= Self.rgbaMaximumSide else {
            throw TIFFError(
                path: path, code: .absurdDimensions,
                detail:
                    """
                    \(img.width)×\(img.height) is too large to read as one RGBA8 image (limit \
                    \(Self.rgbaMaximumSide) per side)
                    """
            )
        }
        let raw = try read(window: PixelWindow(x: 0, y: 0, width: img.width, height: img.height)).bytes
        let n = img.width * img.height, b = img.bands
        var out = [UInt8](repeating: 255, count: n * 4)
        raw.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                for i in 0..<n {
                    let s = i * b, d = i * 4
                    switch b {
                    case 1, 2:
                        dst[d] = src[s]; dst[d + 1] = src[s]; dst[d + 2] = src[s]
                        if b == 2 { dst[d + 3] = src[s + 1] }
                    default:
                        dst[d] = src[s]; dst[d + 1] = src[s + 1]; dst[d + 2] = src[s + 2]
                        if b == 4 { dst[d + 3] = src[s + 3] }
                    }
                }
            }
        }
        return out
    }
}
