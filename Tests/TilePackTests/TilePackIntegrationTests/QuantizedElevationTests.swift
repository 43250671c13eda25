import Testing
@testable import TilePack
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackArchive
@testable import TilePackBuild
@testable import TilePackStore
import TilePackTestSupport

/// `q-planar-deflate` (QuantizedElevation): round trips, damaged blobs, a seeded fuzz, the
/// writer's metadata and format version, old archives, the build options.
@Suite struct QuantizedElevationTests {
    static let codec = ElevationEncoding.quantizedPlanarDeflate

    /// Encodes and decodes `values` at `step`; nil when the quantiser declines the tile.
    static func roundTrip(
        _ values: [Float], width: Int, height: Int, step: Double
    ) throws -> (blob: [UInt8], back: ElevationTile)? {
        let tile = ElevationTile(width: width, height: height, values: values)
        guard let blob = try QuantizedElevation.encode(tile, step: step) else { return nil }
        return (blob, try codec.decode(blob, width: width, height: height, path: "t"))
    }

    @Test func integersComeBackExactly() throws {
        var rng = SplitMix64(seed: 7)
        let w = 256, h = 256
        var values = [Float](repeating: 0, count: w * h)
        for y in 0..<h {
            for x in 0..<w {
                values[y * w + x] = Float(1200 + 3 * x - 2 * y) + Float(Int(rng.next() % 21) - 10)
            }
        }
        values[5] = 8849; values[6] = -11000; values[7] = -32768; values[8] = 0
        let (_, back) = try #require(try Self.roundTrip(values, width: w, height: h, step: 1))
        #expect(back.values.elementsEqual(values) { $0.bitPattern == $1.bitPattern })
    }

    @Test func floatsWithinHalfAStep() throws {
        var rng = SplitMix64(seed: 11)
        for step in [0.01, 0.1, 0.25, 1, 7.5] {
            let w = 97, h = 33
            var values = [Float](repeating: 0, count: w * h)
            for i in 0..<(w * h) {
                let x = Float(i % w), y = Float(i / w), noise = Float(rng.next() % 100_000) / 997
                values[i] = x * 0.731 - y * 1.9 + noise
            }
            let (_, back) = try #require(try Self.roundTrip(values, width: w, height: h, step: step))
            for (a, b) in zip(values, back.values) {
                #expect(Double(abs(a - b)) <= step / 2 + Double(a.ulp), "step \(step): \(a) came back \(b)")
            }
            // Decoding is exactly what the quantiser wrote: re-encoding the decoded grid is lossless.
            let (_, again) = try #require(try Self.roundTrip(back.values, width: w, height: h, step: step))
            #expect(again == back)
        }
    }

