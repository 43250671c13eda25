import Testing
@testable import TilePackCore
@testable import TilePackCodec
@testable import TilePackEncoders
import TilePackTestSupport

/// Builds PNG files by hand, so the decoder meets layouts our encoder never writes.
enum HandPNG {
    static func file(
        width: Int, height: Int, depth: UInt8, colorType: UInt8, interlace: UInt8 = 0,
        extra: [(String, [UInt8])] = [], idat: [UInt8]
    ) -> [UInt8] {
        var png = PNG.signature
        var ihdr: [UInt8] = []
        PNGEncoder.appendBE32(UInt32(width), to: &ihdr)
        PNGEncoder.appendBE32(UInt32(height), to: &ihdr)
        ihdr += [depth, colorType, 0, 0, interlace]
        PNGEncoder.appendChunk("IHDR", ihdr, to: &png)
        for (type, body) in extra { PNGEncoder.appendChunk(type, body, to: &png) }
        PNGEncoder.appendChunk("IDAT", idat, to: &png)
        PNGEncoder.appendChunk("IEND", [], to: &png)
        return png
    }

    /// Filters unfiltered rows, row y with filter y % 5, and deflates them.
    static func idat(rows: [[UInt8]], bpp: Int) throws -> [UInt8] {
        var out: [UInt8] = []
        var prev = [UInt8](repeating: 0, count: rows[0].count)
        for (y, row) in rows.enumerated() {
            let filter = UInt8(y % 5)
            out.append(filter)
            for i in 0..<row.count {
                let a: UInt8 = i >= bpp ? row[i - bpp] : 0, b = prev[i], c: UInt8 = i >= bpp ? prev[i - bpp] : 0
                switch filter {
                case 0: out.append(row[i])
                case 1: out.append(row[i] &- a)
                case 2: out.append(row[i] &- b)
                case 3: out.append(row[i] &- UInt8((Int(a) + Int(b)) / 2))
                default: out.append(row[i] &- PNG.paeth(a, b, c))
                }
            }
            prev = row
        }
        return try Zlib.deflate(out)
    }
}

@Suite struct PNGTests {
    static func colorType(_ png: [UInt8]) -> UInt8 { png[25] }

    @Test func roundTripsRandomRGBA() throws {
        var random = TestRandom(seed: 11)
        for (w, h) in [(1, 1), (256, 256), (17, 5)] {
            let rgba = random.bytes(w * h * 4)
            let png = try PNGEncoder().encode(rgba: rgba, width: w, height: h)
            #expect(Self.colorType(png) == 6)
            let image = try PNGDecoder().decode(png)
            #expect(image.width == w && image.height == h && image.pixels == rgba)
        }
    }

    @Test func opaqueAndGrayImagesShrinkTheirColorType() throws {
        var random = TestRandom(seed: 12)
        let w = 64, h = 48
        var rgb = random.bytes(w * h * 4)
        for i in stride(from: 3, to: rgb.count, by: 4) { rgb[i] = 255 }
        var gray = [UInt8](repeating: 0, count: w * h * 4)
        var grayAlpha = gray
        for p in 0..<(w * h) {
            let v = UInt8(truncatingIfNeeded: p * 3 + p / w)
            gray[4 * p] = v; gray[4 * p + 1] = v; gray[4 * p + 2] = v; gray[4 * p + 3] = 255
            grayAlpha[4 * p] = v; grayAlpha[4 * p + 1] = v; grayAlpha[4 * p + 2] = v
            grayAlpha[4 * p + 3] = UInt8(truncatingIfNeeded: p)
        }
        for (pixels, type) in [(rgb, UInt8(2)), (gray, 0), (grayAlpha, 4)] {
            let png = try PNGEncoder().encode(rgba: pixels, width: w, height: h)
            #expect(Self.colorType(png) == type)
            #expect(try PNGDecoder().decode(png).pixels == pixels)
            let full = try PNGEncoder(reducesColorType: false).encode(rgba: pixels, width: w, height: h)
            #expect(Self.colorType(full) == 6)
            #expect(png.count < full.count)
        }
    }

