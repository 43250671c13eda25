import Testing
import TilePack
import TilePackCore
import TilePackServer
@testable import TilePackArchive

/// Every public error type has the one shape (code, subject, detail, cause, category) and its
/// `description` is derived from it: "subject: detail" (or detail alone), one line, the text
/// the CLI and the server printed before the shape existed.
@Suite("Core: error shape")
struct CoreErrorShapeTests {
    struct Case: CustomStringConvertible, Sendable {
        let error: any TilePackError
        let category: TilePackErrorCategory
        /// The line as printed before the common shape (kept byte for byte).
        let line: String
        var description: String { "\(type(of: error))" }
    }

    static let sqlite = SQLiteError(
        code: .corrupt, message: "database disk image is malformed", sql: "SELECT 1", path: "a.db")

    static let cases: [Case] = [
        Case(
            error: InputFileError(path: "in.tif", detail: "no georeference"), category: .invalidInput,
            line: "in.tif: no georeference"),
        Case(
            error: QueryInputError("zoom 30 is outside 0…24"), category: .invalidArgument,
            line: "zoom 30 is outside 0…24"),
        Case(
            error: MemoryBudgetError(.notASize, text: "8 parsecs", detail: "not a size"), category: .invalidArgument,
            line: "size '8 parsecs': not a size"),
        Case(
            error: Zlib.Failure(code: -3, message: "invalid stored block lengths"), category: .invalidInput,
            line: "zlib error -3: invalid stored block lengths"),
        Case(
            error: sqlite, category: .invalidInput,
            line: "a.db: SQLite error 11 (database disk image is malformed) in `SELECT 1`"),
        Case(
            error: CodecError.notPowerOfTwo(format: "pvrtc4", width: 24, height: 8), category: .invalidInput,
            line: "pvrtc4: size 24x8 is not a power of two on each side"),
        Case(
            error: PNGError(.badCRC, source: "tile 3/4/2", detail: "chunk IDAT has a bad CRC"), category: .invalidInput,
            line: "tile 3/4/2: PNG chunk IDAT has a bad CRC"),
        Case(
            error: ArchiveError.reading(sqlite, path: "a.mbtiles", doing: "reading tile 1/0/0"),
            category: .invalidInput,
            line:
                "a.mbtiles: reading tile 1/0/0 failed: SQLite error 11 (database disk image is malformed) in `SELECT 1`"
        ),
        Case(
            error: ArchiveError(path: "a.mbtiles", code: .notFound, detail: "no such file"), category: .notFound,
            line: "a.mbtiles: no such file"),
        Case(
            error: TileStoreError(.budgetExhausted, subject: "tile store", detail: "leases fill the budget"),
            category: .budgetExhausted, line: "tile store: leases fill the budget"),
        Case(
            error: TileStoreError(.locked, subject: "a.mbtiles", detail: "tile 1/0/0 is locked"), category: .locked,
            line: "a.mbtiles: tile 1/0/0 is locked"),
        Case(
            error: TIFFError(path: "a.tif", code: .io, detail: "cannot read"), category: .environment,
            line: "a.tif: cannot read"),
        Case(
            error: TIFFError(path: "a.tif", code: .notFound, detail: "cannot open: No such file or directory"),
            category: .notFound, line: "a.tif: cannot open: No such file or directory"),
        Case(
            error: TIFFWriteError.invalidOptions(path: "o.tif", "no bands"), category: .invalidArgument,
            line: "o.tif: cannot write GeoTIFF: no bands"),
        Case(
            error: TIFFWriteError.tooLargeForClassicTIFF(path: "o.tif", bytes: 5), category: .environment,
            line: "o.tif: 5 bytes do not fit classic TIFF (4 GiB); allow BigTIFF"),
        Case(
            error: CRSRegistryError.missing(path: "/p/proj.db", origin: "--proj-db"), category: .notFound,
            line: "proj.db /p/proj.db (--proj-db): no such file"),
        Case(
            error: CRSRegistryError.query(sqlite), category: .invalidInput,
            line: "proj.db a.db: SQLite error 11 (database disk image is malformed) in `SELECT 1`"),
        Case(
            error: CRSRegistryError.notFoundInEnvironment(variable: "PROJ_DATA", value: "/x"), category: .notFound,
            line: "PROJ_DATA=\"/x\": no directory in it holds proj.db"),
        Case(
            error: CRSError.missingKey("ProjCoordTransGeoKey"), category: .invalidInput,
            line: "GeoKey ProjCoordTransGeoKey is required for this CRS but missing"),
        Case(
            error: CRSError.registry(.missing(path: "/p", origin: "PROJ_DATA")), category: .notFound,
            line: "proj.db /p (PROJ_DATA): no such file"),
        Case(
            error: GeoReference.Error.invalidSize(width: 0, height: 1), category: .invalidInput,
            line: "raster size 0×1 is not positive"),
        Case(
            error: DatumGridError(path: "g.gsb", code: .truncated, detail: "NTv2: 10 bytes"), category: .invalidInput,
            line: "g.gsb: datum shift grid: NTv2: 10 bytes"),
        Case(
            error: DatumGridError(path: "proj.db", code: .badOperation, detail: "unknown unit"),
            category: .invalidInput,
            line: "proj.db: unknown unit"),
        Case(
            error: BuildError.invalidZooms(minZoom: 3, maxZoom: 2, reason: "min above max"), category: .invalidArgument,
            line: "zooms 3–2: min above max"),
        Case(
            error: BuildError.crossesAntimeridian(west: 170, east: -170), category: .unsupported,
            line: "source crosses the antimeridian (west 170.0, east -170.0); split it at ±180° and build each half"),
        Case(
            error: ShardError.duplicateShard(path: "s1.mbtiles", shard: "1/2", other: "s2.mbtiles"),
            category: .invalidInput, line: "s1.mbtiles: shard 1/2 given twice (also s2.mbtiles)"),
        Case(
            error: ShardError.missingShards(indices: [1], count: 2), category: .invalidArgument,
            line: "shard 1 of 2 missing: give all 2 shard archives"),
        Case(
            error: ColorReliefFileError(path: "t.txt", line: 3, problem: "found 6 fields"), category: .invalidArgument,
            line: "--tint t.txt:3: found 6 fields"),
        Case(
            error: RenderInputError("zoom 30 is outside 0…24"), category: .invalidArgument,
            line: "zoom 30 is outside 0…24"),
        Case(
            error: RenderInputError(.nothingToDraw, subject: "lib", detail: "no region archives (.mbtiles) to draw"),
            category: .notFound, line: "lib: no region archives (.mbtiles) to draw"),
        Case(
            error: BuildInterrupted(temporaryPath: "x.mbtiles.tmp-7", signal: 2, tilesDone: 12), category: .environment,
            line: "x.mbtiles.tmp-7: interrupted (12 tiles done)"),
        Case(
            error: ServerStartError(.portInUse, detail: "port 8080 is in use (on 127.0.0.1)"), category: .environment,
            line: "port 8080 is in use (on 127.0.0.1)"),
        Case(
            error: AppStoreVerificationError(.appID, source: "tx.jws", "appAppleId 1 is not 2"),
            category: .invalidInput, line: "tx.jws: app_id: appAppleId 1 is not 2"),
        Case(
            error: TrustFileError(path: "trust.json", field: "publisher_keys[0]", "not a key"), category: .invalidInput,
            line: "trust.json: publisher_keys[0]: not a key"),
        Case(
            error: TrustFileError(path: "trust.json", "missing", category: .notFound), category: .notFound,
            line: "trust.json: missing"),
        Case(
            error: CatalogError(
                path: "catalog.json", field: "products[2].price", code: .negativePrice,
                detail: "\"-1.00\" is negative"),
            category: .invalidInput, line: "catalog.json: products[2].price \"-1.00\" is negative"),
        Case(
            error: CatalogError(path: "catalog.json", field: nil, code: .notFound, detail: "no such file"),
            category: .notFound, line: "catalog.json: no such file"),
        Case(
            error: JWSError(.badSignature, source: "catalog.jws", "signature does not verify"), category: .invalidInput,
            line: "catalog.jws: signature does not verify"),
        Case(
            error: PackError(.network, subject: "https://x/p", "the request failed", cause: sqlite),
            category: .environment, line: "https://x/p: the request failed"),
        Case(error: PackError(.notEntitled, subject: "alps", "not owned"), category: .locked, line: "alps: not owned"),
        Case(
            error: LedgerError(.notFound, subject: "tx 9", "no such transaction"), category: .notFound,
            line: "tx 9: no such transaction"),
        Case(
            error: LedgerError(AppStoreVerificationError(.chain, source: "ledger row 2", "no root")),
            category: .invalidInput, line: "ledger row 2: chain: no root"),
        Case(
            error: Price.ParseProblem.tooManyDecimals(allowed: 2), category: .invalidInput,
            line: "has more than 2 decimals"),
        Case(
            error: Self.polygonProblem, category: .invalidInput,
            line: "[0]: has 3 points (a closed ring needs at least 4)"),
    ]

