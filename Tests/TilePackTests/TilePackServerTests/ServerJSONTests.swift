import Foundation
import Testing
import TilePackArchive
import TilePackCore
@testable import TilePackServer
import TilePackTestSupport

/// What `/regions` and one region's TileJSON say about elevation and credits: from what the
/// archive stores, not from its schema (every archive has an `elevation` table, an RGB one
/// empty), and one region's credit alone.
@Suite("Server: the JSON of /regions and TileJSON")
struct ServerJSONTests {
    /// A library of the sample DEM and colour archives, the colour one credited "Colour credit"
    /// and, as archives written before `tilepack:elevation` existed, without that row (its
    /// empty elevation table alone then decides); the DEM credited "DEM credit".
    static func library() throws -> TemporaryDirectory {
        let dir = TemporaryDirectory()
        for name in ["montblanc-dem", "montblanc-color"] {
            let path = dir.file(name + ".mbtiles")
            _ = try dir.write(name + ".mbtiles", readFile(SampleLibrary.directory + "/" + name + ".mbtiles"))
            let credit = name == "montblanc-dem" ? "DEM credit" : "Colour credit"
            try PackFixture.execute(path, "UPDATE metadata SET value = '\(credit)' WHERE name = 'attribution'")
        }
        try PackFixture.execute(
            dir.file("montblanc-color.mbtiles"),
            "DELETE FROM metadata WHERE name IN ('tilepack:elevation', 'tilepack:value_kind')")
        return dir
    }

    static func service(_ dir: TemporaryDirectory) throws -> TileService {
        var options = TileService.Options()
        options.libraryDirectory = dir.path
        return try TileService(options)
    }

    static func object(_ body: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
    }

    @Test func anRGBArchiveWithAnEmptyElevationTableStoresNoElevation() throws {
        let dir = try Self.library()
        let colour = try MBTilesReader(path: dir.file("montblanc-color.mbtiles"))
        #expect(!colour.hasElevation && colour.summary.valueKind == nil && !colour.summary.hasElevationMetres)
        let dem = try MBTilesReader(path: dir.file("montblanc-dem.mbtiles"))
        #expect(dem.hasElevation && dem.summary.hasElevationMetres)
    }

    @Test func regionsSayElevationOnlyForTheDEM() throws {
        let dir = try Self.library()
        let listing = try Self.object(try Self.service(dir).regionsListing().body)
        let regions = try #require(listing["regions"] as? [[String: Any]])
        let elevation = Dictionary(
            uniqueKeysWithValues: regions.compactMap { r in
                (r["region"] as? String).map { ($0, r["elevation"] as? Bool) }
            })
        #expect(elevation == ["montblanc-dem": true, "montblanc-color": false])
    }

    @Test func oneRegionsTileJSONCarriesItsOwnCreditAndTerrainOnlyWithElevation() throws {
        let dir = try Self.library()
        let service = try Self.service(dir)
        let colour = try Self.object(service.tileJSON(file: "montblanc-color.json", base: "http://h").body)
        #expect(colour["attribution"] as? String == "Colour credit")
        #expect(colour["tilepack:terrain_tiles"] == nil && colour["tilepack:terrain_encoding"] == nil)
        let dem = try Self.object(service.tileJSON(file: "montblanc-dem.json", base: "http://h").body)
        #expect(dem["attribution"] as? String == "DEM credit")
        #expect(dem["tilepack:terrain_tiles"] as? [String] == ["http://h/terrain/montblanc-dem/{z}/{x}/{y}.png"])
        // The listing still credits both, for the viewer's map.
        let listing = try Self.object(service.regionsListing().body)
        #expect(
            (listing["attribution"] as? String).map { $0.contains("DEM credit") && $0.contains("Colour credit") }
                == true)
    }
}
