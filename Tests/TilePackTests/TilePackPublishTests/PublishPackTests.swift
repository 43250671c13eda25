import Foundation
import Testing
import TilePackArchive
import TilePackCodec
import TilePackCore
@testable import TilePackPublish
import TilePackRegions
import TilePackSQLite
import TilePackStore
import TilePackTools
import TilePackTestSupport

/// `tilepack pack` on the Mont Blanc samples (issue 24, Must-show 1): packs hold exactly the
/// product's tiles, whole tiles byte-equal to the master, edge tiles with no pixel outside.
@Suite("Publish: packs cut from the sample library")
struct PublishPackTests {
    /// The sample library (PNG, zooms up to 12) with its catalog selling what it holds.
    static let library: String = {
        let dir = processTemporaryDirectory("publish-lib")
        do {
            for name in ["montblanc-dem.mbtiles", "montblanc-color.mbtiles"] {
                try FileManager.default.copyItem(atPath: SampleLibrary.directory + "/" + name, toPath: dir + "/" + name)
            }
            let json = String(decoding: readFile(TestData.sampleRegions + "/catalog.json"), as: UTF8.self)
                .replacingOccurrences(of: "\"maxzoom\": 13", with: "\"maxzoom\": 12")
            writeFile(dir + "/catalog.json", Array(json.utf8))
            try RegionsFixture.signCatalog(libraryDirectory: dir)
        } catch {
            preconditionFailure("setting up the publisher's library failed: \(error)")
        }
        return dir
    }()

    static let packs: (dir: String, publications: [PackPublisher.Publication]) = {
        let out = processTemporaryDirectory("publish-out")
        do {
            let key = try RegionsFixture.publisher.privateKey(source: "publisher")
            let publications = try PackPublisher(
                .init(
                    libraryDirectory: library, outputDirectory: out, key: key,
                    license: "CC0-1.0", now: RegionsFixture.ms(RegionsFixture.t0))
            ).run()
            return (out, publications)
        } catch {
            preconditionFailure("packing the sample library failed: \(error)")
        }
    }()

    static let chamonix = "com.tilepack.samples.montblanc.chamonix"
    static let courmayeur = "com.tilepack.samples.montblanc.courmayeur"
    static let bundle = "com.tilepack.samples.montblanc.bundle"

