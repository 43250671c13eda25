import TilePackCore
import Crypto

/// SHA-256 digests of an image's pixels, as the test-data manifest defines them: the image as
/// a (bands, height, width) C-order array in its sample type, little-endian, raw values
/// (24-bit widened to 32), plus one digest per band.
public struct PixelChecksum: Sendable, Equatable {
    /// Hex SHA-256 of all bands, band after band.
    public var pixelSHA256: String
    /// Hex SHA-256 of each band's plane.
    public var bandSHA256: [String]
}

extension TIFFFile {
    /// Streams the main image band by band, one block row at a time, through SHA-256.
    /// - Cost: memory of one block row of one band (plus the block cache); decodes every block
    ///   once per band for pixel-interleaved files (the digest order is band-major).
    public func pixelChecksum() throws(TIFFError) -> PixelChecksum {
        var whole = SHA256()
        var perBand: [String] = []
        for band in 0..<image.bands {
            var hasher = SHA256()
            var y = 0
            while y < image.height {
                let rows = min(image.blockHeight - y % image.blockHeight, image.height - y)
                let strip = try read(
                    image, window: PixelWindow(x: 0, y: y, width: image.width, height: rows),
                    bands: band..<band + 1)
                strip.bytes.withUnsafeBytes { raw in
                    whole.update(bufferPointer: raw)
                    hasher.update(bufferPointer: raw)
                }
                y += rows
            }
            perBand.append(hasher.finalize().hexString)
        }
        return PixelChecksum(pixelSHA256: whole.finalize().hexString, bandSHA256: perBand)
    }
}
