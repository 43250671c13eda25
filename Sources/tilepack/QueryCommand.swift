import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePack

/// `tilepack query`: what the downloaded regions hold at a point (tile, colour, elevation),
/// or with `--tile-only` where the point falls in the tile pyramid.
struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Ask the region archives what is at a point: tile, colour, elevation.",
        discussion: """
            The point is LAT LON (decimal degrees, WGS 84) or a geo: URI (RFC 5870), e.g. \
            "geo:48.8583,2.2945" or "geo:48.8583,2.2945;u=10". Latitudes beyond ±85.0511° are \
            rejected: web mercator's square map ends there. Negative values work as they are: \
            tilepack query -33.8568 151.2153 15 --tile-only. Without --tile-only, every archive \
            in --library (default: the current directory) whose bounds contain the point \
            answers, or the one --archive names. Beyond an archive's zooms the answer comes from \
            the nearest zoom with data (data_zoom; overzoomed when coarser). A point no archive \
            covers exits with status 2.
            """
    )

    @Argument(
        parsing: .allUnrecognized,
        help: ArgumentHelp("LAT LON ZOOM, or geo:LAT,LON ZOOM (zoom 0…24).", valueName: "point-and-zoom"))
    var values: [String] = []

    @Flag(name: .long, help: "Answer from tile math only (no archive): XYZ and TMS tile and the pixel within it.")
    var tileOnly = false

    @Option(help: "Query this archive only.")
    var archive: String?

    @OptionGroup var regions: RegionLibraryOptions

    /// Directory of region archives to search (`--library`).
    var library: String? { regions.library }

    @Flag(
        name: .long,
        help:
            """
            Print JSON: {library (store|open), archive, region, lat, lon, zoom, tile {z, x, y}, tms_y, pixel {x, \
            y}, present, rgba, elevation_m (heights and depths only), elevation_zoom, value, value_kind \
            (elevation|depth|percent|class|value), data_zoom, overzoomed, locked, unlock}; one object per line \
            when several archives answer. A point no archive covers prints an object with archive null (exit 2).
            """
    )
    var json = false

    func validate() throws {
        do {
            _ = try TileQuery(arguments: values)
        } catch {
            throw ValidationError("\(error)")
        }
        if archive != nil && library != nil {
            throw ValidationError("give --archive or --library, not both")
        }
        if tileOnly && (archive != nil || library != nil) {
            throw ValidationError("--tile-only answers from tile math alone; drop --archive/--library")
        }
    }

    func run() throws {
        let query: TileQuery
        do {
            query = try TileQuery(arguments: values)
        } catch let error as QueryInputError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
        if !tileOnly {
            try answerFromArchives(query)
            return
        }
        if json {
            print(try query.json)
        } else {
            print(query.text)
        }
    }
}

extension QueryCommand {
    /// Answers from the archives. A point no archive covers exits 2 (missing input): with
    /// `--json` its uncovered object is still printed on stdout, so a script reads both.
    func answerFromArchives(_ query: TileQuery) throws {
        do {
            // The catalog beside the archives decides what may be shown (none: all open).
            let directory =
                archive.map { path in path.lastIndex(of: "/").map { String(path[..<$0]) } ?? "." } ?? library ?? "."
            let opened = try regions.open(directory: directory, readOnly: true)
            reportProblems(opened)
            // A library: its archives and the layers of its installed packs. One archive: that
            // file alone, under the policy of the library it lies in.
            let store: TileStore
            if let archive {
                var options = TileStoreOptions()
                options.accessPolicy = opened.accessPolicy()
                store = try TileStore(
                    archives: [try openTileArchive(path: archive)], budget: PointQuery.defaultBudget, options: options)
            } else {
                store = try opened.openTileStore(budget: PointQuery.defaultBudget).store
            }
            let kind = opened.kind
            let answers: [PointAnswer]
            if archive != nil {
                answers = [try PointQuery.answer(query, store: store, archive: 0)]
            } else {
                answers = try PointQuery.answer(query, store: store)
            }
            if answers.isEmpty {
                let place = library ?? "the current directory"
                if json {
                    print(
                        try JSONOutput.string(
                            LibraryTagged(UncoveredPointAnswer(query: query, searched: place), library: kind)))
                } else {
                    printError(
                        """
                        no region archive in \(place) covers \(query.lat), \(query.lon) (\(store.archives.count) \
                        archive\(store.archives.count == 1 ? "" : "s") searched)
                        """
                    )
                }
                throw ExitCode(TilePackErrorCategory.notFound.exitStatus)
            }
            for (i, answer) in answers.enumerated() {
                if json {
                    print(try JSONOutput.string(LibraryTagged(answer, library: kind)))
                } else {
                    if i > 0 { print("") }
                    print(answer.text)
                }
            }
            // A locked tile is an answer, and a distinct exit status an app or script can test.
            if answers.contains(where: \.locked) {
                throw ExitCode(TilePackErrorCategory.locked.exitStatus)
            }
        } catch let error as any TilePackError {
            printError(error.description)
            throw ExitCode(error.category.exitStatus)
        }
    }
}

/// An answer with `"library": "store"|"open"` among its keys (sorted with them).
struct LibraryTagged<Answer: Encodable>: Encodable {
    let answer: Answer
    let library: RegionLibrary.Kind
    init(_ answer: Answer, library: RegionLibrary.Kind) { self.answer = answer; self.library = library }

    enum CodingKeys: String, CodingKey { case library }

    func encode(to encoder: any Encoder) throws {
        try answer.encode(to: encoder)
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(library, forKey: .library)
    }
}