    @Test func writesFreeRegionAndBundlePacksWithVerifiableManifests() throws {
        let ids = Self.packs.publications.map(\.manifest.packID)
        #expect(
            ids == ["free", Self.chamonix, Self.courmayeur, Self.bundle],
            "no pack for the subscription: it includes the bundle")
        for p in Self.packs.publications {
            let (manifest, _) = try SignedPackManifest.load(
                path: Self.packs.dir + "/" + PackManifest.manifestFileName(p.manifest.packID),
                publisherKeys: [RegionsFixture.publisher.publicJWK])
            #expect(manifest == p.manifest)
            #expect(manifest.version == 1 && manifest.license == "CC0-1.0")
            let path = Self.packs.dir + "/" + PackManifest.packFileName(manifest.packID)
            #expect(try FileDigest.sha256(path: path) == manifest.sha256)
            #expect(try PackReader(path: path).indexDigest() == manifest.tileIndexSHA256)
            #expect(manifest.perZoom.reduce(0) { $0 + $1.tiles } > 0)
        }
        let free = try #require(Self.packs.publications.first?.manifest)
        #expect(free.productID == nil && free.zoomRange.map { $0.upperBound <= 10 } == true)
        let region = try #require(Self.packs.publications.first { $0.manifest.packID == Self.chamonix }?.manifest)
        #expect(region.productID == Self.chamonix && region.zoomRange == 9...12)
        #expect(region.archives.map(\.name) == ["montblanc-dem.mbtiles", "montblanc-color.mbtiles"])
    }

    /// Every tile of every layer: whole tiles byte-equal to the master, masked tiles equal to the
    /// master inside and transparent outside, nothing the areas leave out.
    @Test(arguments: [chamonix, courmayeur, bundle])
    func packTilesAreTheMastersInsideAndTransparentOutside(packID: String) throws {
        let catalog = try SignedCatalog.load(
            libraryDirectory: Self.library, publisherKeys: [RegionsFixture.publisher.publicJWK]
        ).catalog
        let plan = try #require(try PackPlan.plans(for: catalog, catalogPath: "catalog").first { $0.packID == packID })
        let pack = try PackReader(path: Self.packs.dir + "/" + PackManifest.packFileName(packID))
        var whole = 0, masked = 0, outsidePixels = 0, omitted = 0
        for (i, info) in pack.layers.enumerated() {
            let master = try MBTilesReader(path: Self.library + "/" + info.archive)
            let layer = try #require(pack.layer(i))
            let side = master.summary.tileSize
            for z in 9...12 {
                for tile in try master.tileIDs(zoom: z) {
                    let stored = try layer.tileBytes(tile)
                    switch plan.cut(tile, archive: info.archive, side: side) {
                    case .omit:
                        #expect(stored == nil, "\(info.archive) \(tile) is outside the product and in its pack")
                        omitted += 1
                    case .whole:
                        #expect(stored == (try master.tile(tile)), "\(info.archive) \(tile) differs from the master")
                        whole += 1
                    case .masked(let mask):
                        let bytes = try #require(stored, "\(info.archive) \(tile) is on the edge and missing")
                        let got = try PNGTileDecoder().decode(bytes, width: side, height: side)
                        let want = try PNGTileDecoder().decode(
                            try #require(try master.tile(tile)), width: side, height: side)
                        #expect(mask.side == side)
                        let check = MaskedTileCheck(cut: got, uncut: want, mask: mask)
                        outsidePixels += check.outside
                        #expect(
                            check.insideDiffering == 0,
                            "\(info.archive) \(tile): pixels inside differ, first \(String(describing: check.firstInsideDiffering))"
                        )
                        #expect(
                            check.outsideOpaque == 0,
                            """
                            \(info.archive) \(tile): pixels outside the area are not transparent, first \
                            \(String(describing: check.firstOutsideOpaque))
                            """)
                        if let grid = try layer.elevation(tile) {
                            let scaled = mask.side == grid.width ? mask : mask.scaled(toSide: grid.width)
                            var outsideValued: [(Int, Int)] = []
                            for y in 0..<grid.height {
                                for x in 0..<grid.width where !scaled.isOwned(x: x, y: y) && !grid[x, y].isNaN {
                                    outsideValued.append((x, y))
                                }
                            }
                            let valued = outsideValued.count  // a count, so a failure does not print every sample
                            #expect(
                                valued == 0,
                                "\(tile): elevations outside not nodata, first \(String(describing: outsideValued.first))"
                            )
                        }
                        masked += 1
                    }
                }
            }
        }
        #expect(whole > 0 && masked > 0 && outsidePixels > 0)
        // A region leaves out the master tiles beyond its polygon; the bundle covers both sides.
        #expect(packID == Self.bundle || omitted > 0)
        print(
            """
            \(packID): \(whole) whole tiles, \(masked) edge tiles with \(outsidePixels) pixels outside (all \
            transparent), \(omitted) master tiles left out
            """
        )
    }

    /// Where the two regions meet, the bundle's tile shows both sides: no pixel either region
    /// owns is transparent in it.
    @Test func theBundleHasNoHalfMaskedTileWhereItsRegionsMeet() throws {
        let catalog = try SignedCatalog.load(
            libraryDirectory: Self.library, publisherKeys: [RegionsFixture.publisher.publicJWK]
        ).catalog
        let plans = try PackPlan.plans(for: catalog, catalogPath: "catalog")
        let bundle = try #require(plans.first { $0.packID == Self.bundle })
        let regions = plans.filter { $0.packID == Self.chamonix || $0.packID == Self.courmayeur }
        let master = try MBTilesReader(path: Self.library + "/montblanc-color.mbtiles")
        var crestTiles = 0
        for tile in try master.tileIDs(zoom: 12) {
            let cuts = regions.map { $0.cut(tile, archive: "montblanc-color.mbtiles", side: 256) }
            guard cuts.allSatisfy({ if case .masked = $0 { true } else { false } }) else { continue }
            crestTiles += 1
            switch bundle.cut(tile, archive: "montblanc-color.mbtiles", side: 256) {
            case .whole: continue
            case .omit: Issue.record("\(tile) is on both regions' edges and missing from the bundle")
            case .masked(let union):
                for case .masked(let m) in cuts {
                    let lost = (0..<256 * 256).filter {
                        m.isOwned(x: $0 % 256, y: $0 / 256) && !union.isOwned(x: $0 % 256, y: $0 / 256)
                    }
                    #expect(lost.isEmpty, "\(tile): \(lost.count) pixels a region owns are masked in the bundle")
                }
            }
        }
        #expect(crestTiles > 0, "the crest crosses tiles at zoom 12")
    }

    @Test func aCatalogSellingZoomsNoArchiveHoldsIsRefusedNamingProductAndZooms() throws {
        let scratch = TemporaryDirectory()
        let dir = scratch.path
        for name in ["montblanc-dem.mbtiles", "montblanc-color.mbtiles"] {
            try FileManager.default.copyItem(atPath: Self.library + "/" + name, toPath: dir + "/" + name)
        }
        let json = String(decoding: readFile(TestData.sampleRegions + "/catalog.json"), as: UTF8.self)
            .replacingOccurrences(of: "\"maxzoom\": 13", with: "\"maxzoom\": 15")
        writeFile(dir + "/catalog.json", Array(json.utf8))
        try RegionsFixture.signCatalog(libraryDirectory: dir)
        let key = try RegionsFixture.publisher.privateKey(source: "publisher")
        let error = try #require(
            thrown(CatalogError.self) {
                _ = try PackPublisher(
                    .init(libraryDirectory: dir, outputDirectory: dir + "/packs", key: key, license: "CC0-1.0", now: 0)
                ).run()
            })
        #expect(error.description.contains(Self.chamonix) && error.description.contains("13–15"), "\(error)")
        #expect(error.description.contains("montblanc-color.mbtiles holds z"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/packs/free.mbtiles"), "nothing is written")
    }
}

