import ArgumentParser
import Testing

@testable import TilePackCLI

/// Every subcommand's arguments parsed and validated in-process (`TilePackCommand.parseAsRoot`,
/// as the binary does before it runs anything), and nonsense rejected with the message the CLI
/// prints after "Error: " (its first line: an unknown value's message goes on to list the
/// values allowed).
@Suite("CLI: parsing and validation in-process")
struct CLIParsingTests {
    /// The subcommand `arguments` parse to, by its type's name.
    static func parsed(_ arguments: [String]) throws -> String {
        String(describing: type(of: try TilePackCommand.parseAsRoot(arguments)))
    }

    /// The first line of the message `arguments` are rejected with (nil: they parse).
    static func rejection(_ arguments: [String]) -> String? {
        do {
            _ = try TilePackCommand.parseAsRoot(arguments)
            return nil
        } catch {
            return TilePackCommand.message(for: error).split(separator: "\n").first.map(String.init)
        }
    }

    static let good: [(arguments: [String], command: String)] = [
        (["build", "dem.tif", "--min-zoom", "8", "--max-zoom", "12", "--codec", "png"], "BuildCommand"),
        (["build", "a.tif", "b.tif", "--workers", "2", "--quiet"], "BuildCommand"),
        (["catalog", "keygen", "--output", "publisher.jwk"], "CatalogKeygenCommand"),
        (["convert", "a.mbtiles", "b.mbtiles", "--to", "png"], "ConvertCommand"),
        (["convert", "a.mbtiles", "b.pmtiles", "--force"], "ConvertCommand"),
        (
            ["convert", "a.mbtiles", "B.MBTILES", "--to", "png", "--force", "--workers", "2", "--quiet"],
            "ConvertCommand"
        ),
        (["catalog", "sign", "catalog.json", "--key", "publisher.jwk"], "CatalogSignCommand"),
        (["download", "chamonix", "--server", "http://127.0.0.1:8080"], "DownloadCommand"),
        (["info", "dem.tif", "--json"], "InfoCommand"),
        (["library", "list", "--json"], "LibraryListCommand"),
        (["library", "remove", "chamonix"], "LibraryRemoveCommand"),
        (["merge", "a.mbtiles", "b.mbtiles", "--output", "m.mbtiles"], "MergeCommand"),
        (["pack", "--library", "lib", "--output", "packs", "--key", "publisher.jwk"], "PackCommand"),
        (["query", "45.9", "6.87", "12"], "QueryCommand"),
        (["query", "geo:45.9,6.87", "12", "--tile-only"], "QueryCommand"),
        (["render", "45.9", "6.87", "12", "--size", "256x256"], "RenderCommand"),
        (["render", "--tile", "12/2118/1461"], "RenderCommand"),
        (["serve"], "ServeCommand"),
        (["store", "buy", "com.example.region"], "StoreBuyCommand"),
        (["store", "list"], "StoreListCommand"),
        (["store", "verify", "tok.jws", "--kind", "renewal-info"], "StoreVerifyCommand"),
        (["store", "trust", "--simulator", "store", "--bundle-id", "com.example"], "StoreTrustCommand"),
        (["stress", "a.mbtiles"], "StressCommand"),
        (["codec", "encode", "in.tif", "--output", "out.pvr"], "CodecEncodeCommand"),
        (
            ["codec", "decode", "in.pvr", "--format", "pvrtc4", "--size", "256x256", "--output", "o.png"],
            "CodecDecodeCommand"
        ),
        (["sample-region", "--out", "samples"], "SampleRegionCommand"),
        (["tile-math"], "TileMathCommand"),
        (["verify", "a.mbtiles"], "VerifyCommand"),
    ]

    @Test(arguments: good) func goodArgumentsParse(_ example: (arguments: [String], command: String)) throws {
        #expect(try Self.parsed(example.arguments) == example.command, "\(example.arguments)")
    }

