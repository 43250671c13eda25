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
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePackTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Just enough TIFF parsing to check what the writer wrote: little-endian classic or BigTIFF,
/// first IFD, entries with their values widened to UInt64 (or raw bytes for ASCII/DOUBLE).
private struct ParsedTIFF {
    struct Entry {
        var type: UInt16
        var count: Int
        var bytes: [UInt8]
        var integers: [UInt64] {
            let size = type == 3 ? 2 : type == 4 ? 4 : 8
            return (0..<count).map { i in
                (0..<size).reduce(UInt64(0)) { $0 | UInt64(bytes[i * size + $1]) << (8 * UInt64($1)) }
            }
        }
        var doubles: [Double] { integers.map { Double(bitPattern: $0) } }
        var text: String { String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self) }
    }

    var bigTIFF: Bool
    var ifdOffset: UInt64
    var tags: [UInt16: Entry] = [:]
    var tagOrder: [UInt16] = []

    init(_ b: [UInt8]) {
        func u(_ at: Int, _ n: Int) -> UInt64 {
            (0..<n).reduce(UInt64(0)) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) }
        }
        precondition(b[0] == 0x49 && b[1] == 0x49)
        bigTIFF = u(2, 2) == 43
        ifdOffset = bigTIFF ? u(8, 8) : u(4, 4)
        var p = Int(ifdOffset)
        let n = Int(bigTIFF ? u(p, 8) : u(p, 2))
        p += bigTIFF ? 8 : 2
        for _ in 0..<n {
            let tag = UInt16(u(p, 2)), type = UInt16(u(p + 2, 2))
            let count = Int(bigTIFF ? u(p + 4, 8) : u(p + 4, 4))
            let size = [1: 1, 2: 1, 3: 2, 4: 4, 12: 8, 16: 8][Int(type)]!
            let inline = bigTIFF ? 8 : 4
            let valueAt = bigTIFF ? p + 12 : p + 8
            let start = count * size <= inline ? valueAt : Int(bigTIFF ? u(valueAt, 8) : u(valueAt, 4))
            tags[tag] = Entry(type: type, count: count, bytes: Array(b[start..<(start + count * size)]))
            tagOrder.append(tag)
            p += bigTIFF ? 20 : 12
        }
    }

    func value(_ tag: UInt16) -> UInt64? { tags[tag]?.integers.first }
}

/// Inverse of predictor 2, as a reader would apply it (reference for the tests only).
private func undoHorizontalDifferencing(_ bytes: inout [UInt8], width: Int, rows: Int, spp: Int, size: Int) {
    bytes.withUnsafeMutableBytes { raw in
        func run<T: FixedWidthInteger>(_ p: UnsafeMutableBufferPointer<T>) {
            for r in 0..<rows {
                let base = r * width * spp
                for i in spp..<(width * spp) { p[base + i] = p[base + i] &+ p[base + i - spp] }
            }
        }
        switch size {
        case 1: run(raw.bindMemory(to: UInt8.self))
        case 2: run(raw.bindMemory(to: UInt16.self))
        case 4: run(raw.bindMemory(to: UInt32.self))
        default: run(raw.bindMemory(to: UInt64.self))
        }
    }
}

/// Inverse of predictor 3 (reference for the tests only).
private func undoFloatingPointPredictor(_ bytes: inout [UInt8], width: Int, rows: Int, spp: Int, size: Int) {
    let values = width * spp, rowBytes = values * size
    for r in 0..<rows {
        let base = r * rowBytes
        for i in spp..<rowBytes { bytes[base + i] = bytes[base + i] &+ bytes[base + i - spp] }
        let planes = Array(bytes[base..<(base + rowBytes)])
        for v in 0..<values {
            for b in 0..<size { bytes[base + v * size + b] = planes[(size - 1 - b) * values + v] }
        }
    }
}

