import Testing
@testable import TilePackCore
@testable import TilePackSQLite
@testable import TilePackCodec
@testable import TilePackArchive
@testable import TilePackStore
import TilePackTestSupport

/// An archive whose one elevation row declares a size chosen by the test, and which records
/// whether it got as far as decoding (allocating) the grid.
private final class DeclaringArchive: TileArchive {
    let path = "/lib/forged.mbtiles"
    let summary: TileArchiveSummary
    let declared: (width: Int, height: Int)
    private let decodes = Locked(0)

    init(tileSize: Int, declares: (Int, Int)) {
        summary = TileArchiveSummary(
            name: "forged", bounds: nil, zoomRange: 3...3, codec: .png, codecName: "png",
            tileSize: tileSize, hasElevation: true)
        declared = declares
    }

    func withTile<R>(_ id: TileID, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R? { nil }

    func elevation(_ id: TileID) throws(ArchiveError) -> ElevationTile? {
        try elevation(id) { _, _ throws(ArchiveError) in }
    }

    func elevation(
        _ id: TileID, admitting admit: (Int, Int) throws(ArchiveError) -> Void
    ) throws(ArchiveError) -> ElevationTile? {
        try admit(declared.width, declared.height)
        decodes.withLock { $0 += 1 }
        return ElevationTile(
            width: declared.width, height: declared.height,
            values: [Float](repeating: 1, count: declared.width * declared.height))
    }

    var decodeCount: Int { decodes.withLock { $0 } }
}

@Suite struct StoreElevationRowTests {
    static let id = TileID(z: 3, x: 1, y: 2)!

    /// A forged q-planar-deflate row (a constant tile's few bytes) declaring 4096 × 4096 in a
    /// 256-pixel archive: refused by name before the reader allocates 64 MiB.
    @Test func aForgedHugeRowIsRefusedBeforeDecoding() throws {
        let dir = TemporaryDirectory()
        let path = dir.file("forged.mbtiles")
        var options = MBTilesWriter.Options()
        options.elevationStep = 1
        let writer = try MBTilesWriter(path: path, metadata: ArchiveFixture.metadata(), options: options)
        try writer.write([1], for: Self.id)
        try writer.writeElevation(
            ElevationTile(width: 8, height: 8, values: [Float](repeating: 1234, count: 64)), for: Self.id)
        try writer.finish()
        let db = try SQLiteConnection(path: path, mode: .readWriteExisting)
        try db.execute("UPDATE elevation SET width = 4096, height = 4096")
        let reader = try MBTilesReader(path: path)
        #expect(try reader.storedElevation(Self.id)?.encoding == "q-planar-deflate")
        let store = try TileStore(archives: [reader], budget: MemoryBudget(parsing: "256MiB"))
        do {
            _ = try store.elevation(Self.id)
            Issue.record("a 4096 × 4096 grid was decoded for a 256-pixel archive")
        } catch let error as TileStoreError {
            #expect(error.code == .damagedTile)
            #expect(
                error.description.contains("forged.mbtiles") && error.description.contains("\(Self.id)")
                    && error.description.contains("4096×4096") && !error.description.contains("\n"), "\(error)")
        }
        #expect(store.statistics.peakResidentBytes < 1 << 20 && store.accountingProblem() == nil)
    }

    @Test func aRowsBytesAreReservedBeforeItIsDecoded() throws {
        // Within the size limit (2 × 256 a side) but beyond the budget: budgetExhausted, and
        // the archive never got to allocate the grid.
        let big = DeclaringArchive(tileSize: 256, declares: (512, 512))
        let store = try TileStore(archives: [big], budget: MemoryBudget(parsing: "512KiB"))
        do {
            _ = try store.elevation(Self.id)
            Issue.record("a 1 MiB grid in a 512 KiB budget")
        } catch let error as TileStoreError {
            #expect(error.code == .budgetExhausted)
        }
        #expect(big.decodeCount == 0 && store.accountingProblem() == nil)
        // Beyond twice the tile size: refused by name, never decoded.
        let wide = DeclaringArchive(tileSize: 256, declares: (513, 16))
        let wideStore = try TileStore(archives: [wide], budget: MemoryBudget(parsing: "64MiB"))
        do {
            _ = try wideStore.elevation(Self.id)
            Issue.record("a 513-wide grid for 256-pixel tiles")
        } catch let error as TileStoreError {
            #expect(
                error.code == .damagedTile && error.description.contains("forged.mbtiles")
                    && error.description.contains("513×16"))
        }
        #expect(wide.decodeCount == 0)
        // A grid of the tile's size is served and counted.
        let fine = DeclaringArchive(tileSize: 256, declares: (256, 256))
        let ok = try TileStore(archives: [fine], budget: MemoryBudget(parsing: "2MiB"))
        #expect(try ok.elevation(Self.id)?.width == 256)
        #expect(ok.statistics.residentBytes >= 256 * 256 * 4 && ok.accountingProblem() == nil)
    }

    /// The ancestor's grid stays leased (and counted) while the made grid is computed: in a
    /// budget that cannot hold both, the overzoom fails rather than evicting the grid it reads.
    @Test func anOverzoomKeepsItsAncestorGridLeased() throws {
        let side = 64
        let parent = TileID(z: 5, x: 10, y: 12)!
        let grid = ElevationTile(width: side, height: side, values: (0..<(side * side)).map { Float($0 % 91) })
        let archive = try ZoomFakeArchive(zooms: 5...5, side: side, pixels: [:], grids: [parent: grid])
        let store = try TileStore(archives: [archive], budget: MemoryBudget(parsing: "24KiB"))
        #expect(try store.elevation(parent) == grid)
        do {
            _ = try store.elevation(TileID(z: 6, x: 21, y: 25)!)
            Issue.record("the made grid fitted only by evicting the grid it was made from")
        } catch let error as TileStoreError {
            #expect(error.code == .budgetExhausted)
        }
        let s = store.statistics
        #expect(s.budgetViolations == 0 && s.leasedEntries == 0 && store.accountingProblem() == nil)
        // With room for both, it is made.
        let roomy = try TileStore(archives: [archive], budget: MemoryBudget(parsing: "64KiB"))
        #expect(try roomy.zoomedElevation(TileID(z: 6, x: 21, y: 25)!)?.sourceZoom == 5)
    }
}
