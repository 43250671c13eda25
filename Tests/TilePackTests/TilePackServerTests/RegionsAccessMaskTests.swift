import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TilePackArchive
import TilePackCodec
import TilePackCore
import TilePackEncoders
@testable import TilePackRegions
import TilePackRender
import TilePackSQLite
@testable import TilePackStore
import TilePackTools
@testable import TilePackServer
import TilePackTestSupport

/// Access per archive and per pixel at the polygon edge (issue 23): ``TileMask``, the scanline
/// fill of ``RegionPolygon`` against a brute-force reference, ``RegionAccessPolicy``'s
/// archive binding, and what the tile store, point queries, the renderer and the server make
/// of a partly owned tile.
@Suite("Regions: access masks at the polygon edge")
struct RegionsAccessMaskTests {
    // MARK: - Fixtures

    static func polygon(_ rings: [[[Double]]]) throws -> RegionPolygon {
        do { return try RegionPolygon(rings: rings) } catch { throw TestFailure(String(describing: error)) }
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ d: String) { description = d }
    }

    /// The mask by asking `contains` at every pixel centre: the reference the fill must equal.
    static func bruteForce(_ p: RegionPolygon, _ tile: TileID, side: Int) -> TileMask {
        let scale = Double(side) * Double(1 << tile.z)
        return TileMask(side: side) { i, j in
            p.contains(
                unitX: (Double(tile.x * side + i) + 0.5) / scale, unitY: (Double(tile.y * side + j) + 0.5) / scale)
        }
    }

    static func fill(_ p: RegionPolygon, _ tile: TileID, side: Int) -> TileMask {
        var b = TileMask.Builder(side: side)
        p.ownPixels(of: tile, in: &b)
        return b.build()
    }

    /// Every tile of zoom `z` over the lon/lat box.
    static func tiles(_ w: Double, _ s: Double, _ e: Double, _ n: Double, z: Int) -> [TileID] {
        CatalogFixture.tiles(w, s, e, n, z: z)
    }

    static let triangle: [[[Double]]] = [[[6.80, 45.80], [6.95, 45.83], [6.86, 45.95], [6.80, 45.80]]]
    /// A square with a square hole, the hole's ring clockwise.
    static let holed: [[[Double]]] = [
        [[6.70, 45.70], [7.00, 45.70], [7.00, 46.00], [6.70, 46.00], [6.70, 45.70]],
        [[6.80, 45.80], [6.80, 45.90], [6.90, 45.90], [6.90, 45.80], [6.80, 45.80]],
    ]

    static let chamonixID = "com.tilepack.samples.montblanc.chamonix"
    static let dem = "montblanc-dem.mbtiles"
    static let colour = "montblanc-color.mbtiles"

    /// A catalog of `products` (region JSON objects) in a library with archives a and b.
    static func catalog(_ products: [String]) throws -> Catalog {
        try CatalogFixture.decode(CatalogFixture.catalogJSON(products))
    }

    // MARK: - TileMask

    @Test func maskBitsRunsAndFingerprints() {
        var b = TileMask.Builder(side: 130)  // rows of three words, the last partly used
        b.own(row: 0, columns: 60..<70)  // across a word boundary
        b.own(row: 0, columns: 65..<130)  // overlapping: owned once
        b.own(row: 129, columns: -5..<3)  // clamped
        let m = b.build()
        #expect(m.ownedCount == 70 + 3)
        #expect(m.isOwned(x: 60, y: 0) && m.isOwned(x: 129, y: 0) && !m.isOwned(x: 59, y: 0))
        #expect(m.isOwned(x: 2, y: 129) && !m.isOwned(x: 3, y: 129))
        var owned: [Range<Int>] = [], free: [Range<Int>] = []
        m.forEachRun(row: 0, owned: true) { owned.append($0) }
        m.forEachRun(row: 0, owned: false) { free.append($0) }
        #expect(owned == [60..<130] && free == [0..<60])
        var empty: [Range<Int>] = []
        m.forEachRun(row: 5, owned: true) { empty.append($0) }
        #expect(empty.isEmpty)
        #expect(!m.isEmpty && !m.isFull && m.byteCount == 130 * 3 * 8)

        var all = TileMask.Builder(side: 64)
        all.ownAll()
        #expect(all.build().isFull && TileMask.Builder(side: 64).build().isEmpty)
        // Equal masks share a fingerprint; one pixel apart, they differ.
        let same = TileMask(side: 130) { x, y in m.isOwned(x: x, y: y) }
        let other = TileMask(side: 130) { x, y in m.isOwned(x: x, y: y) || (x == 0 && y == 64) }
        #expect(same == m && same.fingerprint == m.fingerprint)
        #expect(other != m && other.fingerprint != m.fingerprint)
        // Nearest scaling keeps a half-owned mask half owned.
        let west = TileMask(side: 256) { x, _ in x < 128 }
        #expect(west.scaled(toSide: 512).ownedCount == 512 * 256 && west.scaled(toSide: 256) == west)
    }

    // MARK: - The fill against the reference

    @Test(arguments: [256, 100])
    func triangleMasksEqualTheBruteForceReference(side: Int) throws {
        let p = try Self.polygon(Self.triangle)
        var edges = 0
        for z in [11, 12, 13] {
            for t in Self.tiles(6.78, 45.78, 6.97, 45.97, z: z) {
                let mask = Self.fill(p, t, side: side)
                #expect(mask == Self.bruteForce(p, t, side: side), "tile \(t) side \(side)")
                if p.cover(t) == .edge { edges += 1 }
                if p.cover(t) == .inside { #expect(mask.isFull) }
                if p.cover(t) == .outside { #expect(mask.isEmpty) }
            }
        }
        #expect(edges > 20)
    }

    @Test func aHoleIsNotOwned() throws {
        let p = try Self.polygon(Self.holed)
        var partial = 0
        for t in Self.tiles(6.75, 45.75, 6.95, 45.95, z: 13) {
            let mask = Self.fill(p, t, side: 256)
            #expect(mask == Self.bruteForce(p, t, side: 256), "tile \(t)")
            if !mask.isEmpty && !mask.isFull { partial += 1 }
        }
        #expect(partial > 10)
        // A tile in the middle of the hole owns nothing.
        let centre = WebMercator.tile(lon: 6.85, lat: 45.85, zoom: 14)!.tile
        #expect(Self.fill(p, centre, side: 256).isEmpty && p.cover(centre) == .outside)
    }

    /// A polygon with its corners on pixel centres (as near as degrees allow): whatever side
    /// of an edge a centre falls, the fill decides it exactly as `contains` does (the tie rule:
    /// a centre on the boundary is decided by the point just east and south of it).
    @Test func centresOnTheBoundaryFollowContains() throws {
        let z = 12, side = 256
        let t = TileID(z: z, x: 2120, y: 1460)!
        let scale = Double(side) * Double(1 << z)
        func degrees(_ i: Double, _ j: Double) -> [Double] {
            let ux = (Double(t.x * side) + i + 0.5) / scale, uy = (Double(t.y * side) + j + 0.5) / scale
            return [ux * 360 - 180, atan(sinh(.pi * (1 - 2 * uy))) * 180 / .pi]
        }
        let a = degrees(10, 10), b = degrees(100, 10), c = degrees(100, 100), d = degrees(10, 100)
        let p = try Self.polygon([[a, d, c, b, a]])
        let mask = Self.fill(p, t, side: side)
        #expect(mask == Self.bruteForce(p, t, side: side))
        // About 90 × 90 pixels: the rows and columns on the edges fall either way.
        #expect(abs(mask.ownedCount - 90 * 90) <= 2 * 91)
        // A diamond through pixel centres exercises vertices on the scanlines.
        let diamond = try Self.polygon([
            [degrees(128, 20), degrees(20, 128), degrees(128, 236), degrees(236, 128), degrees(128, 20)]
        ])
        #expect(Self.fill(diamond, t, side: side) == Self.bruteForce(diamond, t, side: side))
    }

    // MARK: - The policy

    @Test func insideOutsideAndAcrossTheEdge() throws {
        let json = CatalogFixture.product("t", ["area": "[[[6.80,45.80],[6.95,45.83],[6.86,45.95],[6.80,45.80]]]"])
        let catalog = try Self.catalog([json])
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements(["t"]))
        let p = try Self.polygon(Self.triangle)
        var seen = (inside: 0, outside: 0, partial: 0)
        for t in Self.tiles(6.78, 45.78, 6.97, 45.97, z: 13) {
            let answer = policy.access(t, archive: "a.mbtiles", tileSize: 256)
            let reference = Self.bruteForce(p, t, side: 256)
            switch answer {
            case .allowed:
                #expect(reference.isFull, "\(t)"); seen.inside += 1
            case .denied(let offers):
                #expect(reference.isEmpty, "\(t)"); seen.outside += 1
                #expect(offers.isEmpty || offers.map(\.id) == ["t"])
            case .partial(let mask, let offers):
                #expect(mask == reference && mask.ownedCount == reference.ownedCount, "\(t)"); seen.partial += 1
                #expect(offers.map(\.id) == ["t"])
            }
        }
        #expect(seen.inside > 0 && seen.outside > 0 && seen.partial > 0, "\(seen)")
        // Cached: the same mask object again; the free tier is allowed without a mask.
        let edge = try #require(
            Self.tiles(6.78, 45.78, 6.97, 45.97, z: 13).first {
                p.cover($0) == .edge && !Self.bruteForce(p, $0, side: 256).isEmpty
            })
        #expect(policy.access(edge, archive: "a.mbtiles", tileSize: 256) == policy.access(edge, archive: "a.mbtiles"))
        #expect(policy.access(TileID(z: 10, x: 0, y: 0)!, archive: "zzz.mbtiles") == .allowed)
        // A mask at another tile size decides the finer pixel centres.
        let fine = policy.access(edge, archive: "a.mbtiles", tileSize: 512)
        #expect(fine.mask == Self.bruteForce(p, edge, side: 512))
        // A size no mask can have: the partial tile is denied, never shown whole.
        if case .partial = policy.access(edge, archive: "a.mbtiles") {
            #expect(!policy.access(edge, archive: "a.mbtiles", tileSize: 0).isAllowed)
            #expect(policy.access(edge, archive: "a.mbtiles", tileSize: 0).mask == nil)
        }
    }

    @Test func anEntitlementOpensOnlyTheArchivesItsProductNames() throws {
        let cheap = CatalogFixture.product("terrain", ["price": "\"0.99\"", "archives": "[\"a.mbtiles\"]"])
        let dear = CatalogFixture.product("imagery", ["price": "\"49.99\"", "archives": "[\"b.mbtiles\"]"])
        let catalog = try Self.catalog([cheap, dear])
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements(["terrain"]))
        let t = CatalogFixture.tile(5, 5, 12)  // deep inside both (identical) areas
        #expect(policy.access(t, archive: "a.mbtiles") == .allowed)
        #expect(policy.access(t, archive: "b.mbtiles") == .denied(unlockedBy: [catalog.product(id: "imagery")!.offer]))
        // An archive no product names is never opened above the free zooms.
        #expect(policy.access(t, archive: "c.mbtiles") == .denied(unlockedBy: []))
        #expect(policy.access(t, archive: "") == .denied(unlockedBy: []))
        // Offers for a: only the product selling a (terrain is owned, but still covers it).
        let nothing = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements())
        #expect(nothing.access(t, archive: "a.mbtiles").offers.map(\.id) == ["terrain"])
        #expect(nothing.access(t, archive: "b.mbtiles").offers.map(\.id) == ["imagery"])
    }

    @Test func theSampleCrestIsSplitPerPixel() throws {
        let (_, catalog) = try CatalogFixture.sampleLibrary()
        let entitlements = FixedEntitlements([Self.chamonixID])
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: entitlements)
        // The z11 tile over the crest: Chamonix owned shows its side only.
        let crest = CatalogFixture.tile(6.97, 45.79, 11)
        guard case .partial(let mask, let offers) = policy.access(crest, archive: Self.colour) else {
            Issue.record("the z11 crest tile is not partial: \(policy.access(crest, archive: Self.colour))"); return
        }
        let chamonix = try #require(catalog.product(id: Self.chamonixID)?.area)
        #expect(mask == Self.bruteForce(chamonix, crest, side: 256))
        #expect(mask.ownedCount < mask.pixelCount / 2, "most of Courmayeur's tile stays locked")
        #expect(offers.first?.id == "com.tilepack.samples.montblanc.courmayeur")
        // Both archives are sold together: the same mask for each.
        #expect(policy.access(crest, archive: Self.dem).mask == mask)
        // The bundle opens both sides (the tile reaches past the massif, so still a mask); a
        // refund closes it again (generation check, masks too).
        entitlements.set(["com.tilepack.samples.montblanc.bundle"])
        let both = try #require(policy.access(crest, archive: Self.colour).mask)
        #expect(both.ownedCount > mask.ownedCount)
        #expect(
            (0..<256).allSatisfy { y in
                (0..<256).allSatisfy { x in !mask.isOwned(x: x, y: y) || both.isOwned(x: x, y: y) }
            })
        entitlements.set([])
        #expect(
            policy.access(crest, archive: Self.colour).mask == nil
                && !policy.access(crest, archive: Self.colour).isAllowed)
    }

    // MARK: - Store, query, render, server over the sample library

    /// The sample library's policy with Chamonix owned, and a z12 tile of the colour archive
    /// that Chamonix's edge crosses (within the archives, which stop at z12).
    static func partialFixture() throws -> (policy: RegionAccessPolicy, tile: TileID, mask: TileMask) {
        let catalog = try SampleLibrary.catalog()
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements([Self.chamonixID]))
        for t in Self.tiles(6.75, 45.80, 7.02, 45.96, z: 12) {
            if case .partial(let mask, _) = policy.access(t, archive: Self.colour),
                mask.ownedCount > 4000, mask.ownedCount < 60000
            {
                return (policy, t, mask)
            }
        }
        throw TestFailure("no partial z12 tile along the Chamonix edge")
    }

    static func store(_ policy: any AccessPolicy) throws -> TileStore {
        try TileStore.over(SampleLibrary.archives, budget: try MemoryBudget(bytes: 64 << 20), accessPolicy: policy)
    }

    @Test func decodedReadsOfAPartialTileAreTransparentExactlyOutside() throws {
        let (policy, t, mask) = try Self.partialFixture()
        let store = try Self.store(policy)
        let open = try Self.store(OpenAccess())
        let a = try #require(store.archivePaths.firstIndex { $0.hasSuffix(Self.colour) })
        #expect(
            store.access(t, archive: a) == .partial(mask, unlockedBy: policy.access(t, archive: Self.colour).offers))
        let masked = try #require(try store.pixels(t, archive: a)?.array)
        let plain = try #require(try open.pixels(t, archive: a)?.array)
        let check = MaskedTileCheck(cut: masked, uncut: plain, mask: mask)
        #expect(check.insideDiffering == 0, "first inside differing: \(String(describing: check.firstInsideDiffering))")
        #expect(check.outsideOpaque == 0, "first outside opaque: \(String(describing: check.firstOutsideOpaque))")
        let outside = check.outside
        #expect(outside == mask.pixelCount - mask.ownedCount && outside > 0)
        // The raw payload is refused, named as partial (category locked), with the offers.
        #expect(throws: TileStoreError.self) { _ = try store.tile(t, archive: a) }
        do { _ = try store.tile(t, archive: a); Issue.record("no error") } catch let error as TileStoreError {
            #expect(error.code == .partialTile && error.category == .locked && !error.offers.isEmpty)
            #expect(!error.description.contains("\n"))
        }
        // Asked of every archive, the partial archives refuse their payloads too.
        #expect(throws: TileStoreError.self) { _ = try store.tile(t) }
        // The store's accounting holds with masked entries beside the plain ones.
        #expect(store.accountingProblem() == nil)
    }

    @Test func elevationOfAPartialTileIsNoDataOutside() throws {
        let (policy, t, _) = try Self.partialFixture()
        let store = try Self.store(policy)
        let open = try Self.store(OpenAccess())
        let a = try #require(store.archivePaths.firstIndex { $0.hasSuffix(Self.dem) })
        guard case .partial(let mask, _) = store.access(t, archive: a) else {
            Issue.record("not partial in the DEM"); return
        }
        let grid = try #require(try store.elevation(t, archive: a))
        let plain = try #require(try open.elevation(t, archive: a))
        #expect(grid.width == mask.side && grid.height == mask.side)
        var outside = 0, wrong = 0
        for y in 0..<grid.height {
            for x in 0..<grid.width {
                if mask.isOwned(x: x, y: y) {
                    if grid[x, y].bitPattern != plain[x, y].bitPattern { wrong += 1 }
                } else {
                    if !grid[x, y].isNaN { wrong += 1 }
                    outside += 1
                }
            }
        }
        #expect(wrong == 0, "samples not the plain grid's inside or not nodata outside")
        #expect(outside > 0)
    }

    @Test func pointQueriesFollowThePixel() throws {
        let (policy, t, mask) = try Self.partialFixture()
        let store = try Self.store(policy)
        let a = try #require(store.archivePaths.firstIndex { $0.hasSuffix(Self.colour) })
        // The centres of one owned and one unowned pixel, as a query at zoom 12.
        func query(_ x: Int, _ y: Int) throws -> TileQuery {
            let n = Double(1 << 12)
            let ux = (Double(t.x) + (Double(x) + 0.5) / 256) / n, uy = (Double(t.y) + (Double(y) + 0.5) / 256) / n
            return try TileQuery(lat: atan(sinh(.pi * (1 - 2 * uy))) * 180 / .pi, lon: ux * 360 - 180, zoom: 12)
        }
        var ownedPixel: (Int, Int)?, lockedPixel: (Int, Int)?
        for y in stride(from: 8, to: 256, by: 16) {
            for x in stride(from: 8, to: 256, by: 16) {
                if mask.isOwned(x: x, y: y) {
                    ownedPixel = ownedPixel ?? (x, y)
                } else {
                    lockedPixel = lockedPixel ?? (x, y)
                }
            }
        }
        let (ox, oy) = try #require(ownedPixel), (lx, ly) = try #require(lockedPixel)
        let owned = try PointQuery.answer(query(ox, oy), store: store, archive: a)
        #expect(!owned.locked && owned.rgba != nil && owned.query.pixel.x == ox && owned.query.pixel.y == oy)
        let locked = try PointQuery.answer(query(lx, ly), store: store, archive: a)
        #expect(locked.locked && locked.rgba == nil && locked.elevationMetres == nil && !locked.unlock.isEmpty)
    }

    @Test func renderDrawsTheUnownedPixelsAsLockedAndTheOwnedAsOpen() throws {
        let (policy, t, mask) = try Self.partialFixture()
        let catalog = try SampleLibrary.catalog()
        let budget = try MemoryBudget(bytes: 64 << 20)
        func picture(_ p: any AccessPolicy) throws -> MapPicture {
            try MapLayers(store: TileStore.over(SampleLibrary.archives, budget: budget, accessPolicy: p), credits: [])
                .render(MapFrame(tile: t))
        }
        let partial = try picture(policy)
        let nothing = try picture(RegionAccessPolicy(catalog: catalog, entitlements: FixedEntitlements()))
        let everything = try picture(OpenAccess())
        #expect(partial.tilesLocked == 1 && nothing.tilesLocked == 1 && everything.tilesLocked == 0)
        #expect(partial.offers.keys.sorted() == nothing.offers.keys.sorted())
        var mismatches = 0
        for y in 0..<256 {
            for x in 0..<256 {
                let i = (y * 256 + x) * 4
                let want =
                    mask.isOwned(x: x, y: y) ? everything.image.pixels[i..<i + 4] : nothing.image.pixels[i..<i + 4]
                if Array(partial.image.pixels[i..<i + 4]) != Array(want) { mismatches += 1 }
            }
        }
        #expect(mismatches == 0)
    }

    @Test func serverRoutesOfAPartialTile() throws {
        let (_, t, mask) = try Self.partialFixture()
        let (service, ledger) = try Self.serviceOwningChamonix()
        defer { _ = ledger }
        let (z, x, y) = ("\(t.z)", "\(t.x)", "\(t.y)")
        // The raw payload: 403 partialTile, in the server's JSON error shape.
        let raw = service.tile(region: "montblanc-color", z: z, x: x, y: y)
        let text = String(decoding: raw.body, as: UTF8.self)
        #expect(raw.status == 403 && text.contains("\"error\":\"partialTile\"") && text.contains("\"unlock\":[{"))
        #expect(raw.header("Cache-Control") == "no-store")
        // The PNG (a PNG archive: never the stored bytes): alpha 0 exactly outside.
        let png = service.tile(region: "montblanc-color", z: z, x: x, y: y + ".png")
        #expect(png.status == 200)
        let rgba = try PNGDecoder().decode(png.body).pixels
        let whole = ServerTests.openService.tile(region: "montblanc-color", z: z, x: x, y: y + ".png")
        let open = try PNGDecoder().decode(whole.body).pixels
        var wrong = 0, outside = 0
        for py in 0..<256 {
            for px in 0..<256 {
                let i = (py * 256 + px) * 4
                if mask.isOwned(x: px, y: py) {
                    if rgba[i..<i + 4] != open[i..<i + 4] { wrong += 1 }
                } else {
                    outside += 1
                    if rgba[i + 3] != 0 { wrong += 1 }
                }
            }
        }
        #expect(wrong == 0 && outside == mask.pixelCount - mask.ownedCount)
        // Its ETag is its own: not the whole tile's, and If-None-Match with it is a 304.
        let etag = try #require(png.header("ETag"))
        #expect(etag.hasPrefix("\"m") && whole.header("ETag") != etag)
        #expect(
            service.tile(region: "montblanc-color", z: z, x: x, y: y + ".png", ifNoneMatch: whole.header("ETag")).status
                == 200)
        #expect(service.tile(region: "montblanc-color", z: z, x: x, y: y + ".png", ifNoneMatch: etag).status == 304)
        // The open server's cached PNG is not the masked one, and the other way round.
        #expect(ServerTests.openService.tile(region: "montblanc-color", z: z, x: x, y: y + ".png").body == whole.body)
        #expect(service.tile(region: "montblanc-color", z: z, x: x, y: y + ".png").body == png.body)
        #expect(whole.body != png.body)
        // Terrain: nodata (alpha 0) outside the mask.
        let terrain = service.terrain(region: "montblanc-dem", z: z, x: x, y: y + ".png")
        #expect(terrain.status == 200)
        let dem = try PNGDecoder().decode(terrain.body).pixels
        var leaked = 0
        for py in 0..<256 {
            for px in 0..<256 where !mask.isOwned(x: px, y: py) && dem[(py * 256 + px) * 4 + 3] != 0 { leaked += 1 }
        }
        #expect(leaked == 0)
        // The view draws as render does.
        let view = service.view(z: z, x: x, y: y + ".png")
        let drawn = try MapRenderer.render(MapFrame(tile: t), store: service.store)
        let viewed = try PNGDecoder().decode(view.body).pixels
        #expect(view.status == 200 && viewed == drawn.image.pixels)
        #expect(drawn.tilesLocked == 1)
    }

    /// A service over a copy of the sample library whose ledger owns Chamonix (bought through
    /// the library, as `store buy` does).
    static func serviceOwningChamonix() throws -> (TileService, TemporaryDirectory) {
        let dir = TemporaryDirectory()
        for name in [Self.dem, Self.colour, "catalog.json", "catalog.jws"] {
            symlink(SampleLibrary.directory + "/" + name, dir.path + "/" + name)
        }
        let ledger = dir.path + "/ledger.sqlite"
        // Bought through a writable library (as `store buy` does), served read-only (as `serve`),
        // by an account of its own (the test App Store is shared by the server tests).
        let account = AccountToken.random()
        _ = try ServerTests.storeLibrary(directory: dir.path, ledger: ledger, readOnly: false, account: account).buy(
            Self.chamonixID)
        var options = TileService.Options()
        options.libraryDirectory = dir.path
        options.library = try ServerTests.storeLibrary(
            directory: dir.path, ledger: ledger, readOnly: true, account: account)
        return (try TileService(options), dir)
    }
}
