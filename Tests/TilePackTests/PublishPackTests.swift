import Foundation
import Testing
@testable import TilePack

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
            let json = String(decoding: readFile(EndToEndTests.sampleRegions + "/catalog.json"), as: UTF8.self)
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
            let publications = try PackPublisher(.init(libraryDirectory: library, outputDirectory: out, key: key,
                                                       license: "CC0-1.0", now: RegionsFixture.ms(RegionsFixture.t0))).run()
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
        #expect(ids == ["free", Self.chamonix, Self.courmayeur, Self.bundle], "no pack for the subscription: it includes the bundle")
        for p in Self.packs.publications {
            let (manifest, _) = try SignedPackManifest.load(path: Self.packs.dir + "/" + PackManifest.manifestFileName(p.manifest.packID),
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
        let catalog = try SignedCatalog.load(libraryDirectory: Self.library, publisherKeys: [RegionsFixture.publisher.publicJWK]).catalog
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
                        let want = try PNGTileDecoder().decode(try #require(try master.tile(tile)), width: side, height: side)
                        for y in 0..<side {
                            for x in 0..<side {
                                let p = (y * side + x) * 4
                                if mask.isOwned(x: x, y: y) {
                                    #expect(got[p..<p + 4] == want[p..<p + 4], "\(tile) pixel \(x),\(y) inside differs")
                                } else {
                                    outsidePixels += 1
                                    if got[p..<p + 4] != [0, 0, 0, 0] {
                                        Issue.record("\(info.archive) \(tile) pixel \(x),\(y) outside the area is not transparent")
                                        return
                                    }
                                }
                            }
                        }
                        if let grid = try layer.elevation(tile) {
                            let scaled = mask.side == grid.width ? mask : mask.scaled(toSide: grid.width)
                            for y in 0..<grid.height {
                                for x in 0..<grid.width where !scaled.isOwned(x: x, y: y) {
                                    #expect(grid[x, y].isNaN, "\(tile) elevation \(x),\(y) outside is not nodata")
                                }
                            }
                        }
                        masked += 1
                    }
                }
            }
        }
        #expect(whole > 0 && masked > 0 && outsidePixels > 0)
        // A region leaves out the master tiles beyond its polygon; the bundle covers both sides.
        #expect(packID == Self.bundle || omitted > 0)
        print("\(packID): \(whole) whole tiles, \(masked) edge tiles with \(outsidePixels) pixels outside (all transparent), \(omitted) master tiles left out")
    }

    /// Where the two regions meet, the bundle's tile shows both sides: no pixel either region
    /// owns is transparent in it.
    @Test func theBundleHasNoHalfMaskedTileWhereItsRegionsMeet() throws {
        let catalog = try SignedCatalog.load(libraryDirectory: Self.library, publisherKeys: [RegionsFixture.publisher.publicJWK]).catalog
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
                    for y in 0..<256 { for x in 0..<256 where m.isOwned(x: x, y: y) { #expect(union.isOwned(x: x, y: y)) } }
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
        let json = String(decoding: readFile(EndToEndTests.sampleRegions + "/catalog.json"), as: UTF8.self)
            .replacingOccurrences(of: "\"maxzoom\": 13", with: "\"maxzoom\": 15")
        writeFile(dir + "/catalog.json", Array(json.utf8))
        try RegionsFixture.signCatalog(libraryDirectory: dir)
        let key = try RegionsFixture.publisher.privateKey(source: "publisher")
        let error = try #require(thrown(CatalogError.self) {
            _ = try PackPublisher(.init(libraryDirectory: dir, outputDirectory: dir + "/packs", key: key, license: "CC0-1.0", now: 0)).run()
        })
        #expect(error.description.contains(Self.chamonix) && error.description.contains("13–15"), "\(error)")
        #expect(error.description.contains("montblanc-color.mbtiles holds z"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/packs/free.mbtiles"), "nothing is written")
    }
}

/// A directory under /tmp kept for the test process (a suite's shared fixture), as
/// ``SampleLibrary`` makes its own.
private func processTemporaryDirectory(_ name: String) -> String {
    var template = Array("/tmp/tilepack-\(name)-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        preconditionFailure("mkdtemp failed")
    }
    return String(cString: made)
}
