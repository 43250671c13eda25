import TilePackCore

/// Refines an approximate inverse of a 2-D forward map by Newton's method with a
/// finite-difference Jacobian, so the inverse is the exact inverse of the forward formulas
/// (what PROJ's generic inverse does for Cassini and the polyconic) rather than a truncated
/// reverse series.
///
/// Cost: at most `maxIterations` steps, each three forward evaluations; no allocation.
/// Stops when the forward image is within `tolerance` metres of the target (1 µm ≈ 1.6e-13 rad
/// on the Earth, below the 1e-12 rad the projections promise). A step that
/// leaves the finite numbers returns NaN (no image).
enum NewtonInverse {
    static let maxIterations = 10

    @inline(__always)
    static func refine(
        x: Double, y: Double, start: (lon: Double, lat: Double), tolerance: Double = 1e-6,
        forward: (Double, Double) -> (x: Double, y: Double)
    ) -> (lon: Double, lat: Double) {
        var lon = start.lon, lat = start.lat
        guard lon.isFinite, lat.isFinite else { return (.nan, .nan) }
        let h = 1e-8  // radians (~6 cm): finite-difference step; the fixed point does not depend on it
        for _ in 0..<maxIterations {
            let p = forward(lon, lat)
            let ex = p.x - x, ey = p.y - y
            guard ex.isFinite, ey.isFinite else { return (.nan, .nan) }
            if abs(ex) + abs(ey) <= tolerance { break }
            let pl = forward(lon + h, lat), pp = forward(lon, lat + h)
            let j11 = (pl.x - p.x) / h, j12 = (pp.x - p.x) / h
            let j21 = (pl.y - p.y) / h, j22 = (pp.y - p.y) / h
            let det = j11 * j22 - j12 * j21
            guard det != 0, det.isFinite else { return (.nan, .nan) }
            let dlon = (j22 * ex - j12 * ey) / det
            let dlat = (j11 * ey - j21 * ex) / det
            lon -= dlon
            lat -= dlat
        }
        return (lon, lat)
    }
}
