import Foundation
import TilePackArchive
import TilePackBuild
import TilePackCore
import TilePackRegions
import TilePackStore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The two sample archives (PNG tiles up to zoom 12) and the sample catalog in one library
/// (`catalog.json`, and `catalog.jws` signed with ``RegionsFixture/publisher``), built once per
/// test process for the render and server tests.
package enum SampleLibrary {
    package static let directory: String = {
        let dir = processTemporaryDirectory("samples")
        do {
            _ = try build("montblanc-dem.tif", in: dir, maxZoom: 12)
            _ = try build("montblanc-color.tif", in: dir, maxZoom: 12)
            let catalog = try [UInt8](
                Data(contentsOf: URL(fileURLWithPath: TestData.sampleRegions + "/catalog.json")))
            try Data(catalog).write(to: URL(fileURLWithPath: dir + "/catalog.json"))
            // What a store library reads: the catalog with the archives' hashes, signed by the publisher.
            try RegionsFixture.signCatalog(libraryDirectory: dir)
        } catch {
            preconditionFailure("building the sample library failed: \(error)")
        }
        return dir
    }()

    package static var archives: [String] { (try? PointQuery.archives(in: directory)) ?? [] }

    package static func catalog() throws -> Catalog { try Catalog(contentsOf: directory + "/catalog.json") }

    /// Builds the sample `file` (SampleRegions/) into `dir` with PNG tiles, up to `maxZoom`.
    package static func build(
        _ file: String, in dir: String, maxZoom: Int? = nil
    ) throws -> (RegionBuild.Result, TilePlan) {
        var request = RegionBuild.Request(sourcePath: TestData.sampleRegions + "/" + file)
        let name = file.hasSuffix(".tif") ? String(file.dropLast(4)) + ".mbtiles" : file
        request.outputPath = dir + "/" + name
        request.codec = .png
        request.options.maxZoom = maxZoom
        let build = RegionBuild(request)
        let plan = try build.prepare().plan
        return (try build.run(), plan)
    }
}

extension TileStore {
    /// One store over archive files, for tests that read archives without a library: the
    /// library path is `RegionLibrary.openTileStore`.
    package static func over(
        _ paths: [String], budget: MemoryBudget = PointQuery.defaultBudget,
        accessPolicy: any AccessPolicy = OpenAccess()
    ) throws -> TileStore {
        var options = TileStoreOptions()
        options.accessPolicy = accessPolicy
        return try TileStore(archives: paths.map { try MBTilesReader(path: $0) }, budget: budget, options: options)
    }
}