    @Test func decodesAllFiveFiltersAndOtherLayouts() throws {
        var random = TestRandom(seed: 13)
        let w = 9, h = 10
        // RGB 16-bit: high bytes survive.
        let rows16 = (0..<h).map { _ in random.bytes(w * 6) }
        let rgb16 = HandPNG.file(
            width: w, height: h, depth: 16, colorType: 2, idat: try HandPNG.idat(rows: rows16, bpp: 6))
        let image16 = try PNGDecoder().decode(rgb16)
        for y in 0..<h {
            for x in 0..<w {
                let o = (y * w + x) * 4
                #expect(
                    Array(image16.pixels[o..<(o + 4)]) == [
                        rows16[y][6 * x], rows16[y][6 * x + 2], rows16[y][6 * x + 4], 255,
                    ])
            }
        }
        // Palette, 2 bits a pixel, with tRNS for the first two entries.
        let palette: [UInt8] = [255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30]
        let indices = (0..<(w * h)).map { _ in Int(random.next() % 4) }
        let rowBytes = (w * 2 + 7) / 8
        let packed: [[UInt8]] = (0..<h).map { y in
            var row = [UInt8](repeating: 0, count: rowBytes)
            for x in 0..<w { row[x / 4] |= UInt8(indices[y * w + x] << (6 - 2 * (x % 4))) }
            return row
        }
        let paletted = HandPNG.file(
            width: w, height: h, depth: 2, colorType: 3,
            extra: [("PLTE", palette), ("tRNS", [0, 128])],
            idat: try HandPNG.idat(rows: packed, bpp: 1))
        let imageP = try PNGDecoder().decode(paletted)
        let alpha: [UInt8] = [0, 128, 255, 255]
        for p in 0..<(w * h) {
            let i = indices[p]
            #expect(
                Array(imageP.pixels[(4 * p)..<(4 * p + 4)]) == [
                    palette[3 * i], palette[3 * i + 1], palette[3 * i + 2], alpha[i],
                ])
        }
        // Gray, 1 bit, with a tRNS key of 1 (white is transparent).
        let bits: [[UInt8]] = (0..<h).map { _ in random.bytes((w + 7) / 8) }
        let gray1 = HandPNG.file(
            width: w, height: h, depth: 1, colorType: 0, extra: [("tRNS", [0, 1])],
            idat: try HandPNG.idat(rows: bits, bpp: 1))
        let imageG = try PNGDecoder().decode(gray1)
        for y in 0..<h {
            for x in 0..<w {
                let bit = (bits[y][x / 8] >> (7 - x % 8)) & 1
                let o = (y * w + x) * 4
                #expect(Array(imageG.pixels[o..<(o + 4)]) == (bit == 1 ? [255, 255, 255, 0] : [0, 0, 0, 255]))
            }
        }
    }

    @Test func rejectsDamagedInput() throws {
        var random = TestRandom(seed: 14)
        let good = try PNGEncoder().encode(rgba: random.bytes(32 * 32 * 4), width: 32, height: 32)
        func problem(_ bytes: [UInt8], _ decoder: PNGDecoder = PNGDecoder()) -> PNGError.Code? {
            do {
                _ = try decoder.decode(bytes, source: "t.png")
                return nil
            } catch let error as PNGError {
                #expect(error.description.hasPrefix("t.png: PNG "))
                return error.code
            } catch {
                Issue.record("\(error)")
                return nil
            }
        }
        #expect(problem(good) == nil)

        var badCRC = good
        badCRC[50] ^= 0x01  // inside IDAT's data
        #expect(problem(badCRC) == .badCRC)

        #expect(problem(Array(good.prefix(good.count - 40))) == .truncated)  // file cut inside IDAT
        #expect(problem(Array(good.prefix(good.count - 12))) == .truncated)  // no IEND

        // IDAT whose zlib stream is cut short, with a valid CRC.
        let rows = (0..<32).map { _ in random.bytes(32 * 4) }
        let stream = try HandPNG.idat(rows: rows, bpp: 4)
        #expect(
            problem(
                HandPNG.file(
                    width: 32, height: 32, depth: 8, colorType: 6, idat: Array(stream.prefix(stream.count / 2))))
                == .truncated)
        // A complete stream with too few rows.
        #expect(problem(HandPNG.file(width: 32, height: 33, depth: 8, colorType: 6, idat: stream)) == .truncated)

        // Absurd dimensions are refused before any allocation.
        #expect(
            problem(HandPNG.file(width: 1 << 30, height: 1 << 30, depth: 8, colorType: 6, idat: stream)) == .tooLarge)
        #expect(
            problem(
                HandPNG.file(width: 64, height: 64, depth: 8, colorType: 6, idat: stream),
                PNGDecoder(maxPixels: 1000)) == .tooLarge)
        #expect(problem(HandPNG.file(width: 0, height: 32, depth: 8, colorType: 6, idat: stream)) == .badHeader)
        #expect(problem(HandPNG.file(width: 32, height: 32, depth: 4, colorType: 6, idat: stream)) == .badHeader)
        #expect(
            problem(HandPNG.file(width: 32, height: 32, depth: 8, colorType: 6, interlace: 1, idat: stream))
                == .unsupported)
        // no PLTE
        #expect(problem(HandPNG.file(width: 32, height: 32, depth: 8, colorType: 3, idat: stream)) == .malformed)

        var badFilter = [UInt8](repeating: 0, count: 4 * (1 + 4 * 4))
        badFilter[(1 + 16) * 2] = 9
        #expect(
            problem(HandPNG.file(width: 4, height: 4, depth: 8, colorType: 6, idat: try Zlib.deflate(badFilter)))
                == .corruptData)

        #expect(problem(random.bytes(100)) == .notPNG)
        #expect(problem([]) == .notPNG)
        #expect(problem(Array(good.prefix(20))) == .truncated)
    }

    @Test func codecChecksSizeAndName() throws {
        let codec = PNGCodec()
        #expect(codec.name == "png")
        var random = TestRandom(seed: 15)
        let rgba = random.bytes(16 * 16 * 4)
        let png = try codec.encode(rgba: rgba, width: 16, height: 16)
        #expect(try codec.decode(png, width: 16, height: 16) == rgba)
        #expect(throws: PNGError.self) { try codec.decode(png, width: 8, height: 32) }
        #expect(throws: PNGError.self) { try codec.decode(png, width: 8, height: 8) }
        #expect(throws: PNGError.self) { try codec.encode(rgba: rgba, width: 15, height: 16) }
    }
}