/// Installed packs on a device (issue 24): a pack opens whole when its product is owned,
/// locks again on a refund, keeps what a lapsed subscription bought, and is not shown at all
/// when its file no longer has the signed tile index.
@Suite("Regions: installed packs on a device")
struct RegionsInstalledPackTests {
    static let chamonix = PublishPackTests.chamonix
    static let colourLayer = chamonix + ".mbtiles/montblanc-color.mbtiles"

    /// A device library: the signed catalog and the given packs in `packs/`.
    static func device(_ dir: TemporaryDirectory, packs: [String]) throws -> String {
        let lib = dir.file("device")
        try FileManager.default.createDirectory(atPath: lib + "/packs", withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: PublishPackTests.library + "/catalog.jws", toPath: lib + "/catalog.jws")
        for id in packs {
            for name in [PackManifest.packFileName(id), PackManifest.manifestFileName(id)] {
                try FileManager.default.copyItem(
                    atPath: PublishPackTests.packs.dir + "/" + name, toPath: lib + "/packs/" + name)
            }
        }
        return lib
    }

    /// A z12 tile of the Chamonix pack's colour layer.
    static func chamonixTile(_ library: RegionLibrary) throws -> TileID {
        let pack = try #require(library.installedPacks.first { $0.manifest.packID == chamonix })
        return try #require(try pack.reader.indexRows(layer: 1).first { $0.tile.z == 12 && $0.kind == .tile }?.tile)
    }

