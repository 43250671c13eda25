import Crypto
import TilePackArchive
import TilePackCodec
import TilePackCore
import TilePackEncoders
import TilePackSQLite

/// Archives for the tests: MBTiles metadata and synthetic packs (the pack format, delta and
/// installer tests).
package enum ArchiveFixture {
    /// The metadata of a small test archive.
    package static func metadata() -> MBTilesMetadata {
        MBTilesMetadata(
            name: "Test region", format: "png", codec: "png",
            description: "unit test", attribution: "© tests", codecLevel: "6", tileSize: 256,
            sourceFile: "dem.tif", sourceSHA256: String(repeating: "ab", count: 32),
            buildOptions: "--zoom 0-2", extra: ["note": "x"])
    }
}

/// Synthetic packs for the pack format tests: PNG tiles of 16 px (they decode), and elevation.
package enum PackFixture {
    package static let side = 16

    package static func layerMetadata(_ name: String, elevation: Bool = false) -> [String: String] {
        [
            "name": name, "format": "png", "tilepack:codec": "png", "tilepack:tile_size": String(side),
            "bounds": "-180,-85,180,85", "minzoom": "0", "maxzoom": "15",
            "tilepack:elevation": elevation ? "true" : "false",
        ]
    }

    package static let layers = [
        PackLayerInfo(archive: "color.mbtiles", metadata: layerMetadata("Color")),
        PackLayerInfo(archive: "dem.mbtiles", metadata: layerMetadata("DEM", elevation: true)),
    ]
    package static let packMetadata = [
        "name": "Test pack", "bounds": "5.0,45.0,8.0,47.0", "minzoom": "1", "maxzoom": "3",
        "attribution": "© tests",
    ]

    /// A PNG tile whose pixels depend on `seed`.
    package static func png(_ seed: Int) throws -> [UInt8] {
        var rgba = [UInt8](repeating: 0, count: side * side * 4)
        // The first pixel spells the seed, so different seeds never give the same tile.
        rgba[0] = UInt8(truncatingIfNeeded: seed); rgba[1] = UInt8(truncatingIfNeeded: seed >> 8)
        rgba[2] = UInt8(truncatingIfNeeded: seed >> 16); rgba[3] = 255
        for i in 1..<(side * side) {
            rgba[4 * i] = UInt8(truncatingIfNeeded: seed &* 37 &+ i)
            rgba[4 * i + 1] = UInt8(truncatingIfNeeded: seed &* 11)
            rgba[4 * i + 2] = UInt8(truncatingIfNeeded: i)
            rgba[4 * i + 3] = 255
        }
        return try PNGCodec().encode(rgba: rgba, width: side, height: side)
    }

    package static func elevation(_ seed: Int) -> ElevationTile {
        ElevationTile(width: side, height: side, values: (0..<(side * side)).map { Float(seed * 100 + $0) })
    }

    /// Every tile of zooms 1…3 (84 tiles).
    package static var tiles: [TileID] {
        (1...3).flatMap { z in (0..<(1 << z)).flatMap { x in (0..<(1 << z)).map { y in TileID(z: z, x: x, y: y)! } } }
    }

    /// Writes a 2-layer pack: layer 0 color tiles, layer 1 DEM tiles and elevation.
    /// `seed(tile)` picks each tile's content (nil: no tile there).
    @discardableResult
    package static func write(
        _ path: String, layers: [PackLayerInfo] = layers, seed: (TileID) -> Int? = { $0.z * 1000 + $0.x * 31 + $0.y }
    )
        throws -> PackStatistics
    {
        let writer = try PackWriter(path: path, layers: layers, metadata: packMetadata)
        for tile in tiles {
            guard let s = seed(tile) else { continue }
            try writer.writeTile(png(s), layer: 0, tile: tile)
            try writer.writeTile(png(s + 7), layer: 1, tile: tile)
            try writer.writeElevation(elevation(s), encoding: .float32PredictorDeflate, layer: 1, id: tile)
        }
        return try writer.finish()
    }

    package static func execute(_ path: String, _ sql: String) throws {
        let db = try SQLiteConnection(path: path, mode: .readWriteExisting)
        try db.execute(sql)
    }

    // The delta tests' two versions (ArchivePackDeltaTests, RegionsInstallerTests).

    /// Version 1 lacks column x = 0 at z3; version 2 has it, drops column x = 7 at z3, changes
    /// tiles where (x + y) % 10 == 3, gives 2/0/0 the content of 2/1/1, and changes layer 1's metadata.
    package static func v1Seed(_ t: TileID) -> Int? { t.z == 3 && t.x == 0 ? nil : t.z * 1000 + t.x * 31 + t.y }
    package static func v2Seed(_ t: TileID) -> Int? {
        if t.z == 3 && t.x == 7 { return nil }
        if t.z == 2 && t.x == 0 && t.y == 0 { return 2000 + 31 + 1 }  // 2/1/1's content: v1 has it, not carried
        let s = t.z * 1000 + t.x * 31 + t.y
        return (t.x + t.y) % 10 == 3 ? s + 50_000 : s
    }
    package static var v2Layers: [PackLayerInfo] {
        var layers = PackFixture.layers
        layers[1].metadata["description"] = "rebuilt"
        return layers
    }

    package struct Versions {
        package let dir = TemporaryDirectory()
        package var v1: String { dir.file("p.mbtiles") }
        package var v2: String { dir.file("p2.mbtiles") }
        package var delta: String { dir.file("p.v1-v2.delta.mbtiles") }
        package var v1Stats: PackStatistics
        package var v2Stats: PackStatistics
        package var summary: PackDeltaSummary

        package init() throws {
            v1Stats = PackStatistics(perZoom: [], tiles: 0, elevationRows: 0, storedBytes: 0, indexDigest: "")
            v2Stats = v1Stats
            summary = PackDeltaSummary(
                changed: 0, added: 0, removed: 0, contents: 0, contentBytes: 0, fileBytes: 0, indexDigest: "")
            v1Stats = try PackFixture.write(v1, seed: PackFixture.v1Seed)
            v2Stats = try PackFixture.write(
                v2, layers: PackFixture.v2Layers, seed: PackFixture.v2Seed)
            summary = try PackDelta.write(old: v1, new: v2, output: delta, packID: "chamonix", from: 1, to: 2)
        }
    }
}
