import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing
import TilePackArchive
import TilePackCore
import TilePackRegions
import TilePackTestSupport
@testable import TilePackServer

/// `serve` over an open library holding a PMTiles archive: its tiles on the tile routes, and
/// the file itself on `GET /NAME.pmtiles` with HTTP Range (what MapLibre's pmtiles protocol reads).
struct ServerPMTilesTests {
    /// An open library whose only archive is the sample colour archive as PMTiles.
    static func library() throws -> (dir: TemporaryDirectory, path: String) {
        let dir = TemporaryDirectory()
        let path = dir.file("alps.pmtiles")
        let source = try MBTilesReader(path: SampleLibrary.directory + "/montblanc-color.mbtiles")
        var ids: [TileID] = []
        for z in 0...TileID.maxZoom { ids += try source.tileIDs(zoom: z) }
        let writer = try PMTilesWriter(path: path, metadata: source.metadata, tileType: .unknown)
        for id in ids.sorted(by: { $0.pmtilesID < $1.pmtilesID }) {
            try writer.write(try #require(try source.tile(id)), for: id)
        }
        try writer.finish()
        return (dir, path)
    }

    static func body(_ r: TestResponse) -> [UInt8] { Array(r.body.readableBytesView) }

    @Test func servesTheArchiveWithRanges() async throws {
        let (dir, path) = try Self.library()
        var options = TileService.Options()
        options.libraryDirectory = dir.path
        let service = try TileService(options)
        #expect(service.regionNames == ["alps"])
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let app = Application(router: TileServer.router(service, logRequests: false))
        try await app.test(.router) { client in
            try await client.execute(uri: "/alps.pmtiles", method: .get, headers: [.range: "bytes=0-126"]) { r in
                #expect(r.status == .partialContent)
                #expect(r.headers[.contentRange] == "bytes 0-126/\(bytes.count)")
                #expect(Self.body(r) == Array(bytes[0..<127]))
                #expect((try? PMTilesHeader(Self.body(r), path: "served"))?.tileDataLength ?? 0 > 0)
            }
            try await client.execute(uri: "/alps.pmtiles", method: .get, headers: [.range: "bytes=-10"]) { r in
                #expect(r.status == .partialContent)
                #expect(Self.body(r) == Array(bytes.suffix(10)))
            }
            try await client.execute(uri: "/alps.pmtiles", method: .get, headers: [.range: "bytes=\(bytes.count)-"]) {
                r in
                #expect(r.status == .rangeNotSatisfiable)
                #expect(r.headers[.contentRange] == "bytes */\(bytes.count)")
            }
            try await client.execute(uri: "/alps.pmtiles", method: .get) { r in
                #expect(r.status == .ok)
                #expect(Self.body(r) == bytes)
                #expect(r.headers[.acceptRanges] == "bytes")
            }
            try await client.execute(uri: "/alps.pmtiles", method: .head) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentLength] == "\(bytes.count)")
                #expect(Self.body(r).isEmpty)
            }
            for uri in ["/nothing.pmtiles", "/..%2Falps.pmtiles", "/alps.mbtiles"] {
                try await client.execute(uri: uri, method: .get) { r in #expect(r.status == .notFound, "\(uri)") }
            }
            // The tile routes read the same archive.
            try await client.execute(uri: "/tiles/alps/10/531/364", method: .get) { r in
                #expect(r.status == .ok)
            }
        }
    }

    /// A store library with a PMTiles file is refused at open, naming the file: its tiles
    /// would be outside the signed catalog, and the file would otherwise be served whole.
    @Test func aStoreLibraryRefusesPMTilesArchives() throws {
        let (dir, path) = try Self.library()
        let store = dir.file("store")
        mkdir(store, 0o755)
        for name in try FileManager.default.contentsOfDirectory(atPath: SampleLibrary.directory) {
            symlink(SampleLibrary.directory + "/" + name, store + "/" + name)
        }
        symlink(path, store + "/alps.pmtiles")
        let error = #expect(throws: ArchiveError.self) {
            try ServerTests.storeService(directory: store, ledger: dir.file("ledger.sqlite"))
        }
        #expect(error?.subject == store + "/alps.pmtiles")
    }
}
