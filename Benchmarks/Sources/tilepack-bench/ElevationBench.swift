// `tilepack-bench elevation NEW.mbtiles OLD.mbtiles [--runs R]`: the elevation layer's decoding
// cost per tile in the tile store (issue 25, Must-show 4), two archives of the same DEM (e.g.
// built with the default `q-planar-deflate` and with `--elevation-encoding float32`), measured
// in the same process, runs interleaved so a drift of the shared machine hits both alike.
//
// Figures, per archive (median of R runs, min–max in brackets), then the ratio NEW / OLD:
// - decode: `ElevationEncoding.decode` of every elevation blob, read beforehand (µs/tile);
// - store: cold `store.elevation(id)` of every elevation tile in a fresh store (budget 1 GiB):
//   the SQLite read, the decode and the store's accounting (µs/tile).
import TilePack

func runElevationBench(_ args: [String]) {
    guard args.count >= 2, !args[0].hasPrefix("-"), !args[1].hasPrefix("-") else {
        fail("usage: tilepack-bench elevation NEW.mbtiles OLD.mbtiles [--runs R]")
    }
    let runs = args.firstIndex(of: "--runs").flatMap { $0 + 1 < args.count ? Int(args[$0 + 1]) : nil }.map { max(1, $0) } ?? 7
    struct Loaded {
        let path: String
        let reader: MBTilesReader
        let ids: [TileID]
        let rows: [StoredElevation]
    }
    do {
        let archives: [Loaded] = try args.prefix(2).map { path in
            let reader = try MBTilesReader(path: path)
            guard let zooms = reader.zoomRange else { fail("\(path): no tiles") }
            var ids: [TileID] = [], rows: [StoredElevation] = []
            for z in zooms {
                for id in try reader.tileIDs(zoom: z) {
                    if let row = try reader.storedElevation(id) { ids.append(id); rows.append(row) }
                }
            }
            guard !ids.isEmpty else { fail("\(path): no elevation tiles") }
            let bytes = rows.reduce(0) { $0 + $1.data.count }
            let encodings = Set(rows.map(\.encoding)).sorted().joined(separator: ", ")
            print("archive: \(path), \(ids.count) elevation tiles, \(bytes) bytes (\(encodings))")
            return Loaded(path: path, reader: reader, ids: ids, rows: rows)
        }
        var grids = 0
        var decode = [[Double]](repeating: [], count: 2), store = [[Double]](repeating: [], count: 2)
        let big = try MemoryBudget(bytes: 1 << 30)
        for _ in 0..<runs {
            for (k, a) in archives.enumerated() {
                decode[k].append(try seconds {
                    for row in a.rows {
                        guard let encoding = ElevationEncoding(rawValue: row.encoding) else { fail("unknown encoding \(row.encoding)") }
                        let grid = try encoding.decode(row.data, width: row.width, height: row.height, path: a.path)
                        grids += grid.width > 0 ? 1 : 0
                    }
                } * 1e6 / Double(a.rows.count))
                let fresh = try TileStore(archives: [a.reader], budget: big)
                store[k].append(try seconds {
                    for id in a.ids { if let grid = try fresh.elevation(id) { grids += grid.width > 0 ? 1 : 0 } }
                } * 1e6 / Double(a.ids.count))
            }
        }
        let d = decode.map(Stat.init), s = store.map(Stat.init)
        for k in 0..<2 {
            print("\(k == 0 ? "new" : "old"): decode \(d[k].nsText) µs/tile; store cold elevation load \(s[k].nsText) µs/tile")
        }
        let decodeRatio = d[0].median / d[1].median, storeRatio = s[0].median / s[1].median
        print("ratio new/old: decode \(fmt(decodeRatio, 2))×, store load \(fmt(storeRatio, 2))× (\(grids) grids decoded)")
        print("{\"decode_us_new\": \(d[0].median), \"decode_us_old\": \(d[1].median), \"store_us_new\": \(s[0].median), \"store_us_old\": \(s[1].median), \"decode_ratio\": \(decodeRatio), \"store_ratio\": \(storeRatio)}")
    } catch {
        fail("\(error)")
    }
}
