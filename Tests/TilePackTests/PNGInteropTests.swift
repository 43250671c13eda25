import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
@testable import TilePackBuild
@testable import TilePackStore
@testable import TilePackSamples
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Swift half of Scripts/png-check, which sets TILEPACK_PNG_INTEROP_DIR: decodes the
/// PNGs Pillow wrote there (`pillow-*.png`) and compares them with Pillow's own RGBA
/// (`pillow-*.rgba`), then writes our PNGs (`ours-*.png` + `.rgba`) for Pillow to check.
/// Without the variable the test is reported as skipped (it needs Python and Pillow).
@Suite struct PNGInteropTests {
    static let directory = getenv("TILEPACK_PNG_INTEROP_DIR").map { String(cString: $0) }

    @Test(.enabled(if: directory != nil, "run through Scripts/png-check"))
    func pillowAndTilepackAgreeOnPixels() throws {
        let dir = try #require(Self.directory)
        var names: [String] = []
        if let d = opendir(dir) {
            while let entry = readdir(d) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) {
                    String(cString: $0.baseAddress!.assumingMemoryBound(to: CChar.self))
                }
                if name.hasPrefix("pillow-") && name.hasSuffix(".png") { names.append(String(name.dropLast(4))) }
            }
            closedir(d)
        }
        #expect(names.count >= 5, "Pillow's samples are missing from \(dir)")
        for name in names.sorted() {
            let image = try PNGDecoder().decode(readFile("\(dir)/\(name).png"), source: name)
            #expect(image.pixels == readFile("\(dir)/\(name).rgba"), "\(name): pixels differ from Pillow's")
        }

        var random = TestRandom(seed: 99)
        let w = 256, h = 256
        var samples: [(String, [UInt8])] = [("random-rgba", random.bytes(w * h * 4))]
        var opaque = random.bytes(w * h * 4), gray = [UInt8](repeating: 0, count: w * h * 4)
        var grayAlpha = gray, gradient = gray
        for p in 0..<(w * h) {
            let x = p % w, y = p / w, v = UInt8(truncatingIfNeeded: x ^ y)
            opaque[4 * p + 3] = 255
            gray[4 * p] = v; gray[4 * p + 1] = v; gray[4 * p + 2] = v; gray[4 * p + 3] = 255
            grayAlpha[4 * p] = v; grayAlpha[4 * p + 1] = v; grayAlpha[4 * p + 2] = v
            grayAlpha[4 * p + 3] = UInt8(truncatingIfNeeded: x + y)
            gradient[4 * p] = UInt8(x); gradient[4 * p + 1] = UInt8(y)
            gradient[4 * p + 2] = UInt8((x + y) / 2); gradient[4 * p + 3] = UInt8(255 - y)
        }
        samples += [("opaque-rgb", opaque), ("gray", gray), ("gray-alpha", grayAlpha), ("gradient-rgba", gradient)]
        for (name, rgba) in samples {
            writeFile("\(dir)/ours-\(name).png", try PNGEncoder().encode(rgba: rgba, width: w, height: h))
            writeFile("\(dir)/ours-\(name).rgba", rgba)
        }
    }
}
