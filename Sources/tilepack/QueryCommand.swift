import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import TilePack

/// `tilepack query`: where a point falls in the tile pyramid (and, once archives are wired
/// in, what an archive holds there). The archive options join this command; `--tile-only`
/// answers from tile math alone.
struct QueryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Find the web-mercator tile and pixel for a point.",
        discussion: """
            The point is LAT LON (decimal degrees, WGS 84) or a geo: URI (RFC 5870), e.g. \
            "geo:48.8583,2.2945" or "geo:48.8583,2.2945;u=10". Latitudes beyond ±85.0511° are \
            rejected: web mercator's square map ends there. Negative values work as they are: \
            tilepack query -33.8568 151.2153 15 --tile-only
            """
    )

    @Argument(parsing: .allUnrecognized,
              help: ArgumentHelp("LAT LON ZOOM, or geo:LAT,LON ZOOM (zoom 0…24).", valueName: "point-and-zoom"))
    var values: [String] = []

    @Flag(name: .long, help: "Answer from tile math only (no archive): XYZ and TMS tile and the pixel within it.")
    var tileOnly = false

    @Flag(name: .long, help: "Print JSON: {lat, lon, zoom, tile {z, x, y}, tms_y, pixel {x, y}}.")
    var json = false

    func validate() throws {
        do {
            _ = try TileQuery(arguments: values)
        } catch {
            throw ValidationError(error.description)
        }
        if !tileOnly {
            throw ValidationError("an archive query needs --archive or --library (not available in this build); use --tile-only for tile math")
        }
    }

    func run() throws {
        let query: TileQuery
        do {
            query = try TileQuery(arguments: values)
        } catch {
            printError(error.description)
            throw ExitCode(error.exitCode)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(query)
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(query.text)
        }
    }
}
