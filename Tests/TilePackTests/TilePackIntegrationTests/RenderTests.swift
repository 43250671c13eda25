import Testing
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
@testable import TilePack
@testable import TilePackRender
#if canImport(Glibc)
import Glibc
#endif
import TilePackTestSupport

@Suite("Render: map pictures from the tile store")
struct RenderTests {
    static let budget: MemoryBudget = { (try? MemoryBudget(bytes: 64 << 20))! }()

    @Test func rendersTheSampleDEMAsAPictureThatIsNotBlank() throws {
        let dem = SampleLibrary.directory + "/montblanc-dem.mbtiles"
        let layers = MapLayers(store: try TileStore.over([dem], budget: Self.budget), credits: [])
        let frame = try MapFrame(lat: 45.86, lon: 6.88, zoom: 11, width: 512, height: 384)
        let picture = try layers.render(frame)
        #expect(picture.tilesDrawn >= 4 && picture.tilesLocked == 0)
        #expect(picture.image.distinctColours() > 500, "a hillshade has many colours")
        // The centre is inside the region: not the background.
        let i = (192 * 512 + 256) * 4
        #expect(Array(picture.image.pixels[i..<i + 4]) != MapRenderer.background)
        #expect(!layers.attribution.isEmpty)
    }

    @Test func rendersOneTileAt256Pixels() throws {
        let layers = MapLayers(store: try TileStore.over(SampleLibrary.archives, budget: Self.budget), credits: [])
        let hit = try #require(WebMercator.tile(lon: 6.88, lat: 45.86, zoom: 10))
        let picture = try layers.render(MapFrame(tile: hit.tile))
        #expect(picture.image.width == 256 && picture.image.height == 256)
        #expect(picture.tilesDrawn == 1 && picture.image.distinctColours() > 100)
    }

    @Test func lockedTilesAreDimmedAndPriced() throws {
        let catalog = try SampleLibrary.catalog()
        let entitlements = FixedEntitlements()
        let policy = RegionAccessPolicy(catalog: catalog, entitlements: entitlements)
        let layers = MapLayers(
            store: try TileStore.over(SampleLibrary.archives, budget: Self.budget, accessPolicy: policy), credits: [])
        // Zoom 12 is above the free zoom (10): everything is for sale.
        let frame = try MapFrame(lat: 45.86, lon: 6.88, zoom: 12, width: 512, height: 512)
        let locked = try layers.render(frame)
        #expect(locked.tilesLocked >= 4 && locked.tilesDrawn == 0)
        #expect(locked.offers.values.contains { $0.price == "4.99" || $0.price == "3.99" })
        // Dimmed: darker than the background, and the label's white text is there.
        let i = (10 * 512 + 10) * 4
        #expect(locked.image.pixels[i] < MapRenderer.background[0] - 40)
        #expect(locked.image.pixels.contains(255))

        entitlements.set(["com.tilepack.samples.montblanc.bundle"])
        let owned = try layers.render(frame)
        #expect(owned.tilesLocked == 0 && owned.tilesDrawn >= 4)
        #expect(owned.image.distinctColours() > 500)
    }
}