    static var polygonProblem: RegionPolygon.Problem {
        do {
            _ = try RegionPolygon(rings: [[[0, 0], [1, 0], [0, 0]]])
        } catch let error as RegionPolygon.Problem {
            return error
        } catch {}
        fatalError("a three-point ring was accepted")
    }

    @Test(arguments: cases)
    func descriptionIsSubjectAndDetailOnOneLine(_ c: Case) {
        let e = c.error
        let derived = e.subject.isEmpty ? e.detail : "\(e.subject): \(e.detail)"
        #expect(e.description == derived)
        #expect(e.description == c.line)
        #expect(!e.description.contains("\n"))
        #expect(!e.detail.isEmpty)
        #expect(!e.code.description.isEmpty)
        #expect(e.category == c.category)
    }

    @Test func equalityComparesCodeSubjectAndDetailNotCause() {
        let a = PackError(.network, subject: "u", "failed", cause: Self.sqlite)
        let b = PackError(.network, subject: "u", "failed")
        #expect(a == b && a.cause != nil && b.cause == nil)
        #expect(a != PackError(.io, subject: "u", "failed"))
        #expect(ArchiveError.reading(Self.sqlite, path: "a", doing: "x").cause is SQLiteError)
    }

    @Test func codesAreComparedByName() {
        #expect(ArchiveError.Code.notFound == .notFound && ArchiveError.Code.notFound != .damaged)
        #expect(ArchiveError.Code.notFound.description == "notFound")
        #expect(PackError.Code.notEntitled.rawValue == "notEntitled")
        #expect(AppStoreVerificationError.Code.appID.rawValue == "app_id")
    }
}
