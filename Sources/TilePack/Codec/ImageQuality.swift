import TilePackCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How close a decoded image is to its original, as PSNR in dB (infinity when identical).
///
/// PVRTC wraps its bilinear upscaling around the texture, so a tile's border pixels depend
/// on words at the opposite border; the edge band (pixels within ``edgeBand`` of a border)
/// is reported apart from the interior so that seams between map tiles show up in numbers.
/// Cost: one pass over both images.
package struct ImageQuality: Sendable, Equatable, CustomStringConvertible {
    /// PSNR over the R, G and B samples of all pixels.
    public var rgb: Double
    /// PSNR of the alpha samples.
    public var alpha: Double
    /// PSNR over R, G, B of pixels within `edgeBand` pixels of a border.
    public var edge: Double
    /// PSNR over R, G, B of the other pixels.
    public var interior: Double
    /// Largest absolute difference of any R, G or B sample.
    public var maxErrorRGB: Int

    public static let edgeBand = 2

    /// Compares two RGBA8 images of `width` × `height` pixels.
    /// - Precondition: both hold `width * height * 4` bytes.
    public static func measure(reference: [UInt8], decoded: [UInt8], width: Int, height: Int) -> ImageQuality {
        precondition(reference.count == width * height * 4 && decoded.count == reference.count, "image sizes differ")
        var edgeSum = 0, edgeCount = 0, innerSum = 0, innerCount = 0, alphaSum = 0, maxError = 0
        reference.withUnsafeBufferPointer { r in
            decoded.withUnsafeBufferPointer { d in
                for y in 0..<height {
                    let yEdge = y < edgeBand || y >= height - edgeBand
                    for x in 0..<width {
                        let i = (y * width + x) * 4
                        let dr = Int(r[i]) - Int(d[i]), dg = Int(r[i + 1]) - Int(d[i + 1]),
                            db = Int(r[i + 2]) - Int(d[i + 2])
                        let da = Int(r[i + 3]) - Int(d[i + 3])
                        let squared = dr * dr + dg * dg + db * db
                        maxError = max(maxError, abs(dr), abs(dg), abs(db))
                        alphaSum += da * da
                        if yEdge || x < edgeBand || x >= width - edgeBand {
                            edgeSum += squared; edgeCount += 3
                        } else {
                            innerSum += squared; innerCount += 3
                        }
                    }
                }
            }
        }
        return ImageQuality(
            rgb: psnr(edgeSum + innerSum, edgeCount + innerCount),
            alpha: psnr(alphaSum, width * height),
            edge: psnr(edgeSum, edgeCount),
            interior: psnr(innerSum, innerCount),
            maxErrorRGB: maxError)
    }

    /// PSNR of a summed squared error over `count` 8-bit samples.
    public static func psnr(_ squaredError: Int, _ count: Int) -> Double {
        guard count > 0, squaredError > 0 else { return .infinity }
        return 10 * log10(255.0 * 255.0 * Double(count) / Double(squaredError))
    }

    public var description: String {
        func f(_ v: Double) -> String { v.isInfinite ? "inf" : String(Double(Int(v * 100)) / 100) }
        return
            """
            PSNR rgb \(f(rgb)) dB, alpha \(f(alpha)) dB, edge \(f(edge)) dB, interior \(f(interior)) dB, max \
            error \(maxErrorRGB)
            """
    }
}
