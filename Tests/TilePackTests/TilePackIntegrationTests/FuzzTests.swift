import Foundation
import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackEncoders
@testable import TilePackArchive
@testable import TilePackGeoTIFF
import TilePackTestSupport

/// A seeded mutation fuzzer over the two parsers that read files from outside: the TIFF
/// reader and the MBTiles reader (with the tile and elevation decoders behind it).
///
/// Each iteration mutates one file of a small in-process corpus, writes it, opens it and
/// reads everything the file offers. It must end in success or a thrown ``TilePackError``
/// whose description is one line; a trap kills the test process, which fails the run (the
/// temporary directory, printed at the start, then still holds the input that did it).
///
/// `swift test` runs ``defaultIterations`` in total, half per target; set
/// `TILEPACK_FUZZ_ITERATIONS` to run more (README, "Layout and checks") and
/// `TILEPACK_FUZZ_SEED` to explore other sequences. Deterministic: no system randomness.
@Suite struct FuzzTests {
    /// Total iterations (both targets) when no environment variable says otherwise: sized so
    /// the suite stays a few seconds in a debug build on two cores.
    static let defaultIterations = 4_000

    static var totalIterations: Int {
        ProcessInfo.processInfo.environment["TILEPACK_FUZZ_ITERATIONS"].flatMap { Int($0) }.map { max(2, $0) }
            ?? defaultIterations
    }

    static var seed: UInt64 {
        ProcessInfo.processInfo.environment["TILEPACK_FUZZ_SEED"].flatMap { UInt64($0) } ?? 0x7469_6C65_7061_636B
    }

    /// How a fuzz run ended, counted per outcome.
    struct Tally: CustomStringConvertible {
        var target: String
        var iterations = 0
        var succeeded = 0
        var declined = 0
        var seconds = 0.0
        var description: String {
            "fuzz \(target): \(iterations) iterations, \(succeeded) read whole, \(declined) typed errors, 0 crashes, "
                + String(format: "%.2f s", seconds)
        }
    }

    // MARK: - TIFF

    @Test func tiffReaderSurvivesMutations() throws {
        let dir = TemporaryDirectory()
        let corpus = try Self.tiffCorpus(in: dir)
        var rng = SplitMix64(seed: Self.seed)
        var tally = Tally(target: "TIFF")
        let iterations = Self.totalIterations / 2
        let path = dir.file("mutant.tif")
        print("fuzz TIFF: \(iterations) iterations over \(corpus.count) files, inputs in \(dir.path)")
        // Unlink, then create: rewriting a truncated file makes ext4 flush it on close
        // (its replace-via-truncate heuristic), which measured 5× slower here.
        Self.mutate(
            corpus, into: path, iterations: iterations, rng: &rng, tally: &tally, stale: [""],
            errorsName: path
        ) { try Self.readEverything(tiff: path) }
    }

    /// Opens `path`, builds the `info` report and decodes the main image and every overview.
    /// Windows are capped at 512 × 512: a mutated header may declare a huge image that the
    /// reader would faithfully decode (sparse blocks read as zeros), which tests nothing.
    static func readEverything(tiff path: String) throws {
        let file = try TIFFFile(path: path, cacheBytes: 1 << 20)
        _ = try TIFFInfo(file: file).json
        func window(_ image: TIFFImage) -> PixelWindow {
            PixelWindow(x: 0, y: 0, width: min(image.width, 512), height: min(image.height, 512))
        }
        _ = try file.read(window: window(file.image))
        for (i, overview) in file.overviews.enumerated() {
            _ = try file.read(window: window(overview), overview: i)
        }
    }

