import Foundation
import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackGeoTIFF
import TilePackTestSupport

/// Bad input gives a typed ``TIFFError`` of the right kind whose one-line message names the
/// file: never a crash, a hang or an allocation driven by an unchecked count.
@Suite struct TIFFReaderBadInputTests {
    /// Opens (and, if that works, reads all of) `bytes` and returns the error.
    private func failure(_ bytes: [UInt8], name: String = "bad.tif", in dir: TemporaryDirectory) throws -> TIFFError? {
        let path = try dir.write(name, bytes)
        do {
            let file = try TIFFFile(path: path)
            _ = try file.read(window: PixelWindow(x: 0, y: 0, width: file.image.width, height: file.image.height))
            return nil
        } catch {
            #expect(error.subject == path)
            #expect(error.description.hasPrefix(path + ": "))
            #expect(!error.description.contains("\n"))
            #expect(error.category == .invalidInput || error.category == .unsupported)
            return error
        }
    }

    private func valid(_ configure: (inout CraftedTIFF) -> Void = { _ in }) throws -> [UInt8] {
        var t = CraftedTIFF()
        configure(&t)
        return try t.build(t.makeSamples())
    }

    /// Byte position of the first-IFD pointer and of the IFD itself in a classic little-endian file.
    private func ifdOffset(_ file: [UInt8]) -> Int {
        Int(file[4]) | Int(file[5]) << 8 | Int(file[6]) << 16 | Int(file[7]) << 24
    }

    @Test func truncatedHeader() throws {
        let dir = TemporaryDirectory()
        #expect(try failure([0x49, 0x49, 42], in: dir)?.code == .truncated)
        #expect(try failure([], in: dir)?.code == .truncated)
        let cut = Array(try valid().prefix(100))
        #expect(try failure(cut, in: dir) != nil)
    }

    @Test func notATIFF() throws {
        let dir = TemporaryDirectory()
        #expect(try failure(Array("GIF89a-not-a-tiff".utf8), in: dir)?.code == .badHeader)
        #expect(try failure([0x49, 0x49, 41, 0, 8, 0, 0, 0], in: dir)?.code == .badHeader)
        #expect(try failure([0x49, 0x49, 43, 0, 4, 0, 0, 0, 16, 0, 0, 0, 0, 0, 0, 0], in: dir)?.code == .badHeader)
    }

    @Test func ifdOffsetPastTheEnd() throws {
        let dir = TemporaryDirectory()
        var file = try valid()
        file.replaceSubrange(4..<8, with: [0xF0, 0xFF, 0xFF, 0x0F])
        #expect(try failure(file, in: dir)?.code == .offsetPastEnd)
    }

    @Test func ifdLoop() throws {
        let dir = TemporaryDirectory()
        var file = try valid()
        let ifd = ifdOffset(file)
        let n = Int(file[ifd]) | Int(file[ifd + 1]) << 8
        let next = ifd + 2 + n * 12
        file.replaceSubrange(next..<next + 4, with: file[4..<8])  // next IFD = this IFD
        let error = try failure(file, in: dir)
        #expect(error?.code == .ifdLoop)
        #expect(error?.description.contains("loop") == true)
    }

    @Test func absurdDimensionsAndCounts() throws {
        let dir = TemporaryDirectory()
        // Width 0.
        #expect(try failure(try valid { $0.extraTags[256] = .longs([0]) }, in: dir)?.code == .absurdDimensions)
        // A tile of 2^20 × 2^20 pixels.
        let huge = try valid {
            $0.tile = (16, 16); $0.extraTags[322] = .longs([1 << 20]); $0.extraTags[323] = .longs([1 << 20])
        }
        #expect(try failure(huge, in: dir)?.code == .absurdDimensions)
        // A billion-pixel-high image in one-row strips: a billion blocks, over TIFFLimits.maxBlocks
        // (refused before its offsets are read; nothing is allocated).
        let tall = try valid {
            $0.extraTags[257] = .longs([1_000_000_000]); $0.extraTags[278] = .longs([1])
        }
        let tallError = try failure(tall, in: dir)
        #expect(tallError?.code == .absurdDimensions)
        #expect(tallError?.description.contains("\(TIFFLimits.maxBlocks)") == true)
        // Under the block cap the offsets and counts still have to agree.
        let short = try valid {
            $0.extraTags[257] = .longs([1_000_000]); $0.extraTags[278] = .longs([1])
        }
        #expect(try failure(short, in: dir)?.code == .badTag)
        // A tag claiming 2^31 doubles.
        let fat = try valid {
            $0.extraTags[TIFFTag.modelTiepoint] = .raw(type: 12, count: 1 << 31, bytes: [0, 0, 0, 0, 0, 0, 0, 0])
        }
        #expect(try failure(fat, in: dir)?.code == .absurdDimensions)
        // SamplesPerPixel 0.
        #expect(try failure(try valid { $0.extraTags[277] = .shorts([0]) }, in: dir)?.code == .absurdDimensions)
    }

