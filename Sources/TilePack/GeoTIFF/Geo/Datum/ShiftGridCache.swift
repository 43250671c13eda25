import TilePackCore

/// Horizontal shift grids loaded once per process and shared, keyed by path: every CRS
/// built on NTF or DHDN in a run (a mosaic of a hundred sheets) uses the one grid in memory.
///
/// Failures are not cached: a fixed file is read again on the next request.
/// Cost: a hit is a dictionary lookup under a mutex; a miss reads the file under it (grids
/// are read a handful of times per run, so serialising those reads costs nothing).
public enum ShiftGridCache {
    private static let grids = Locked<[String: HorizontalShiftGrid]>([:])

    /// The grid at `path`, read on first use: `.gsb` as NTv2, `.tif`/`.tiff` as a PROJ
    /// GeoTIFF grid.
    /// - Throws: ``DatumGridError`` naming the file when it cannot be read or is not a
    ///   valid horizontal shift grid.
    public static func grid(path: String) throws(DatumGridError) -> HorizontalShiftGrid {
        let result: Result<HorizontalShiftGrid, DatumGridError> = grids.withLock { cache in
            if let hit = cache[path] { return .success(hit) }
            do throws(DatumGridError) {
                let grid = try load(path: path)
                cache[path] = grid
                return .success(grid)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Reads without caching (tests, and the cache itself).
    static func load(path: String) throws(DatumGridError) -> HorizontalShiftGrid {
        let lower = path.lowercased()
        if lower.hasSuffix(".gsb") { return try NTv2Grid.read(path: path) }
        if lower.hasSuffix(".tif") || lower.hasSuffix(".tiff") { return try GeoTIFFShiftGrid.read(path: path) }
        throw DatumGridError(
            path: path, code: .unsupported, detail: "not a .gsb (NTv2) or .tif (PROJ GeoTIFF) horizontal shift grid")
    }
}
