import ArgumentParser
import Crypto
import TilePack
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tilepack sample-region`: writes the synthetic Mont Blanc DEM and colour GeoTIFFs.
struct SampleRegionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sample-region",
        abstract: "Write the synthetic Mont Blanc sample region: a DEM (EPSG:32632) and a colour image (EPSG:4326).",
        discussion: """
            The terrain is generated from --seed alone (same seed, same bytes). Files are tiled \
            Deflate GeoTIFFs with predictor 2 (integers) or 3 (floats): DIR/montblanc-dem.tif \
            (int16 metres, nodata -32768 in the top-left corner) and DIR/montblanc-color.tif (RGB). \
            --size 8192 writes a large pair of the same ground for benchmarks. Any size streams \
            (memory holds a few blocks per core) and becomes BigTIFF past 4 GiB; --terrain-step 4 \
            evaluates the terrain every 4th pixel and interpolates, ~16× faster, for \
            32768-pixel benchmark inputs.
            """
    )

    enum Product: String, ExpressibleByArgument, CaseIterable {
        case dem, color, both
    }

    enum PredictorChoice: String, ExpressibleByArgument, CaseIterable {
        case auto, none, horizontal, float
    }

    @Option(help: "Seed of the terrain generator.")
    var seed: UInt64 = 1

    @Option(help: "Directory to write into (created if missing).")
    var out: String

    @Option(help: "DEM side in pixels over the same 23 km square (768 → 30 m); the colour image gets 4/3·size × size.")
    var size: Int = 768

    @Option(help: "Override the width in pixels of both images.")
    var width: Int?

    @Option(help: "Override the height in pixels of both images.")
    var height: Int?

    @Option(help: "Which image(s) to write: dem, color or both.")
    var only: Product = .both

    @Option(help: "DEM sample type: int16, uint16, int32, uint32, int64, uint64, float32, float64.")
    var demType: String = "int16"

    @Option(help: "Colour sample type: uint8, uint16, uint32, float32, float64 (floats hold 0…1).")
    var colorType: String = "uint8"

    @Flag(help: "Add an unassociated alpha band to the colour image (transparent bottom-right corner).")
    var alpha = false

    @Option(help: "Predictor: auto (2 for integers, 3 for floats), none, horizontal or float.")
    var predictor: PredictorChoice = .auto

    @Option(help: "Tile size in pixels (a multiple of 16).")
    var blockSize: Int = 256

    @Option(help: "Deflate level 1…9.")
    var level: Int32 = 6

    @Option(
        help:
            """
            Evaluate the terrain every N pixels and interpolate between (N² fewer terrain samples; the terrain's \
            finest detail becomes 1.5·N pixels). 1 = every pixel.
            """
    )
    var terrainStep: Int = 1

    @Flag(help: "Write BigTIFF even when classic TIFF would do.")
    var bigtiff = false

    @Flag(
        help:
            """
            Also write each image's raw samples (row-major, interleaved, little-endian) as DIR/<name>.raw, for \
            verification.
            """
    )
    var raw = false

    @Flag(help: "Print the SHA-256 of each image's raw samples (renders the whole image in memory).")
    var checksum = false

    func validate() throws {
        guard size > 0, size <= 1 << 20 else { throw ValidationError("--size must be 1…1048576") }
        // 2^20 a side is a 32768× larger image than the samples: a bound on what --raw or
        // --checksum (which render the whole image in memory) could be asked to hold.
        if let width, !(1...(1 << 20)).contains(width) { throw ValidationError("--width must be 1…1048576") }
        if let height, !(1...(1 << 20)).contains(height) { throw ValidationError("--height must be 1…1048576") }
        if raw || checksum, (width ?? size) * (height ?? size) > 1 << 28 {
            throw ValidationError("--raw and --checksum hold the whole image in memory: at most 2^28 pixels")
        }
        guard let dem = SampleType(rawValue: demType), SampleRegion.elevationTypes.contains(dem) else {
            throw ValidationError(
                "--dem-type must be one of \(SampleRegion.elevationTypes.map(\.rawValue).joined(separator: ", "))")
        }
        guard let color = SampleType(rawValue: colorType), SampleRegion.colorTypes.contains(color) else {
            throw ValidationError(
                "--color-type must be one of \(SampleRegion.colorTypes.map(\.rawValue).joined(separator: ", "))")
        }
        _ = (dem, color)
        guard blockSize > 0, blockSize % 16 == 0 else {
            throw ValidationError("--block-size must be a positive multiple of 16")
        }
        guard (1...9).contains(level) else { throw ValidationError("--level must be 1…9") }
        guard (1...64).contains(terrainStep) else { throw ValidationError("--terrain-step must be 1…64") }
    }

    func run() throws {
        if let failure = makeDirectories(out) {
            printError("\(out): cannot create directory: \(failure)")
            throw ExitCode(1)
        }
        let terrain = SampleRegion.terrain(seed: seed, elevationSize: max(1, size / terrainStep))
        var rasters: [(String, SampleRaster)] = []
        if only != .color {
            rasters.append(
                (
                    "montblanc-dem",
                    SampleRegion.elevation(
                        terrain: terrain, width: width ?? size, height: height ?? size,
                        sampleType: SampleType(rawValue: demType)!)
                ))
        }
        if only != .dem {
            rasters.append(
                (
                    "montblanc-color",
                    SampleRegion.color(
                        terrain: terrain, width: width ?? (size * 4 + 2) / 3, height: height ?? size,
                        sampleType: SampleType(rawValue: colorType)!, alpha: alpha)
                ))
        }
        for (name, full) in rasters {
            let raster = full.withTerrainStep(terrainStep)
            let path = join(out, "\(name).tif")
            var options = raster.writerOptions()
            options.blockWidth = blockSize
            options.blockHeight = blockSize
            options.compressionLevel = level
            if bigtiff { options.format = .bigTIFF }
            switch predictor {
            case .auto: break
            case .none: options.predictor = .none
            case .horizontal: options.predictor = .horizontal
            case .float: options.predictor = .floatingPoint
            }
            let started = ContinuousClock.now
            let summary: GeoTIFFWriter.Summary
            do {
                summary = try raster.write(to: path, options: options)
            } catch let error as any TilePackError {
                printError(error.description)
                throw ExitCode(error.category.exitStatus)
            }
            let elapsed = ContinuousClock.now - started
            print(
                """
                \(path): \(raster.width)×\(raster.height)×\(raster.bands) \(raster.sampleType.rawValue) \
                EPSG:\(raster.epsg) 
                """
                    + """
                    \(summary.isBigTIFF ? "BigTIFF" : "TIFF") \(summary.blockCount) blocks \(summary.fileSize) \
                    bytes 
                    """
                    + "in \((elapsed.inSeconds * 100).rounded() / 100) s")
            if raw || checksum {
                let samples = raster.rawSamples()
                if raw {
                    let rawPath = join(out, "\(name).raw")
                    do {
                        try Data(samples).write(to: URL(fileURLWithPath: rawPath))
                    } catch {
                        printError("\(rawPath): cannot write: \(error)")
                        throw ExitCode(1)
                    }
                }
                if checksum {
                    print("\(name) raw-sha256 \(SampleRaster.sha256(of: samples))")
                }
            }
        }
    }

    private func join(_ directory: String, _ file: String) -> String {
        directory.hasSuffix("/") ? directory + file : directory + "/" + file
    }

    /// `mkdir -p`: nil on success, else the system's reason.
    private func makeDirectories(_ path: String) -> String? {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += part + "/"
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST { return String(cString: strerror(errno)) }
        }
        var info = stat()
        guard stat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR else { return "not a directory" }
        return nil
    }
}
