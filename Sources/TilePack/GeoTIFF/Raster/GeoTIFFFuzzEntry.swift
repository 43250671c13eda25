import TilePackCore

/// What the `fuzz-tiff` and `fuzz-vrt` targets (Fuzz/) do with one input, here so that
/// `FuzzCrashReplayTests` replays saved crashes through the same code.
///
/// Invariant: every input ends in a return or a thrown ``TilePackError``; a trap is a bug.
public enum GeoTIFFFuzzEntry {
    /// The largest window side read from a fuzzed TIFF: a mutated header may declare a huge
    /// image the reader would faithfully decode (sparse blocks read as zeros), testing nothing.
    public static let maxWindowSide = 256

    /// The input as a TIFF or BigTIFF file (written to ``FuzzScratchFile``): opened, its
    /// `info` report built, and a window of at most ``maxWindowSide`` pixels a side read from
    /// the main image and from every overview, as `build` and `info` would.
    /// - Cost: one file write of the input, then the reads (bounded by the window and the
    ///   reader's own limits).
    public static func tiff(_ bytes: [UInt8]) throws {
        let path = FuzzScratchFile.path(extension: "tif")
        guard FuzzScratchFile.write(bytes, to: path) else { return }
        defer { FuzzScratchFile.remove(path) }
        let file = try TIFFFile(path: path, cacheBytes: 1 << 20)
        _ = try TIFFInfo(file: file).json
        func window(_ image: TIFFImage) -> PixelWindow {
            PixelWindow(x: 0, y: 0, width: min(image.width, maxWindowSide), height: min(image.height, maxWindowSide))
        }
        _ = try file.read(window: window(file.image))
        for (i, overview) in file.overviews.enumerated() {
            _ = try file.read(window: window(overview), overview: i)
        }
    }

    /// The input as a VRT document (XML subset, bands, sources, rectangles), parsed in memory;
    /// its sources are not opened.
    /// - Cost: one parse, O(input).
    public static func vrt(_ bytes: [UInt8]) throws {
        _ = try VRTDocument(xml: bytes, path: "/fuzz/input.vrt")
    }
}
