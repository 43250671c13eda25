import TilePackCore
import TilePackGeoTIFF
import TilePackCodec
import TilePackEncoders
import TilePackArchive
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The tiles a build produces: for each zoom from `minZoom` to `maxZoom`, the XYZ tiles
/// intersecting the source's lon/lat bounds.
///
/// Cost: O(zoom levels) to make; the tile lists are generated on demand.
public struct TilePlan: Sendable {
    /// The source's lon/lat bounds, latitudes clamped to the web-mercator square.
    public let bounds: GeoBounds
    public let minZoom: Int
    public let maxZoom: Int
    /// One range per zoom, index `z − minZoom`.
    public let ranges: [TileRange]

    /// Total tiles over all zooms.
    public var tileCount: Int { ranges.reduce(0) { $0 + $1.count } }

    public func range(atZoom z: Int) -> TileRange? {
        z >= minZoom && z <= maxZoom ? ranges[z - minZoom] : nil
    }

    public func contains(_ tile: TileID) -> Bool {
        range(atZoom: tile.z)?.contains(tile) ?? false
    }

    /// Makes the plan, choosing default zooms where `minZoom`/`maxZoom` are nil.
    /// Throws ``BuildError`` for bad bounds, a source crossing the antimeridian, bad zooms
    /// or a plan over `maxTiles` tiles.
    public init(
        bounds: GeoBounds,
        nativeResolutionMetres: Double, minZoom: Int? = nil, maxZoom: Int? = nil,
        maxTiles: Int = 5_000_000
    ) throws {
        let (w, s, e, n) = (bounds.west, bounds.south, bounds.east, bounds.north)
        guard w.isFinite, s.isFinite, e.isFinite, n.isFinite else {
            throw BuildError.invalidBounds(bounds)
        }
        // Crossing ±180 would need split ranges per zoom; refused rather than half-handled.
        guard w < e, w >= -180, e <= 180 else { throw BuildError.crossesAntimeridian(west: w, east: e) }
        let south = max(s, -WebMercator.maxLatitude), north = min(n, WebMercator.maxLatitude)
        let clamped = GeoBounds(west: w, south: south, east: e, north: north)
        // A hair of tolerance: geotransforms like 90 + 100 × -1.8 land at 90.00000000000001.
        guard s >= -90 - 1e-9, n <= 90 + 1e-9, south < north else {
            throw BuildError.invalidBounds(bounds)
        }
        guard nativeResolutionMetres > 0, nativeResolutionMetres.isFinite else {
            throw BuildError.invalidResolution(nativeResolutionMetres)
        }
        if let z = maxZoom, z < 0 || z > TileID.maxZoom {
            throw BuildError.invalidZooms(
                minZoom: minZoom ?? 0, maxZoom: z, reason: "max zoom must be 0–\(TileID.maxZoom)")
        }
        if let z = minZoom, z < 0 || z > TileID.maxZoom {
            throw BuildError.invalidZooms(
                minZoom: z, maxZoom: maxZoom ?? z, reason: "min zoom must be 0–\(TileID.maxZoom)")
        }
        let maxZ = maxZoom ?? Self.defaultMaxZoom(nativeResolutionMetres: nativeResolutionMetres, bounds: clamped)
        let minZ = minZoom ?? min(maxZ, Self.defaultMinZoom(clamped))
        guard minZ <= maxZ else {
            throw BuildError.invalidZooms(minZoom: minZ, maxZoom: maxZ, reason: "min zoom is above max zoom")
        }
        var ranges: [TileRange] = []
        var total = 0
        for z in minZ...maxZ {
            let r = TileRange.covering(clamped, zoom: z)
            total += r.count  // ≤ 2^48 per zoom: no overflow before the check below
            guard total <= maxTiles else {
                // Count the rest cheaply for the message (each zoom at most 4× the previous).
                var all = total
                for z2 in (z + 1)..<(maxZ + 1) {
                    all = min(all + TileRange.covering(clamped, zoom: z2).count, Int.max / 8)
                }
                throw BuildError.planTooLarge(tiles: all, limit: maxTiles, minZoom: minZ, maxZoom: maxZ)
            }
            ranges.append(r)
        }
        self.bounds = clamped
        self.minZoom = minZ; self.maxZoom = maxZ; self.ranges = ranges
    }

    /// The first zoom whose pixel size at `latitude` (resolution(z)·cos(lat)) is at or below
    /// the native resolution, capped at ``TileID/maxZoom``.
    public static func defaultMaxZoom(nativeResolutionMetres: Double, latitude: Double) -> Int {
        // A hair of tolerance so a source made at exactly a zoom's resolution maps to it.
        WebMercator.zoom(forGroundResolution: nativeResolutionMetres * (1 + 1e-9), latitude: latitude)
    }

    /// ``defaultMaxZoom(nativeResolutionMetres:latitude:)`` at the middle latitude of `bounds`
    /// within web mercator's ±85.05°: a plan's default without a max zoom, and
    /// ``SourceGeoreference/nativeZoom``'s for sources that do not measure their own.
    public static func defaultMaxZoom(nativeResolutionMetres: Double, bounds: GeoBounds) -> Int {
        defaultMaxZoom(nativeResolutionMetres: nativeResolutionMetres, latitude: WebMercator.middleLatitude(of: bounds))
    }

    /// The highest zoom at which the region fits in one or two tiles.
    public static func defaultMinZoom(_ bounds: GeoBounds) -> Int {
        var best = 0
        for z in 0...TileID.maxZoom {
            guard TileRange.covering(bounds, zoom: z).count <= 2 else { break }
            best = z
        }
        return best
    }

    /// Bounds, centre and zooms for the archive's metadata.
    public var metadata: TilesetMetadata {
        TilesetMetadata(bounds: bounds, minZoom: minZoom, maxZoom: maxZoom)
    }
}
