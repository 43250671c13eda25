import Testing
import TilePackGeoTIFF
@testable import TilePackSamples
import TilePackTestSupport

/// The synthetic terrain behind SampleRegions/: a seed gives the same bytes every time, another
/// seed other bytes, for the DEM written as a GeoTIFF and for the colour image.
@Suite("Samples: deterministic terrain")
struct SampleRegionTests {
    @Test func sameSeedSameBytesOtherSeedOtherBytes() throws {
        let scratch = TemporaryDirectory(), dir = scratch.path
        defer { withExtendedLifetime(scratch) {} }  // keep the directory until the test ends
        func write(seed: UInt64, _ name: String) throws -> [UInt8] {
            let raster = SampleRegion.elevation(
                terrain: SampleRegion.terrain(seed: seed, elevationSize: 96), width: 96, height: 80)
            var options = raster.writerOptions()
            options.blockWidth = 32
            options.blockHeight = 32
            try raster.write(to: "\(dir)/\(name).tif", options: options)
            return readFile("\(dir)/\(name).tif")
        }
        let a = try write(seed: 7, "a"), b = try write(seed: 7, "b"), c = try write(seed: 8, "c")
        #expect(a == b)
        #expect(a != c)
        let colorA = SampleRegion.color(
            terrain: SampleRegion.terrain(seed: 7, elevationSize: 96), width: 40, height: 30
        ).rawSamples()
        let colorB = SampleRegion.color(
            terrain: SampleRegion.terrain(seed: 7, elevationSize: 96), width: 40, height: 30
        ).rawSamples()
        #expect(colorA == colorB)
    }
}