    @Test func anOwnedPackShowsWholeAndLocksAgainOnARefund() throws {
        let fixture = try TestStoreFixture()
        let lib = try Self.device(fixture.dir, packs: ["free", Self.chamonix])
        let library = try RegionLibrary(
            directory: lib, trust: fixture.trust, ledgerPath: fixture.dir.file("ledger.sqlite"),
            account: RegionsFixture.account, storefront: fixture.store, clock: fixture.clock)
        #expect(library.installedPacks.map(\.manifest.packID) == ["com.tilepack.samples.montblanc.chamonix", "free"])
        #expect(library.packProblems.isEmpty, "\(library.packProblems)")
        let policy = library.accessPolicy()
        let tile = try Self.chamonixTile(library)
        guard case .denied(let offers) = policy.access(tile, archive: Self.colourLayer, tileSize: 256) else {
            Issue.record("an unbought pack's tile is shown"); return
        }
        #expect(offers.map(\.id).contains(Self.chamonix))
        #expect(
            policy.access(
                try #require(TileID(z: 10, x: tile.x >> 2, y: tile.y >> 2)), archive: Self.colourLayer, tileSize: 256)
                == .allowed, "free zooms show")
        #expect(policy.access(tile, archive: "free.mbtiles/montblanc-color.mbtiles", tileSize: 256) == .allowed)
        #expect(!library.isPackOpen(Self.chamonix) && library.isPackOpen("free"))

        guard case .bought(let entitlement) = try library.buy(Self.chamonix) else { Issue.record("not bought"); return }
        #expect(
            policy.access(tile, archive: Self.colourLayer, tileSize: 256) == .allowed,
            "whole: the pack's edges are cut already")
        #expect(library.isPackOpen(Self.chamonix))
        // A master archive named like the pack's layer (the owner can name a file anything) is not the pack.
        #expect(
            !policy.access(tile, archive: Self.chamonix + ".mbtiles#montblanc-color.mbtiles", tileSize: 256).isAllowed)
        _ = try library.refund(entitlement.transactionID)
        #expect(!policy.access(tile, archive: Self.colourLayer, tileSize: 256).isAllowed)
    }

    @Test func aPackWhoseIndexWasEditedIsNotShown() throws {
        let fixture = try TestStoreFixture()
        let lib = try Self.device(fixture.dir, packs: [Self.chamonix])
        // The owner of the device drops the index rows of zoom 12 (to put other tiles there).
        let db = try SQLiteConnection(
            path: lib + "/packs/" + PackManifest.packFileName(Self.chamonix), mode: .readWriteExisting)
        try db.prepare("DELETE FROM tilepack_tile_index WHERE zoom_level = 12").run()
        let library = try RegionLibrary(
            directory: lib, trust: fixture.trust, ledgerPath: fixture.dir.file("ledger.sqlite"),
            account: RegionsFixture.account, storefront: fixture.store, clock: fixture.clock)
        #expect(library.installedPacks.isEmpty)
        #expect(
            library.problems().contains { $0.contains("tile index is not the one its signed manifest names") },
            "\(library.problems())")
    }

    /// A subscription that ended keeps the versions released before its signed expiresDate.
    @Test func aLapsedSubscriptionKeepsTheVersionsReleasedBeforeItEnded() throws {
        struct Lapsed: EntitlementSource {
            let ends: Int64
            func entitledProductIDs() -> Set<String> { [] }
            var generation: UInt64 { 1 }
            func lapsedSubscriptions() -> [String: Int64] { ["com.tilepack.samples.montblanc.updates": ends] }
        }
        let catalog = try SignedCatalog.load(
            libraryDirectory: PublishPackTests.library,
            publisherKeys: [RegionsFixture.publisher.publicJWK]
        ).catalog
        let ends: Int64 = 1_750_000_000_000
        let policy = PackAccessPolicy(
            base: FreeZoomAccess(maxZoom: 0), catalog: catalog, entitlements: Lapsed(ends: ends),
            layers: [
                "old": .init(packID: "old", productID: Self.chamonix, releasedAt: ends - 1),
                "new": .init(packID: "new", productID: Self.chamonix, releasedAt: ends + 1),
            ])
        let tile = TileID(z: 12, x: 2126, y: 1459)!
        #expect(policy.access(tile, archive: "old", tileSize: 256) == .allowed)
        #expect(!policy.access(tile, archive: "new", tileSize: 256).isAllowed)
    }
}
