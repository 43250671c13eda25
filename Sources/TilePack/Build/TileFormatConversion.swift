import TilePackCore
import TilePackCodec
import TilePackEncoders
import TilePackArchive
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `tilepack convert --to png`: every tile of an MBTiles archive decoded and written again in
/// another tile format, the rest of the archive (metadata, elevation table) carried over. Today
/// the one target is PNG, the form GIS tools read (GDAL, QGIS, rio-mbtiles, mb-util): a KTX2
/// archive opens there only after this. (Changing the container, MBTiles ⇄ PMTiles, with the
/// tiles as they are is ``ArchiveConversion``.)
///
/// The output is written like a build's: a temporary file beside it, renamed over the target
/// when whole, so a failed or interrupted conversion leaves no half archive.
///
/// ```swift
/// let result = try TileFormatConversion(inputPath: "alps.mbtiles", outputPath: "alps-png.mbtiles").run()
/// ```
/// - Cost: one decode and one PNG encode per distinct tile, spread over ``workers`` threads in
///   chunks of ``chunkTiles``; memory about `chunkTiles` decoded tiles (256 KiB each at 256²).
public struct TileFormatConversion: Sendable {
    /// The tile formats `convert` writes.
    public enum Target: String, Sendable, CaseIterable {
        case png
    }

    public var inputPath: String
    public var outputPath: String
    public var target: Target
    /// Replace an existing output (never the input itself).
    public var force: Bool
    /// Threads decoding and encoding tiles.
    public var workers: Int
    /// Tiles read, converted in parallel and written per step.
    public var chunkTiles = 256

    public init(
        inputPath: String, outputPath: String, target: Target = .png, force: Bool = false,
        workers: Int = ProcessInfo.processInfo.activeProcessorCount
    ) {
        self.inputPath = inputPath
        self.outputPath = outputPath
        self.target = target
        self.force = force
        self.workers = max(1, workers)
    }

    /// What a conversion wrote.
    public struct Result: Sendable, Equatable {
        public var outputPath: String
        /// The input's codec (`astc6x6`).
        public var from: String
        public var archive: MBTilesWriter.Statistics
        public var seconds: Double
    }

    /// Converts the archive. `progress` gets the tiles done and the total, on the calling thread.
    /// - Throws: ``ConversionError`` (`outputExists`) for an existing output without ``force``,
    ///   (`nothingToConvert`) for an output that is the input; ``InputFileError`` for an input whose tiles this tilepack
    ///   cannot decode (naming the tile); ``ArchiveError`` for files that cannot be read or written.
    public func run(progress: ((Int, Int) -> Void)? = nil) throws -> Result {
        let clock = ContinuousClock()
        let start = clock.now
        let reader = try MBTilesReader(path: inputPath)
        if FileManager.default.fileExists(atPath: outputPath) {
            let same =
                URL(fileURLWithPath: outputPath).resolvingSymlinksInPath().standardizedFileURL.path
                == URL(fileURLWithPath: inputPath).resolvingSymlinksInPath().standardizedFileURL.path
            if same {
                throw ConversionError(
                    .nothingToConvert, path: outputPath, detail: "is the input; convert into another file")
            }
            if !force {
                throw ConversionError(.outputExists, path: outputPath, detail: "exists; pass --force to replace it")
            }
        }
        let rows = reader.metadata
        let codecName = rows[MBTilesMetadata.Key.codec] ?? rows[MBTilesMetadata.Key.format] ?? ""
        guard let codec = TileCodecChoice(metadata: rows) else {
            throw InputFileError(
                path: inputPath, detail: "tiles of codec \(ErrorText.quoted(codecName)) cannot be decoded by tilepack")
        }
        guard var metadata = MBTilesMetadata(rows: rows) else {
            throw InputFileError(path: inputPath, detail: "has no name or format in its metadata")
        }
        let output: TileCodecChoice
        switch target {
        case .png: output = .png
        }
        metadata.format = output.mbtilesFormat
        metadata.codec = output.rawValue
        metadata.codecLevel = nil
        metadata.payloadCompression = output.payloadCompression
        metadata.bounds = metadata.bounds ?? reader.bounds
        var options = MBTilesWriter.Options()
        // Elevation rows are copied as stored; the step makes the metadata say what they are.
        options.elevationStep = rows[MBTilesMetadata.Key.elevationPrecision].flatMap(Double.init).flatMap {
            $0.isFinite && $0 > 0 ? $0 : nil
        }
        let writer = try MBTilesWriter(path: outputPath, metadata: metadata, options: options)
        try writer.copyElevation(from: inputPath)

        let side = reader.tileSize
        let decoder = codec.decoder()
        let encoder = output.codec()
        let zooms = reader.zoomRange.map(Array.init) ?? []
        var ids: [TileID] = []
        for z in zooms { ids += try reader.tileIDs(zoom: z) }
        var done = 0
        let chunk = max(1, chunkTiles)
        for first in stride(from: 0, to: ids.count, by: chunk) {
            let tiles = Array(ids[first..<min(ids.count, first + chunk)])
            let stored: [[UInt8]] = try tiles.map { id in
                guard let blob = try reader.tile(id) else {
                    throw InputFileError(path: inputPath, detail: "tile \(id) vanished while converting")
                }
                return blob
            }
            let path = inputPath
            let converted = try parallelMap(count: tiles.count, workers: workers) { index, _ in
                let rgba: [UInt8]
                do { rgba = try decoder.decode(stored[index], width: side, height: side) } catch {
                    throw InputFileError(
                        path: path, detail: "tile \(tiles[index]) cannot be decoded: \(error)", cause: error)
                }
                return try encoder.encode(rgba: rgba, width: side, height: side)
            }
            for (id, bytes) in zip(tiles, converted) { try writer.write(bytes, for: id) }
            done += tiles.count
            progress?(done, ids.count)
        }
        try writer.finish()
        return Result(
            outputPath: outputPath, from: codec.rawValue, archive: writer.statistics,
            seconds: (clock.now - start).inSeconds)
    }
}