@Suite struct GeoTIFFWriterTests {
    @Test func predictorsInvert() {
        var random = SyntheticTerrain.Random(seed: 99)
        for size in [1, 2, 4, 8] {
            for spp in 1...4 {
                let width = 13, rows = 5
                let original = (0..<(width * rows * spp * size)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                var data = original
                data.withUnsafeMutableBytes {
                    TIFFPredictor.applyHorizontal(
                        $0, width: width, rows: rows, samplesPerPixel: spp, bytesPerSample: size)
                }
                #expect(data != original)
                undoHorizontalDifferencing(&data, width: width, rows: rows, spp: spp, size: size)
                #expect(data == original, "predictor 2, \(size)-byte samples, \(spp) per pixel")

                guard size == 4 || size == 8 else { continue }
                data = original
                data.withUnsafeMutableBytes {
                    TIFFPredictor.applyFloatingPoint(
                        $0, width: width, rows: rows, samplesPerPixel: spp, bytesPerSample: size)
                }
                #expect(data != original)
                undoFloatingPointPredictor(&data, width: width, rows: rows, spp: spp, size: size)
                #expect(data == original, "predictor 3, \(size)-byte samples, \(spp) per pixel")
            }
        }
    }

    @Test func predictorsMatchKnownVectors() {
        // Predictor 2 on 16-bit samples, two per pixel: each sample minus the same sample one pixel left.
        var shorts: [UInt16] = [100, 7, 103, 5, 90, 5]
        shorts.withUnsafeMutableBytes {
            TIFFPredictor.applyHorizontal($0, width: 3, rows: 1, samplesPerPixel: 2, bytesPerSample: 2)
        }
        #expect(shorts == [100, 7, 3, 65534, 65523, 0])

        // Predictor 3 on float32 [1.0, 2.0] (0x3F800000, 0x40000000): planes MSB first
        // [3F 40 | 80 00 | 00 00 | 00 00], then byte differences.
        var floats: [Float] = [1.0, 2.0]
        floats.withUnsafeMutableBytes {
            TIFFPredictor.applyFloatingPoint($0, width: 2, rows: 1, samplesPerPixel: 1, bytesPerSample: 4)
        }
        let bytes = floats.withUnsafeBytes { Array($0) }
        #expect(bytes == [0x3F, 0x01, 0x40, 0x80, 0x00, 0x00, 0x00, 0x00])
    }

    @Test(arguments: [false, true])
    func headerAndIFDDescribeTheImage(bigTIFF: Bool) throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }  // keep the directory until the test ends
        let path = "\(dir)/dem.tif"
        let raster = SampleRegion.elevation(
            terrain: SampleRegion.terrain(seed: 3, elevationSize: 100), width: 100, height: 70)
        var options = raster.writerOptions()
        options.blockWidth = 48
        options.blockHeight = 32
        if bigTIFF { options.format = .bigTIFF }
        let summary = try raster.write(to: path, options: options)
        let bytes = readFile(path)
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp-\(getpid())"))
        #expect(UInt64(bytes.count) == summary.fileSize && summary.isBigTIFF == bigTIFF)