    /// Small valid TIFFs covering both flavours, both byte orders, strips and tiles, every
    /// compression and predictor, planar 1 and 2, GeoTIFF tags, a palette and an overview.
    static func tiffCorpus(in dir: TemporaryDirectory) throws -> [[UInt8]] {
        func crafted(_ configure: (inout CraftedTIFF) -> Void) throws -> [UInt8] {
            var t = CraftedTIFF()
            configure(&t)
            return try t.build(t.makeSamples())
        }
        let geoTags: [UInt16: CraftedTIFF.Value] = [
            TIFFTag.modelPixelScale: .doubles([30, 30, 0]),
            TIFFTag.modelTiepoint: .doubles([0, 0, 0, 499_985, 4_000_015, 0]),
            TIFFTag.geoKeyDirectory: .shorts([
                1, 1, 0, 4, 1024, 0, 1, 1, 1025, 0, 1, 1,
                3072, 0, 1, 32633, 3073, TIFFTag.geoAsciiParams, 6, 0,
            ]),
            TIFFTag.geoAsciiParams: .ascii("UTM33|"),
            TIFFTag.gdalNoData: .ascii("-9999"),
        ]
        var corpus: [[UInt8]] = [
            try crafted {
                $0.width = 16; $0.height = 16; $0.rowsPerStrip = 5
            },
            try crafted {
                $0.width = 24; $0.height = 20; $0.order = .big; $0.compression = 5; $0.predictor = 2
                $0.bands = 3; $0.photometric = 2; $0.rowsPerStrip = 7
            },
            try crafted {
                $0.width = 32; $0.height = 32; $0.bigTIFF = true; $0.compression = 8; $0.tile = (16, 16)
                $0.bits = 32; $0.sampleFormat = 3; $0.predictor = 3
            },
            try crafted {
                $0.width = 40; $0.height = 24; $0.bigTIFF = true; $0.order = .big; $0.compression = 32773
                $0.tile = (16, 16); $0.planar = 2; $0.bands = 2; $0.bits = 16
            },
            try crafted {
                $0.width = 64; $0.height = 64; $0.compression = 8; $0.tile = (32, 32); $0.bits = 16
                $0.sampleFormat = 2; $0.predictor = 2; $0.extraTags = geoTags
            },
            try crafted {
                $0.width = 16; $0.height = 16; $0.photometric = 3
                $0.extraTags[TIFFTag.colorMap] = .shorts((0..<768).map { UInt16($0 * 85) })
            },
            try crafted {
                $0.width = 20; $0.height = 18; $0.order = .big; $0.bits = 24; $0.rowsPerStrip = 4
            },
            try crafted {
                $0.width = 16; $0.height = 16; $0.compression = 32946; $0.bits = 64; $0.sampleFormat = 3
                $0.tile = (16, 16)
            },
        ]
        for (order, big) in [(TIFFByteOrder.little, false), (.big, true)] {
            var main = CraftedTIFF(), overview = CraftedTIFF()
            main.order = order; main.bigTIFF = big; main.width = 32; main.height = 32; main.compression = 5
            main.tile = (16, 16)
            overview.order = order; overview.bigTIFF = big; overview.width = 16; overview.height = 16
            overview.compression = 8; overview.extraTags[TIFFTag.newSubfileType] = .longs([1])
            corpus.append(try CraftedTIFF.chained(main, overview: overview))
        }
        // The project's own writer: tiled Deflate with predictors and the GeoTIFF tags it writes.
        for (format, type, bands) in [(GeoTIFFWriter.Format.classic, SampleType.float32, 1), (.bigTIFF, .uint8, 3)] {
            var options = GeoTIFFWriter.Options(width: 48, height: 32, samplesPerPixel: bands, sampleType: type)
            options.blockWidth = 16; options.blockHeight = 16; options.format = format
            options.photometric = bands == 3 ? .rgb : .minIsBlack
            options.geoTransform = GeoTransform([6.8, 0.001, 0, 45.9, 0, -0.001])
            options.geoKeys = GeoKeyDirectory(entries: [
                (GeoKey.gtModelType, .shorts([2])),
                (GeoKey.geographicType, .shorts([4326])),
            ])
            options.noData = bands == 1 ? -9999 : nil
            let path = dir.file("writer-\(bands).tif")
            try GeoTIFFWriter(path: path, options: options).write { bx, by, block in
                for i in block.indices { block[i] = UInt8(truncatingIfNeeded: i &* 7 &+ bx &* 31 &+ by) }
            }
            corpus.append(readFile(path))
        }
        // Every corpus file must read whole before mutation, or the fuzzer starts from noise.
        for (i, bytes) in corpus.enumerated() {
            let path = try dir.write("corpus-\(i).tif", bytes)
            do { try readEverything(tiff: path) } catch { Issue.record("corpus file \(i) does not read: \(error)") }
        }
        return corpus
    }

    // MARK: - MBTiles

