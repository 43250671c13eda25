import TilePackCore

/// One rectangle of a horizontal shift grid: shift nodes at
/// (west + i·lonStep, south + j·latStep) for i < columns, j < rows, in degrees east and north.
///
/// Invariants (checked by the readers before construction): columns, rows ≥ 2; steps > 0
/// and finite; `shifts.count == 2 · columns · rows`; every shift finite, or NaN for a node
/// a GeoTIFF grid marks nodata.
public struct ShiftSubgrid: Sendable {
    public let name: String
    /// Longitude of the westmost node column, degrees east.
    public let west: Double
    /// Latitude of the southmost node row, degrees.
    public let south: Double
    public let lonStep: Double
    public let latStep: Double
    public let columns: Int
    public let rows: Int
    /// Index of the enclosing subgrid in the grid's list, nil for a top-level one.
    public let parent: Int?
    /// (latitude shift, longitude shift east-positive) in arc-seconds per node, rows from
    /// south to north, each row from west to east.
    let shifts: [Float]

    init(
        name: String, west: Double, south: Double, lonStep: Double, latStep: Double,
        columns: Int, rows: Int, parent: Int?, shifts: [Float]
    ) {
        precondition(columns >= 2 && rows >= 2 && shifts.count == 2 * columns * rows, "shift subgrid shape")
        self.name = name
        self.west = west
        self.south = south
        self.lonStep = lonStep
        self.latStep = latStep
        self.columns = columns
        self.rows = rows
        self.parent = parent
        self.shifts = shifts
    }

    public var east: Double { west + Double(columns - 1) * lonStep }
    public var north: Double { south + Double(rows - 1) * latStep }

    /// Whether the point lies in the node rectangle, edges included, give or take 1e-5 of a
    /// cell (so a point on a shared border computed with rounding still finds its grid).
    func contains(lon: Double, lat: Double) -> Bool {
        let tx = 1e-5 * lonStep, ty = 1e-5 * latStep
        return lon >= west - tx && lon <= east + tx && lat >= south - ty && lat <= north + ty
    }

    /// The bilinear interpolation of the four nodes around the point: (Δlon, Δlat) degrees.
    /// The caller has checked ``contains(lon:lat:)``; points a hair outside are clamped.
    /// - Cost: O(1), four node reads.
    func shift(lon: Double, lat: Double) -> (dLon: Double, dLat: Double) {
        let fx = min(max((lon - west) / lonStep, 0), Double(columns - 1))
        let fy = min(max((lat - south) / latStep, 0), Double(rows - 1))
        // The last column/row interpolates inside the cell before it with weight 1.
        let i = min(Int(fx), columns - 2), j = min(Int(fy), rows - 2)
        let u = fx - Double(i), v = fy - Double(j)
        let a = 2 * (j * columns + i), b = a + 2 * columns
        return shifts.withUnsafeBufferPointer { s in
            let w00 = (1 - u) * (1 - v), w10 = u * (1 - v), w01 = (1 - u) * v, w11 = u * v
            let dLat = w00 * Double(s[a]) + w10 * Double(s[a + 2]) + w01 * Double(s[b]) + w11 * Double(s[b + 2])
            let dLon = w00 * Double(s[a + 1]) + w10 * Double(s[a + 3]) + w01 * Double(s[b + 1]) + w11 * Double(s[b + 3])
            return (dLon / 3600, dLat / 3600)
        }
    }
}

/// A horizontal datum-shift grid file (NTv2 `.gsb` or PROJ GeoTIFF `.tif`), loaded whole
/// and immutable: the shift at a point comes from the finest subgrid containing it — the
/// first top-level subgrid that does, then, while one of its children does, that child
/// (the order PROJ searches NTv2 and GeoTIFF grids).
///
/// Cost: lookup walks the top-level subgrids and one chain of children (a handful in
/// every published grid), interpolation is O(1); nothing allocates.
public final class HorizontalShiftGrid: Sendable, CustomStringConvertible {
    /// The file the grid was read from.
    public let path: String
    public let subgrids: [ShiftSubgrid]
    private let roots: [Int]
    private let children: [[Int]]

    /// File name without directory, as the summary and metadata name it.
    public var fileName: String { path.split(separator: "/").last.map(String.init) ?? path }

    init(path: String, subgrids: [ShiftSubgrid]) {
        self.path = path
        self.subgrids = subgrids
        var roots: [Int] = []
        var children = [[Int]](repeating: [], count: subgrids.count)
        for (k, g) in subgrids.enumerated() {
            if let p = g.parent, p != k, subgrids.indices.contains(p) { children[p].append(k) } else { roots.append(k) }
        }
        self.roots = roots
        self.children = children
    }

    public var description: String { "\(fileName) (\(subgrids.count) subgrid\(subgrids.count == 1 ? "" : "s"))" }

    /// Index of the finest subgrid containing the point, or nil outside the grid.
    func subgrid(lon: Double, lat: Double) -> Int? {
        guard var k = roots.first(where: { subgrids[$0].contains(lon: lon, lat: lat) }) else { return nil }
        // A parent list with a cycle cannot loop: at most one step per subgrid.
        for _ in 0..<subgrids.count {
            guard let c = children[k].first(where: { subgrids[$0].contains(lon: lon, lat: lat) }) else { break }
            k = c
        }
        return k
    }

    /// Shift at a point, degrees, or nil outside the grid.
    public func shift(lon: Double, lat: Double) -> (dLon: Double, dLat: Double)? {
        guard let k = subgrid(lon: lon, lat: lat) else { return nil }
        let d = subgrids[k].shift(lon: lon, lat: lat)
        // A GeoTIFF nodata node (NaN) nearby: no shift is known here.
        guard d.dLon.isFinite, d.dLat.isFinite else { return nil }
        return d
    }

    /// Source datum lon/lat → target datum lon/lat (degrees): the point plus its shift;
    /// nil outside the grid.
    public func forward(lon: Double, lat: Double) -> (lon: Double, lat: Double)? {
        guard let d = shift(lon: lon, lat: lat) else { return nil }
        return (lon + d.dLon, lat + d.dLat)
    }

    /// Target datum lon/lat → source datum lon/lat: the point p with forward(p) = q, found
    /// as PROJ does by fixed-point iteration p ← p − (forward(p) − q) from p₀ = q − shift(q),
    /// at most 10 steps, stopping below 1e-12° (≈ 0.1 µm). nil outside the grid.
    public func inverse(lon: Double, lat: Double) -> (lon: Double, lat: Double)? {
        guard let d0 = shift(lon: lon, lat: lat) else { return nil }
        var x = lon - d0.dLon, y = lat - d0.dLat
        for _ in 0..<10 {
            // Near an edge the iterate may leave the grid: keep the last good estimate.
            guard let d = shift(lon: x, lat: y) else { break }
            let ex = x + d.dLon - lon, ey = y + d.dLat - lat
            x -= ex
            y -= ey
            if abs(ex) < 1e-12 && abs(ey) < 1e-12 { break }
        }
        return (x, y)
    }
}