    @Test func nanIsKeptExactlyAndAllNaNIsTiny() throws {
        let w = 64, h = 64
        var values: [Float] = (0..<(w * h)).map { (i: Int) -> Float in Float(i % 64) * 0.5 }
        for i in stride(from: 0, to: values.count, by: 7) { values[i] = .nan }
        for i in 0..<w { values[10 * w + i] = .nan }  // a whole row
        let (_, back) = try #require(try Self.roundTrip(values, width: w, height: h, step: 0.5))
        #expect(back == ElevationTile(width: w, height: h, values: values))
        let payload = Float(bitPattern: 0x7fc0_1234)
        let all = [Float](repeating: payload, count: 256 * 256)
        let (blob, allBack) = try #require(try Self.roundTrip(all, width: 256, height: 256, step: 0.01))
        #expect(blob.count == QuantizedElevation.headerSize)
        #expect(allBack.values.allSatisfy { $0.bitPattern == 0x7fc0_1234 })
        // Several NaN payloads, infinities and values beyond ±2³⁰ steps are declined, not mangled.
        #expect(
            try QuantizedElevation.encode(ElevationTile(width: 2, height: 1, values: [.nan, payload]), step: 1) == nil)
        #expect(
            try QuantizedElevation.encode(ElevationTile(width: 2, height: 1, values: [1, .infinity]), step: 1) == nil)
        #expect(try QuantizedElevation.encode(ElevationTile(width: 1, height: 1, values: [1e8]), step: 0.01) == nil)
    }

    @Test func constantAndRampTilesAreSmall() throws {
        let constant = [Float](repeating: 1234.5, count: 256 * 256)
        let (cblob, cback) = try #require(try Self.roundTrip(constant, width: 256, height: 256, step: 0.5))
        #expect(cblob.count == QuantizedElevation.headerSize)
        #expect(cback.values.allSatisfy { $0 == 1234.5 })
        // A plane is predicted exactly by left + up − up-left: nothing but the first row and column.
        let ramp: [Float] = (0..<(256 * 256)).map { (i: Int) -> Float in
            let x = Float(i % 256), y = Float(i / 256)
            return x * 2 + y * 3
        }
        let (rblob, rback) = try #require(try Self.roundTrip(ramp, width: 256, height: 256, step: 1))
        #expect(rback.values == ramp)
        // 65,536 one-byte residuals, zero but for the first row and column: ~300 bytes deflated
        // (a Float32 ramp takes tens of KiB).
        let rampBytes = rblob.count
        #expect(rampBytes < 400, "a planar ramp took \(rampBytes) bytes")
    }

    @Test func damagedBlobsAreArchiveErrors() throws {
        let values: [Float] = (0..<(32 * 32)).map { (i: Int) -> Float in Float(i) * 0.37 }
        let (blob, _) = try #require(try Self.roundTrip(values, width: 32, height: 32, step: 0.01))
        func rejects(_ bytes: [UInt8], width: Int = 32, height: Int = 32, _ note: Comment) {
            #expect(throws: ArchiveError.self, note) {
                try Self.codec.decode(bytes, width: width, height: height, path: "d.mbtiles")
            }
        }
        rejects([], "empty")
        rejects(Array(blob.prefix(10)), "short header")
        rejects(Array(blob.prefix(blob.count - 3)), "truncated stream")
        rejects(blob + [0], "bytes after the stream")
        var wrong = blob; wrong[0] = 9; rejects(wrong, "layout version")
        wrong = blob; wrong[1] = 2; rejects(wrong, "predictor")
        wrong = blob; wrong[2] = 3; rejects(wrong, "residual width")
        wrong = blob; wrong[3] = 0x80; rejects(wrong, "flags")
        wrong = blob; for k in 4..<12 { wrong[k] = 0xff }; rejects(wrong, "NaN step")
        wrong = blob; for k in 4..<12 { wrong[k] = 0 }; rejects(wrong, "zero step")
        wrong = blob; wrong[2] = 4; rejects(wrong, "wider residuals than the stream holds")
        rejects(blob, width: 33, "grid larger than the stream")
        rejects(blob, width: 100_000, height: 100_000, "huge grid")
        rejects(blob, width: 0, "empty grid")
        var allNaN = blob; allNaN[3] = 2; rejects(allNaN, "all-NaN flag with data")
        // The error names the file on one line.
        do {
            _ = try Self.codec.decode(Array(blob.prefix(blob.count - 3)), width: 32, height: 32, path: "d.mbtiles")
        } catch let error as ArchiveError {
            #expect(error.description.hasPrefix("d.mbtiles: ") && !error.description.contains("\n"))
        }
    }

    /// A seeded mutation fuzz of the decoder: flipped, inserted and deleted bytes, and random
    /// grid sizes, must end in a grid or an ArchiveError (a trap fails the run).
    @Test func fuzzedBlobsNeverCrash() throws {
        var rng = SplitMix64(seed: 0x715F_E1E7)
        var corpus: [[UInt8]] = []
        for step in [0.01, 1.0] {
            let values: [Float] = (0..<(48 * 40)).map { (i: Int) -> Float in
                if i % 13 == 0 { return .nan }
                let x = Float(i % 48), y = Float(i / 48)
                return x * 1.7 + y * 0.3
            }
            corpus.append(
                try #require(
                    try QuantizedElevation.encode(ElevationTile(width: 48, height: 40, values: values), step: step)))
        }
        var decoded = 0, refused = 0
        for _ in 0..<1_500 {
            var blob = corpus[Int(rng.next() % UInt64(corpus.count))]
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let at = Int(rng.next() % UInt64(blob.count + 1))
                switch rng.next() % 4 {
                case 0 where at < blob.count: blob[at] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
                case 1: blob.insert(UInt8(truncatingIfNeeded: rng.next()), at: at)
                case 2 where at < blob.count: blob.remove(at: at)
                default: blob = Array(blob.prefix(at))
                }
            }
            let sizes = [(48, 40), (40, 48), (1, 1), (Int(rng.next() % 5000), Int(rng.next() % 70))]
            let (w, h) = sizes[Int(rng.next() % UInt64(sizes.count))]
            do {
                let grid = try Self.codec.decode(blob, width: w, height: h, path: "fuzz")
                #expect(grid.values.count == w * h)
                decoded += 1
            } catch {
                refused += 1
            }
        }
        #expect(decoded + refused == 1_500 && refused > 0)
    }

    @Test func writerRecordsFormatVersionTwoAndPrecision() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("q.mbtiles")
        var options = MBTilesWriter.Options()
        options.elevationStep = 0.01
        let writer = try MBTilesWriter(path: path, metadata: ArchiveFixture.metadata(), options: options)
        let id = TileID(z: 3, x: 1, y: 2)!
        let values: [Float] = (0..<(16 * 16)).map { (i: Int) -> Float in Float(i) * 0.123 }
        try writer.write([1], for: id)
        try writer.writeElevation(ElevationTile(width: 16, height: 16, values: values), for: id)
        try writer.finish()
        let reader = try MBTilesReader(path: path)
        #expect(reader.metadata["tilepack:format_version"] == "2")
        #expect(reader.metadata["tilepack:elevation_encoding"] == "q-planar-deflate")
        #expect(reader.metadata["tilepack:elevation_precision"] == "0.01")
        #expect(try reader.storedElevation(id)?.encoding == "q-planar-deflate")
        let back = try #require(try reader.elevation(id))
        for (a, b) in zip(values, back.values) { #expect(abs(a - b) <= 0.005 + a.ulp) }
        // The tile store decodes the same grid.
        let store = try TileStore(archives: [try MBTilesReader(path: path)], budget: MemoryBudget(parsing: "16MiB"))
        #expect(try store.elevation(id) == back)
    }

    /// A tile the quantiser declines (an infinity) is stored as Float32 beside quantised ones:
    /// both read back, the metadata says `per-tile`, and the version stays 2.
    @Test func declinedTilesFallBackToFloat32() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("mixed.mbtiles")
        var options = MBTilesWriter.Options()
        options.elevationStep = 1
        let writer = try MBTilesWriter(path: path, metadata: ArchiveFixture.metadata(), options: options)
        let plain = TileID(z: 4, x: 1, y: 1)!, odd = TileID(z: 4, x: 2, y: 1)!
        let whole: [Float] = (0..<64).map { (i: Int) -> Float in Float(i * 7) }
        var infinite = whole
        infinite[9] = .infinity
        for (id, values) in [(plain, whole), (odd, infinite)] {
            try writer.write([1], for: id)
            try writer.writeElevation(ElevationTile(width: 8, height: 8, values: values), for: id)
        }
        try writer.finish()
        let reader = try MBTilesReader(path: path)
        #expect(try reader.storedElevation(plain)?.encoding == "q-planar-deflate")
        #expect(try reader.storedElevation(odd)?.encoding.hasPrefix("f32") == true)
        #expect(try reader.elevation(plain)?.values == whole)
        #expect(try reader.elevation(odd)?.values == infinite)
        #expect(reader.metadata["tilepack:elevation_encoding"] == "per-tile")
        #expect(reader.metadata["tilepack:format_version"] == "2")
        #expect(reader.metadata["tilepack:elevation_precision"] == "1")
    }

    @Test func oldArchivesStillRead() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("old.mbtiles")
        var options = MBTilesWriter.Options()  // no step: Float32 as before format version 2
        options.elevationEncoding = nil
        let writer = try MBTilesWriter(path: path, metadata: ArchiveFixture.metadata(), options: options)
        let id = TileID(z: 3, x: 1, y: 2)!
        let values: [Float] = (0..<(16 * 16)).map { (i: Int) -> Float in Float(i) * 0.123 + 0.000_1 }
        try writer.write([1], for: id)
        try writer.writeElevation(ElevationTile(width: 16, height: 16, values: values), for: id)
        try writer.finish()
        let reader = try MBTilesReader(path: path)
        #expect(reader.metadata["tilepack:format_version"] == "1")
        #expect(reader.metadata["tilepack:elevation_precision"] == nil)
        #expect(try reader.elevation(id)?.values == values)
        let store = try TileStore(archives: [try MBTilesReader(path: path)], budget: MemoryBudget(parsing: "16MiB"))
        #expect(try store.elevation(id)?.values == values)
        // A version this tilepack does not know is refused, naming it.
        let db = try SQLiteConnection(path: path, mode: .readWriteExisting)
        try db.execute("UPDATE metadata SET value = '3' WHERE name = 'tilepack:format_version'")
        #expect(throws: ArchiveError.self) { try MBTilesReader(path: path) }
        try db.execute("UPDATE metadata SET value = 'two' WHERE name = 'tilepack:format_version'")
        #expect(throws: ArchiveError.self) { try MBTilesReader(path: path) }
    }

    @Test func sourceStepDetection() {
        let tenths = (0..<500).map { Float($0) * 0.1 + 100 }.sorted()
        #expect(ElevationPrecision.detectedStep(sortedValues: tenths) == 0.1)
        let halves = (0..<500).map { Float($0) * 0.5 - 20 }.sorted()
        #expect(ElevationPrecision.detectedStep(sortedValues: halves) == 0.5)
        let whole = (0..<500).map { Float($0 * 3) }
        #expect(ElevationPrecision.detectedStep(sortedValues: whole) == 1)
        let noisy = (0..<500).map { Float($0) * 0.1234567 }
        #expect(ElevationPrecision.detectedStep(sortedValues: noisy) == nil)
        let few = [Float](repeating: 5, count: 500)  // too few distinct values to prove a step
        #expect(ElevationPrecision.detectedStep(sortedValues: few) == nil)
        #expect(
            ElevationLevels.maxZoom.stores(zoom: 12, maxZoom: 12)
                && !ElevationLevels.maxZoom.stores(zoom: 11, maxZoom: 12))
        #expect(!ElevationLevels.none.stores(zoom: 12, maxZoom: 12) && ElevationLevels.all.stores(zoom: 3, maxZoom: 12))
    }

    @Test func badPrecisionIsAnInvalidOption() {
        for bad in [0, -0.01, .nan, .infinity] {
            var options = BuildOptions()
            options.elevationPrecision = bad
            #expect(throws: BuildError.self) { try options.validate() }
        }
        var fine = BuildOptions()
        fine.elevationPrecision = 0.5
        #expect(throws: Never.self) { try fine.validate() }
    }
}
