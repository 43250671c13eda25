import Testing
import Hummingbird
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TilePackArchive
import TilePackCodec
import TilePackCore
@testable import TilePackServer
import TilePackTestSupport

/// `/tiles/REGION/Z/X/Y` of a GPU archive: a KTX2 file (`image/ktx2`) around the raw payload,
/// whether the archive stores KTX2 tiles or the older raw/zlib form; `X-Tile-Format` stays
/// the codec name.
@Suite("Server: GPU tiles as KTX2", .tags(.concurrent))
struct ServerKTX2Tests {
    static let tile = TileID(z: 10, x: 531, y: 364)!

    /// A library of one ASTC 6×6 archive holding `stored` at ``tile``.
    static func service(stored: [UInt8], format: String) throws -> (TileService, TemporaryDirectory) {
        let dir = TemporaryDirectory()
        let writer = try MBTilesWriter(
            path: dir.file("gpu.mbtiles"),
            metadata: MBTilesMetadata(name: "gpu", format: format, codec: "astc6x6", tileSize: 256))
        try writer.write(stored, for: tile)
        try writer.finish()
        var options = TileService.Options()
        options.libraryDirectory = dir.path
        return (try TileService(options), dir)
    }

    @Test(arguments: [true, false])
    func gpuTilesAreServedAsKTX2(storedAsKTX2: Bool) async throws {
        var random = TestRandom(seed: 11)
        let blocks = random.bytes(ASTCFormat.astc6x6.byteCount(width: 256, height: 256))
        let format = KTX2Format(astc: .astc6x6)
        let stored =
            storedAsKTX2 ? try KTX2Writer.texture(level: blocks, format: format, width: 256, height: 256) : blocks
        let (service, dir) = try Self.service(stored: stored, format: storedAsKTX2 ? "image/ktx2" : "astc6x6")
        defer { withExtendedLifetime(dir) {} }
        let app = Application(router: TileServer.router(service, logRequests: false))
        try await app.test(.router) { client in
            try await client.execute(uri: "/tiles/gpu/\(Self.tile)", method: .get) { r in
                #expect(r.status == .ok)
                #expect(r.headers[.contentType] == "image/ktx2")
                #expect(r.headers[HTTPField.Name("X-Tile-Format")!] == "astc6x6")
                #expect(r.headers[HTTPField.Name("X-Tile-Size")!] == "256")
                let body = Array(r.body.readableBytesView)
                let texture = try body.withUnsafeBytes {
                    try KTX2Texture(parsing: $0, format: format, width: 256, height: 256)
                }
                #expect(texture.supercompression == .none)
                #expect(Array(body[texture.levelRange]) == blocks)
            }
        }
    }
}