    @Test func mbtilesReaderSurvivesMutations() throws {
        let dir = TemporaryDirectory()
        let corpus = try Self.archiveCorpus(in: dir)
        var rng = SplitMix64(seed: Self.seed ^ 0xA5A5_A5A5)
        var tally = Tally(target: "MBTiles")
        let iterations = Self.totalIterations - Self.totalIterations / 2
        let path = dir.file("mutant.mbtiles")
        print(
            """
            fuzz MBTiles: \(iterations) iterations over \(corpus.count) archives (\(corpus.map(\.count)) bytes), \
            inputs in \(dir.path)
            """
        )
        Self.mutate(
            corpus, into: path, iterations: iterations, rng: &rng, tally: &tally,
            stale: ["", "-journal", "-wal", "-shm"], errorsName: nil
        ) { try Self.readEverything(archive: path) }
    }

    /// Opens the archive and reads what `query` and the tile store would: metadata, every
    /// tile of every zoom (decoded with the archive's codec), every elevation tile.
    static func readEverything(archive path: String) throws {
        let reader = try MBTilesReader(path: path)
        let decoder = TileCodecChoice(metadata: reader.metadata)?.decoder()
        let size = reader.tileSize
        _ = try reader.tileCount
        // A mutated metadata row may claim zooms 0…24; listing an empty zoom is one cheap query.
        for zoom in reader.zoomRange ?? 0...2 {
            for id in try reader.tileIDs(zoom: zoom) {
                if let data = try reader.tile(id), let decoder {
                    _ = try decoder.decode(data, width: size, height: size)
                }
                _ = try reader.elevation(id)
            }
        }
    }

    /// Two archives of 16 × 16 tiles, shrunk to 512-byte pages so mutations land on structure:
    /// PNG tiles with elevation (both encodings), and PVRTC4 tiles, one raw and one zlib-wrapped.
    static func archiveCorpus(in dir: TemporaryDirectory) throws -> [[UInt8]] {
        let side = 16
        func rgba(_ seed: Int) -> [UInt8] {
            (0..<(side * side * 4)).map { i in UInt8(truncatingIfNeeded: (i % 4 == 3) ? 255 : i &* seed &+ i / 64) }
        }
        let ids = [TileID(z: 0, x: 0, y: 0), TileID(z: 1, x: 0, y: 0), TileID(z: 1, x: 1, y: 1)].compactMap { $0 }
        var corpus: [[UInt8]] = []
        for codec in [TileCodecChoice.png, .pvrtc4, .astc6x6] {
            let path = dir.file("\(codec.rawValue).mbtiles")
            let metadata = MBTilesMetadata(
                name: "fuzz \(codec.rawValue)", format: codec == .png ? "png" : "pvrtc",
                codec: codec.rawValue, minZoom: 0, maxZoom: 1,
                payloadCompression: codec.payloadCompression, tileSize: side)
            let writer = try MBTilesWriter(path: path, metadata: metadata)
            for (n, id) in ids.enumerated() {
                let pixels = rgba(n + 3)
                switch codec {
                case .png:
                    try writer.write(try PNGEncoder().encode(rgba: pixels, width: side, height: side), for: id)
                case .pvrtc4, .pvrtc2:
                    let words = try PVRTCCodec(format: .pvrtc4, level: .fast).encode(
                        rgba: pixels, width: side, height: side)
                    try writer.write(n == 1 ? try Zlib.deflate(words) : words, for: id)
                case .astc4x4, .astc6x6, .astc8x8:
                    let blocks = try ASTCCodec(format: codec.astcFormat!, level: .fast).encode(
                        rgba: pixels, width: side, height: side)
                    try writer.write(n == 1 ? try Zlib.deflate(blocks) : blocks, for: id)
                }
            }
            if codec == .png {
                let values = (0..<(side * side)).map { Float($0 % 37) * 12.5 - 40 }
                try writer.writeElevation(ElevationTile(width: side, height: side, values: values), for: ids[1])
                try writer.writeElevation(
                    ElevationTile(width: side, height: side, values: values.map { $0 + 1 }), for: ids[2])
            }
            try writer.finish()
            do {
                let db = try SQLiteConnection(path: path, mode: .readWriteCreate)
                try db.execute("PRAGMA journal_mode = DELETE")
                try db.execute("PRAGMA page_size = 512")
                try db.execute("VACUUM")
            }
            for suffix in ["-journal", "-wal", "-shm"] { unlink(path + suffix) }
            try readEverything(archive: path)
            corpus.append(readFile(path))
        }
        return corpus
    }

