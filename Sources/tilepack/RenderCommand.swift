import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePack

/// `tilepack render`: a PNG of the map around a point (or of one tile) from the library's
/// archives, as a customer would see it: locked tiles dimmed with their price.
struct RenderCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "render",
        abstract: "Draw the map around a point (or one tile) from the region library to a PNG.",
        discussion: """
            Every archive of --library (default: the current directory) is drawn through one tile \
            store, composited in catalog order (the order the catalog's products name them; \
            without a catalog, file-name order; the first at the bottom). In a store library \
            (--trust), tiles this device does not own are drawn dimmed and hatched, with the \
            price of the cheapest product that unlocks them, and the command exits with status 3 \
            (the picture is written all the same). The archives' attribution is drawn in the \
            bottom-right corner. Beyond an archive's zooms its tiles are made from the nearest \
            zoom with data (up to zoom 22 from the nearest stored ancestor, up to 3 zooms below \
            its min zoom from the descendants). --archive FILE draws that one archive (under the \
            policy of the library it lies in) instead of a library's. Where nothing is drawn (an \
            empty or wrong library, a point no archive covers) no picture is written: one line on \
            stderr names where it looked, exit status 2. Examples: tilepack render 45.85 6.88 12 \
            --size 1024x768 --library SampleRegions -o view.png; tilepack render --tile 12/2126/1459; \
            tilepack render 45.85 6.88 12 --archive montblanc-color.mbtiles.
            """
    )

    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp(
            "LAT LON ZOOM, or geo:LAT,LON ZOOM (zoom 0…24); omit with --tile.", valueName: "point-and-zoom"))
    var values: [String] = []

    @Option(help: ArgumentHelp("Picture size WIDTHxHEIGHT, sides 1…\(MapFrame.maxSide).", valueName: "WxH"))
    var size = "768x512"

    @Option(help: ArgumentHelp("Draw this one tile (256 × 256) instead of a point's surroundings.", valueName: "Z/X/Y"))
    var tile: String?

    @Option(name: .shortAndLong, help: "Output PNG (default: view.png, or Z-X-Y.png with --tile).")
    var output: String?

    @Option(help: "Tile store budget, e.g. 64MiB.")
    var budget = "64MiB"

    @Option(help: "Draw this archive alone (no library folder needed).")
    var archive: String?

    @OptionGroup var regions: RegionLibraryOptions

    func validate() throws {
        if archive != nil && regions.library != nil {
            throw ValidationError("give --archive or --library, not both")
        }
        do {
            if let tile {
                guard values.isEmpty else { throw ValidationError("give LAT LON ZOOM or --tile Z/X/Y, not both") }
                _ = try TileID(path: tile)
            } else {
                _ = try frame()
            }
            _ = try MemoryBudget(parsing: budget)
        } catch let error as any TilePackError {
            throw ValidationError(error.description)
        }
    }

    /// The frame the arguments ask for.
    func frame() throws -> MapFrame {
        if let tile { return MapFrame(tile: try TileID(path: tile)) }
        let query = try TileQuery(arguments: values)
        let (w, h) = try Self.parseSize(size)
        return try MapFrame(lat: query.lat, lon: query.lon, zoom: query.zoom, width: w, height: h)
    }

    static func parseSize(_ text: String) throws(RenderInputError) -> (Int, Int) {
        let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count <= 5 }), let w = Int(parts[0]), let h = Int(parts[1]),
            (1...MapFrame.maxSide).contains(w), (1...MapFrame.maxSide).contains(h)
        else {
            throw RenderInputError(
                "--size '\(text.prefix(32))': expected WIDTHxHEIGHT with sides 1…\(MapFrame.maxSide), e.g. 1024x768")
        }
        return (w, h)
    }

    func run() throws {
        try exitingOnError {
            let frame = try frame()
            let path = output ?? tile.map { String($0.map { $0 == "/" ? "-" : $0 }) + ".png" } ?? "view.png"
            try OutputPath.checkDirectory(of: path)
            let storeBudget = try MemoryBudget(parsing: budget)
            // One archive: that file alone, under the policy of the library it lies in (as
            // `query --archive`). A library: every layer, through its one way to a store.
            let directory = archive.map(OutputPath.directory(of:)) ?? regions.library ?? "."
            let library = try regions.open(directory: directory, readOnly: true)
            reportProblems(library)
            let layers: MapLayers
            if let archive {
                let reader = try MBTilesReader(path: archive)
                var options = TileStoreOptions()
                options.accessPolicy = library.accessPolicy()
                let store = try TileStore(archives: [reader], budget: storeBudget, options: options)
                layers = MapLayers(store: store, credits: [reader.metadata[MBTilesMetadata.Key.attribution] ?? ""])
            } else {
                let opened = try library.openTileStore(budget: storeBudget)
                layers = MapLayers(store: opened.store, credits: opened.layers.map(\.attribution))
            }
            let searched = archive ?? directory
            guard !layers.store.archives.isEmpty else {
                throw RenderInputError(
                    .nothingToDraw, subject: searched,
                    detail: "no region archives (.mbtiles) to draw: no picture written")
            }
            let picture = try layers.render(frame)
            if picture.tilesDrawn == 0 && picture.tilesLocked == 0 {
                // Nothing covers the frame: a background-only picture would pass for a map of
                // nothing, so none is written; missing input by the exit status.
                let place = tile.map { "tile \($0)" } ?? values.joined(separator: " ")
                let count = layers.store.archives.count
                throw RenderInputError(
                    .nothingToDraw, subject: searched,
                    detail:
                        "nothing covers \(place) (\(count) archive\(count == 1 ? "" : "s") searched): no picture written"
                )
            }
            let png = try PNGEncoder().encode(rgba: picture.image.pixels, width: frame.width, height: frame.height)
            try CodecIO.write(png, to: path)
            var line =
                """
                wrote \(path) (\(frame.width)x\(frame.height), zoom \(frame.zoom)): \(picture.tilesDrawn) \
                tile\(picture.tilesDrawn == 1 ? "" : "s") drawn
                """
            if !picture.sourceZooms.isEmpty {
                line += " (made from zoom " + picture.sourceZooms.map(String.init).joined(separator: ", ") + ")"
            }
            if picture.tilesLocked > 0 {
                let cheapest = picture.offers.values.sorted {
                    (Double($0.price) ?? .infinity, $0.id) < (Double($1.price) ?? .infinity, $1.id)
                }
                line +=
                    ", \(picture.tilesLocked) locked ("
                    + cheapest.map { "\($0.title) \($0.price) \($0.currency)" }.joined(separator: ", ") + ")"
            }
            print(line)
            if picture.tilesLocked > 0 { throw ExitCode(TilePackErrorCategory.locked.exitStatus) }
        }
    }
}
