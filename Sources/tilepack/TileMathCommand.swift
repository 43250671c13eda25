import ArgumentParser
import TilePack

/// Hidden batch face of the tile math for Scripts/proj-check (compared with mercantile).
/// Input lines "LON LAT ZOOM"; output "X Y TMS_Y PIXEL_X PIXEL_Y WEST SOUTH EAST NORTH".
struct TileMathCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tile-math",
        abstract: "Batch tile lookup for testing: stdin \"LON LAT ZOOM\" lines → tile, pixel and tile bounds.",
        shouldDisplay: false
    )

    func run() throws {
        var lineNumber = 0
        var out = ""
        while let line = readLine() {
            lineNumber += 1
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
            if f.isEmpty { continue }
            guard f.count == 3, let lon = Double(f[0]), let lat = Double(f[1]), let z = Int(f[2]),
                let hit = WebMercator.tile(lon: lon, lat: lat, zoom: z)
            else {
                printError("stdin line \(lineNumber): expected LON LAT ZOOM inside the map, got \"\(line)\"")
                throw ExitCode(2)
            }
            let b = WebMercator.bounds(of: hit.tile)
            out +=
                """
                \(hit.tile.x) \(hit.tile.y) \(hit.tile.tmsY) \(hit.pixelX) \(hit.pixelY) \(b.west) \(b.south) \
                \(b.east) \(b.north)\n
                """
            if out.utf8.count > 60_000 {
                print(out, terminator: "")
                out.removeAll(keepingCapacity: true)
            }
        }
        print(out, terminator: "")
    }
}
