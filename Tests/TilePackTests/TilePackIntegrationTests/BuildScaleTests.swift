import Testing
import Foundation
@testable import TilePack
@testable import TilePackCore
@testable import TilePackGeoTIFF
@testable import TilePackBuild
@testable import TilePackSamples
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TilePackTestSupport

/// Issue 12: the memory budget's plan, builds under different budgets, and the streaming
/// GeoTIFF writer that makes big inputs (BigTIFF included).
@Suite(.tags(.concurrent)) struct BuildScaleTests {
    let MiB = 1 << 20

    @Test func smallerBudgetsMakeSmallerBlocksThenFewerWorkers() throws {
        let big = try BuildMemoryPlan(
            budget: 512 * MiB, workers: 2, blockLevels: 3, elevation: false, levelsAboveBlock: 10)
        #expect(big.blockLevels == 3 && big.workers == 2)
        #expect(big.estimatedPeakBytes <= 512 * MiB)
        #expect(big.sourceCacheBytes == 64 * MiB && big.sqliteCacheBytes == 16 * MiB)

        let tight = try BuildMemoryPlan(
            budget: 96 * MiB, workers: 2, blockLevels: 3, elevation: false, levelsAboveBlock: 10)
        #expect(tight.blockLevels < 3 && tight.workers == 2, "the block shrinks before the workers")
        #expect(tight.estimatedPeakBytes <= 96 * MiB)
        #expect(tight.sourceCacheBytes == 12 * MiB)

        // Elevation tiles keep metres too: the same budget holds a smaller block.
        let dem = try BuildMemoryPlan(
            budget: 96 * MiB, workers: 2, blockLevels: 3, elevation: true, levelsAboveBlock: 10)
        #expect(dem.blockLevels < tight.blockLevels)
        #expect(dem.estimatedPeakBytes <= 96 * MiB)

        let floor = BuildMemoryPlan.minimumBudget(elevation: false)
        let least = try BuildMemoryPlan(
            budget: floor, workers: 8, blockLevels: 3, elevation: false, levelsAboveBlock: 0)
        #expect(least.workers == 1 && least.blockLevels == 0)
        #expect(least.estimatedPeakBytes <= floor)

        // A requested ceiling is never exceeded, however generous the budget.
        let generous = try BuildMemoryPlan(
            budget: 64 << 30, workers: 3, blockLevels: 2, elevation: false, levelsAboveBlock: 4)
        #expect(generous.workers == 3 && generous.blockLevels == 2)
    }

    @Test func budgetBelowTheSmallestBuildIsATypedError() {
        let error = #expect(throws: BuildError.self) {
            try BuildMemoryPlan(budget: 8 * MiB, workers: 2, blockLevels: 3, elevation: false, levelsAboveBlock: 3)
        }
        #expect(error?.category == .invalidArgument)
        #expect(error?.description.contains("8 MiB") == true)

        // Through the `build` entry point it stays the caller's argument (usage, exit 64),
        // not a fault of the source file; no archive or temporary file is left.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tilepack-budget-\(UInt32.random(in: 0...UInt32.max))"
        ).path
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var request = RegionBuild.Request(sourcePath: EndToEndTests.sampleRegions + "/montblanc-dem.tif")
        request.outputPath = dir + "/dem.mbtiles"
        request.codec = .png
        request.options.memoryBudget = 1 * MiB
        let viaBuild = #expect(throws: BuildError.self) { try RegionBuild(request).run() }
        #expect((viaBuild as (any TilePackError)?)?.category == .invalidArgument)
        #expect((try? FileManager.default.contentsOfDirectory(atPath: dir))?.isEmpty == true)
    }

    /// An 8×8 block of zoom-10 tiles covered by a plate-carrée source (as BuildPipelineTests).
    func build(budget: Int, workers: Int = 2) throws -> (MemorySink, BuildReport) {
        let (src, geo) = zoom10BlockSource { c, r, b in Float((c * 7 + r * 3 + b * 50) % 256) }
        var options = BuildOptions()
        options.maxZoom = 10
        options.workers = workers
        options.memoryBudget = budget
        let sink = MemorySink()
        let report = try TileBuilder(source: src, georeference: geo, options: options, codec: RawCodec()).run(
            sink: sink)
        return (sink, report)
    }

    @Test func buildsUnderDifferentBudgetsWriteTheSameTiles() throws {
        let (roomy, r1) = try build(budget: 512 * MiB)
        // Zooms 7…10: three levels above one-tile blocks.
        let (tight, r2) = try build(budget: BuildMemoryPlan.minimumBudget(elevation: false, levelsAboveBlock: 3))
        #expect(r1.memory?.blockLevels == 3 && r1.memory?.workers == 2)
        #expect(r2.memory?.blockLevels == 0 && r2.memory?.workers == 1)
        #expect(roomy.writes.count == r1.tilesWritten && roomy.writes.count > 64)
        #expect(roomy.tiles == tight.tiles, "the budget changes the order and the batches, never a tile")
        // The small budget's blocks are one tile: far fewer buffers alive at once.
        #expect(r2.peakLiveTileBuffers < r1.peakLiveTileBuffers)
        #expect(r1.peakLiveTileBuffers >= 64)
        let levelsAbove = 10 - r2.metadata.minZoom
        #expect(r2.peakLiveTileBuffers <= 1 + 3 * levelsAbove + 4)
    }

    /// The writer streams: when block i is asked for, the blocks of earlier batches are
    /// already in the file, so memory holds one batch, not the image.
    @Test func streamingWriterHoldsOneBatchNotTheImage() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        var options = GeoTIFFWriter.Options(width: 1024, height: 1024, samplesPerPixel: 1, sampleType: .uint8)
        options.blockWidth = 32
        options.blockHeight = 32
        options.predictor = .none
        let path = "\(dir)/stream.tif"
        let temporary = "\(path).tmp-\(getpid())"
        let writer = try GeoTIFFWriter(path: path, options: options)
        let blocks = writer.blocksAcross * writer.blocksDown
        var random = SyntheticTerrain.Random(seed: 9)
        var sizeWhenAsked: [Int] = []
        try writer.write { _, _, block in
            var info = stat()
            sizeWhenAsked.append(stat(temporary, &info) == 0 ? Int(info.st_size) : -1)
            for i in block.indices { block[i] = UInt8(truncatingIfNeeded: random.next()) }  // incompressible
        }
        #expect(sizeWhenAsked.count == blocks)
        let batch = 4 * ProcessorInfo.activeCount
        // Block i is requested after every block before its batch was written (≥ 1 KiB each).
        for (i, size) in sizeWhenAsked.enumerated() {
            let written = (i / batch) * batch
            #expect(size >= 16 + written * 1024, "block \(i): \(size) bytes on disk")
        }
    }

    @Test func bigTIFFRoundTripsThroughTheReader() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let raster = SampleRegion.color(
            terrain: SampleRegion.terrain(seed: 3, elevationSize: 96), width: 100, height: 70)
        for (name, format) in [("big", GeoTIFFWriter.Format.bigTIFF), ("auto", .automatic)] {
            var options = raster.writerOptions()
            options.blockWidth = 32
            options.blockHeight = 32
            options.format = format
            options.classicLimit = 2048  // the automatic switch without writing 4 GiB
            let summary = try raster.write(to: "\(dir)/\(name).tif", options: options)
            #expect(summary.isBigTIFF)
            let file = try TIFFFile(path: "\(dir)/\(name).tif")
            #expect(file.isBigTIFF && file.image.width == 100 && file.image.height == 70 && file.image.bands == 3)
            #expect(try file.read(window: PixelWindow(x: 0, y: 0, width: 100, height: 70)).bytes == raster.rawSamples())
            let geo = try GeoReference(image: file.image, path: file.path)
            #expect(geo.crs.epsg == 4326)
        }
    }

    /// `--terrain-step`: a lattice node depends only on its position, so a file written block
    /// by block equals the image rendered whole, for colour (with alpha) and a DEM with nodata.
    @Test func terrainStepImagesAreTheSameWhateverTheBlocks() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }
        let terrain = SampleRegion.terrain(seed: 4, elevationSize: 40)
        let rasters = [
            SampleRegion.color(terrain: terrain, width: 150, height: 90, alpha: true).withTerrainStep(4),
            SampleRegion.elevation(terrain: terrain, width: 120, height: 100).withTerrainStep(3),
        ]
        for (i, raster) in rasters.enumerated() {
            var options = raster.writerOptions()
            options.blockWidth = 32
            options.blockHeight = 48
            try raster.write(to: "\(dir)/\(i).tif", options: options)
            let file = try TIFFFile(path: "\(dir)/\(i).tif")
            let whole = raster.rawSamples()
            #expect(
                try file.read(window: PixelWindow(x: 0, y: 0, width: raster.width, height: raster.height)).bytes
                    == whole)
            // Interpolation, not a copy of the lattice: neighbours differ inside a cell.
            #expect(Set(whole).count > 10)
        }
        // The step keeps the nodata corner exact: pixel (0, 0) is nodata, (119, 99) is not.
        let dem = rasters[1].rawSamples()
        #expect(Int16(littleEndian: dem.withUnsafeBytes { $0.load(as: Int16.self) }) == -32768)
        #expect(
            Int16(littleEndian: dem.withUnsafeBytes { $0.load(fromByteOffset: (99 * 120 + 119) * 2, as: Int16.self) })
                > 900)
    }
}
