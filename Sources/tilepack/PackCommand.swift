import ArgumentParser
import TilePack
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tilepack pack --library DIR -o PACKS_DIR --key PUBLISHER.jwk [--previous OLD_PACKS_DIR]`.
struct PackCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pack",
        abstract:
            """
            Write one pack per product (and the free overview) from a library's signed catalog, with signed \
            manifests.
            """,
        discussion: """
            Reads the library's catalog.jws (verified with the key's public half) and the master \
            archives it names. Each region and bundle gets <product id>.mbtiles holding exactly \
            its tiles (its areas, its zooms, a layer per archive; pixels outside the areas \
            transparent in the edge tiles, elevation outside nodata) and <product id>.manifest.jws; \
            the free overview (zooms up to free_max_zoom) is the pack `free`. With --previous, a \
            changed pack becomes the next version and <id>.v<N-1>-v<N>.delta.mbtiles is written; \
            unchanged packs and earlier deltas are carried over. Formats: docs/REGIONS.md, "Packs".
            """)

    @Option(help: "The publisher's library: catalog.jws and the master archives.")
    var library: String

    @Option(name: .shortAndLong, help: "The packs directory to write (created; must not be --previous).")
    var output: String

    @Option(help: "The publisher's private JWK (the catalog's signing key).")
    var key: String

    @Option(help: "The packs directory of the previous release: write next versions and deltas.")
    var previous: String?

    @Option(help: "Data licence when the master archives record none (metadata `license`).")
    var license: String?

    @Option(help: "Credit when the master archives record none (metadata `attribution`).")
    var attribution: String?

    @Flag(
        help:
            """
            Print one JSON object per pack: manifest, change (new|updated|unchanged|reformatted), whole_tiles, \
            masked_tiles, delta_from, delta_bytes.
            """
    )
    var json = false

    func run() throws {
        try exitingOnError {
            let jwk = try JWK.read(path: key, requirePrivate: true)
            var now = timespec()
            clock_gettime(CLOCK_REALTIME, &now)
            let options = PackPublisher.Options(
                libraryDirectory: library, outputDirectory: output, previousDirectory: previous,
                key: try jwk.privateKey(source: key), license: license, attribution: attribution,
                now: Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec / 1_000_000))
            let publications = try PackPublisher(options).run(progress: { line in if !json { print(line) } })
            if json { for p in publications { print(try JSONOutput.string(p)) } }
        }
    }
}