    static let bad: [(arguments: [String], message: String)] = [
        (["nosuch"], "Unexpected argument 'nosuch'"),
        (["build", "x.tif", "--max-zoom", "30"], "--max-zoom 30 must be 0…24"),
        (["build", "x.tif", "--min-zoom", "12", "--max-zoom", "10"], "--min-zoom 12 is above --max-zoom 10"),
        (["build", "x.tif", "--workers", "0"], "--workers 0 must be 1…256"),
        (["build", "x.tif", "--quiet", "--progress", "json"], "--quiet (no progress) contradicts --progress json"),
        (
            ["build", "x.tif", "--codec", "foo"],
            "The value 'foo' is invalid for '--codec <codec>'. Please provide one of the following:"
        ),
        (["build", "x.tif", "--zoom", "12"], "Unknown option '--zoom'. Did you mean '--rdo'?"),
        (["build"], "Missing expected argument '<sources> ...'"),
        (["info"], "Missing expected argument '<files> ...'"),
        (["query"], "expected LAT LON ZOOM (or geo:LAT,LON ZOOM), got 0 values"),
        (
            ["query", "100", "0", "12"],
            "latitude 100.0 is outside web mercator's ±85.05112877980659° (the square map stops there)"
        ),
        (["query", "45.9", "6.87", "40"], "zoom 40 is outside 0…24"),
        (
            ["store", "verify", "tok.jws", "--kind", "bogus"],
            """
            The value 'bogus' is invalid for '--kind <kind>'. Please provide one of 'transaction', 'renewal-info' \
            or 'notification'.
            """
        ),
        (["merge", "a.mbtiles", "b.mbtiles"], "Missing expected argument '--output <output>'"),
        (["convert", "a.mbtiles", "b.png"], "OUT b.png must end in .mbtiles or .pmtiles"),
        (
            ["merge", "a.mbtiles", "b.mbtiles", "-o", "m.pmtiles"],
            "merge writes MBTiles: name -o m.pmtiles .mbtiles, then `tilepack convert` it"
        ),
        (
            ["build", "dem.tif", "-o", "d.pmtiles", "--shard", "0/2"],
            "--shard builds MBTiles shards for `tilepack merge`; convert the merged archive"
        ),
        (
            ["build", "dem.tif", "--format", "pmtiles", "-o", "d.mbtiles"],
            "--format pmtiles contradicts -o d.mbtiles: name it .pmtiles"
        ),
        (
            ["convert", "a.mbtiles", "b.pmtiles", "--to", "png"],
            "--to writes MBTiles: OUT b.pmtiles must end in .mbtiles (convert that to .pmtiles after)"
        ),
        (["convert", "a.mbtiles", "b.pmtiles", "--workers", "2"], "--workers and --quiet go with --to"),
        (["convert", "a.mbtiles", "b.mbtiles", "--to", "png", "--workers", "0"], "--workers 0 must be 1–256"),
        (
            ["convert", "a.mbtiles", "b.mbtiles", "--to", "ktx2"],
            "The value 'ktx2' is invalid for '--to <to>'. Please provide one of 'png'."
        ),
        (
            ["render", "45.9", "6.87", "12", "--size", "0x0"],
            "--size '0x0': expected WIDTHxHEIGHT with sides 1…4096, e.g. 1024x768"
        ),
        (["render", "--tile", "1/2"], "tile '1/2': expected Z/X/Y, e.g. 12/2118/1461"),
        (
            ["codec", "decode", "in.bin", "--format", "pvrtc9", "--size", "256x256", "--output", "o"],
            "The value 'pvrtc9' is invalid for '--format <format>'. Please provide one of the following:"
        ),
        (["stress", "--threads", "0"], "give an ARCHIVE or --library DIR (one of them)"),
        (["library", "remove"], "Missing expected argument '<pack-id>'"),
        (["store", "trust", "--simulator", "s"], "Missing expected argument '--bundle-id <bundle-id>'"),
        (["download", "--server", "http://127.0.0.1:8080"], "give a pack id (or --all with --update or --check)"),
    ]

    @Test(arguments: bad) func nonsenseIsRejectedWithTheCLIsMessage(_ example: (arguments: [String], message: String)) {
        #expect(Self.rejection(example.arguments) == example.message, "\(example.arguments)")
    }
}
