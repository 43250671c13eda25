import Foundation
import Crypto
import Dispatch
import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackGeoTIFF
import TilePackTestSupport

@Suite struct TIFFReaderTests {
    /// Every supported combination of byte order, TIFF flavour, layout, compression, sample
    /// type, predictor and planar configuration decodes back to the samples written.
    @Test func decodesEveryLayoutCompressionAndPredictor() throws {
        let dir = TemporaryDirectory()
        let kinds: [(bits: Int, format: Int)] = [(8, 1), (16, 2), (32, 1), (32, 3), (64, 3), (64, 2)]
        var checked = 0
        for order in [TIFFByteOrder.little, .big] {
            for bigTIFF in [false, true] {
                for tile in [nil, (16, 16), (16, 32)] as [(Int, Int)?] {
                    for compression: UInt16 in [1, 5, 8, 32946, 32773] {
                        for kind in kinds {
                            for predictor in [1, 2, 3] where predictor != 3 || kind.format == 3 {
                                for planar in [1, 2] {
                                    var t = CraftedTIFF()
                                    t.order = order; t.bigTIFF = bigTIFF; t.tile = tile
                                    t.width = 21; t.height = 13
                                    t.rowsPerStrip = 5
                                    t.bands = planar == 2 ? 3 : (checked % 2 == 0 ? 1 : 3)
                                    t.photometric = t.bands == 3 ? 2 : 1
                                    t.bits = kind.bits; t.sampleFormat = kind.format
                                    t.compression = compression; t.predictor = predictor; t.planar = planar
                                    let samples = t.makeSamples(seed: checked)
                                    let path = try dir.write("m\(checked).tif", try t.build(samples))
                                    let file = try TIFFFile(path: path)
                                    #expect(file.byteOrder == order && file.isBigTIFF == bigTIFF)
                                    #expect(file.image.isTiled == (tile != nil))
                                    let full = try file.read(window: PixelWindow(x: 0, y: 0, width: 21, height: 13))
                                    #expect(
                                        full.bytes == samples,
                                        """
                                        order \(order) big \(bigTIFF) tile \(String(describing: tile)) comp \
                                        \(compression) \(kind) pred \(predictor) planar \(planar)
                                        """
                                    )
                                    checked += 1
                                }
                            }
                        }
                    }
                }
            }
        }
        #expect(checked > 500)
    }

    @Test func windowedReadEqualsTheSliceOfAFullRead() throws {
        let dir = TemporaryDirectory()
        for (planar, tile) in [(1, (16, 16)), (2, (16, 16)), (1, nil), (2, nil)] as [(Int, (Int, Int)?)] {
            var t = CraftedTIFF()
            t.width = 50; t.height = 37; t.bands = 3; t.bits = 16; t.planar = planar
            t.tile = tile; t.rowsPerStrip = 7; t.compression = 8; t.predictor = 2
            let samples = t.makeSamples()
            let file = try TIFFFile(path: try dir.write("w\(planar).tif", try t.build(samples)), cacheBytes: 4096)
            let full = try file.read(window: PixelWindow(x: 0, y: 0, width: 50, height: 37))
            for w in [
                PixelWindow(x: 3, y: 5, width: 20, height: 17), PixelWindow(x: 49, y: 36, width: 1, height: 1),
                PixelWindow(x: 15, y: 0, width: 2, height: 37), PixelWindow(x: 0, y: 14, width: 50, height: 1),
            ] {
                let part = try file.read(window: w)
                var expected = [UInt8]()
                for y in w.y..<(w.y + w.height) {
                    let start = (y * 50 + w.x) * 3 * 2
                    expected += full.bytes[start..<start + w.width * 3 * 2]
                }
                #expect(part.bytes == expected, "window \(w) planar \(planar)")
                #expect(part.sample(x: 0, y: 0, band: 2) == full.sample(x: w.x, y: w.y, band: 2))
            }
        }
    }

    @Test func readsOldStyleLZWAndFillOrder2() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        t.width = 40; t.height = 30
        let samples = t.makeSamples()
        // One strip, replaced with an old-style (LSB-first) LZW stream.
        t.compression = 5
        t.rowsPerStrip = 30
        t.blockOverride = [0: CraftedTIFF.lzw(samples, oldStyle: true)]
        let file = try TIFFFile(path: try dir.write("old.tif", try t.build(samples)))
        #expect(try file.read(window: PixelWindow(x: 0, y: 0, width: 40, height: 30)).bytes == samples)

        // FillOrder 2 (bits reversed within bytes) on an uncompressed strip.
        var r = CraftedTIFF()
        r.width = 8; r.height = 4; r.rowsPerStrip = 4
        let plain = r.makeSamples()
        r.blockOverride = [0: plain.map { TIFFBlockDecoder.reversedBits($0) }]
        r.extraTags[TIFFTag.fillOrder] = .shorts([2])
        let f2 = try TIFFFile(path: try dir.write("fill.tif", try r.build(plain)))
        #expect(try f2.read(window: PixelWindow(x: 0, y: 0, width: 8, height: 4)).bytes == plain)
    }

    @Test func lzwDecodesLongInputsAcrossTableResets() throws {
        // Enough distinct strings to fill the 4096-entry table and force Clear codes.
        var data = [UInt8]()
        var s: UInt32 = 7
        for _ in 0..<200_000 { s = s &* 1_103_515_245 &+ 12345; data.append(UInt8(truncatingIfNeeded: s >> 24) & 0x3F) }
        for old in [false, true] {
            let packed = CraftedTIFF.lzw(data, oldStyle: old)
            var out = [UInt8](repeating: 0, count: data.count)
            let n = try packed.withUnsafeBufferPointer { src in
                try out.withUnsafeMutableBufferPointer { try TIFFDecompression.lzw(src, into: $0) }
            }
            #expect(n == data.count && out == data, "old-style \(old)")
        }
    }

    @Test func readsGeoTIFFTags() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        t.bits = 16; t.sampleFormat = 2
        t.extraTags = [
            TIFFTag.modelPixelScale: .doubles([30, 30, 0]),
            TIFFTag.modelTiepoint: .doubles([0, 0, 0, 500_000, 4_000_000, 0]),
            // Version 1.1.0, 5 keys: model projected, raster PixelIsPoint, PCS 32633, citation (ASCII), a double.
            TIFFTag.geoKeyDirectory: .shorts([
                1, 1, 0, 5,
                1024, 0, 1, 1,
                1025, 0, 1, 2,
                1026, 34737, 14, 0,
                3072, 0, 1, 32633,
                3092, 34736, 1, 0,
            ]),
            TIFFTag.geoDoubleParams: .doubles([0.9996]),
            TIFFTag.geoAsciiParams: .ascii("WGS 84 / UTM33|"),
            TIFFTag.gdalNoData: .ascii("-9999"),
        ]
        let file = try TIFFFile(path: try dir.write("geo.tif", try t.build(t.makeSamples())))
        let img = file.image
        #expect(img.epsg == 32633)
        #expect(img.rasterType == .pixelIsPoint)
        #expect(img.nodata == -9999)
        // PixelIsPoint: origin moved half a pixel up-left, as GDAL does.
        #expect(img.geoTransform == GeoTransform([499_985, 30, 0, 4_000_015, 0, -30]))
        let keys = try #require(img.geoKeys)
        #expect(keys.ascii(GeoKey.gtCitation) == "WGS 84 / UTM33")
        #expect(keys.double(GeoKey.projScaleAtNatOrigin) == 0.9996)
        #expect(keys.entries.map(\.id) == [1024, 1025, 1026, 3072, 3092])

        let info = try TIFFInfo(file: file)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(info.json.utf8)) as? [String: Any])
        #expect(json["epsg"] as? Int == 32633)
        #expect(json["raster_type"] as? String == "Point")
        #expect((json["geokeys"] as? [String: Any])?["GTCitation"] as? String == "WGS 84 / UTM33")
        #expect(json["dtype"] as? String == "int16")
        #expect((json["block_size"] as? [Int]) == [8, 6])
    }

    @Test func modelTransformationAndUserDefinedCRS() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        t.extraTags = [
            TIFFTag.modelTransformation: .doubles([2, 0.5, 0, 100, 0.25, -2, 0, 200, 0, 0, 0, 0, 0, 0, 0, 1]),
            TIFFTag.geoKeyDirectory: .shorts([1, 1, 0, 2, 1024, 0, 1, 1, 3072, 0, 1, 32767]),
        ]
        let img = try TIFFFile(path: try dir.write("t.tif", try t.build(t.makeSamples()))).image
        #expect(img.geoTransform == GeoTransform([100, 2, 0.5, 200, 0.25, -2]))
        #expect(img.epsg == nil)
        #expect(img.rasterType == nil)
        let info = try TIFFInfo(file: TIFFFile(path: dir.path + "/t.tif"))
        #expect(info.crsLabel == "user-defined")
    }

    @Test func nodataIsParsedAgainstTheSampleType() throws {
        #expect(GeoTIFFTags.parseNodata("-9999", sampleType: .uint8) == nil)
        #expect(GeoTIFFTags.parseNodata("255", sampleType: .uint8) == 255)
        #expect(GeoTIFFTags.parseNodata(" 0.0 ", sampleType: .uint8) == 0)
        #expect(GeoTIFFTags.parseNodata("1.5", sampleType: .int16) == nil)
        #expect(GeoTIFFTags.parseNodata("nan", sampleType: .float32)?.isNaN == true)
        #expect(GeoTIFFTags.parseNodata("nan", sampleType: .int16) == nil)
        #expect(GeoTIFFTags.parseNodata("-3.4e38", sampleType: .float32) == -3.4e38)
        #expect(GeoTIFFTags.parseNodata("garbage", sampleType: .float32) == nil)

        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        t.bits = 32; t.sampleFormat = 3
        t.extraTags = [TIFFTag.gdalNoData: .ascii("nan")]
        let info = try TIFFInfo(file: TIFFFile(path: try dir.write("nan.tif", try t.build(t.makeSamples()))))
        #expect(try info.json.contains("\"nodata\":\"nan\""))
        #expect(try JSONSerialization.jsonObject(with: Data(info.json.utf8)) is [String: Any])
    }

    @Test func checksumHashesBandPlanesInOrder() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        t.width = 19; t.height = 11; t.bands = 3; t.bits = 16; t.rowsPerStrip = 4; t.compression = 5
        let samples = t.makeSamples()
        let file = try TIFFFile(path: try dir.write("c.tif", try t.build(samples)))
        var planes = [[UInt8]](repeating: [], count: 3)
        for p in 0..<(19 * 11) { for b in 0..<3 { planes[b] += samples[(p * 3 + b) * 2..<(p * 3 + b) * 2 + 2] } }
        let sum = try file.pixelChecksum()
        #expect(sum.bandSHA256 == planes.map { SHA256.hash(data: $0).hexString })
        #expect(sum.pixelSHA256 == SHA256.hash(data: planes.flatMap { $0 }).hexString)
    }

    @Test func paletteAndExtraSamplesAreExposedRaw() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        t.photometric = 3
        t.extraTags = [TIFFTag.colorMap: .shorts((0..<768).map { UInt16($0 * 85) })]
        let img = try TIFFFile(path: try dir.write("p.tif", try t.build(t.makeSamples()))).image
        #expect(img.colorMap?.count == 768 && img.colorMap?[1] == 85)
        #expect(img.photometricName == "PALETTE")

        var a = CraftedTIFF()
        a.bands = 4; a.photometric = 2
        a.extraTags = [TIFFTag.extraSamples: .shorts([2])]
        let samples = a.makeSamples()
        let f = try TIFFFile(path: try dir.write("a.tif", try a.build(samples)))
        #expect(f.image.extraSamples == [2])
        #expect(try f.read(window: PixelWindow(x: 0, y: 0, width: 8, height: 6)).bytes == samples)
    }

    @Test func concurrentReadsAgreeWithASerialRead() throws {
        let dir = TemporaryDirectory()
        var t = CraftedTIFF()
        t.width = 64; t.height = 64; t.bands = 3; t.tile = (16, 16); t.compression = 8
        let samples = t.makeSamples()
        let file = try TIFFFile(path: try dir.write("cc.tif", try t.build(samples)), cacheBytes: 3 * 16 * 16 * 3)
        let ok = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            let w = PixelWindow(x: (i * 7) % 48, y: (i * 11) % 48, width: 16, height: 16)
            guard let part = try? file.read(window: w) else { return }
            var expected = [UInt8]()
            for y in w.y..<(w.y + 16) { expected += samples[((y * 64 + w.x) * 3)..<((y * 64 + w.x) * 3 + 48)] }
            if part.bytes == expected { ok.withLock { $0 += 1 } }
        }
        #expect(ok.withLock { $0 } == 64)
    }

    @Test func floatsAndSamplesConvertEveryType() throws {
        let dir = TemporaryDirectory()
        for (bits, format) in [(8, 2), (16, 1), (32, 2), (32, 3), (64, 3)] {
            var t = CraftedTIFF()
            t.bits = bits; t.sampleFormat = format
            let file = try TIFFFile(path: try dir.write("f\(bits)\(format).tif", try t.build(t.makeSamples())))
            let w = try file.read(window: PixelWindow(x: 1, y: 1, width: 3, height: 2))
            let floats = w.floats()
            #expect(floats.count == 6)
            for i in 0..<6 { #expect(floats[i] == Float(w.sample(x: i % 3, y: i / 3, band: 0))) }
        }
    }
}