    /// The 180-byte BigTIFF of issue 8 that killed `tilepack info`: a valid 8 × 1 image whose
    /// ModelPixelScale (DOUBLE) claims 2^63 values. The count was turned into an `Int` before
    /// any check, which traps; now it is refused as larger than the file.
    static func pixelScaleCountBomb(
        count: UInt64 = 1 << 63, tag: UInt16 = TIFFTag.modelPixelScale,
        type: UInt16 = 12
    ) -> [UInt8] {
        var file: [UInt8] = []
        func le<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { file += $0 } }
        // (tag, type, count, value): SHORT 3, LONG8 16; small values inline.
        let entries: [(UInt16, UInt16, UInt64, UInt64)] = [
            (256, 3, 1, 8), (257, 3, 1, 1), (258, 3, 1, 8), (273, 16, 1, 172),
            (277, 3, 1, 1), (279, 16, 1, 8), (tag, type, count, 8),
        ]
        file += [0x49, 0x49]; le(UInt16(43)); le(UInt16(8)); le(UInt16(0)); le(UInt64(16))
        le(UInt64(entries.count))
        for (tag, type, count, value) in entries { le(tag); le(type); le(count); le(value) }
        le(UInt64(0))  // no next IFD
        file += (0..<8).map { UInt8($0 * 30) }  // the pixels, at offset 172
        return file
    }

    @Test func bigTIFFTagCountOf2To63IsAnErrorNotATrap() throws {
        let dir = TemporaryDirectory()
        let bomb = Self.pixelScaleCountBomb()
        #expect(bomb.count == 180)
        let error = try failure(bomb, name: "scale-bomb.tif", in: dir)
        #expect(error?.code == .absurdDimensions)
        #expect(error?.description.contains("tag 33550") == true)
        // The same count on the other typed readers: integers (unsigned), rationals, floats.
        for (tag, type): (UInt16, UInt16) in [
            (TIFFTag.modelPixelScale, 5), (TIFFTag.modelPixelScale, 11),
            (TIFFTag.extraSamples, 3), (TIFFTag.extraSamples, 16),
            (TIFFTag.geoKeyDirectory, 3),
        ] {
            for count: UInt64 in [1 << 63, UInt64.max, 1 << 62, 1 << 32] {
                let error = try failure(Self.pixelScaleCountBomb(count: count, tag: tag, type: type), in: dir)
                #expect(error?.code == .absurdDimensions, "tag \(tag) type \(type) count \(count)")
            }
        }
        // `tilepack info`'s path: the report is built from the file alone.
        let path = try dir.write("info.tif", bomb)
        #expect(throws: TIFFError.self) { _ = try TIFFInfo(file: try TIFFFile(path: path)) }
    }

    @Test func compressionWiderThanAShortIsNotTruncatedOntoACode() throws {
        let dir = TemporaryDirectory()
        // 2^32 + 1 would wrap to 1 (none) if truncated to 16 bits; 2^63 would trap `Int(_:)`.
        for code: UInt64 in [1 << 32 | 1, 1 << 63, UInt64.max] {
            let file = Self.pixelScaleCountBomb(count: 1, tag: TIFFTag.compression, type: 16)
            var patched = file
            // The compression entry's inline value sits at the last entry's value field.
            let valueField = 16 + 8 + 6 * 20 + 12
            withUnsafeBytes(of: code.littleEndian) { patched.replaceSubrange(valueField..<valueField + 8, with: $0) }
            let error = try failure(patched, in: dir)
            if case .unsupported? = error?.code {} else { Issue.record("code \(code): \(String(describing: error))") }
        }
    }

    @Test func stripThatInflatesToTheWrongSize() throws {
        let dir = TemporaryDirectory()
        let short = try valid { t in
            t.compression = 8
            t.blockOverride = [0: try! Zlib.deflate([UInt8](repeating: 7, count: 10))]
        }
        let error = try failure(short, in: dir)
        #expect(error?.code == .corruptBlock)
        #expect(error?.description.contains("expected 48") == true)
        // Garbage instead of a zlib stream.
        let garbage = try valid { t in
            t.compression = 8; t.blockOverride = [0: [UInt8](repeating: 0x55, count: 40)]
        }
        #expect(try failure(garbage, in: dir)?.code == .corruptBlock)
        // An LZW code beyond the table.
        let lzw = try valid { t in
            t.compression = 5; t.blockOverride = [0: [0x80, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF]]
        }
        #expect(try failure(lzw, in: dir)?.code == .corruptBlock)
        // PackBits that runs out early.
        let pb = try valid { t in
            t.compression = 32773; t.blockOverride = [0: [0x02, 1, 2, 3]]
        }
        #expect(try failure(pb, in: dir)?.code == .corruptBlock)
        // Uncompressed strip shorter than the image needs.
        let un = try valid { t in t.blockOverride = [0: [1, 2, 3, 4]] }
        #expect(try failure(un, in: dir)?.code == .corruptBlock)
    }

    @Test func blockOffsetPastTheEnd() throws {
        let dir = TemporaryDirectory()
        let file = try valid { $0.extraTags[273] = .longs([0x7FFF_0000]) }
        #expect(try failure(file, in: dir)?.code == .offsetPastEnd)
        let long = try valid {
            $0.extraTags[279] = .longs([0x7FFF_0000]); $0.compression = 8
        }
        #expect(try failure(long, in: dir) != nil)
    }

    @Test func unsupportedFeaturesAreDeclinedByName() throws {
        let dir = TemporaryDirectory()
        let jpeg = try failure(try valid { $0.compression = 7 }, name: "photo.tif", in: dir)
        #expect(jpeg?.detail == "unsupported JPEG compression (code 7)")
        #expect(jpeg?.description.contains("photo.tif") == true)
        #expect(jpeg?.description.contains("JPEG") == true)
        #expect(
            try failure(try valid { $0.compression = 50000 }, in: dir)?.detail
                == "unsupported ZSTD compression (code 50000)")
        #expect(
            try failure(try valid { $0.compression = 50001 }, in: dir)?.detail
                == "unsupported WebP compression (code 50001)")
        #expect(
            try failure(try valid { $0.extraTags[258] = .shorts([1]) }, in: dir)?.detail
                == "unsupported 1-bit (bilevel) samples (code 1)")
        #expect(
            try failure(
                try valid {
                    $0.bits = 16; $0.sampleFormat = 3
                }, in: dir)?.detail == "unsupported 16-bit floating point samples (code 16)")
        #expect(
            try failure(try valid { $0.photometric = 6 }, in: dir)?.detail
                == "unsupported YCbCr photometric interpretation (subsampled colour) (code 6)")
        #expect(
            try failure(try valid { $0.extraTags[TIFFTag.predictor] = .shorts([9]) }, in: dir)?.detail
                == "unsupported predictor (code 9)")
    }

    @Test func missingFileAndWindowOutside() throws {
        let dir = TemporaryDirectory()
        let missing = dir.path + "/nope.tif"
        #expect(throws: TIFFError.self) { try TIFFFile(path: missing) }
        do { _ = try TIFFFile(path: missing) } catch {
            // Missing input (exit 2), not the machine failing (exit 1).
            #expect(error.code == .notFound && error.category == .notFound && error.description.hasPrefix(missing))
        }
        let file = try TIFFFile(path: try dir.write("ok.tif", try valid()))
        for w in [
            PixelWindow(x: -1, y: 0, width: 2, height: 2), PixelWindow(x: 0, y: 0, width: 9, height: 1),
            PixelWindow(x: 0, y: 0, width: 0, height: 1), PixelWindow(x: Int.max, y: 0, width: 2, height: 1),
        ] {
            do { _ = try file.read(window: w); Issue.record("window \(w) accepted") } catch {
                #expect(error.code == .badWindow)
            }
        }
    }

    /// Random byte flips in valid files: every outcome is success or a TIFFError, never a trap.
    @Test func mutatedFilesNeverCrash() throws {
        let dir = TemporaryDirectory()
        var seeds: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> Int {
            seeds ^= seeds << 13; seeds ^= seeds >> 7; seeds ^= seeds << 17; return Int(seeds % 1_000_000)
        }
        let bases = try [
            valid {
                $0.compression = 5; $0.predictor = 2; $0.bands = 3; $0.photometric = 2
            },
            valid {
                $0.compression = 8; $0.tile = (16, 16); $0.bits = 32; $0.sampleFormat = 3; $0.predictor = 3
            },
            valid {
                $0.compression = 32773; $0.bigTIFF = true; $0.order = .big; $0.planar = 2; $0.bands = 2
            },
        ]
        var declined = 0, decoded = 0
        for (b, base) in bases.enumerated() {
            for i in 0..<150 {
                var bytes = base
                for _ in 0..<(1 + next() % 4) { bytes[next() % bytes.count] = UInt8(next() % 256) }
                let path = try dir.write("fuzz\(b)-\(i).tif", bytes)
                do {
                    let file = try TIFFFile(path: path)
                    _ = try file.read(
                        window: PixelWindow(x: 0, y: 0, width: file.image.width, height: file.image.height))
                    decoded += 1
                } catch {
                    #expect(error.description.hasPrefix(path))
                    declined += 1
                }
            }
        }
        // Reaching here without a trap is the point; the split shows the flips exercised both
        // the error paths and the decoders (a flip in pixel data still decodes).
        #expect(declined > 0 && decoded > 0)
    }
}