    // MARK: - Shared

    /// The contract for a declined input: a ``TilePackError`` on one line (naming `path`
    /// when the error type carries one).
    static func check(_ error: any Error, path: String?) {
        guard let typed = error as? any TilePackError else {
            Issue.record("not a TilePackError: \(type(of: error)): \(error)")
            return
        }
        #expect(!typed.description.contains("\n"), "multi-line error: \(typed.description)")
        #expect(!typed.description.isEmpty)
        if let path {
            #expect(typed.description.hasPrefix(path + ": "), "error does not name the file: \(typed.description)")
        }
    }

    /// The mutation loop both targets share: each iteration writes a mutant of a random corpus
    /// file to `path` (after removing `path` + each of `stale`), reads it with `read`, and
    /// counts a whole read or a declined input (checked with ``check(_:path:)``). Both
    /// outcomes must occur, or the mutations are too weak (all decode) or too blunt (nothing
    /// gets past the header) to exercise the reader.
    static func mutate(
        _ corpus: [[UInt8]], into path: String, iterations: Int, rng: inout SplitMix64,
        tally: inout Tally, stale: [String], errorsName: String?, read: () throws -> Void
    ) {
        let clock = ContinuousClock(), start = clock.now
        for _ in 0..<iterations {
            let base = corpus[rng.below(corpus.count)]
            for suffix in stale { unlink(path + suffix) }
            writeFile(path, Mutator.mutate(base, rng: &rng))
            do {
                try read()
                tally.succeeded += 1
            } catch {
                tally.declined += 1
                check(error, path: errorsName)
            }
            tally.iterations += 1
        }
        tally.seconds = (clock.now - start).inSeconds
        print(tally)
        #expect(tally.succeeded > 0)
        #expect(tally.declined > 0)
    }
}

/// Byte-level mutations of the kinds that break parsers: flipped bits, bytes forced to their
/// extremes, counts and offsets overwritten with 2^31, 2^63, 0xFFFFFFFF and friends in either
/// byte order, truncation, and duplicated or removed chunks.
enum Mutator {
    static let extremes: [UInt64] = [
        0, 1, 2, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x1_0000,
        0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 1 << 32, 1 << 62, 1 << 63, UInt64.max, UInt64.max >> 1,
    ]

    static func mutate(_ input: [UInt8], rng: inout SplitMix64) -> [UInt8] {
        var b = input
        for _ in 0..<(1 + rng.below(4)) {
            guard !b.isEmpty else { break }
            let at = rng.below(b.count)
            switch rng.below(9) {
            case 0:
                b[at] ^= 1 << UInt8(rng.below(8))
            case 1:
                b[at] = [0, 0xFF, UInt8(truncatingIfNeeded: rng.next())][rng.below(3)]
            case 2, 3, 4:
                // A 2-, 4- or 8-byte field overwritten with an extreme value.
                let width = [2, 4, 8][rng.below(3)]
                var value = extremes[rng.below(extremes.count)]
                if rng.below(4) == 0 { value = value &+ UInt64(rng.below(3)) &- 1 }
                let bigEndian = rng.below(2) == 0
                for k in 0..<width where at + k < b.count {
                    let shift = UInt64(8 * (bigEndian ? width - 1 - k : k))
                    b[at + k] = UInt8(truncatingIfNeeded: value >> shift)
                }
            case 5:
                b.removeSubrange(rng.below(b.count + 1 - min(b.count, 1))...)
            case 6:
                // A chunk copied over another place (a duplicated entry, a repeated page).
                let length = 1 + rng.below(min(64, b.count))
                let from = rng.below(b.count - length + 1)
                let chunk = Array(b[from..<from + length])
                let to = rng.below(b.count - length + 1)
                b.replaceSubrange(to..<to + length, with: chunk)
            case 7:
                // A chunk duplicated in place: everything after it shifts.
                let length = 1 + rng.below(min(32, b.count))
                let from = rng.below(b.count - length + 1)
                b.insert(contentsOf: b[from..<from + length], at: from)
            default:
                let length = 1 + rng.below(min(32, b.count))
                let from = rng.below(b.count - length + 1)
                b.removeSubrange(from..<from + length)
            }
        }
        return b
    }
}