        let tiff = ParsedTIFF(bytes)
        #expect(tiff.bigTIFF == bigTIFF)
        #expect(tiff.ifdOffset % 2 == 0 && tiff.ifdOffset < UInt64(bytes.count))
        #expect(tiff.tagOrder == tiff.tagOrder.sorted())
        #expect(tiff.value(TIFFTag.imageWidth) == 100 && tiff.value(TIFFTag.imageLength) == 70)
        #expect(tiff.value(TIFFTag.compression) == 8 && tiff.value(TIFFTag.predictor) == 2)
        #expect(tiff.value(TIFFTag.tileWidth) == 48 && tiff.value(TIFFTag.tileLength) == 32)
        #expect(tiff.value(TIFFTag.bitsPerSample) == 16 && tiff.value(TIFFTag.sampleFormat) == 2)
        #expect(tiff.value(TIFFTag.samplesPerPixel) == 1 && tiff.value(TIFFTag.photometric) == 1)
        #expect(tiff.tags[TIFFTag.gdalNoData]?.text == "-32768")
        #expect(tiff.tags[TIFFTag.modelPixelScale]?.doubles == [230.4, 23040.0 / 70, 0])
        #expect(tiff.tags[TIFFTag.modelTiepoint]?.doubles == [0, 0, 0, 323_910, 5_092_200, 0])
        #expect(
            tiff.tags[TIFFTag.geoKeyDirectory]?.integers.map { UInt16($0) } == [
                1, 1, 0, 5,
                1024, 0, 1, 1,
                1025, 0, 1, 1,
                1026, 34737, 22, 0,
                3072, 0, 1, 32632,
                3076, 0, 1, 9001,
            ])
        #expect(tiff.tags[TIFFTag.geoAsciiParams]?.text == "WGS 84 / UTM zone 32N|")

        // 3 × 3 blocks; each lies inside the file before the IFD and inflates to a full block
        // that, with predictor 2 undone, equals the raster rendered in one piece.
        let offsets = try #require(tiff.tags[TIFFTag.tileOffsets]).integers
        let counts = try #require(tiff.tags[TIFFTag.tileByteCounts]).integers
        #expect(tiff.tags[TIFFTag.tileOffsets]?.type == (bigTIFF ? 16 : 4))
        #expect(offsets.count == 9 && counts.count == 9)
        let expected = raster.rawSamples()
        for (i, (offset, count)) in zip(offsets, counts).enumerated() {
            #expect(offset >= 16 && offset + count <= tiff.ifdOffset)
            var block = try Zlib.inflate(Array(bytes[Int(offset)..<Int(offset + count)]), limit: 48 * 32 * 2)
            #expect(block.count == 48 * 32 * 2)
            undoHorizontalDifferencing(&block, width: 48, rows: 32, spp: 1, size: 2)
            let bx = i % 3, by = i / 3
            for row in 0..<32 where by * 32 + row < 70 {
                for col in 0..<48 where bx * 48 + col < 100 {
                    let src = ((by * 32 + row) * 100 + bx * 48 + col) * 2, dst = (row * 48 + col) * 2
                    if block[dst] != expected[src] || block[dst + 1] != expected[src + 1] {
                        Issue.record("block \(i) pixel (\(col), \(row)) differs")
                        return
                    }
                }
            }
        }
    }

    @Test func colourWithAlphaAndRotatedTransform() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }  // keep the directory until the test ends
        var options = GeoTIFFWriter.Options(width: 20, height: 20, samplesPerPixel: 4, sampleType: .uint16)
        options.photometric = .rgb
        options.alpha = true
        options.blockWidth = 16
        options.blockHeight = 16
        options.geoTransform = GeoTransform([1000, 2, 0.5, 2000, 0.25, -2])
        let writer = try GeoTIFFWriter(path: "\(dir)/rgba.tif", options: options)
        var calls: [(Int, Int)] = []
        try writer.write { bx, by, block in calls.append((bx, by)) }
        #expect(calls.map { "\($0.0),\($0.1)" } == ["0,0", "1,0", "0,1", "1,1"])
        let tiff = ParsedTIFF(readFile("\(dir)/rgba.tif"))
        #expect(tiff.tags[TIFFTag.extraSamples]?.integers == [2])
        #expect(tiff.tags[TIFFTag.bitsPerSample]?.integers == [16, 16, 16, 16])
        #expect(tiff.value(TIFFTag.photometric) == 2)
        #expect(tiff.tags[TIFFTag.modelPixelScale] == nil)
        #expect(
            tiff.tags[TIFFTag.modelTransformation]?.doubles == [
                2, 0.5, 0, 1000, 0.25, -2, 0, 2000, 0, 0, 0, 0, 0, 0, 0, 1,
            ])
    }

    @Test func switchesToBigTIFFWhenClassicOffsetsWouldOverflow() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }  // keep the directory until the test ends
        var options = GeoTIFFWriter.Options(width: 64, height: 64, samplesPerPixel: 1, sampleType: .uint8)
        options.blockWidth = 32
        options.blockHeight = 32
        options.predictor = .none
        // Incompressible blocks make a file of ~4 KiB plus the IFD.
        var random = SyntheticTerrain.Random(seed: 5)
        let noise = (0..<(64 * 64)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        func fill(_ bx: Int, _ by: Int, _ block: inout [UInt8]) {
            for i in 0..<(32 * 32) { block[i] = noise[(by * 32 + i / 32) * 64 + bx * 32 + i % 32] }
        }
        options.classicLimit = 1 << 20
        #expect(
            try GeoTIFFWriter(path: "\(dir)/small.tif", options: options).write(blockProvider: fill).isBigTIFF == false)
        options.classicLimit = 4096
        let summary = try GeoTIFFWriter(path: "\(dir)/big.tif", options: options).write(blockProvider: fill)
        #expect(summary.isBigTIFF)
        #expect(ParsedTIFF(readFile("\(dir)/big.tif")).bigTIFF)
        options.format = .classic
        let error = #expect(throws: TIFFWriteError.self) {
            try GeoTIFFWriter(path: "\(dir)/classic.tif", options: options).write(blockProvider: fill)
        }
        if error?.code == .tooLargeForClassicTIFF {
        } else {
            Issue.record("expected tooLargeForClassicTIFF, got \(String(describing: error))")
        }
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/classic.tif"))
        #expect(!FileManager.default.fileExists(atPath: "\(dir)/classic.tif.tmp-\(getpid())"))
    }

    @Test func unwritablePathIsATypedErrorNamingThePath() throws {
        let options = GeoTIFFWriter.Options(width: 16, height: 16, samplesPerPixel: 1, sampleType: .uint8)
        let path = "/nonexistent-tilepack-dir/out.tif"
        let writer = try GeoTIFFWriter(path: path, options: options)
        let error = #expect(throws: TIFFWriteError.self) { try writer.write { _, _, _ in } }
        #expect(error == .cannotCreate(path: path, errno: ENOENT))
        #expect(error?.description.contains(path) == true)
        #expect(error?.category == .environment)
    }

    @Test func failedWriteLeavesNoFile() throws {
        struct Boom: Error {}
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }  // keep the directory until the test ends
        let options = GeoTIFFWriter.Options(width: 64, height: 64, samplesPerPixel: 1, sampleType: .uint8)
        let writer = try GeoTIFFWriter(path: "\(dir)/x.tif", options: options)
        #expect(throws: Boom.self) {
            try writer.write { bx, by, _ in if bx == 0 && by == 0 { throw Boom() } }
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
    }

    @Test func invalidOptionsAreRefused() {
        func refuses(_ change: (inout GeoTIFFWriter.Options) -> Void) -> Bool {
            var o = GeoTIFFWriter.Options(width: 10, height: 10, samplesPerPixel: 1, sampleType: .float32)
            change(&o)
            do { _ = try GeoTIFFWriter(path: "/tmp/x.tif", options: o); return false } catch {
                return error.category == .invalidArgument && error.description.hasPrefix("/tmp/x.tif: ")
            }
        }
        #expect(refuses { $0.predictor = .horizontal })
        #expect(refuses { $0.blockWidth = 100 })
        #expect(refuses { $0.width = 0 })
        #expect(refuses { $0.photometric = .rgb })
        #expect(refuses { $0.alpha = true })
        #expect(
            refuses {
                $0.sampleType = .uint8; $0.predictor = .floatingPoint
            })
        #expect(
            refuses {
                $0.sampleType = .uint8; $0.predictor = .horizontal; $0.noData = 300
            })
        #expect(!refuses { $0.noData = .nan })
    }

    @Test func geoKeysAreSortedWithParamsOffsets() {
        let keys = GeoKeyDirectory(entries: [
            (GeoKey.geogCitation, .ascii("WGS 84")),
            (GeoKey.gtModelType, .shorts([2])),
            (GeoKey.geogInvFlattening, .doubles([298.257223563])),
            (GeoKey.gtCitation, .ascii("x")),
            (GeoKey.geogSemiMajorAxis, .doubles([6_378_137])),
        ])
        let e = GeoTIFFWriter.encodeGeoKeys(keys)
        #expect(
            e.directory == [
                1, 1, 0, 5, 1024, 0, 1, 2, 1026, 34737, 2, 0, 2049, 34737, 7, 2, 2057, 34736, 1, 0, 2059, 34736, 1, 1,
            ])
        #expect(e.doubles == [6_378_137, 298.257223563])
        #expect(e.ascii == "x|WGS 84|")
        #expect(GeoTIFFWriter.noDataText(-32768) == "-32768")
        #expect(GeoTIFFWriter.noDataText(-9999.5) == "-9999.5")
        #expect(GeoTIFFWriter.noDataText(.nan) == "nan")
    }
}
